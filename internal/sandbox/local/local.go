// Package local is the sandbox backend that needs no container engine: each
// box is a temporary directory on the host holding a copy of the task's
// repository, and commands run there as ordinary host processes through the
// same helper (shim) the container backends use.
//
// It isolates almost nothing: no network, CPU, memory or pid limits apply,
// and absolute paths are the host's. Only the environment is scrubbed:
// commands see PATH, HOME, TMPDIR, LANG, LC_ALL and TERM (when set), and what
// the spec sets, never the rest of swerve's environment (API keys). One
// interpreter serves python, python3, pip and pytest whichever way a
// command is written (see choosePython). It is the fallback when no engine
// answers and the dry-run mode, not a security boundary.
package local

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/swerve-dev/swerve/internal/fsutil"
	"github.com/swerve-dev/swerve/internal/sandbox"
	"github.com/swerve-dev/swerve/internal/shim"
)

// Name is the backend's registry name.
const Name = "local"

// dirPrefix starts the name of every box directory, so gc can find them.
const dirPrefix = "swerve-local-"

func init() {
	sandbox.Register(&sandbox.Registration{
		Name:        Name,
		Description: "host processes in a temporary copy of the repository (no isolation; needs no engine)",
		HostDir:     true,
		New: func(_ context.Context, opts sandbox.Options) (sandbox.Backend, error) {
			return New(opts)
		},
	})
}

// Backend opens local boxes.
type Backend struct {
	shim  string
	runID string
	// TempDir is where box directories are made; empty means os.TempDir().
	TempDir string
	// Python is the interpreter boxes run for python, python3, pip and
	// pytest (a name on PATH or a path); empty chooses one (see
	// choosePython). New sets it from SWERVE_LOCAL_PYTHON.
	Python string
}

// New returns a local backend.
func New(opts sandbox.Options) (*Backend, error) {
	// The helper runs on this machine, so a dynamically linked build works.
	bin, err := shim.HostBinary(opts.ShimPath)
	if err != nil {
		return nil, err
	}
	return &Backend{shim: bin, runID: opts.RunID, Python: os.Getenv(PythonEnv)}, nil
}

var _ sandbox.Backend = (*Backend)(nil)

