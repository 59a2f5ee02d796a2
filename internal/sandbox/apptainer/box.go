package apptainer

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/swerve-dev/swerve/internal/sandbox"
	"github.com/swerve-dev/swerve/internal/shim"
)

// Timeouts of the apptainer commands a box runs.
const (
	startTimeout = 2 * time.Minute
	stopTimeout  = 30 * time.Second
)

// NamePrefix starts the name of every instance swerve starts.
const NamePrefix = "swerve-"

// Open starts an instance from the spec's .sif and the helper in it, and
// returns once the helper has answered.
func (b *Backend) Open(ctx context.Context, spec sandbox.Spec) (_ sandbox.Sandbox, err error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	shimPath, err := b.shimBinary()
	if err != nil {
		return nil, err
	}
	img, err := b.resolve(ctx, spec)
	if err != nil {
		return nil, err
	}
	user := spec.User
	if user == "" {
		user = img.user
	}
	workdir := spec.Workdir
	if workdir == "" {
		workdir = img.workdir
	}
	if workdir == "" {
		// A .sif keeps no WORKDIR: start where an image without one
		// starts under Docker, at the root (callers look for /testbed
		// from there), not in the instance's default, $HOME.
		workdir = "/"
	}
	name := b.newName()
	box := &Box{b: b, name: name, image: spec.Image, Forward: shim.Forward{Env: slices.Clone(spec.Env)}, stderr: &shim.TailBuffer{}, state: filepath.Join(b.stateDir, name)}
	defer func() {
		if err != nil {
			box.Close(context.WithoutCancel(ctx))
		}
	}()
	if err := box.writeState(spec); err != nil {
		return nil, err
	}
	root := os.Geteuid() == 0
	drop, err := boxDropCaps(b.dropCaps, !spec.Security.Unhardened, isRoot(user), spec.Security.CapAdd)
	if err != nil {
		return nil, fmt.Errorf("apptainer: task %s: %w", spec.Task, err)
	}
	box.drop = drop
	box.workdir = workdir
	args := []string{"instance", "start", "--containall", "--no-home", "--workdir", filepath.Join(box.state, "work")}
	if root {
		// A directory overlay: as much room as the disk has, where
		// --writable-tmpfs is capped by "sessiondir max size" (64 MiB).
		args = append(args, "--overlay", filepath.Join(box.state, "overlay"))
	} else {
		args = append(args, "--writable-tmpfs")
	}
	args = append(args, "-B", shimPath+":"+shim.InBoxPath+":ro")
	switch spec.Network {
	case "", sandbox.NetworkNone:
		args = append(args, "--net", "--network", "none")
	case sandbox.NetworkBridge:
		args = append(args, "--net", "--network", "bridge")
	case sandbox.NetworkHost:
	default:
		return nil, fmt.Errorf("apptainer: task %s: network %q: want none, bridge or host", spec.Task, spec.Network)
	}
	if len(drop) > 0 {
		args = append(args, "--drop-caps", strings.Join(drop, ","))
	}
	limits := limitArgs(spec.Limits)
	if noLimits.Load() {
		limits = nil
	}
	start := func(extra []string) (string, error) {
		sctx, cancel := context.WithTimeout(ctx, startTimeout)
		defer cancel()
		a := slices.Concat(args, extra, []string{img.sif, name})
		out, err := b.exec(sctx, a...).CombinedOutput()
		return string(out), err
	}
	// From here Close stops the instance, which may be up even when the
	// start command fails or is cancelled.
	box.started = true
	out, err := start(limits)
	if err != nil && len(limits) > 0 && isCgroupErr(out) {
		// Limits need cgroups Apptainer can use: not here. Say so once
		// and start without them rather than fail every task.
		if !noLimits.Swap(true) {
			slog.Warn("apptainer: resource limits (--cpus, --memory_mb, --pids) are ignored: Apptainer cannot use cgroups here (as root without systemd, set \"systemd cgroups = no\" in apptainer.conf)", "reason", lastLines(out, 1))
		}
		out, err = start(nil)
	}
	if err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("apptainer: start instance for %s: %w", spec.Image, ctx.Err())
		}
		return nil, fmt.Errorf("apptainer: start instance from %s: %w: %s", img.sif, errStart, lastLines(out, 2))
	}
	if err := box.startShim(ctx, user, workdir); err != nil {
		return nil, err
	}
	return box, nil
}

// limitArgs are the instance start flags for l.
func limitArgs(l sandbox.Limits) []string {
	var a []string
	if l.CPUs > 0 {
		a = append(a, "--cpus", strconv.FormatFloat(l.CPUs, 'f', -1, 64))
	}
	if l.MemoryMiB > 0 {
		a = append(a, "--memory", strconv.FormatInt(l.MemoryMiB, 10)+"M")
	}
	if l.PIDs > 0 {
		a = append(a, "--pids-limit", strconv.FormatInt(l.PIDs, 10))
	}
	return a
}

