package sandboxtest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/swerve-dev/swerve/internal/sandbox"
)

// Containment: when a command ends (exit, timeout or cancel), everything it
// started is gone before Exec returns, however it tried to get away, and
// nothing printed after the end is in the output.

func (s *suite) containTests() []subtest {
	return []subtest{
		{"DoubleFork", s.testContainDoubleFork},
		{"DoubleForkTimeout", s.testContainTimeout},
		{"ClearedEnv", s.testContainClearedEnv},
		{"ParentWatcher", s.testContainParentWatcher},
		{"Cancel", s.testContainCancel},
		{"KillOthers", s.testKillOthers},
	}
}

// lateMark is what a leftover prints after its command ended; it must
// never be in an Exec's output.
const lateMark = "SBT-LATE-OUTPUT"

// daemonLine starts a double-forked daemon in a session of its own: it
// writes its pid to pidFile, waits for the command's shell to die, prints
// lateMark 30ms later (inside the 100ms a lax backend keeps reading after a
// command's end), writes late.txt 0.5s later still and then stays. The line
// returns once the pid file is written.
func daemonLine(pidFile string) string {
	return fmt.Sprintf(`( setsid bash -c 'echo $$ > %[1]s.tmp; mv %[1]s.tmp %[1]s; while kill -0 $1 2>/dev/null; do sleep 0.005; done; sleep 0.03; echo %[2]s; sleep 0.5; echo late > late.txt; sleep 30' daemon $$ & ); `+
		`while [ ! -s %[1]s ]; do sleep 0.01; done; `, pidFile, lateMark)
}

// clearedEnvLine starts a child that drops its whole environment (so no
// marker variable finds it) and moves to a process group of its own before
// detaching, then returns once its pid file is written.
func clearedEnvLine(pidFile string) string {
	return fmt.Sprintf(`env -i "$(command -v python3)" -c 'import os, sys, time
os.setpgid(0, 0)
if os.fork():
    os._exit(0)
open("%[1]s.tmp", "w").write("%%d\n" %% os.getpid())
os.rename("%[1]s.tmp", "%[1]s")
time.sleep(30)' & `+
		`while [ ! -s %[1]s ]; do sleep 0.01; done; `, pidFile)
}

// checkNoLate fails if lateMark got into a result's output.
func checkNoLate(t testing.TB, req sandbox.ExecRequest, res sandbox.ExecResult) {
	t.Helper()
	if strings.Contains(string(res.Output), lateMark) {
		t.Errorf("Exec(%s): output %s holds %q, printed by a leftover after the command ended", showCmd(req.Cmd), clip(res.Output), lateMark)
	}
}

// checkNoLateFile waits past the moment a surviving daemon would write
// late.txt and fails if it did.
func checkNoLateFile(t testing.TB, box sandbox.Sandbox) {
	t.Helper()
	time.Sleep(time.Second)
	if data, err := readFileErr(box, "late.txt"); !errors.Is(err, sandbox.ErrNotFound) {
		t.Errorf("ReadFile(late.txt): got %q, error %v; want ErrNotFound: the daemon outlived its command and wrote it", data, err)
	}
}

func (s *suite) testContainDoubleFork(t *testing.T) {
	box := s.open(t, nil)
	req := sandbox.ExecRequest{Cmd: sandbox.Bash(daemonLine("d.pid") + "echo done"), Timeout: time.Minute}
	res := run(t, box, req)
	wantOutput(t, req, res, "done\n")
	d := readPID(t, box, "d.pid")
	waitGone(t, box, "a double-forked setsid daemon after its command exited", d)
	checkNoLateFile(t, box)
}

func (s *suite) testContainTimeout(t *testing.T) {
	box := s.open(t, nil)
	req := sandbox.ExecRequest{Cmd: sandbox.Bash(daemonLine("d.pid") + "echo before; sleep 1000"), Timeout: time.Second}
	res := run(t, box, req)
	if !res.TimedOut || res.ExitCode != sandbox.TimeoutExitCode {
		t.Errorf("Exec(%s) with Timeout 1s:\n got %s\nwant timedOut true, exit %d", showCmd(req.Cmd), showRes(res), sandbox.TimeoutExitCode)
	}
	checkNoLate(t, req, res)
	d := readPID(t, box, "d.pid")
	waitGone(t, box, "a double-forked setsid daemon of a timed-out command", d)
	checkNoLateFile(t, box)
}

