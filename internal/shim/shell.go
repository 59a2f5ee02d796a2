package shim

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"github.com/swerve-dev/swerve/internal/sandbox"
)

// Persistent shells (shell_open, shell_run, shell_close).
//
// A shell is one login bash ("bash -l -c DRIVER") started in its own
// process group with three descriptors: fd 3, a pipe on which the helper
// writes one record per call (the call's nonce, a newline, the command
// line, a NUL); fds 1, 2 and 4, one output socket (see outputPipe). The
// driver loop reads a record, evals the command line inside a function
// (so that break, continue and return in it cannot leave the loop; a set
// -x of the command's traces only commands, not the loop) with
// stdin from /dev/null and fds 3 and 4 closed, restores fds 1 and 2 from
// fd 4 (a command may have closed them with exec), and prints the end
// marker: 0x1E "swerve:" NONCE ":" STATUS 0x1E. The helper cuts the call's
// output at its own marker; text that looks like a marker with another
// nonce is output. Each call's nonce is fresh from crypto/rand and reaches
// the shell only with that call's record, so no command can know, and so
// forge, the end or the status of a later call by what it prints. (A
// command runs inside the shell: it can read its own call's nonce, and a
// command that redefines the builtins the driver uses, as shell
// functions, takes over the shell, so that the session's later calls may
// time out or report what it likes, as in any terminal it owned. Nothing
// is graded from these exit codes: grading runs in a fresh box.)
//
// When a call's marker arrives, the helper kills every process below the
// shell (background jobs, and what they started), then sweeps its own
// orphaned children as it does after an exec: daemons that double-forked
// or called setsid are re-parented to the helper and killed there. The
// shell itself lives on, with its working directory, variables and
// functions. On timeout or cancel the helper kills the shell's whole tree:
// the next call starts a fresh shell and says so (Restarted). When the
// shell ends during a call (exit, exec, a kill, set -e), the call reports
// the shell's exit status and Exited.

// shellDriver is the loop the shell runs; see above.
const shellDriver = `__swerve_x=
__swerve_run() { case $__swerve_x in *x*) set -x ;; esac; eval "${__swerve_rec#*$'\n'}"; }
while IFS= read -r -d '' __swerve_rec <&3; do
__swerve_run </dev/null 3<&- 4>&-
{ __swerve_st=$? __swerve_x=$-; set +x; } 2>/dev/null
exec 1>&4 2>&4
disown -a
builtin printf '\036swerve:%s:%d\036' "${__swerve_rec%%$'\n'*}" "$__swerve_st"
done`

// markerTail bounds the bytes after a marker's nonce: ":" status 0x1E.
const markerTail = 16

// shell is one persistent bash and its pipes.
type shell struct {
	opts      *Message // the shell_open request: Cwd, Env
	turn      chan struct{}
	cmd       *exec.Cmd
	pid       int
	rec       *os.File // fd 3 in the shell
	out       *os.File // the helper's end of the output socket
	exited    chan struct{}
	started   bool // a shell has run before: the next start is a restart
	restarted bool // the running bash replaced an earlier one
	closed    bool
	live      atomic.Int64 // the running bash's pid, for closeShells
	buf       []byte       // read buffer, used under the turn
}

// shellOpen starts a shell for st and fills resp.Shell.
func (s *Server) shellOpen(st *stream, m *Message, resp *Message) {
	sh := &shell{opts: m, turn: make(chan struct{}, 1)}
	if err := s.startShell(sh); err != nil {
		resp.Err, resp.ErrKind = "shell: "+err.Error(), KindOther
		return
	}
	s.mu.Lock()
	s.nextShell++
	id := s.nextShell
	s.shells[runKey{st, id}] = sh
	s.mu.Unlock()
	resp.Shell = id
	resp.PID = sh.pid
}

