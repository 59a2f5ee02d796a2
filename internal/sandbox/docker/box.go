package docker

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/moby/moby/api/pkg/stdcopy"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"

	"github.com/swerve-dev/swerve/internal/sandbox"
	"github.com/swerve-dev/swerve/internal/shim"
)

// removeTimeout bounds Close's container removal, which must run even when
// the caller's context is already cancelled.
const removeTimeout = 60 * time.Second

// startAttempts is how many containers Open tries for one box when the
// engine fails to start them for a reason of its own moment: runc's
// prestart hook (the engine's network set-up) killed when many
// containers start at once. Such a failure says nothing of the image,
// and the next container usually starts.
const startAttempts = 3

// Open creates and starts a container whose main process is the helper,
// and returns once the helper has answered.
func (b *Backend) Open(ctx context.Context, spec sandbox.Spec) (sandbox.Sandbox, error) {
	for attempt := 1; ; attempt++ {
		box, err := b.openOnce(ctx, spec)
		if err == nil || attempt == startAttempts || !transientStart(err) || ctx.Err() != nil {
			return box, err
		}
		select {
		case <-ctx.Done():
			return nil, err
		case <-time.After(time.Duration(attempt) * 500 * time.Millisecond):
		}
	}
}

// transientStart says whether err is the engine failing to start a
// container in its own set-up hook (which openOnce has already cleaned
// up after), as opposed to anything the image or the request caused.
func transientStart(err error) bool {
	s := err.Error()
	return strings.Contains(s, "docker: start container from") && strings.Contains(s, "error running hook")
}