// Open copies spec.Image (a host directory, optional) into a fresh temporary
// directory and starts the helper there.
func (b *Backend) Open(ctx context.Context, spec sandbox.Spec) (_ sandbox.Sandbox, err error) {
	// The owner's pid is in the name as well as in .owner, so a directory
	// whose owner is killed before .owner exists is still known to be
	// left over.
	root, err := os.MkdirTemp(b.TempDir, dirPrefix+strconv.Itoa(os.Getpid())+"-")
	if err != nil {
		return nil, fmt.Errorf("local: make box directory: %w", err)
	}
	defer func() {
		if err != nil {
			os.RemoveAll(root)
		}
	}()
	owner := fmt.Sprintf("pid=%d\nrun=%s\n", os.Getpid(), b.runID)
	// Written whole or not at all: a run killed mid-write must not leave
	// an empty .owner that names no run.
	if err := fsutil.WriteFileAtomic(filepath.Join(root, ".owner"), []byte(owner), false); err != nil {
		return nil, fmt.Errorf("local: %w", err)
	}
	work := filepath.Join(root, "work")
	if spec.Image != "" {
		if err := fsutil.CopyTree(spec.Image, work, fsutil.CopyOptions{}); err != nil {
			return nil, fmt.Errorf("local: copy %s: %w", spec.Image, err)
		}
		if err := gitInit(ctx, work); err != nil {
			return nil, fmt.Errorf("local: %w", err)
		}
	} else if err := os.Mkdir(work, 0o755); err != nil {
		return nil, fmt.Errorf("local: %w", err)
	}
	for _, d := range []string{"home", "tmp"} {
		if err := os.Mkdir(filepath.Join(root, d), 0o755); err != nil {
			return nil, fmt.Errorf("local: %w", err)
		}
	}
	workdir := work
	if spec.Workdir != "" {
		workdir = spec.Workdir
		if !filepath.IsAbs(workdir) {
			workdir = filepath.Join(work, workdir)
		}
		if err := os.MkdirAll(workdir, 0o755); err != nil {
			return nil, fmt.Errorf("local: workdir: %w", err)
		}
	}

	env := append(boxEnv(os.Environ()),
		"HOME="+filepath.Join(root, "home"),
		"TMPDIR="+filepath.Join(root, "tmp"),
		"SWERVE_BOX="+root,
	)
	env = append(env, spec.Env...)
	// One interpreter for python, python3, pip and pytest, first on a PATH
	// that login shells keep: the same program whichever way a command is
	// written, and the one that can run the tests whichever comes first.
	pathEnv := envValue(env, "PATH")
	py, err := cachedPython(ctx, pathEnv, b.Python)
	if err != nil {
		return nil, err
	}
	if py.Path != "" {
		bin := filepath.Join(root, "bin")
		if err := writeBin(bin, py); err != nil {
			return nil, fmt.Errorf("local: %w", err)
		}
		pathEnv = bin + string(filepath.ListSeparator) + pathEnv
		env = append(env, "PATH="+pathEnv)
	}
	if err := os.WriteFile(filepath.Join(root, "home", ".profile"), profile(pathEnv), 0o644); err != nil {
		return nil, fmt.Errorf("local: %w", err)
	}

	cmd := exec.Command(b.shim, "shim")
	cmd.Dir = workdir
	cmd.Env = dedupeEnv(env)
	// Its own process group, and gone with us if swerve is killed.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	stderr := &shim.TailBuffer{}
	cmd.Stderr = stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, fmt.Errorf("local: %w", err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("local: %w", err)
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("local: start helper %s: %w", b.shim, err)
	}
	box := &Box{root: root, workdir: workdir, cmd: cmd, stdin: stdin, stderr: stderr, env: cmd.Env}
	box.Client = shim.NewClient(stdout, stdin)
	box.Client.Describe = func(err error) error {
		if tail := strings.TrimSpace(stderr.String()); tail != "" {
			return fmt.Errorf("%w (helper said: %s)", err, tail)
		}
		return err
	}
	if _, err := box.Client.Hello(ctx); err != nil {
		box.Close(context.WithoutCancel(ctx))
		return nil, fmt.Errorf("local: helper did not answer: %w", err)
	}
	return box, nil
}

// Box is one local sandbox.
type Box struct {
	// Forward carries requests to the helper; the file and shell methods
	// below map relative paths first.
	shim.Forward
	root    string
	workdir string
	env     []string
	cmd     *exec.Cmd
	stdin   interface{ Close() error }
	stderr  *shim.TailBuffer

	closeOnce sync.Once
	closeErr  error
}

var (
	_ sandbox.Sandbox     = (*Box)(nil)
	_ sandbox.Interactive = (*Box)(nil)
	_ sandbox.Scratch     = (*Box)(nil)
	_ sandbox.Tooler      = (*Box)(nil)
	_ sandbox.Shell       = (*Box)(nil)
)

// ScratchDir is the box's private temporary directory (also its TMPDIR).
func (b *Box) ScratchDir() string { return filepath.Join(b.root, "tmp") }

// ID is the box's directory.
func (b *Box) ID() string { return b.root }

// Workdir is the host directory commands run in by default.
func (b *Box) Workdir() string { return b.workdir }

func (b *Box) path(p string) string {
	if p == "" || filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(b.workdir, p)
}

// WriteFile writes a file; relative paths are under the working directory.
func (b *Box) WriteFile(ctx context.Context, path string, data []byte, mode fs.FileMode) error {
	return b.Forward.WriteFile(ctx, b.path(path), data, mode)
}

// ReadFile reads a file; relative paths are under the working directory.
func (b *Box) ReadFile(ctx context.Context, path string) ([]byte, error) {
	return b.Forward.ReadFile(ctx, b.path(path))
}

// OpenShell starts a persistent shell in the box, run by the helper; a
// relative Cwd is under the working directory.
func (b *Box) OpenShell(ctx context.Context, opts sandbox.ShellOptions) (sandbox.ShellSession, error) {
	opts.Cwd = b.path(opts.Cwd)
	return b.Forward.OpenShell(ctx, opts)
}