// startShell starts sh's bash. The caller holds sh's turn or owns sh
// alone.
func (s *Server) startShell(sh *shell) error {
	recR, recW, err := os.Pipe()
	if err != nil {
		return err
	}
	outR, outW, err := outputPipe()
	if err != nil {
		recR.Close()
		recW.Close()
		return err
	}
	cmd := exec.Command("bash", "-l", "-c", shellDriver, "swerve-shell")
	cmd.Dir = sh.opts.Cwd
	if len(sh.opts.Env) > 0 {
		cmd.Env = append(os.Environ(), sh.opts.Env...)
	}
	cmd.Stdout, cmd.Stderr = outW, outW
	cmd.ExtraFiles = []*os.File{recR, outW} // fds 3 and 4
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	s.mu.Lock() // the reaper must not see this child before it is recorded
	err = cmd.Start()
	if err == nil {
		s.shellPIDs[cmd.Process.Pid] = struct{}{}
		s.groups[cmd.Process.Pid] = struct{}{}
	}
	s.mu.Unlock()
	if err == nil {
		deprioritise(cmd.Process.Pid) // before the model's first command
	}
	recR.Close()
	outW.Close()
	if err != nil {
		recW.Close()
		outR.Close()
		return fmt.Errorf("start bash: %w", unwrapExecErr(err))
	}
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		s.mu.Lock()
		delete(s.shellPIDs, cmd.Process.Pid)
		s.mu.Unlock()
		close(exited)
		_ = outR.SetReadDeadline(time.Unix(1, 0)) // wakes a call waiting for output
	}()
	sh.restarted = sh.started
	sh.started = true
	sh.live.Store(int64(cmd.Process.Pid))
	sh.cmd, sh.pid, sh.rec, sh.out, sh.exited = cmd, cmd.Process.Pid, recW, outR, exited
	if err := sh.ready(shellStartLimit); err != nil {
		s.stopShell(sh)
		return err
	}
	return nil
}

// shellStartLimit bounds a shell's start-up: the login scripts, then one
// empty call.
const shellStartLimit = time.Minute

// ready waits until the shell's driver answers an empty call, so that what
// the login scripts print, and the time they take, belong to no call.
func (sh *shell) ready(limit time.Duration) error {
	var nonce [16]byte
	_, _ = rand.Read(nonce[:])
	n := base64.RawURLEncoding.EncodeToString(nonce[:])
	marker := []byte("\x1eswerve:" + n + ":0\x1e")
	deadline := time.Now().Add(limit)
	_ = sh.out.SetReadDeadline(deadline)
	_ = sh.rec.SetWriteDeadline(deadline)
	defer func() {
		_ = sh.out.SetReadDeadline(time.Time{})
		_ = sh.rec.SetWriteDeadline(time.Time{})
	}()
	if _, err := sh.rec.Write([]byte(n + "\n:\x00")); err != nil {
		return fmt.Errorf("bash did not start: %w", err)
	}
	if sh.buf == nil {
		sh.buf = make([]byte, 32<<10)
	}
	var seen []byte
	for {
		k, err := sh.out.Read(sh.buf)
		seen = append(seen, sh.buf[:k]...)
		if bytes.Contains(seen, marker) {
			return nil
		}
		if len(seen) > 64<<10 {
			seen = append(seen[:0], seen[len(seen)-len(marker):]...)
		}
		if err != nil {
			out := strings.TrimSpace(string(seen))
			if len(out) > 500 {
				out = out[len(out)-500:]
			}
			select {
			case <-sh.exited:
				return fmt.Errorf("bash exited while starting (its login scripts?): %s", out)
			default:
			}
			return fmt.Errorf("bash did not get ready within %v (its login scripts?): %v: %s", limit, err, out)
		}
	}
}

// stopShell kills sh's bash and everything below it, and waits for it.
func (s *Server) stopShell(sh *shell) {
	if sh.cmd == nil {
		return
	}
	killTree(sh.pid)
	sh.rec.Close()
	select {
	case <-sh.exited:
	case <-time.After(sweepLimit):
		fmt.Fprintf(os.Stderr, "swerve shim: shell %d still alive after %v of killing\n", sh.pid, sweepLimit)
	}
	sh.out.Close()
	s.sweep(false)
	sh.cmd = nil
}

// shellGet finds a stream's shell and takes its turn (waiting for calls
// ahead of it), or returns an error message.
func (s *Server) shellGet(ctx context.Context, st *stream, id uint64) (*shell, string) {
	s.mu.Lock()
	sh := s.shells[runKey{st, id}]
	s.mu.Unlock()
	if sh == nil {
		return nil, fmt.Sprintf("no shell %d on this stream", id)
	}
	select {
	case sh.turn <- struct{}{}:
	case <-ctx.Done():
		return nil, "shell: " + ctx.Err().Error()
	}
	if sh.closed {
		<-sh.turn
		return nil, fmt.Sprintf("shell %d is closed", id)
	}
	return sh, ""
}

// shellClose kills a shell and forgets it.
func (s *Server) shellClose(ctx context.Context, st *stream, id uint64) {
	sh, _ := s.shellGet(ctx, st, id)
	if sh == nil {
		return // closing twice is not an error
	}
	defer func() { <-sh.turn }()
	sh.closed = true
	s.stopShell(sh)
	s.mu.Lock()
	delete(s.shells, runKey{st, id})
	s.mu.Unlock()
}