// isRoot reports whether a spec's user is root ("" keeps the image's,
// which for a converted image Open has filled in).
func isRoot(user string) bool {
	name, _, _ := strings.Cut(user, ":")
	return name == "" || name == "root" || name == "0"
}

// newName makes a unique instance name carrying this process's pid.
func (b *Backend) newName() string {
	var r [3]byte
	_, _ = rand.Read(r[:])
	return fmt.Sprintf("%s%d-%d-%s", NamePrefix, os.Getpid(), seq.Add(1), hex.EncodeToString(r[:]))
}

// Box is one Apptainer instance.
type Box struct {
	// Forward carries commands, files, tools and shells to the helper,
	// with the spec's Env under each request's (apptainer exec starts
	// the helper with a clean environment).
	shim.Forward
	b       *Backend
	name    string
	image   string
	workdir string
	drop    []string
	state   string // host directory of the box's overlay, /tmp and owner file
	started bool   // the instance may run: Close stops it
	cmd     *exec.Cmd
	exited  chan struct{} // closed when the helper's apptainer exec ended
	stdin   io.WriteCloser
	stderr  *shim.TailBuffer

	closeOnce sync.Once
	closeErr  error
}

var (
	_ sandbox.Sandbox     = (*Box)(nil)
	_ sandbox.Tooler      = (*Box)(nil)
	_ sandbox.Interactive = (*Box)(nil)
	_ sandbox.Shell       = (*Box)(nil)
)

// writeState makes the box's host directory and its owner file, which gc
// reads to find the run and whether the owner still lives.
func (b *Box) writeState(spec sandbox.Spec) error {
	for _, d := range []string{"work", "overlay"} {
		if err := os.MkdirAll(filepath.Join(b.state, d), 0o700); err != nil {
			return fmt.Errorf("apptainer: state directory: %w", err)
		}
	}
	host, _ := os.Hostname()
	owner := fmt.Sprintf("pid=%d\nhost=%s\nrun=%s\ntask=%s\nimage=%s\n", os.Getpid(), host, b.b.runID, oneLine(spec.Task), oneLine(spec.Image))
	if err := os.WriteFile(filepath.Join(b.state, "owner"), []byte(owner), 0o600); err != nil {
		return fmt.Errorf("apptainer: state directory: %w", err)
	}
	return nil
}

func oneLine(s string) string { return strings.NewReplacer("\n", " ", "\r", " ").Replace(s) }

// startShim runs the helper in the instance, as user, in workdir, and
// connects a client to its stdin and stdout.
func (b *Box) startShim(ctx context.Context, user, workdir string) error {
	args := []string{"exec", "--cleanenv"}
	if len(b.drop) > 0 {
		args = append(args, "--drop-caps", strings.Join(b.drop, ","))
	}
	if !isRoot(user) {
		sec, err := b.security(ctx, user)
		if err != nil {
			return err
		}
		args = append(args, "--security", sec)
	}
	args = append(args, "instance://"+b.name)
	if workdir != "" {
		// The working directory may not exist in the image yet (docker
		// makes it); the helper starts in it either way.
		args = append(args, "/bin/sh", "-c", `mkdir -p -- "$1" 2>/dev/null; cd -- "$1" && exec "$2" shim`, "swerve-shim", workdir, shim.InBoxPath)
	} else {
		args = append(args, shim.InBoxPath, "shim")
	}
	// Not ctx: the helper lives as long as the box.
	cmd := b.b.exec(context.Background(), args...)
	cmd.Stderr = b.stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // a ^C at the terminal is swerve's to handle
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return fmt.Errorf("apptainer: helper: %w", err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return fmt.Errorf("apptainer: helper: %w", err)
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("apptainer: start helper in %s: %w", b.name, err)
	}
	b.cmd, b.stdin = cmd, stdin
	b.exited = make(chan struct{})
	go func() { _ = cmd.Wait(); close(b.exited) }()
	b.Client = shim.NewClient(stdout, stdin)
	b.Client.Describe = b.describe
	hctx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()
	if _, err := b.Client.Hello(hctx); err != nil {
		// Let apptainer finish saying why before reading its stderr.
		select {
		case <-b.exited:
		case <-time.After(2 * time.Second):
		}
		if !isRoot(user) && strings.Contains(b.stderr.String(), "requires systemd as cgroups manager") {
			return fmt.Errorf("apptainer: user %q: Apptainer joins an instance as another user only with systemd managing cgroups, and this one uses cgroupfs (\"systemd cgroups = no\" in apptainer.conf, which --cpus/--memory_mb/--pids need without systemd): run the box as root here", user)
		}
		return fmt.Errorf("apptainer: the helper in instance %s did not answer: %w", b.name, err)
	}
	return nil
}