// Close stops the helper (which kills every command it started) and removes
// the box directory.
func (b *Box) Close(ctx context.Context) error {
	b.closeOnce.Do(func() {
		b.Client.Shutdown()
		b.stdin.Close()
		exited := make(chan error, 1)
		go func() { exited <- b.cmd.Wait() }()
		select {
		case <-exited:
		case <-time.After(5 * time.Second):
			_ = syscall.Kill(-b.cmd.Process.Pid, syscall.SIGKILL)
			<-exited
		case <-ctx.Done():
			_ = syscall.Kill(-b.cmd.Process.Pid, syscall.SIGKILL)
			<-exited
		}
		// Commands that escaped the helper's process groups still run in
		// the box directory: find and kill them before removing it.
		killUnder(b.root)
		if err := os.RemoveAll(b.root); err != nil {
			b.closeErr = fmt.Errorf("local: remove %s: %w", b.root, err)
		}
	})
	return b.closeErr
}

// Attach runs an interactive command in the box, on the caller's streams
// (the host terminal, when they are one).
func (b *Box) Attach(ctx context.Context, req sandbox.AttachRequest) (int, error) {
	argv := req.Cmd
	if len(argv) == 0 {
		argv = []string{"bash", "-l"}
	}
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Dir = b.workdir
	cmd.Env = append(append([]string{}, b.env...), req.Env...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = req.Stdin, req.Stdout, req.Stdout
	err := cmd.Run()
	if ee, ok := errors.AsType[*exec.ExitError](err); ok {
		return ee.ExitCode(), nil
	}
	if err != nil {
		return -1, fmt.Errorf("local: %w", err)
	}
	return 0, nil
}

// keptEnv names the host variables a local box inherits: enough to find
// programs and speak the user's language, nothing that could hold a secret
// (API keys, tokens, cloud credentials never reach the box).
var keptEnv = map[string]bool{"PATH": true, "LANG": true, "LC_ALL": true, "TERM": true}

// boxEnv is the part of the host environment host a box may see: the
// variables in keptEnv that are set. HOME, TMPDIR and the task's own
// variables are added by the caller.
func boxEnv(host []string) []string {
	var out []string
	for _, kv := range host {
		k, _, _ := strings.Cut(kv, "=")
		if keptEnv[k] {
			out = append(out, kv)
		}
	}
	if !slices.ContainsFunc(out, func(kv string) bool { return strings.HasPrefix(kv, "PATH=") }) {
		out = append(out, "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin")
	}
	return out
}

// killUnder kills every process whose working directory is inside dir.
func killUnder(dir string) {
	for _, pid := range processesUnder(dir) {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
}

// processesUnder lists processes whose working directory is dir or below.
func processesUnder(dir string) []int {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var pids []int
	self := os.Getpid()
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		cwd, err := os.Readlink("/proc/" + e.Name() + "/cwd")
		if err != nil {
			continue
		}
		cwd = strings.TrimSuffix(cwd, " (deleted)")
		if cwd == dir || strings.HasPrefix(cwd, dir+"/") {
			pids = append(pids, pid)
		}
	}
	return pids
}

// gitInit makes dir a git repository with everything committed, unless it
// already is one, so the box looks like a task image: the repository at its
// base commit with a clean status, from which a patch can be taken.
func gitInit(ctx context.Context, dir string) error {
	if _, err := os.Stat(filepath.Join(dir, ".git")); err == nil {
		return nil
	}
	if _, err := exec.LookPath("git"); err != nil {
		return nil // a plain directory, then
	}
	for _, args := range [][]string{
		{"init", "-q"},
		{"add", "-A"},
		{"-c", "user.name=swerve", "-c", "user.email=swerve@localhost", "commit", "-q", "--allow-empty", "--no-verify", "-m", "swerve: task source"},
	} {
		cmd := exec.CommandContext(ctx, "git", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("git %s in %s: %w: %s", args[0], dir, err, strings.TrimSpace(string(out)))
		}
	}
	return nil
}