func (b *Backend) openOnce(ctx context.Context, spec sandbox.Spec) (_ sandbox.Sandbox, err error) {
	if spec.Image == "" {
		return nil, fmt.Errorf("docker: open: no image given")
	}
	shimPath, err := b.shimBinary()
	if err != nil {
		return nil, err
	}
	user := spec.User
	img, err := b.ensureImage(ctx, spec.Image, spec.Pull, spec.PullProgress)
	if err != nil {
		return nil, err
	}
	if user == "" {
		user = img.user
	}
	network := spec.Network
	if network == "" {
		network = sandbox.NetworkDefault
	}
	labels := maps.Clone(b.labels)
	if spec.Task != "" {
		labels[LabelTask] = spec.Task
	}
	maps.Copy(labels, spec.Labels)

	hc := &container.HostConfig{
		NetworkMode: container.NetworkMode(network),
		Resources: container.Resources{
			NanoCPUs: int64(b.cpuLimit(ctx, spec.Limits.CPUs) * 1e9),
			Memory:   spec.Limits.MemoryMiB << 20,
		},
	}
	if spec.Limits.PIDs > 0 {
		pids := spec.Limits.PIDs
		hc.Resources.PidsLimit = &pids
	}
	harden(hc, spec.Security, user)
	entrypoint := []string{shim.InBoxPath, "shim"}
	if !b.copyShim {
		hc.Binds = []string{shimPath + ":" + shim.InBoxPath + ":ro"}
	}
	var sockDir string
	if b.socket {
		// A directory shared with the box, where the helper listens: the
		// client then talks to it directly instead of through the engine.
		sockDir, err = sockDirFor(user)
		if err != nil {
			return nil, err
		}
	}
	if sockDir != "" {
		defer func() {
			if err != nil {
				os.RemoveAll(sockDir)
			}
		}()
		hc.Binds = append(hc.Binds, sockDir+":"+sockInBox)
		entrypoint = append(entrypoint, "--listen", sockInBox+"/"+sockName)
	}
	// The create runs to its end even when ctx is cancelled meanwhile: an
	// engine that already started creating finishes after the client gives
	// up, and the container would be left behind unseen. Cancellation is
	// honoured right after, by removing what was made.
	createCtx, cancelCreate := context.WithTimeout(context.WithoutCancel(ctx), removeTimeout)
	defer cancelCreate()
	created, err := b.cli.ContainerCreate(createCtx, client.ContainerCreateOptions{
		Config: &container.Config{
			Image:        spec.Image,
			Entrypoint:   entrypoint,
			Cmd:          []string{},
			Env:          spec.Env,
			WorkingDir:   spec.Workdir,
			User:         spec.User,
			Labels:       labels,
			OpenStdin:    true,
			StdinOnce:    true,
			AttachStdin:  true,
			AttachStdout: true,
			AttachStderr: true,
		},
		HostConfig: hc,
	})
	if err != nil {
		return nil, fmt.Errorf("docker: create container from %s: %w", spec.Image, classify(err))
	}
	if cerr := ctx.Err(); cerr != nil {
		b.cli.ContainerRemove(createCtx, created.ID, client.ContainerRemoveOptions{Force: true, RemoveVolumes: true})
		return nil, fmt.Errorf("docker: create container from %s: %w", spec.Image, cerr)
	}
	box := &Box{cli: b.cli, id: created.ID, image: spec.Image, imageID: img.id, stderr: &shim.TailBuffer{}, env: spec.Env, workdir: spec.Workdir, sockDir: sockDir}
	defer func() {
		if err != nil {
			box.Close(context.WithoutCancel(ctx))
		}
	}()
	if b.copyShim {
		if err := b.copyShimInto(ctx, created.ID, shimPath); err != nil {
			return nil, err
		}
	}
	att, err := b.cli.ContainerAttach(ctx, created.ID, client.ContainerAttachOptions{Stream: true, Stdin: true, Stdout: true, Stderr: true})
	if err != nil {
		// The client reports a refused attach only by its status code;
		// starting the container usually says what is really wrong.
		if _, serr := b.cli.ContainerStart(ctx, created.ID, client.ContainerStartOptions{}); serr != nil {
			return nil, fmt.Errorf("docker: attach %s: %w (starting it says: %v)", short(created.ID), classify(err), serr)
		}
		return nil, fmt.Errorf("docker: attach %s: %w", short(created.ID), classify(err))
	}
	box.conn = &att.HijackedResponse
	pr, pw := io.Pipe()
	go func() {
		_, err := stdcopy.StdCopy(pw, box.stderr, att.Reader)
		if err == nil {
			err = io.EOF
		}
		pw.CloseWithError(err)
	}()
	box.Client = shim.NewClient(pr, att.Conn)
	box.Client.Describe = box.describe
	if _, err := b.cli.ContainerStart(ctx, created.ID, client.ContainerStartOptions{}); err != nil {
		return nil, fmt.Errorf("docker: start container from %s: %w", spec.Image, classify(err))
	}
	if _, err := box.Client.Hello(ctx); err != nil {
		return nil, fmt.Errorf("docker: the helper in %s did not answer: %w", short(created.ID), err)
	}
	box.lifeline = box.Client
	if sockDir != "" {
		box.useSocket(ctx)
	}
	return box, nil
}

// Where the shared socket lives, on the host and in the box.
const (
	sockDirPrefix = "swerve-sock-"
	sockInBox     = "/.swerve/run"
	sockName      = "shim.sock"
)

// cpuLimit is the CPU limit to ask for: the one given, cut to the number of
// CPUs the engine has (engines refuse a limit above it, and a default of
// 2 must not break a one-CPU machine).
func (b *Backend) cpuLimit(ctx context.Context, cpus float64) float64 {
	if cpus <= 0 {
		return 0
	}
	b.ncpuOnce.Do(func() {
		if info, err := b.cli.Info(ctx, client.InfoOptions{}); err == nil {
			b.ncpu = info.Info.NCPU
		}
	})
	if b.ncpu > 0 && cpus > float64(b.ncpu) {
		return float64(b.ncpu)
	}
	return cpus
}

