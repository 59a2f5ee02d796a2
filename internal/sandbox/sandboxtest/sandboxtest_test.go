package sandboxtest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/swerve-dev/swerve/internal/sandbox"
	"github.com/swerve-dev/swerve/internal/testutil"
)

// TestSuite runs the suite against fakeBackend, a bare host-process backend
// built on os/exec, to show that the suite compiles, that a correct backend
// passes it, and that its expectations are consistent.
func TestSuite(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the fake backend needs Linux process groups and /proc")
	}
	testutil.HostPython(t) // the fake backend's boxes are host processes, and the suite runs python3 in them
	token := os.Getenv("SBT_FAKE_TOKEN")
	if token == "" {
		token = fmt.Sprintf("%d-%d", os.Getpid(), time.Now().UnixNano())
	}
	b := &fakeBackend{base: t.TempDir(), token: token, bug: os.Getenv("SBT_FAKE_BUG")}
	notIsolated := "the fake's boxes are host processes on the host's network"
	if b.bug == "claims-isolation" {
		notIsolated = ""
	}
	Run(t, Harness{
		Backend:            b,
		Spec:               func(testing.TB) sandbox.Spec { return sandbox.Spec{} },
		Leaks:              b.leaks,
		NetworkNotIsolated: notIsolated,
	})
}

// fakeBackend runs each box as a temp directory on the host. Every process
// it starts carries SANDBOXTEST_FAKE=<token> in its environment, which is
// how leaks finds those that outlived their box.
//
// bug, when set, names a mistake the fake makes on purpose (see
// TestMutants): the suite must catch each one.
type fakeBackend struct {
	base, token, bug string
}

func (b *fakeBackend) Open(ctx context.Context, spec sandbox.Spec) (sandbox.Sandbox, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp(b.base, "box-")
	if err != nil {
		return nil, err
	}
	box := &fakeBox{dir: dir, wd: dir, bug: b.bug, running: map[int]bool{}, done: make(chan struct{})}
	if spec.Workdir != "" && b.bug != "workdir-ignored" {
		box.wd = box.abs(spec.Workdir)
	}
	box.marker = "SANDBOXTEST_FAKE_BOX=" + dir
	// HOME is the box's own, so that the host's ~/.bashrc (which a login
	// shell may read) does not run in every box.
	box.env = slices.Concat(os.Environ(), []string{"HOME=" + dir, "SANDBOXTEST_FAKE=" + b.token, box.marker}, spec.Env)
	return box, nil
}

func (b *fakeBackend) leaks(context.Context) ([]string, error) {
	var out []string
	dirs, err := os.ReadDir(b.base)
	if err != nil {
		return nil, err
	}
	for _, d := range dirs {
		out = append(out, "directory "+filepath.Join(b.base, d.Name()))
	}
	for _, pid := range processesWith("SANDBOXTEST_FAKE=" + b.token) {
		cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		out = append(out, fmt.Sprintf("process %d: %s", pid, bytes.ReplaceAll(cmdline, []byte{0}, []byte{' '})))
	}
	return out, nil
}

// processesWith lists the processes whose environment holds the entry env.
// Zombies have no environment and are not listed.
func processesWith(env string) []int {
	var pids []int
	procs, _ := filepath.Glob("/proc/[0-9]*/environ")
	marker := []byte(env + "\x00")
	for _, p := range procs {
		data, err := os.ReadFile(p)
		if err == nil && (bytes.HasPrefix(data, marker) || bytes.Contains(data, append([]byte{0}, marker...))) {
			var pid int
			fmt.Sscanf(filepath.Base(filepath.Dir(p)), "%d", &pid)
			pids = append(pids, pid)
		}
	}
	return pids
}

type fakeBox struct {
	dir, wd string
	env     []string
	marker  string // in the environment of every process of the box
	bug     string
	serial  sync.Mutex // held through Exec by the "serial" bug

	mu      sync.Mutex
	closed  bool
	running map[int]bool // wrappers of the Execs under way
	done    chan struct{}
}

func (x *fakeBox) ID() string { return x.dir }

func (x *fakeBox) abs(path string) string {
	if filepath.IsAbs(path) {
		return path
	}
	return filepath.Join(x.wd, path)
}

