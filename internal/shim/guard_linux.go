package shim

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// What the kernel allows code in a box to do to the helper, and what the
// helper does about it. Code under test runs as root in most boxes, without
// CAP_SYS_PTRACE and CAP_SYS_RESOURCE (container boxes drop both):
//
//   - /proc/<pid>/oom_score_adj of any process may be raised by whoever can
//     write the file (its owner, or root through CAP_DAC_OVERRIDE), up to
//     1000; lowering it below the process's oom_score_adj_min, which a
//     process inherits from its parent and only a CAP_SYS_RESOURCE writer
//     sets, is refused. In a Docker box the minimum is the box's own
//     starting value (0). So root in the box can make the helper the OOM
//     killer's first choice, and can take back the 1000 the helper gave
//     its commands; an unprivileged user can do neither.
//   - A dumpable process of the same user may be traced (ptrace) and its
//     /proc/<pid>/fd, mem and environ opened: root in the box could read or
//     write the helper's stream, or make it say anything. A non-dumpable
//     one needs CAP_SYS_PTRACE for all of that, which the box lacks.
//   - Catchable signals are held (see HoldSignals); SIGKILL and SIGSTOP
//     cannot reach a PID 1 from inside its namespace, but do reach a
//     helper that is not PID 1 (backends that run it under another init).
//
// So the helper makes itself non-dumpable, starts every command with the
// highest OOM priority (1000: the command, and what it starts, die before
// the helper when memory runs out, unless the code lowers its own on
// purpose), and watches its own OOM priority, putting it back at once and
// recording the raise. A raise and an allocation made together can still
// beat the watch: a box that dies that way is the patch's 0 all the same
// (grader.Settle).

// oomCommand is the OOM priority commands start with.
const oomCommand = 1000

// guardEvery is how often the helper looks at its own OOM priority.
const guardEvery = 5 * time.Millisecond

// Undumpable makes the calling process (the helper) non-dumpable: no
// process in the box without CAP_SYS_PTRACE can trace it or open its
// /proc/<pid>/fd, mem or environ (see above). Commands it starts are
// dumpable again once they exec.
func Undumpable() error {
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err != nil {
		return fmt.Errorf("shim: make the helper non-dumpable: %w", err)
	}
	return nil
}

// deprioritise gives process pid the highest OOM priority, best effort.
func deprioritise(pid int) {
	_ = os.WriteFile(fmt.Sprintf("/proc/%d/oom_score_adj", pid), []byte(strconv.Itoa(oomCommand)), 0)
}

// DeprioritiseSelf gives the calling process the highest OOM priority, so
// that what it execs and starts inherit it (ExecPrivate's commands).
func DeprioritiseSelf() { deprioritise(os.Getpid()) }

// oomGuard watches the helper's own OOM priority and restores it.
type oomGuard struct {
	own  int // the priority the helper started with
	stop chan struct{}
	done chan struct{}

	mu     sync.Mutex
	raises int // raises seen (and undone) so far
	last   int // the last value found raised
}

// startOOMGuard starts watching, or returns nil where the priority cannot
// be read or written (no /proc).
func startOOMGuard() *oomGuard {
	own, err := readOOMScoreAdj()
	if err != nil {
		return nil
	}
	if err := writeOOMScoreAdj(own); err != nil {
		return nil
	}
	g := &oomGuard{own: own, stop: make(chan struct{}), done: make(chan struct{})}
	go g.watch()
	return g
}

func (g *oomGuard) watch() {
	defer close(g.done)
	t := time.NewTicker(guardEvery)
	defer t.Stop()
	for {
		select {
		case <-g.stop:
			return
		case <-t.C:
		}
		g.check()
	}
}

// check restores the helper's OOM priority if someone raised it.
func (g *oomGuard) check() {
	if g == nil {
		return
	}
	v, err := readOOMScoreAdj()
	if err != nil || v == g.own {
		return
	}
	_ = writeOOMScoreAdj(g.own)
	g.mu.Lock()
	g.raises++
	g.last = v
	g.mu.Unlock()
	fmt.Fprintf(os.Stderr, "swerve shim: the helper's OOM priority was set to %d from inside the box; put back to %d\n", v, g.own)
}

// count is how many raises were seen so far.
func (g *oomGuard) count() int {
	if g == nil {
		return 0
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.raises
}

// findingsSince lists what was seen after the count was since: at most one
// finding, naming the last value found.
func (g *oomGuard) findingsSince(since int) []string {
	if g == nil {
		return nil
	}
	g.check() // a raise just before the command's end counts too
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.raises == since {
		return nil
	}
	return []string{fmt.Sprintf("%s (set to %d from inside the box, put back)", FindingOOMRaised, g.last)}
}

// FindingOOMRaised starts the finding of a command that raised the
// helper's OOM priority.
const FindingOOMRaised = "helper: the helper's OOM priority raised"

func (g *oomGuard) close() {
	if g == nil {
		return
	}
	close(g.stop)
	<-g.done
}

func readOOMScoreAdj() (int, error) {
	b, err := os.ReadFile("/proc/self/oom_score_adj")
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(strings.TrimSpace(string(b)))
}

func writeOOMScoreAdj(v int) error {
	return os.WriteFile("/proc/self/oom_score_adj", []byte(strconv.Itoa(v)), 0)
}