func (s *suite) testContainClearedEnv(t *testing.T) {
	box := s.open(t, nil)
	// Twice: after a plain exit and after a timeout.
	for _, tc := range []struct {
		tail    string
		timeout time.Duration
	}{
		{"echo done", time.Minute},
		{"echo done; sleep 1000", time.Second},
	} {
		req := sandbox.ExecRequest{Cmd: sandbox.Bash("rm -f e.pid; " + clearedEnvLine("e.pid") + tc.tail), Timeout: tc.timeout}
		res := run(t, box, req)
		if string(res.Output) != "done\n" {
			t.Errorf("Exec(%s): got %s, want output %q", showCmd(req.Cmd), showRes(res), "done\n")
		}
		e := readPID(t, box, "e.pid")
		waitGone(t, box, fmt.Sprintf("a child with a cleared environment in its own process group (command timeout %v)", tc.timeout), e)
	}
}

// watcherScript waits for its parent to die, polling its parent pid every
// 2ms, then prints numbered lateMark lines, one every millisecond for a
// second, each with the milliseconds since it noticed, and then stays. It
// writes its pid to argv[1] when it is watching, and the number of each
// line to argv[1].lines once the line is on its standard output: when it is
// killed, that file counts every line it printed but perhaps the last.
const watcherScript = `import os, sys, time
pp = os.getppid()
log = open(sys.argv[1] + ".lines", "w")
open(sys.argv[1] + ".tmp", "w").write("%d\n" % os.getpid())
os.rename(sys.argv[1] + ".tmp", sys.argv[1])
while os.getppid() == pp:
    time.sleep(0.002)
t0 = time.monotonic()
n = 0
while time.monotonic() - t0 < 1:
    n += 1
    sys.stdout.write("` + lateMark + ` %d %d\n" % (n, (time.monotonic() - t0) * 1000))
    sys.stdout.flush()
    log.write("%d\n" % n)
    log.flush()
    time.sleep(0.001)
time.sleep(30)
`

// watcherTries is how often the parent watcher runs. Killing it races its
// polling: between the parent's exit and the kill there is a moment in
// which it can notice and print (a backend without a freezer cannot close
// that window, and on a loaded machine it may last many milliseconds), so
// lines may get through, and how many is up to the scheduler. What must
// hold whatever the load is the order: the backend kills the watcher, and
// only then reads the output to its end, so that every line the watcher
// printed is in the output. One that stops reading at the command's end,
// or after a while, and kills later, leaves out the lines printed in
// between, which the watcher's own count (its .lines file) still names.
const watcherTries = 5

func (s *suite) testContainParentWatcher(t *testing.T) {
	box := s.open(t, nil)
	late, maxMS := 0, 0
	for i := range watcherTries {
		pidFile := fmt.Sprintf("w%d.pid", i)
		line := fmt.Sprintf(`python3 -c "$1" %[1]s & while [ ! -s %[1]s ]; do sleep 0.01; done; echo done`, pidFile)
		req := sandbox.ExecRequest{Cmd: []string{"bash", "-c", line, "watch", watcherScript}, Timeout: time.Minute}
		res := run(t, box, req)
		if !strings.HasPrefix(string(res.Output), "done\n") || res.ExitCode != 0 {
			t.Fatalf("Exec(%s): got %s, want exit 0 and output starting %q", showCmd(req.Cmd), showRes(res), "done\n")
		}
		w := readPID(t, box, pidFile)
		waitGone(t, box, "a child that watched for its parent's death", w)
		// Numbered 1, 2, ... in the output, with no gap.
		got := 0
		for l := range strings.Lines(strings.TrimPrefix(string(res.Output), "done\n")) {
			var n, ms int
			if _, err := fmt.Sscanf(l, lateMark+" %d %d", &n, &ms); err != nil || n != got+1 {
				t.Fatalf("Exec(%s): output %s: line %q, want %q followed by lines %s N MS for N = 1, 2, ...", showCmd(req.Cmd), clip(res.Output), l, "done\n", lateMark)
			}
			got, maxMS = n, max(maxMS, ms)
		}
		if got > 0 {
			late++
		}
		// The watcher is dead: its count is final.
		data, err := readFileErr(box, pidFile+".lines")
		if err != nil {
			t.Fatalf("ReadFile(%s.lines): %v", pidFile, err)
		}
		printed := strings.Count(string(data), "\n")
		if got < printed {
			t.Errorf("Exec(%s): output %s holds %d of the lines a leftover printed and %d were printed before it died: the output was read to its end before the leftovers were killed, or not read to its end",
				showCmd(req.Cmd), clip(res.Output), got, printed)
		}
	}
	t.Logf("the parent watcher got a line in before it was killed in %d of %d runs (the latest %dms after it saw the command end)", late, watcherTries, maxMS)
}