func (x *fakeBox) check(ctx context.Context) error {
	if err := ctx.Err(); err != nil && x.bug != "ignore-ctx" {
		return err
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.closed {
		if x.bug == "closed-plain" {
			return errors.New("fake: closed")
		}
		return sandbox.ErrClosed
	}
	return nil
}

func (x *fakeBox) Exec(ctx context.Context, req sandbox.ExecRequest) (sandbox.ExecResult, error) {
	if err := x.check(ctx); err != nil {
		return sandbox.ExecResult{}, err
	}
	if len(req.Cmd) == 0 {
		return sandbox.ExecResult{}, errors.New("fake: empty command")
	}
	if x.bug == "serial" {
		x.serial.Lock()
		defer x.serial.Unlock()
	}
	limit := req.MaxOutput
	if limit == 0 {
		limit = sandbox.DefaultMaxOutput
		if x.bug == "zero-uncapped" {
			limit = -1
		}
	}
	out := &headTail{max: limit, noMarker: x.bug == "no-marker"}
	// The command runs under a wrapper, this test binary (see
	// fakeWrapper), that kills whatever the command leaves behind.
	cmd := exec.Command(os.Args[0], req.Cmd...)
	cmd.Dir = x.abs(req.Cwd)
	cmd.Env = slices.Concat(x.env, req.Env, []string{fakeWrapEnv + "=" + x.bug})
	statusR, statusW, err := os.Pipe()
	if err != nil {
		return sandbox.ExecResult{}, err
	}
	defer statusR.Close()
	cmd.ExtraFiles = []*os.File{statusW}
	cmd.Stdout, cmd.Stderr = out, out // the same writer: one pipe, write order kept
	var stderr *bytes.Buffer
	switch x.bug {
	case "cwd-ignored":
		cmd.Dir = x.wd
	case "env-order":
		cmd.Env = slices.Concat(req.Env, x.env, []string{fakeWrapEnv + "=" + x.bug})
	case "separate-pipes":
		stderr = new(bytes.Buffer)
		cmd.Stderr = stderr
	}
	if req.Stdin != nil {
		cmd.Stdin = bytes.NewReader(req.Stdin)
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	// Stop waiting for background processes that hold the output pipe open.
	// Not much shorter: when WaitDelay runs out, os/exec closes the pipe and
	// drops what it holds, and under load (the parallel test: 50 login
	// shells on two CPUs) 200ms lost the output of plain "echo ok".
	cmd.WaitDelay = 2 * time.Second
	if x.bug == "no-waitdelay" {
		cmd.WaitDelay = 0
	}

	start := time.Now()
	err = cmd.Start()
	statusW.Close()
	if err != nil {
		return sandbox.ExecResult{}, err
	}
	pgid := cmd.Process.Pid
	// SIGUSR1 asks the wrapper to kill the command and all it started.
	kill := func() { syscall.Kill(pgid, syscall.SIGUSR1) }
	timeoutKill := kill
	switch x.bug {
	case "leader-only-kill":
		timeoutKill = func() { cmd.Process.Kill() }
	case "term-grace":
		timeoutKill = func() {
			syscall.Kill(-pgid, syscall.SIGTERM)
			time.AfterFunc(11*time.Second, kill)
		}
	}
	ctxDone := ctx.Done()
	if x.bug == "ignore-ctx" {
		ctxDone = nil
	}
	x.mu.Lock()
	x.running[pgid] = true
	closed := x.closed
	x.mu.Unlock()
	if closed {
		kill()
	}
	waited := make(chan error, 1)
	go func() {
		err := cmd.Wait()
		// Forget the group before its leader's pid can be reused.
		x.mu.Lock()
		delete(x.running, pgid)
		x.mu.Unlock()
		waited <- err
	}()

	var timeout <-chan time.Time
	if req.Timeout > 0 {
		timer := time.NewTimer(req.Timeout)
		defer timer.Stop()
		timeout = timer.C
	}
	// KillOthers: once this command is over, the wrappers of the others
	// kill them and everything they started.
	defer func() {
		if !req.KillOthers || x.bug == "no-kill-others" {
			return
		}
		x.mu.Lock()
		others := slices.Collect(maps.Keys(x.running))
		x.mu.Unlock()
		for _, pid := range others {
			syscall.Kill(pid, syscall.SIGUSR1)
		}
		// Return only once they are all gone.
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); {
			x.mu.Lock()
			left := slices.ContainsFunc(others, func(pid int) bool { return x.running[pid] })
			x.mu.Unlock()
			if !left {
				break
			}
			time.Sleep(time.Millisecond)
		}
	}()
	select {
	case <-waited:
		var kind string
		var code int
		if _, err := fmt.Fscan(statusR, &kind, &code); err != nil {
			return sandbox.ExecResult{}, fmt.Errorf("fake: no status from the wrapper: %w", err)
		}
		switch kind {
		case "notfound":
			fmt.Fprintf(out, "%s: command not found\n", req.Cmd[0])
			code = 127
		case "signal":
			if x.bug != "signal-raw" {
				code += 128
			}
		}
		if stderr != nil {
			out.Write(stderr.Bytes())
		}
		res := out.result(code, time.Since(start))
		switch x.bug {
		case "no-duration":
			res.Duration = 0
		case "lossy-output":
			res.Output = []byte(strings.ToValidUTF8(string(res.Output), "?"))
		}
		return res, nil
	case <-timeout:
		timeoutKill()
		<-waited
		res := out.result(sandbox.TimeoutExitCode, time.Since(start))
		res.TimedOut = true
		return res, nil
	case <-ctxDone:
		if x.bug == "cancel-no-kill" {
			return sandbox.ExecResult{}, fmt.Errorf("fake: exec: %w", ctx.Err())
		}
		kill()
		<-waited
		return sandbox.ExecResult{}, fmt.Errorf("fake: exec: %w", ctx.Err())
	case <-x.done:
		if x.bug == "close-no-kill" {
			return sandbox.ExecResult{}, fmt.Errorf("fake: exec: %w", sandbox.ErrClosed)
		}
		kill()
		<-waited
		return sandbox.ExecResult{}, fmt.Errorf("fake: exec: %w", sandbox.ErrClosed)
	}
}

func (x *fakeBox) WriteFile(ctx context.Context, path string, data []byte, mode fs.FileMode) error {
	if err := x.check(ctx); err != nil {
		return err
	}
	p := x.abs(path)
	if x.bug != "no-mkdir" {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
	}
	switch x.bug {
	case "ignore-mode":
		mode = 0o644
	case "no-truncate":
		f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE, mode)
		if err != nil {
			return err
		}
		_, err = f.Write(data)
		return errors.Join(err, f.Close())
	}
	if err := os.WriteFile(p, data, mode); err != nil {
		return err
	}
	return os.Chmod(p, mode)
}