// sockDirFor makes the host directory shared with one box for its helper's
// socket: a fresh directory of mode 0700 owned by the user the helper runs
// as (root stays ours), so that no other user of this machine can reach the
// socket, and no other box either (each mounts only its own). It returns ""
// when that user's uid cannot be known here (a name the image's passwd
// resolves) or given the directory: the box then talks over the attach
// stream, which needs no shared directory at all.
func sockDirFor(user string) (string, error) {
	uid, gid, ok := numericUser(user)
	if !ok {
		return "", nil
	}
	dir, err := os.MkdirTemp("", fmt.Sprintf("%s%d-", sockDirPrefix, os.Getpid()))
	if err != nil {
		return "", fmt.Errorf("docker: socket directory: %w", err)
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		os.RemoveAll(dir)
		return "", fmt.Errorf("docker: socket directory: %w", err)
	}
	if uid != 0 {
		if err := os.Chown(dir, uid, gid); err != nil {
			os.RemoveAll(dir)
			return "", nil
		}
	}
	return dir, nil
}

// numericUser reads a container user as a uid (and gid, -1 when not given):
// "" and "root" are 0, "1000" and "1000:1000" are numbers; a name other
// than root is not known (ok false).
func numericUser(user string) (uid, gid int, ok bool) {
	name, group, hasGroup := strings.Cut(user, ":")
	gid = -1
	if hasGroup {
		g, err := strconv.Atoi(group)
		if err == nil && g >= 0 {
			gid = g
		}
	}
	switch name {
	case "", "root":
		return 0, gid, true
	}
	u, err := strconv.Atoi(name)
	if err != nil || u < 0 {
		return 0, 0, false
	}
	return u, gid, true
}

// MinimalCaps are the Linux capabilities a hardened box keeps: what its
// helper and ordinary builds, installs and test runs need as root (owning
// and changing any file, switching users, signalling any process, binding
// low ports on the loopback), none that reach devices, the kernel, raw
// sockets or other processes' memory.
var MinimalCaps = []string{"CHOWN", "DAC_OVERRIDE", "FOWNER", "FSETID", "KILL", "SETGID", "SETUID", "NET_BIND_SERVICE"}

// harden applies the default hardening, relaxed as sec asks: every
// capability dropped but MinimalCaps (and sec.CapAdd), and no-new-privileges
// so that no process in the box gains privileges it was not started with.
// A box whose user is not root keeps no capability at all (but sec.CapAdd):
// it needs none, and Podman hands the added ones to a non-root user as
// ambient capabilities, where Docker gives it none.
func harden(hc *container.HostConfig, sec sandbox.Security, user string) {
	if sec.Unhardened {
		hc.CapAdd = slices.Clone(sec.CapAdd)
		return
	}
	hc.CapDrop = []string{"ALL"}
	hc.CapAdd = slices.Clone(sec.CapAdd)
	if uid, _, ok := numericUser(user); ok && uid == 0 {
		hc.CapAdd = append(slices.Clone(MinimalCaps), sec.CapAdd...)
	}
	hc.SecurityOpt = append(hc.SecurityOpt, "no-new-privileges")
}

// useSocket moves requests to the helper's unix socket when it answers
// there; otherwise they stay on the attach stream, which works everywhere.
func (b *Box) useSocket(ctx context.Context) {
	conn, err := net.Dial("unix", filepath.Join(b.sockDir, sockName))
	if err != nil {
		slog.Debug("docker: helper socket unreachable; using the attach stream", "container", short(b.id), "err", err)
		return
	}
	c := shim.NewClient(conn, conn)
	c.Describe = b.describe
	if _, err := c.Hello(ctx); err != nil {
		slog.Debug("docker: helper socket did not answer; using the attach stream", "container", short(b.id), "err", err)
		conn.Close()
		return
	}
	b.sock, b.Client = conn, c
}

