package shim

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// startSlack is how many clock ticks apart two start times may be and
// still count as "maybe the same moment": /proc start times are in clock
// ticks (usually 10 ms), so a process a command started may carry the tick
// of the command's own start or the one before it was recorded.
const startSlack = 1

// sweepLimit bounds one sweep: a process stuck in the kernel (state D, a
// hung NFS read) may not die at once, and the command's result must not
// wait for it forever.
const sweepLimit = 5 * time.Second

// sweep kills what ended commands left behind. The helper is a child
// subreaper (or PID 1), so every process a command started that outlived its
// parent is now a direct child of the helper. A direct child that is not the
// leader of a running command is killed unless a running command could have
// started it: its start time is at or after that command's start (with
// startSlack). Killing a process hands its own children to the helper, so
// the sweep repeats until a round finds nothing to kill; that converges
// even against fork loops, since a killed process forks no more.
//
// With all set, every process in the helper's subtree is killed, leaders of
// running commands included, whoever started them.
func (s *Server) sweep(all bool) {
	if !s.reaps {
		return
	}
	deadline := time.Now().Add(sweepLimit)
	for round := 0; ; round++ {
		if !s.sweepRound(all) {
			return
		}
		if time.Now().After(deadline) {
			fmt.Fprintf(os.Stderr, "swerve shim: processes left by a command still alive after %v of killing\n", sweepLimit)
			return
		}
		// Give what was killed a moment to exit and hand its children over.
		time.Sleep(time.Duration(min(50*(round+1), 1000)) * time.Microsecond)
	}
}

// sweepRound kills the eligible children of the helper once and reaps the
// dead ones. It reports whether it sent any signal, in which case another
// round must look at what the killed processes leave.
func (s *Server) sweepRound(all bool) (killed bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, pid := range s.sweepTargetsLocked(all) {
		_ = syscall.Kill(pid, syscall.SIGKILL)
		killed = true
	}
	return killed
}

// sweepTargetsLocked lists the live children of the helper that a sweep
// kills now: with all, every one; else those that lead no running command
// and that no running command may have started. On the way it reaps the
// dead ones that no exec.Cmd waits for. s.mu must be held.
func (s *Server) sweepTargetsLocked(all bool) []int {
	var out []int
	for _, pid := range childPIDs(all) {
		leader := s.isRunningLocked(pid)
		if leader && !all {
			continue
		}
		start, state, ok := procStartTime(pid)
		if !ok {
			continue // gone already
		}
		if state == "Z" || state == "X" {
			// Its children, if any, are ours now. A running command's
			// leader is reaped by its own exec.Cmd.Wait.
			if !leader {
				var ws syscall.WaitStatus
				_, _ = syscall.Wait4(pid, &ws, syscall.WNOHANG, nil)
			}
			continue
		}
		if !all && s.mayHaveStartedLocked(start) {
			continue
		}
		out = append(out, pid)
	}
	return out
}

// mayHaveStartedLocked reports whether a running command could have started
// a process that started at tick start: one whose leader has not ended and
// is not being killed. s.mu must be held.
func (s *Server) mayHaveStartedLocked(start uint64) bool {
	for _, p := range s.running {
		if !p.done && !p.killed && p.start <= start+startSlack {
			return true
		}
	}
	return false
}

// childrenFiles says whether /proc/self/task/*/children exists (the kernel
// was built with CONFIG_PROC_CHILDREN); without it childPIDs scans /proc.
var childrenFiles = sync.OnceValue(func() bool {
	_, err := os.Stat("/proc/self/task/" + strconv.Itoa(os.Getpid()) + "/children")
	return err == nil
})

// childBuf holds buffers for children files: big enough for thousands of
// pids, so that each file is read in one system call.
var childBuf = sync.Pool{New: func() any { b := make([]byte, 64<<10); return &b }}

// childPIDs lists the helper's direct children: with leaders set, all of
// them; without, at least every orphan, the leaders of commands being
// optional. The per-thread children files are cheap to read, whatever runs
// on the machine; each is read in one system call so that the list is
// taken in one go.
//
// A child is listed under the thread that forked it, so a command's leader
// may be under any of the helper's threads; but the kernel hands orphans
// to the first live thread of their subreaper, the main thread, which a Go
// program never ends. So orphans alone take one file.
func childPIDs(leaders bool) []int {
	if !childrenFiles() {
		return scanChildren()
	}
	var tids []string
	if leaders {
		tasks, err := os.ReadDir("/proc/self/task")
		if err != nil {
			return scanChildren()
		}
		for _, t := range tasks {
			tids = append(tids, t.Name())
		}
	} else {
		tids = []string{strconv.Itoa(os.Getpid())}
	}
	var pids []int
	buf := childBuf.Get().(*[]byte)
	defer childBuf.Put(buf)
	for _, tid := range tids {
		data, err := readOnce("/proc/self/task/"+tid+"/children", *buf)
		if err != nil {
			continue // the thread ended; its children moved to another
		}
		for _, f := range strings.Fields(string(data)) {
			if pid, err := strconv.Atoi(f); err == nil {
				pids = append(pids, pid)
			}
		}
	}
	return pids
}

// readOnce reads up to len(buf) bytes of path with a single read.
func readOnce(path string, buf []byte) ([]byte, error) {
	fd, err := syscall.Open(path, syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	defer syscall.Close(fd)
	for {
		n, err := syscall.Read(fd, buf)
		if errors.Is(err, syscall.EINTR) {
			continue
		}
		if err != nil {
			return nil, err
		}
		return buf[:n], nil
	}
}

// scanChildren finds the helper's children by reading every process's
// parent from /proc: the slow way, for kernels without children files.
func scanChildren() []int {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	self := os.Getpid()
	var pids []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		if ppid, _, ok := statParents(pid); ok && ppid == self {
			pids = append(pids, pid)
		}
	}
	return pids
}

// procStartTime reads the start time of pid (field 22 of /proc/PID/stat,
// clock ticks since boot) and its state letter.
func procStartTime(pid int) (start uint64, state string, ok bool) {
	f, state, ok := procStat(pid)
	// f starts at field 3 (state), so field 22 is f[19].
	if !ok || len(f) < 20 {
		return 0, "", false
	}
	start, err := strconv.ParseUint(f[19], 10, 64)
	return start, state, err == nil
}