func (x *fakeBox) ReadFile(ctx context.Context, path string) ([]byte, error) {
	if err := x.check(ctx); err != nil {
		return nil, err
	}
	data, err := os.ReadFile(x.abs(path))
	if errors.Is(err, fs.ErrNotExist) && x.bug != "notfound-plain" {
		return nil, fmt.Errorf("%w: %w", sandbox.ErrNotFound, err)
	}
	return data, err
}

func (x *fakeBox) Close(context.Context) error {
	x.mu.Lock()
	if x.closed {
		x.mu.Unlock()
		return nil
	}
	x.closed = true
	close(x.done)
	if x.bug == "close-no-kill" {
		x.mu.Unlock()
		return os.RemoveAll(x.dir)
	}
	for pid := range x.running {
		syscall.Kill(pid, syscall.SIGUSR1)
	}
	x.mu.Unlock()
	// Whatever left its group (or outlived a finished command) still has
	// the box's marker in its environment.
	for range 3 {
		for _, pid := range processesWith(x.marker) {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	}
	return os.RemoveAll(x.dir)
}

// headTail keeps the first and last max/2 bytes written to it; max < 0
// keeps everything.
type headTail struct {
	max        int
	head, tail []byte
	total      int64
	noMarker   bool
}

func (h *headTail) Write(p []byte) (int, error) {
	h.total += int64(len(p))
	if h.max < 0 {
		h.head = append(h.head, p...)
		return len(p), nil
	}
	n := len(p)
	if room := h.max/2 - len(h.head); room > 0 {
		k := min(room, len(p))
		h.head, p = append(h.head, p[:k]...), p[k:]
	}
	h.tail = append(h.tail, p...)
	if keep := h.max - h.max/2; len(h.tail) > 2*keep+4096 {
		h.tail = slices.Clone(h.tail[len(h.tail)-keep:])
	}
	return n, nil
}

func (h *headTail) result(code int, d time.Duration) sandbox.ExecResult {
	tail := h.tail
	if keep := h.max - h.max/2; h.max >= 0 && len(tail) > keep {
		tail = tail[len(tail)-keep:]
	}
	res := sandbox.ExecResult{ExitCode: code, OutputBytes: h.total, Duration: d}
	res.ElidedBytes = h.total - int64(len(h.head)+len(tail))
	res.Output = slices.Concat(h.head, tail)
	if res.ElidedBytes > 0 && !h.noMarker {
		res.Output = slices.Concat(h.head, fmt.Appendf(nil, "\n[... %d bytes elided ...]\n", res.ElidedBytes), tail)
	}
	return res
}

// TestHelpers checks the suite's own helpers against the fake directly.
func TestHelpers(t *testing.T) {
	if got := bigOutput(1000); len(got) != 1000 || !strings.HasPrefix(string(got), "HEAD-MARK\n") || !strings.HasSuffix(string(got), "TAIL-MARK\n") {
		t.Errorf("bigOutput(1000) = %d bytes %s, want 1000 bytes from HEAD-MARK to TAIL-MARK", len(got), clip(got))
	}
	h := &headTail{max: 10}
	h.Write([]byte("0123456789abcdef"))
	res := h.result(0, time.Second)
	if res.OutputBytes != 16 || res.ElidedBytes != 6 || !bytes.HasPrefix(res.Output, []byte("01234")) || !bytes.HasSuffix(res.Output, []byte("bcdef")) {
		t.Errorf("headTail(10) of 16 bytes = %s", showRes(res))
	}
}

// fakeWrapEnv, set in a process's environment, makes this test binary a
// wrapper for one command of the fake (its arguments) rather than run
// tests. Its value is the fake's bug.
const fakeWrapEnv = "SBT_FAKE_WRAP"

func init() {
	if bug, ok := os.LookupEnv(fakeWrapEnv); ok {
		os.Exit(fakeWrapper(bug, os.Args[1:]))
	}
}

// fakeWrapper runs argv in a process group of its own, as a child
// subreaper, so that whatever the command starts and leaves behind is
// re-parented to it. When the command's leader ends, or on SIGUSR1 (a
// timeout, a cancel, Close, KillOthers), it kills its group and then every
// child it has, until none is left, and writes the leader's status to fd
// 3: "exit N", "signal N" or "notfound 0".
func fakeWrapper(bug string, argv []string) int {
	syscall.CloseOnExec(3) // for the wrapper alone, not the command
	status := os.NewFile(3, "status")
	if _, _, errno := syscall.RawSyscall(syscall.SYS_PRCTL, 36 /* PR_SET_CHILD_SUBREAPER */, 1, 0); errno != 0 {
		fmt.Fprintln(os.Stderr, "fake wrapper: subreaper:", errno)
		return 2
	}
	env := slices.DeleteFunc(os.Environ(), func(e string) bool { return strings.HasPrefix(e, fakeWrapEnv+"=") })
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = env
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	usr1 := make(chan os.Signal, 1)
	signal.Notify(usr1, syscall.SIGUSR1)
	// Caught, not ignored: the command must not inherit an ignored TERM.
	signal.Notify(make(chan os.Signal, 1), syscall.SIGTERM)
	if err := cmd.Start(); err != nil {
		if errors.Is(err, exec.ErrNotFound) || errors.Is(err, fs.ErrNotExist) {
			fmt.Fprintln(status, "notfound 0")
			return 0
		}
		fmt.Fprintln(os.Stderr, "fake wrapper:", err)
		return 2
	}
	leader := cmd.Process.Pid
	go func() {
		<-usr1
		syscall.Kill(-leader, syscall.SIGKILL)
	}()
	// The leader stays a zombie until the sweep is over: what polls for it
	// (kill -0) finds it until then, and so does nothing before its kill.
	if bug != "no-sweep" && bug != "no-waitdelay" && waitExitedNoReap(leader) == nil {
		for {
			kids := slices.DeleteFunc(wrapperChildren(), func(pid int) bool { return pid == leader })
			if len(kids) == 0 {
				break
			}
			for _, pid := range kids {
				syscall.Kill(pid, syscall.SIGKILL)
			}
			for _, pid := range kids {
				syscall.Wait4(pid, nil, syscall.WNOHANG, nil)
			}
			time.Sleep(100 * time.Microsecond)
		}
	}
	cmd.Wait()
	ws := cmd.ProcessState.Sys().(syscall.WaitStatus)
	if ws.Signaled() {
		fmt.Fprintln(status, "signal", int(ws.Signal()))
	} else {
		fmt.Fprintln(status, "exit", ws.ExitStatus())
	}
	return 0
}

// waitExitedNoReap blocks until child pid has ended and leaves it a zombie
// (waitid with WNOWAIT).
func waitExitedNoReap(pid int) error {
	var info [128]byte // siginfo_t
	for {
		_, _, errno := syscall.Syscall6(syscall.SYS_WAITID, 1 /* P_PID */, uintptr(pid), uintptr(unsafe.Pointer(&info[0])), 4|0x01000000 /* WEXITED|WNOWAIT */, 0, 0)
		switch errno {
		case 0:
			return nil
		case syscall.EINTR:
			continue
		default:
			return errno
		}
	}
}

// wrapperChildren lists the calling process's children from /proc: from
// its threads' children files (quick) where the kernel has them, else from
// every process's parent.
func wrapperChildren() []int {
	var kids []int
	if files, _ := filepath.Glob("/proc/self/task/*/children"); len(files) > 0 {
		for _, f := range files {
			data, _ := os.ReadFile(f)
			for _, field := range strings.Fields(string(data)) {
				var pid int
				fmt.Sscan(field, &pid)
				kids = append(kids, pid)
			}
		}
		return kids
	}
	self := os.Getpid()
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, p := range stats {
		data, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		s := string(data)
		i := strings.LastIndexByte(s, ')')
		if i < 0 {
			continue
		}
		var state string
		var ppid int
		if _, err := fmt.Sscan(s[i+1:], &state, &ppid); err == nil && ppid == self {
			var pid int
			fmt.Sscan(filepath.Base(filepath.Dir(p)), &pid)
			kids = append(kids, pid)
		}
	}
	return kids
}