// copyShimInto puts the helper binary into a created container, for engines
// that cannot bind-mount a path of this machine.
func (b *Backend) copyShimInto(ctx context.Context, id, shimPath string) error {
	data, err := os.ReadFile(shimPath)
	if err != nil {
		return fmt.Errorf("docker: read helper: %w", err)
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	dir := strings.TrimPrefix(shim.InBoxPath[:strings.LastIndexByte(shim.InBoxPath, '/')], "/")
	now := time.Now()
	_ = tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: dir + "/", Mode: 0o755, ModTime: now})
	_ = tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: strings.TrimPrefix(shim.InBoxPath, "/"), Mode: 0o755, Size: int64(len(data)), ModTime: now})
	_, _ = tw.Write(data)
	if err := tw.Close(); err != nil {
		return fmt.Errorf("docker: pack helper: %w", err)
	}
	if _, err := b.cli.CopyToContainer(ctx, id, client.CopyToContainerOptions{DestinationPath: "/", Content: &buf}); err != nil {
		return fmt.Errorf("docker: copy helper into %s: %w", short(id), classify(err))
	}
	return nil
}

// Box is one container.
type Box struct {
	cli     *client.Client
	id      string
	image   string
	imageID string // the image's content id, "" when unknown
	// end is how the container ended (see ending), asked once.
	endOnce sync.Once
	end     string
	env     []string
	workdir string
	conn    *client.HijackedResponse
	// Forward's Client carries requests: over the shared socket when
	// there is one, else the attach stream. lifeline is the attach
	// stream's client, whose end (the helper's exit) is the box's end.
	shim.Forward
	lifeline *shim.Client
	sock     net.Conn
	sockDir  string
	stderr   *shim.TailBuffer

	closeOnce sync.Once
	closeErr  error
}

var (
	_ sandbox.Sandbox     = (*Box)(nil)
	_ sandbox.Interactive = (*Box)(nil)
	_ sandbox.Tooler      = (*Box)(nil)
	_ sandbox.Shell       = (*Box)(nil)
)

// ID is the container id.
func (b *Box) ID() string { return b.id }

func short(id string) string { return id[:min(12, len(id))] }

// ImageID is the content id of the box's image ("" when unknown); see
// sandbox.ImageIdentity.
func (b *Box) ImageID() string { return b.imageID }

// describe adds the helper's last words, and how the container ended, to a
// broken-stream error.
func (b *Box) describe(err error) error {
	b.endOnce.Do(func() { b.end = b.ending() })
	if end := b.end; end != "" {
		err = fmt.Errorf("%w; %s", err, end)
	}
	if tail := strings.TrimSpace(b.stderr.String()); tail != "" {
		return fmt.Errorf("container %s: %w (helper stderr: %s)", short(b.id), err, tail)
	}
	return fmt.Errorf("container %s: %w", short(b.id), err)
}

// ending says how the container ended, as the engine saw it ("" while it
// runs or when the engine cannot say): its main process's exit status, and
// whether the kernel's OOM killer struck in it. The engine may take a
// moment to notice the end, so it asks a few times.
func (b *Box) ending() string {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	for range 10 {
		res, err := b.cli.ContainerInspect(ctx, b.id, client.ContainerInspectOptions{})
		if err != nil {
			return ""
		}
		st := res.Container.State
		if st != nil && !st.Running {
			end := fmt.Sprintf("the container exited with status %d", st.ExitCode)
			if st.OOMKilled {
				end += ", out of memory (the kernel's OOM killer struck in it)"
			}
			return end
		}
		select {
		case <-ctx.Done():
			return ""
		case <-time.After(100 * time.Millisecond):
		}
	}
	return ""
}