// security turns a user ("1000", "1000:1000", "app") into apptainer's
// --security uid:U,gid:G (root only). Names are looked up in the image; a
// uid without a group gets its passwd group, else 0, as docker does.
func (b *Box) security(ctx context.Context, user string) (string, error) {
	if os.Geteuid() != 0 {
		return "", fmt.Errorf("apptainer: user %q: only root can run a box as another user", user)
	}
	name, group, _ := strings.Cut(user, ":")
	uid := name
	if _, err := strconv.Atoi(name); err != nil {
		out, err := b.inBox(ctx, "id", "-u", name)
		if err != nil {
			return "", fmt.Errorf("apptainer: user %q: not known in the image: %w", name, err)
		}
		uid = out
	}
	gid := group
	switch {
	case group == "":
		out, err := b.inBox(ctx, "id", "-g", name)
		gid = out
		if err != nil {
			if _, nerr := strconv.Atoi(name); nerr != nil {
				return "", fmt.Errorf("apptainer: user %q: no group in the image: %w", name, err)
			}
			gid = "0"
		}
	default:
		if _, err := strconv.Atoi(group); err != nil {
			return "", fmt.Errorf("apptainer: user %q: give the group as a number", user)
		}
	}
	return "uid:" + uid + ",gid:" + gid, nil
}

// inBox runs a short command in the instance with a plain exec and returns
// its trimmed stdout.
func (b *Box) inBox(ctx context.Context, argv ...string) (string, error) {
	args := []string{"exec"}
	if len(b.drop) > 0 {
		args = append(args, "--drop-caps", strings.Join(b.drop, ","))
	}
	out, err := b.b.exec(ctx, slices.Concat(args, []string{"instance://" + b.name}, argv)...).Output()
	return strings.TrimSpace(string(out)), err
}

// ID is the instance's name.
func (b *Box) ID() string { return b.name }

// describe adds the helper's last words to a broken-stream error.
func (b *Box) describe(err error) error {
	if tail := strings.TrimSpace(b.stderr.String()); tail != "" {
		return fmt.Errorf("instance %s: %w (helper stderr: %s)", b.name, err, tail)
	}
	return fmt.Errorf("instance %s: %w", b.name, err)
}

// Close ends the helper, stops the instance and removes the box's state
// directory. It is idempotent.
func (b *Box) Close(ctx context.Context) error {
	b.closeOnce.Do(func() {
		if b.Client != nil {
			b.Client.Shutdown()
		}
		if b.cmd != nil {
			// End of stdin makes the helper kill what it started and exit.
			b.stdin.Close()
			select {
			case <-b.exited:
			case <-time.After(2 * time.Second):
				_ = syscall.Kill(-b.cmd.Process.Pid, syscall.SIGKILL)
				<-b.exited
			}
		}
		if b.started {
			if err := b.b.stop(ctx, b.name); err != nil {
				b.closeErr = err
			}
		}
		if err := removeAll(b.state); err != nil && b.closeErr == nil {
			b.closeErr = fmt.Errorf("apptainer: remove %s: %w", b.state, err)
		}
	})
	return b.closeErr
}

// stop force-stops an instance; one already gone is not an error.
func (b *Backend) stop(ctx context.Context, name string) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), stopTimeout)
	defer cancel()
	out, err := b.exec(ctx, "instance", "stop", "-F", name).CombinedOutput()
	if err != nil && !strings.Contains(string(out), "no instance found") {
		return fmt.Errorf("apptainer: stop instance %s: %w: %s", name, err, lastLines(string(out), 2))
	}
	return nil
}

// removeAll removes a directory tree, making read-only directories the box
// left writable first.
func removeAll(dir string) error {
	if err := os.RemoveAll(dir); err == nil {
		return nil
	}
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			_ = os.Chmod(p, 0o700)
		}
		return nil
	})
	return os.RemoveAll(dir)
}

// Attach runs an interactive command (a login shell by default) in the
// instance with its own `apptainer exec`, on the caller's streams. When
// they are the terminal (swerve shell passes os.Stdin and os.Stdout), the
// command gets that terminal itself; Resize is then not needed and is
// drained.
func (b *Box) Attach(ctx context.Context, req sandbox.AttachRequest) (int, error) {
	if b.Client == nil {
		return -1, sandbox.ErrClosed
	}
	argv := req.Cmd
	if len(argv) == 0 {
		argv = []string{"/bin/sh", "-c", "if command -v bash >/dev/null; then exec bash -l; else exec sh -l; fi"}
	}
	if env := slices.Concat(b.Env, req.Env); len(env) > 0 {
		argv = slices.Concat([]string{"env"}, env, argv)
	}
	args := []string{"exec", "--cleanenv", "--pwd", b.workdir}
	if len(b.drop) > 0 {
		args = append(args, "--drop-caps", strings.Join(b.drop, ","))
	}
	args = slices.Concat(args, []string{"instance://" + b.name}, argv)
	cmd := b.b.exec(ctx, args...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = req.Stdin, req.Stdout, req.Stdout
	if req.Resize != nil {
		go func() {
			for range req.Resize {
			}
		}()
	}
	err := cmd.Run()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode(), nil
	}
	if err != nil {
		return -1, fmt.Errorf("apptainer: attach to %s: %w", b.name, err)
	}
	return 0, nil
}
