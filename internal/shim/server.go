package shim

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/swerve-dev/swerve/internal/sandbox"
	"github.com/swerve-dev/swerve/internal/shim/tools"
)

// outputDrain bounds how long a finished command's output is still
// collected after the sweep while something holds its pipe open: only a
// process the sweep had to spare (one a concurrent, still running command
// may have started) can. Whatever the command wrote before it exited is
// kept regardless (see collectOutput).
const outputDrain = 10 * time.Millisecond

// Server serves the protocol. Its main stream (Serve's r and w) is its
// lifeline: when it ends, the server kills everything it started and
// returns. Optionally it also listens on a unix socket (Listen), whose
// connections are served the same way while the main stream lasts; a
// socket bypasses the container engine's stream copying.
type Server struct {
	// Software names the helper in the handshake, e.g. "swerve v0.1.0".
	Software string

	ln net.Listener
	wg sync.WaitGroup // request handlers and socket connections

	// editor serves the file editor for every stream, so that undo_edit
	// reverts edits made over any of them.
	editor *tools.Editor

	// reaps is set when orphans of commands come to the helper (it is
	// PID 1 or a child subreaper), which is what sweep relies on.
	reaps bool

	// guard keeps the helper's OOM priority where it started (nil where
	// it cannot); see guard_linux.go.
	guard *oomGuard

	mu      sync.Mutex
	running map[runKey]*proc              // exec requests in flight
	tooling map[runKey]context.CancelFunc // tool requests in flight
	groups  map[int]struct{}              // every process group started, killed at exit
	conns   map[net.Conn]struct{}

	shells    map[runKey]*shell // persistent shells, by stream and shell id
	nextShell uint64
	shellPIDs map[int]struct{} // bashes of shells not yet waited for
}

// stream is one connection's write side; request ids are per stream.
type stream struct {
	wmu sync.Mutex
	w   io.Writer
}

type runKey struct {
	st *stream
	id uint64
}

type proc struct {
	pgid     int
	start    uint64 // the leader's start time, clock ticks since boot; 0 if unknown
	timedOut bool
	done     bool // the leader ended
	killed   bool // a timeout or cancel is killing it

	// kill is held while the command's tree is being killed, and to mark
	// the leader reaped: once it is, its pid may name another process.
	kill   sync.Mutex
	reaped bool
}

// Listen makes the server accept connections on a unix socket at path once
// Serve runs. The socket is made accessible to every user: the directory
// holding it is what guards it.
func (s *Server) Listen(path string) error {
	_ = os.Remove(path)
	ln, err := net.Listen("unix", path)
	if err != nil {
		return fmt.Errorf("shim: listen on %s: %w", path, err)
	}
	if err := os.Chmod(path, 0o666); err != nil {
		ln.Close()
		return fmt.Errorf("shim: %w", err)
	}
	s.ln = ln
	return nil
}

// Serve reads requests from r and answers on w until r ends or ctx is
// cancelled. Before returning it kills every process group it started, so
// nothing outlives the stream.
func (s *Server) Serve(ctx context.Context, r io.Reader, w io.Writer) error {
	s.running = map[runKey]*proc{}
	s.tooling = map[runKey]context.CancelFunc{}
	s.groups = map[int]struct{}{}
	s.shells = map[runKey]*shell{}
	s.shellPIDs = map[int]struct{}{}
	// Relative paths in tool calls are the workdir's, as they are for
	// commands.
	wd, _ := os.Getwd()
	s.editor = tools.NewEditor(wd)
	s.conns = map[net.Conn]struct{}{}
	// As a container's PID 1, or as a child subreaper elsewhere, orphans of
	// killed commands come to us: reap them so they don't linger as zombies.
	if os.Getpid() == 1 || setSubreaper() == nil {
		s.reaps = true
		stop := startReaper(&s.mu, s.isRunningLocked)
		defer stop()
	}
	s.guard = startOOMGuard()
	defer s.guard.close()
	ctx, cancel := context.WithCancel(ctx)
	// When the stream ends, nothing may outlive it: kill what runs (the
	// cancelled ctx kills in-flight commands), then wait for the handlers.
	// The socket connections close first: a command of theirs that the
	// cancel kills must not get its answer out as if it had simply ended.
	defer func() {
		s.closeConns()
		cancel()
		s.killAll()
		s.wg.Wait()
		s.sweep(true) // whatever escaped the process groups
	}()
	if s.ln != nil {
		s.wg.Go(func() { s.accept(ctx) })
	}
	return s.serveStream(ctx, r, w)
}