// closeShells kills every shell of a stream that ended.
func (s *Server) closeShells(st *stream) {
	s.mu.Lock()
	var ids []uint64
	for k, sh := range s.shells {
		if k.st == st {
			ids = append(ids, k.id)
			// Killed first, so that calls still running end now.
			killTree(int(sh.live.Load()))
		}
	}
	s.mu.Unlock()
	for _, id := range ids {
		s.shellClose(context.Background(), st, id)
	}
}

// shellRun runs one command line in a shell and fills resp.
func (s *Server) shellRun(ctx context.Context, key runKey, m *Message, line []byte, resp *Message) []byte {
	if bytes.IndexByte(line, 0) >= 0 {
		resp.Err, resp.ErrKind = "shell: the command line holds a NUL byte", KindInvalid
		return nil
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	s.mu.Lock()
	s.tooling[key] = cancel // OpCancel stops the call
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.tooling, key)
		s.mu.Unlock()
	}()
	sh, msg := s.shellGet(ctx, key.st, m.Shell)
	if sh == nil {
		resp.Err, resp.ErrKind = msg, KindInvalid
		if ctx.Err() != nil {
			resp.ErrKind = KindOther
		}
		return nil
	}
	defer func() { <-sh.turn }()

	start := time.Now()
	if sh.cmd != nil {
		select {
		case <-sh.exited:
			s.stopShell(sh) // ended between calls: start afresh
		default:
		}
	}
	if sh.cmd == nil {
		if err := s.startShell(sh); err != nil {
			resp.Err, resp.ErrKind = "shell: "+err.Error(), KindOther
			return nil
		}
		resp.ShellRestarted = sh.restarted
	}
	limit := m.MaxOutput
	if limit == 0 {
		limit = sandbox.DefaultMaxOutput
	}
	out := newCappedBuffer(limit)

	// Whatever reached the socket since the last call (writers it killed
	// left it there) belongs to no call: read it without waiting (the
	// helper's end is non-blocking) and drop it.
	if sh.buf == nil {
		sh.buf = make([]byte, 32<<10)
	}
	buf := sh.buf
	if rc, err := sh.out.SyscallConn(); err == nil {
		_ = rc.Control(func(fd uintptr) {
			for {
				if n, err := syscall.Read(int(fd), buf); n <= 0 || err != nil {
					return
				}
			}
		})
	}
	_ = sh.out.SetReadDeadline(time.Time{})
	_ = sh.rec.SetWriteDeadline(time.Time{})

	var nonce [16]byte
	_, _ = rand.Read(nonce[:])
	nhex := base64.RawURLEncoding.EncodeToString(nonce[:]) // bash reads it a byte at a time: short
	marker := []byte("\x1eswerve:" + nhex + ":")

	// The call counts as running from here, so that a concurrent exec's
	// sweep spares what it starts.
	p := &proc{start: nowTicks()}
	s.mu.Lock()
	s.running[key] = p
	s.mu.Unlock()

	var timedOut, cancelled bool
	var tmu sync.Mutex
	wake := func(to bool) {
		tmu.Lock()
		if to {
			timedOut = true
		} else {
			cancelled = true
		}
		tmu.Unlock()
		_ = sh.out.SetReadDeadline(time.Unix(1, 0))
		_ = sh.rec.SetWriteDeadline(time.Unix(1, 0))
	}
	var timer *time.Timer
	if m.TimeoutMS > 0 {
		timer = time.AfterFunc(time.Duration(m.TimeoutMS)*time.Millisecond, func() { wake(true) })
	}
	stop := context.AfterFunc(ctx, func() { wake(false) })

	rec := make([]byte, 0, len(nhex)+1+len(line)+1)
	rec = append(append(append(append(rec, nhex...), '\n'), line...), 0)
	_, werr := sh.rec.Write(rec)

	var pending []byte
	status, ended := 0, false
	for werr == nil {
		n, err := sh.out.Read(buf)
		pending = append(pending, buf[:n]...)
		if i := bytes.Index(pending, marker); i >= 0 {
			rest := pending[i+len(marker):]
			if j := bytes.IndexByte(rest, 0x1e); j >= 0 {
				status, _ = strconv.Atoi(string(rest[:j]))
				out.Write(pending[:i])
				ended = true
				break
			}
		} else if keep := len(marker) + markerTail; len(pending) > keep {
			out.Write(pending[:len(pending)-keep])
			pending = append(pending[:0], pending[len(pending)-keep:]...)
		}
		if err == nil {
			continue
		}
		if !errors.Is(err, os.ErrDeadlineExceeded) {
			break // EOF: the shell is ending
		}
		// A deadline: this call's timeout or cancel, or the shell's end;
		// or a late wake-up of an earlier call, which is ignored. Each
		// waker sets its flag before the deadline, so clearing first and
		// then looking misses none.
		_ = sh.out.SetReadDeadline(time.Time{})
		tmu.Lock()
		woken := timedOut || cancelled
		tmu.Unlock()
		select {
		case <-sh.exited:
			woken = true
		default:
		}
		if woken {
			break
		}
	}
	if timer != nil {
		timer.Stop()
	}
	stop()
	tmu.Lock()
	killed := timedOut || cancelled
	tmu.Unlock()

	s.mu.Lock()
	delete(s.running, key)
	s.mu.Unlock()
	switch {
	case ended:
		s.sweepShell(sh)
		resp.ExitCode = status
	default:
		if !ended {
			out.Write(pending)
		}
		// Timeout, cancel, or the shell is gone: a shell whose call did
		// not end cleanly is not used again.
		gone := false
		if killed {
			select {
			case <-sh.exited:
				gone = true
			default:
			}
		} else {
			// The shell is ending (its output ended, or it was reaped):
			// wait for its status.
			select {
			case <-sh.exited:
				gone = true
			case <-time.After(sweepLimit):
			}
		}
		ws := -1
		if gone && sh.cmd.ProcessState != nil {
			ws = exitCode(sh.cmd.ProcessState, nil)
		}
		// Kill what is left in the shell's group and what escaped it,
		// keep what they wrote before they died, then finish the shell
		// off. A shell still running (a timeout, a cancel) is stopped
		// with all that escaped it before any of them dies, so that
		// nothing acts on the news (see killTree).
		s.killWithOrphans(sh.pid)
		s.sweep(false)
		_ = sh.out.SetReadDeadline(time.Now().Add(outputDrain))
		for {
			n, err := sh.out.Read(buf)
			out.Write(buf[:n])
			if err != nil {
				break
			}
		}
		s.stopShell(sh)
		switch {
		case timedOut:
			resp.TimedOut, resp.ExitCode = true, sandbox.TimeoutExitCode
		case cancelled:
			resp.ExitCode = -1
		case werr != nil && !gone:
			resp.Err, resp.ErrKind = "shell: write command: "+werr.Error(), KindOther
		default:
			resp.ShellExited, resp.ExitCode = true, ws
		}
	}
	resp.DurationNS = time.Since(start).Nanoseconds()
	o, total, elided := out.Result()
	resp.OutputBytes, resp.ElidedBytes = total, elided
	return o
}