func (s *suite) testContainCancel(t *testing.T) {
	box := s.open(t, nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req := sandbox.ExecRequest{Cmd: sandbox.Bash(daemonLine("d.pid") + clearedEnvLine("e.pid") + "echo $$ > fg.pid; sleep 1000")}
	done := startExec(ctx, box, req)
	fg := waitRunning(t, box, done, "fg.pid")
	d := readPID(t, box, "d.pid")
	e := readPID(t, box, "e.pid")
	cancel()
	select {
	case o := <-done:
		if !errors.Is(o.err, context.Canceled) {
			t.Errorf("Exec(%s) after cancel: got %s, error %v; want an error wrapping context.Canceled", showCmd(req.Cmd), showRes(o.res), o.err)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("Exec(%s) still running 10s after its context was cancelled", showCmd(req.Cmd))
	}
	waitGone(t, box, "after the context was cancelled", fg, d, e)
	checkNoLateFile(t, box)
}

// testKillOthers: an Exec with KillOthers leaves nothing else running in
// the box when it returns, whoever started it: here a nohup'd process of a
// command still running, that command itself, and a setsid daemon.
func (s *suite) testKillOthers(t *testing.T) {
	box := s.open(t, nil)
	req := sandbox.ExecRequest{Cmd: sandbox.Bash(
		"nohup sleep 1000 > /dev/null 2>&1 & echo $! > nohup.pid; " + daemonLine("d.pid") + "echo $$ > fg.pid; sleep 1000")}
	other := startExec(context.Background(), box, req)
	fg := waitRunning(t, box, other, "fg.pid")
	bg := readPID(t, box, "nohup.pid")
	d := readPID(t, box, "d.pid")

	excl := sandbox.ExecRequest{Cmd: sandbox.Bash("echo eval"), KillOthers: true}
	res, err := execErr(t, box, excl)
	if err != nil {
		t.Fatalf("Exec(%s) with KillOthers: got error %v, want a result", showCmd(excl.Cmd), err)
	}
	wantOutput(t, excl, res, "eval\n")
	// Gone when the KillOthers Exec returned: one look, no grace.
	cmd := []string{"bash", "-c", aliveScript, "alive", fmt.Sprint(fg), fmt.Sprint(bg), fmt.Sprint(d)}
	if alive := run(t, box, sandbox.ExecRequest{Cmd: cmd}); strings.TrimSpace(string(alive.Output)) != "" {
		t.Errorf("after an Exec with KillOthers returned, still running (want every other process killed):\n%s", alive.Output)
	}
	select {
	case o := <-other:
		if o.err == nil && o.res.ExitCode == 0 {
			t.Errorf("the other command, killed by KillOthers, got %s; want a non-zero exit or an error", showRes(o.res))
		}
	case <-time.After(10 * time.Second):
		t.Errorf("the other command still running 10s after an Exec with KillOthers ended")
	}
	waitGone(t, box, "after an Exec with KillOthers", fg, bg, d)

	// The box still works, and KillOthers with nothing else running is
	// a plain command.
	req = sandbox.ExecRequest{Cmd: sandbox.Bash("echo again"), KillOthers: true}
	wantOutput(t, req, run(t, box, req), "again\n")
}