func (s *Server) accept(ctx context.Context) {
	for {
		c, err := s.ln.Accept()
		if err != nil {
			return // closed by closeConns
		}
		s.mu.Lock()
		s.conns[c] = struct{}{}
		s.mu.Unlock()
		s.wg.Go(func() {
			if err := s.serveStream(ctx, c, c); err != nil {
				fmt.Fprintf(os.Stderr, "swerve shim: socket connection: %v\n", err)
			}
			c.Close()
			s.mu.Lock()
			delete(s.conns, c)
			s.mu.Unlock()
		})
	}
}

// closeConns stops listening and ends every socket connection.
func (s *Server) closeConns() {
	if s.ln != nil {
		s.ln.Close()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for c := range s.conns {
		c.Close()
	}
}

// serveStream serves requests from one stream until it ends.
func (s *Server) serveStream(ctx context.Context, r io.Reader, w io.Writer) error {
	st := &stream{w: w}
	defer s.closeShells(st)
	br := bufio.NewReaderSize(r, 64<<10)
	for {
		m, payload, err := readFrame(br)
		if err != nil {
			if errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed) {
				return nil
			}
			return err
		}
		if m.Op == OpCancel {
			s.cancel(st, m.Target)
			continue
		}
		s.wg.Go(func() { s.handle(ctx, st, m, payload) })
	}
}

func (s *Server) handle(ctx context.Context, st *stream, m *Message, payload []byte) {
	resp := &Message{ID: m.ID}
	var out []byte
	switch m.Op {
	case OpHello:
		resp.Version = ProtocolVersion
		resp.PID = os.Getpid()
		resp.Workdir, _ = os.Getwd()
		resp.Software = s.Software
	case OpExec:
		out = s.exec(ctx, runKey{st, m.ID}, m, payload, resp)
	case OpRead:
		data, err := os.ReadFile(m.Path)
		setErr(resp, err)
		out = data
	case OpWrite:
		setErr(resp, writeFile(m.Path, payload, fs.FileMode(m.Mode)))
	case OpTool:
		out = s.tool(ctx, runKey{st, m.ID}, m.Tool, payload, resp)
	case OpShellOpen:
		s.shellOpen(st, m, resp)
	case OpShellRun:
		out = s.shellRun(ctx, runKey{st, m.ID}, m, payload, resp)
	case OpShellClose:
		s.shellClose(ctx, st, m.Shell)
	default:
		resp.Err, resp.ErrKind = fmt.Sprintf("unknown op %q (helper speaks protocol %d)", m.Op, ProtocolVersion), KindInvalid
	}
	st.send(resp, out)
}

func setErr(resp *Message, err error) {
	if err == nil {
		return
	}
	resp.Err = err.Error()
	switch {
	case errors.Is(err, fs.ErrNotExist):
		resp.ErrKind = KindNotFound
	default:
		resp.ErrKind = KindOther
	}
}

func (st *stream) send(m *Message, payload []byte) {
	buf, err := appendFrame(nil, m, payload)
	if err != nil {
		buf, _ = appendFrame(nil, &Message{ID: m.ID, Err: err.Error(), ErrKind: KindOther}, nil)
	}
	st.wmu.Lock()
	defer st.wmu.Unlock()
	if _, err := st.w.Write(buf); err != nil && !errors.Is(err, net.ErrClosed) && !errors.Is(err, io.ErrClosedPipe) {
		fmt.Fprintf(os.Stderr, "swerve shim: write response: %v\n", err)
	}
}