// sweepShell kills every process below sh's bash, then the helper's
// orphans, until a round finds nothing left: killed processes hand their
// children to the helper, whose sweep takes them.
func (s *Server) sweepShell(sh *shell) {
	deadline := time.Now().Add(sweepLimit)
	for round := 0; ; round++ {
		killed := false
		for _, pid := range shellChildren(sh.pid) {
			if _, state, ok := procStartTime(pid); !ok || state == "Z" || state == "X" {
				continue
			}
			_ = syscall.Kill(pid, syscall.SIGKILL)
			killed = true
		}
		if s.reaps && s.sweepRound(false) {
			killed = true
		}
		if !killed || time.Now().After(deadline) {
			return
		}
		time.Sleep(time.Duration(min(50*(round+1), 1000)) * time.Microsecond)
	}
}

// shellChildren lists the children of a shell (bash has one thread).
func shellChildren(pid int) []int {
	buf := childBuf.Get().(*[]byte)
	defer childBuf.Put(buf)
	p := strconv.Itoa(pid)
	data, err := readOnce("/proc/"+p+"/task/"+p+"/children", *buf)
	if err != nil {
		if childrenFiles() {
			return nil // gone
		}
		return descendants(pid)
	}
	var pids []int
	for _, f := range strings.Fields(string(data)) {
		if c, err := strconv.Atoi(f); err == nil {
			pids = append(pids, c)
		}
	}
	return pids
}

// nowTicks is the current time in the unit of /proc start times: clock
// ticks (USER_HZ, 100 a second) since boot, suspend included.
func nowTicks() uint64 {
	var ts syscall.Timespec
	const clockBoottime = 7
	if _, _, e := syscall.Syscall(syscall.SYS_CLOCK_GETTIME, clockBoottime, uintptr(unsafe.Pointer(&ts)), 0); e != 0 {
		return 0 // unknown: sweeps spare more
	}
	return uint64(ts.Sec)*100 + uint64(ts.Nsec)/10_000_000
}