// Close removes the container (killing everything in it). It is idempotent.
func (b *Box) Close(ctx context.Context) error {
	b.closeOnce.Do(func() {
		if b.Client != nil {
			b.Client.Shutdown()
		}
		if b.sock != nil {
			b.sock.Close()
		}
		if b.conn != nil {
			// End of stdin makes the helper kill what it started and exit;
			// removing an exited container is cheaper than killing one.
			_ = b.conn.CloseWrite()
			if b.lifeline != nil {
				b.lifeline.Shutdown()
				select {
				case <-b.lifeline.Done():
				case <-time.After(2 * time.Second):
				case <-ctx.Done():
				}
			}
			b.conn.Close()
		}
		if b.sockDir != "" {
			defer os.RemoveAll(b.sockDir)
		}
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), removeTimeout)
		defer cancel()
		_, err := b.cli.ContainerRemove(ctx, b.id, client.ContainerRemoveOptions{Force: true, RemoveVolumes: true})
		if err != nil && !errors.Is(classify(err), sandbox.ErrNotFound) {
			b.closeErr = fmt.Errorf("docker: remove container %s: %w", short(b.id), classify(err))
		}
	})
	return b.closeErr
}

// Attach runs an interactive command (a login shell by default) in the
// container through an engine exec, with a pseudo-terminal when asked.
func (b *Box) Attach(ctx context.Context, req sandbox.AttachRequest) (int, error) {
	argv := req.Cmd
	if len(argv) == 0 {
		argv = []string{"/bin/sh", "-c", "if command -v bash >/dev/null; then exec bash -l; else exec sh -l; fi"}
	}
	created, err := b.cli.ExecCreate(ctx, b.id, client.ExecCreateOptions{
		TTY: req.TTY, AttachStdin: true, AttachStdout: true, AttachStderr: true,
		Env: append(append([]string{}, b.env...), req.Env...), WorkingDir: b.workdir, Cmd: argv,
	})
	if err != nil {
		return -1, fmt.Errorf("docker: exec in %s: %w", short(b.id), classify(err))
	}
	att, err := b.cli.ExecAttach(ctx, created.ID, client.ExecAttachOptions{TTY: req.TTY})
	if err != nil {
		return -1, fmt.Errorf("docker: attach exec in %s: %w", short(b.id), classify(err))
	}
	defer att.Close()
	if req.Resize != nil {
		go func() {
			for sz := range req.Resize {
				_, _ = b.cli.ExecResize(ctx, created.ID, client.ExecResizeOptions{Width: sz[0], Height: sz[1]})
			}
		}()
	}
	if req.Stdin != nil {
		go func() {
			_, _ = io.Copy(att.Conn, req.Stdin)
			_ = att.CloseWrite()
		}()
	}
	if req.TTY {
		_, err = io.Copy(req.Stdout, att.Reader)
	} else {
		_, err = stdcopy.StdCopy(req.Stdout, req.Stdout, att.Reader)
	}
	if err != nil && ctx.Err() == nil {
		return -1, fmt.Errorf("docker: exec stream: %w", err)
	}
	insp, err := b.cli.ExecInspect(context.WithoutCancel(ctx), created.ID, client.ExecInspectOptions{})
	if err != nil {
		return -1, fmt.Errorf("docker: inspect exec: %w", classify(err))
	}
	return insp.ExitCode, nil
}

// engineExec runs argv with a plain engine exec (create, attach, inspect),
// the way tools without a helper pay for every command. It exists as the
// benchmark baseline.
func (b *Box) engineExec(ctx context.Context, argv []string) (int, []byte, error) {
	created, err := b.cli.ExecCreate(ctx, b.id, client.ExecCreateOptions{AttachStdout: true, AttachStderr: true, Cmd: argv})
	if err != nil {
		return -1, nil, classify(err)
	}
	att, err := b.cli.ExecAttach(ctx, created.ID, client.ExecAttachOptions{})
	if err != nil {
		return -1, nil, classify(err)
	}
	var out bytes.Buffer
	_, err = stdcopy.StdCopy(&out, &out, att.Reader)
	att.Close()
	if err != nil {
		return -1, nil, err
	}
	insp, err := b.cli.ExecInspect(ctx, created.ID, client.ExecInspectOptions{})
	if err != nil {
		return -1, nil, classify(err)
	}
	return insp.ExitCode, out.Bytes(), nil
}