func writeFile(path string, data []byte, mode fs.FileMode) error {
	if mode == 0 {
		mode = 0o644
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, mode.Perm())
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Chmod(mode.Perm()); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// exec runs one command in its own process group and fills resp. When the
// command ends, by exiting, on timeout or on cancel, everything it started is
// killed (see sweep) before its output is collected, so what its leftovers
// would print afterwards is not part of the result. With m.KillOthers,
// every other process in the box goes too.
func (s *Server) exec(ctx context.Context, key runKey, m *Message, stdin []byte, resp *Message) []byte {
	if len(m.Cmd) == 0 {
		resp.Err, resp.ErrKind = "exec: empty command", KindInvalid
		return nil
	}
	limit := m.MaxOutput
	if limit == 0 {
		limit = sandbox.DefaultMaxOutput
	}
	out := newCappedBuffer(limit)
	var cred *syscall.Credential
	if m.User != "" {
		uid, gid, err := ParseUser(m.User)
		if err != nil {
			resp.Err, resp.ErrKind = "exec: "+err.Error(), KindInvalid
			return nil
		}
		cred = &syscall.Credential{Uid: uid, Gid: gid, Groups: []uint32{}}
	}
	argv := m.Cmd
	if m.PrivateMemory {
		// Started through the helper's own binary, which makes the command
		// non-dumpable before it execs it (see ExecPrivate), switching
		// users there too. /proc/self/exe is resolved by the forked child,
		// a copy of the helper.
		pre := []string{"/proc/self/exe", ExecSubcommand}
		if cred != nil {
			pre = append(pre, "--user", m.User)
			cred = nil
		}
		argv = append(append(pre, "--"), m.Cmd...)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = m.Cwd
	if len(m.Env) > 0 {
		cmd.Env = append(os.Environ(), m.Env...)
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Credential: cred}
	// Our own pipes rather than os/exec's copying goroutines: those make
	// Wait hang on a pipe a background process holds, and WaitDelay then
	// throws away output not yet read.
	outR, outW, err := outputPipe()
	if err != nil {
		resp.Err, resp.ErrKind = "exec: "+err.Error(), KindOther
		return nil
	}
	defer outR.Close()
	cmd.Stdout, cmd.Stderr = outW, outW
	var inR, inW *os.File
	if m.Stdin {
		if inR, inW, err = os.Pipe(); err != nil {
			outW.Close()
			resp.Err, resp.ErrKind = "exec: "+err.Error(), KindOther
			return nil
		}
		cmd.Stdin = inR
	}

	start := time.Now()
	raises := s.guard.count()
	p := &proc{}
	s.mu.Lock() // the reaper must not see this child before it is recorded
	err = cmd.Start()
	if err == nil {
		p.pgid = cmd.Process.Pid
		// Nothing waits for the leader yet, so its /proc entry is still
		// there; 0 (unknown) only makes the sweep spare more.
		p.start, _, _ = procStartTime(p.pgid)
		s.running[key] = p
		s.groups[p.pgid] = struct{}{}
	}
	s.mu.Unlock()
	if err == nil && !m.PrivateMemory {
		// The command dies before the helper when memory runs out. Best
		// effort: it may have started something already. A PrivateMemory
		// command is raised before it execs (see ExecPrivate).
		deprioritise(p.pgid)
	}
	outW.Close() // the child has its copy; EOF comes when every holder exits
	if inR != nil {
		inR.Close()
	}
	if err != nil {
		if inW != nil {
			inW.Close()
		}
		resp.ExitCode = startFailureCode(err)
		fmt.Fprintf(out, "%s: %v\n", m.Cmd[0], unwrapExecErr(err))
		o, total, _ := out.Result()
		resp.OutputBytes = total
		return o
	}
	if inW != nil {
		go func() {
			_, _ = inW.Write(stdin) // EPIPE when the command does not read it all
			inW.Close()
		}()
	}
	copied := make(chan struct{})
	go func() {
		_, _ = io.Copy(out, outR)
		close(copied)
	}()

	var timer *time.Timer
	if m.TimeoutMS > 0 {
		timer = time.AfterFunc(time.Duration(m.TimeoutMS)*time.Millisecond, func() {
			s.mu.Lock()
			p.timedOut = !p.done
			s.mu.Unlock()
			s.killCommand(p)
		})
	}
	stop := context.AfterFunc(ctx, func() { s.killCommand(p) })
	// The leader has ended, and stays a zombie until cmd.Wait: kill what
	// it left, right away, before reading the rest of the output, so that
	// once every writer is dead the pipe ends at once and nothing printed
	// after the command's end counts. Until the leader is reaped, a
	// leftover that polls for it (kill -0, /proc/PID) still finds it, and
	// so has nothing to act on before the sweep kills it.
	var werr error
	held := waitExited(p.pgid) == nil
	if !held {
		// waitid does not fail on Linux; if it did, the leader may still
		// run, and its leftovers must wait for its end: reap, then sweep.
		// A kill may come meanwhile, so the wait does not hold p.kill.
		werr = cmd.Wait()
		p.kill.Lock()
		p.reaped = true
		p.kill.Unlock()
	}
	s.mu.Lock()
	p.done = true
	timedOut := p.timedOut
	s.mu.Unlock()
	if timedOut || !s.reaps {
		// The group, even when its leader exited before the kill; without
		// a subreaper it is all that can be found.
		killTree(p.pgid)
	}
	s.sweep(m.KillOthers)
	if m.KillOthers && s.reaps {
		resp.KilledOthers = true
	}
	if held {
		werr = s.reap(p, cmd)
	}
	stop()
	if timer != nil {
		timer.Stop()
	}
	s.mu.Lock()
	delete(s.running, key)
	s.mu.Unlock()
	if inW != nil {
		inW.Close() // unblocks a stdin writer stuck on a pipe nobody reads
	}
	collectOutput(outR, out, copied)

	resp.DurationNS = time.Since(start).Nanoseconds()
	resp.ExitCode = exitCode(cmd.ProcessState, werr)
	if timedOut {
		resp.TimedOut = true
		resp.ExitCode = sandbox.TimeoutExitCode
	}
	resp.Findings = s.guard.findingsSince(raises)
	o, total, elided := out.Result()
	resp.OutputBytes, resp.ElidedBytes = total, elided
	return o
}

// reap reaps a command's leader, which has ended, and marks it reaped,
// after any kill of its tree under way: that kill relies on the leader's
// pid being its own.
func (s *Server) reap(p *proc, cmd *exec.Cmd) error {
	p.kill.Lock()
	defer p.kill.Unlock()
	err := cmd.Wait()
	p.reaped = true
	return err
}

// killCommand kills a command that did not end by itself (its timeout, a
// cancel): its process group, every descendant of its leader, and the
// helper's orphans that it may have started and no other running command
// may have (as the sweep after its end will judge them), with their
// descendants. All are stopped before any is killed (see killTree), so
// that, from the moment of the kill, none of them runs: not even one that
// would notice its leader's death. The sweep after the leader's end takes
// what is left.
func (s *Server) killCommand(p *proc) {
	if p.pgid <= 1 {
		return // a shell call's: its shell is killed by its own path
	}
	p.kill.Lock()
	defer p.kill.Unlock()
	if p.reaped {
		return // its pid and group id may be another's by now
	}
	s.mu.Lock()
	p.killed = true
	s.mu.Unlock()
	s.killWithOrphans(p.pgid, p.pgid) // not reaped: its pid is still its own
}

// killWithOrphans kills process group pgid, the processes in more, and
// the orphans the sweep would kill now, with everything below them, as one
// tree (see killTree). The group stops first, so that it starts no more
// orphans while they are listed.
func (s *Server) killWithOrphans(pgid int, more ...int) {
	if pgid <= 1 {
		return
	}
	_ = syscall.Kill(-pgid, syscall.SIGSTOP)
	if s.reaps {
		s.mu.Lock()
		more = append(more, s.sweepTargetsLocked(false)...)
		s.mu.Unlock()
	}
	killTree(pgid, more...)
}

// isRunningLocked reports whether pid is a command this server started and
// has not yet waited for. s.mu must be held.
func (s *Server) isRunningLocked(pid int) bool {
	if _, ok := s.shellPIDs[pid]; ok {
		return true // a shell, reaped by its own Wait
	}
	for _, p := range s.running {
		if p.pgid == pid {
			return true
		}
	}
	return false
}

// collectOutput waits for the output copy to reach EOF. If a process the
// sweep spared keeps the pipe open past outputDrain, it stops the copy and
// drains what is already buffered without blocking, so nothing the command
// itself wrote is lost.
func collectOutput(r *os.File, out io.Writer, copied <-chan struct{}) {
	select {
	case <-copied:
		return
	default:
	}
	t := time.NewTimer(outputDrain)
	defer t.Stop()
	select {
	case <-copied:
		return
	case <-t.C:
	}
	_ = r.SetReadDeadline(time.Now())
	<-copied
	rc, err := r.SyscallConn()
	if err != nil {
		return
	}
	buf := make([]byte, 64<<10)
	_ = rc.Control(func(fd uintptr) {
		for {
			n, err := syscall.Read(int(fd), buf)
			if n > 0 {
				out.Write(buf[:n])
			}
			if err != nil || n <= 0 {
				return // EAGAIN: nothing more buffered; 0: EOF
			}
		}
	})
}

func (s *Server) cancel(st *stream, id uint64) {
	s.mu.Lock()
	p := s.running[runKey{st, id}]
	stop := s.tooling[runKey{st, id}]
	s.mu.Unlock()
	if p != nil {
		s.killCommand(p)
	}
	if stop != nil {
		stop()
	}
}

// tool runs one tool call and returns the JSON Result for the payload.
func (s *Server) tool(ctx context.Context, key runKey, name string, args []byte, resp *Message) []byte {
	ctx, stop := context.WithCancel(ctx)
	defer stop()
	s.mu.Lock()
	s.tooling[key] = stop
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.tooling, key)
		s.mu.Unlock()
	}()
	res, err := tools.Call(ctx, s.editor, name, args)
	if err != nil {
		resp.Err, resp.ErrKind = err.Error(), KindInvalid
		if ctx.Err() != nil {
			resp.ErrKind = KindOther
		}
		return nil
	}
	out, err := json.Marshal(res)
	if err != nil {
		resp.Err, resp.ErrKind = "encode result: "+err.Error(), KindOther
		return nil
	}
	return out
}

// killAll kills every process group this server started.
func (s *Server) killAll() {
	s.mu.Lock()
	groups := make([]int, 0, len(s.groups))
	for g := range s.groups {
		groups = append(groups, g)
	}
	s.mu.Unlock()
	for _, g := range groups {
		killTree(g)
	}
}

func exitCode(ps *os.ProcessState, err error) int {
	if ps == nil {
		return -1
	}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	if c := ps.ExitCode(); c >= 0 {
		return c
	}
	if err != nil {
		return -1
	}
	return 0
}

// startFailureCode maps a failure to start a command to the code a shell
// would give: 127 for not found, 126 for not executable.
func startFailureCode(err error) int {
	switch {
	case errors.Is(err, exec.ErrNotFound), errors.Is(err, fs.ErrNotExist):
		return 127
	default:
		return 126
	}
}

func unwrapExecErr(err error) error {
	if ee, ok := errors.AsType[*exec.Error](err); ok {
		return ee.Err
	}
	if pe, ok := errors.AsType[*fs.PathError](err); ok {
		return pe.Err
	}
	return err
}
