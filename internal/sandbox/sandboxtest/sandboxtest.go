// Package sandboxtest is the conformance suite every sandbox backend runs.
//
// A backend's test builds a Harness and calls Run:
//
//	func TestConformance(t *testing.T) {
//		sandboxtest.Run(t, sandboxtest.Harness{
//			Backend: b,
//			Spec:    func(t testing.TB) sandbox.Spec { return sandbox.Spec{Image: img} },
//			Leaks:   leaks,
//		})
//	}
//
// Run opens many boxes, most of them at the same time. Each test works only
// with relative paths (relative to its box's working directory) and never
// writes to absolute paths outside it, so backends whose boxes share the
// host's filesystem (local) pass as well as isolated ones.
//
// Leaks is called only at points where every box the suite opened has been
// closed; if the test that calls Run opens other boxes of the same backend
// at the same time, Leaks must tell them apart (or the caller must not run
// them in parallel with Run).
package sandboxtest

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/swerve-dev/swerve/internal/sandbox"
)

// Harness is what a backend hands the suite.
type Harness struct {
	// Backend opens the boxes under test.
	Backend sandbox.Backend
	// Spec returns the spec for a fresh box. The box has bash, coreutils,
	// python3 and git; its working directory is writable. Tests may add to
	// Env and set Workdir on the returned spec.
	Spec func(t testing.TB) sandbox.Spec
	// Leaks describes anything closed boxes left behind (containers,
	// processes, temp dirs); it is empty when clean. It is called after the
	// Close tests, after the main tests and at the end of the parallel
	// test, each time when all boxes of the suite are closed. Nil skips the
	// leak checks.
	Leaks func(ctx context.Context) ([]string, error)
	// Parallel is the number of boxes in the parallel open/close test;
	// 0 means 50.
	Parallel int
	// NetworkNotIsolated, when set, says why boxes opened with
	// sandbox.NetworkNone can still reach this machine or other boxes
	// (the local backend's boxes are host processes); the network
	// isolation test then skips, printing it. Empty: the backend claims
	// isolation and the test holds it to that.
	NetworkNotIsolated string
}

// Time limits the suite allows the backend. They are generous: they only
// keep a hanging backend from hanging the whole test binary.
const (
	openTimeout  = 3 * time.Minute
	closeTimeout = 2 * time.Minute
	callTimeout  = 2 * time.Minute
	// leakGrace is how long the suite keeps asking Leaks before it fails:
	// a killed process may take a moment to disappear.
	leakGrace = 5 * time.Second
	// goneGrace is how long a killed process may take to disappear from the
	// box's process table.
	goneGrace = 5 * time.Second
)

type suite struct {
	h Harness
}

type subtest struct {
	name string
	fn   func(t *testing.T)
}

// Run runs the conformance suite against h.Backend.
func Run(t *testing.T, h Harness) {
	t.Helper()
	if h.Backend == nil {
		t.Fatal("sandboxtest: Harness.Backend is nil")
	}
	if h.Spec == nil {
		t.Fatal("sandboxtest: Harness.Spec is nil")
	}
	if h.Parallel == 0 {
		h.Parallel = 50
	}
	s := &suite{h: h}

	// Close first, on its own, so that the leak check right after it sees
	// only what the Close tests' boxes left behind.
	t.Run("Close", func(t *testing.T) { runParallel(t, s.closeTests()) })
	t.Run("NoLeaksAfterClose", s.checkLeaks)

	t.Run("Box", func(t *testing.T) {
		groups := []subtest{
			{"Exec", func(t *testing.T) { runParallel(t, s.execTests()) }},
			{"Env", func(t *testing.T) { runParallel(t, s.envTests()) }},
			{"Cwd", func(t *testing.T) { runParallel(t, s.cwdTests()) }},
			{"Stdin", func(t *testing.T) { runParallel(t, s.stdinTests()) }},
			{"Timeout", func(t *testing.T) { runParallel(t, s.timeoutTests()) }},
			{"Context", func(t *testing.T) { runParallel(t, s.contextTests()) }},
			{"Contain", func(t *testing.T) { runParallel(t, s.containTests()) }},
			{"Output", func(t *testing.T) { runParallel(t, s.outputTests()) }},
			{"Concurrency", func(t *testing.T) { runParallel(t, s.concurrencyTests()) }},
			{"Files", func(t *testing.T) { runParallel(t, s.fileTests()) }},
			{"Spec", func(t *testing.T) { runParallel(t, s.specTests()) }},
			{"Tools", s.runToolTests},
			{"Shell", s.runShellTests},
		}
		runParallel(t, groups)
	})
	t.Run("Network", func(t *testing.T) { runParallel(t, s.networkTests()) })
	t.Run("NoLeaksAfterBox", s.checkLeaks)

	t.Run("ParallelOpenClose", s.testParallelOpenClose)
}

// runParallel runs each test as a parallel subtest of t.
func runParallel(t *testing.T, tests []subtest) {
	t.Helper()
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.fn(t)
		})
	}
}

// open opens a fresh box, after letting edit change the harness's spec, and
// closes it when the test ends.
func (s *suite) open(t testing.TB, edit func(*sandbox.Spec)) sandbox.Sandbox {
	t.Helper()
	spec := s.h.Spec(t)
	if edit != nil {
		edit(&spec)
	}
	ctx, cancel := context.WithTimeout(context.Background(), openTimeout)
	defer cancel()
	box, err := s.h.Backend.Open(ctx, spec)
	if err != nil {
		t.Fatalf("Open(image %q, workdir %q): got error %v, want a box", spec.Image, spec.Workdir, err)
	}
	if box == nil {
		t.Fatalf("Open(image %q) returned a nil box and no error", spec.Image)
	}
	t.Cleanup(func() { closeBox(t, box) })
	return box
}

// closeBox closes box, as a test's cleanup does.
func closeBox(t testing.TB, box sandbox.Sandbox) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.WithoutCancel(t.Context()), closeTimeout)
	defer cancel()
	if err := box.Close(ctx); err != nil {
		t.Errorf("Close(%s): got error %v, want nil", box.ID(), err)
	}
}

// execErr runs req with a generous deadline and checks the invariants every
// result must keep, returning the error for the caller to judge.
func execErr(t testing.TB, box sandbox.Sandbox, req sandbox.ExecRequest) (sandbox.ExecResult, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	res, err := box.Exec(ctx, req)
	if err == nil {
		checkCounts(t, req, res)
	}
	return res, err
}

// run runs req and fails the test if Exec returns an error.
func run(t testing.TB, box sandbox.Sandbox, req sandbox.ExecRequest) sandbox.ExecResult {
	t.Helper()
	res, err := execErr(t, box, req)
	if err != nil {
		t.Fatalf("Exec(%s): got error %v, want a result", showCmd(req.Cmd), err)
	}
	return res
}

// bash runs a bash command line and fails the test if Exec errs.
func bash(t testing.TB, box sandbox.Sandbox, line string) sandbox.ExecResult {
	t.Helper()
	return run(t, box, sandbox.ExecRequest{Cmd: sandbox.Bash(line)})
}

// bashOK runs a bash command line that must exit 0 and returns its output.
func bashOK(t testing.TB, box sandbox.Sandbox, line string) string {
	t.Helper()
	res := bash(t, box, line)
	if res.ExitCode != 0 || res.TimedOut {
		t.Fatalf("Exec(%s): got %s, want exit 0", showCmd(sandbox.Bash(line)), showRes(res))
	}
	return string(res.Output)
}

// checkCounts checks the bookkeeping fields of a result.
func checkCounts(t testing.TB, req sandbox.ExecRequest, res sandbox.ExecResult) {
	t.Helper()
	switch {
	case res.ElidedBytes < 0 || res.OutputBytes < 0:
		t.Errorf("Exec(%s): negative counts: OutputBytes %d, ElidedBytes %d", showCmd(req.Cmd), res.OutputBytes, res.ElidedBytes)
	case res.ElidedBytes > res.OutputBytes:
		t.Errorf("Exec(%s): ElidedBytes %d > OutputBytes %d", showCmd(req.Cmd), res.ElidedBytes, res.OutputBytes)
	case res.ElidedBytes == 0 && int64(len(res.Output)) != res.OutputBytes:
		t.Errorf("Exec(%s): nothing elided but len(Output) = %d != OutputBytes %d", showCmd(req.Cmd), len(res.Output), res.OutputBytes)
	}
	if res.TimedOut && res.ExitCode != sandbox.TimeoutExitCode {
		t.Errorf("Exec(%s): TimedOut with ExitCode %d, want %d", showCmd(req.Cmd), res.ExitCode, sandbox.TimeoutExitCode)
	}
	if res.TimedOut && req.Timeout <= 0 {
		t.Errorf("Exec(%s): TimedOut set but the request had no Timeout", showCmd(req.Cmd))
	}
}

// wantOutput fails unless the command exited 0 with exactly want as output.
func wantOutput(t testing.TB, req sandbox.ExecRequest, res sandbox.ExecResult, want string) {
	t.Helper()
	if res.ExitCode != 0 || res.TimedOut || string(res.Output) != want {
		t.Errorf("Exec(%s):\n got %s\nwant exit 0, output %q", showCmd(req.Cmd), showRes(res), want)
	}
}

// showCmd prints an argv for error messages; a Bash line shows as the line,
// and long arguments (scripts) are shortened.
func showCmd(cmd []string) string {
	if len(cmd) == 3 && cmd[0] == "bash" && cmd[1] == "-lc" {
		return "bash -lc " + clip([]byte(cmd[2]))
	}
	args := make([]string, len(cmd))
	for i, a := range cmd {
		if len(a) > 60 {
			a = a[:40] + "…"
		}
		args[i] = strconv.Quote(a)
	}
	return "[" + strings.Join(args, " ") + "]"
}

// showRes prints a result for error messages.
func showRes(res sandbox.ExecResult) string {
	return fmt.Sprintf("exit %d, timedOut %v, output %s (%d bytes kept, OutputBytes %d, ElidedBytes %d), duration %v",
		res.ExitCode, res.TimedOut, clip(res.Output), len(res.Output), res.OutputBytes, res.ElidedBytes, res.Duration)
}

// clip quotes b, keeping its head and tail when it is long.
func clip(b []byte) string {
	const keep = 300
	if len(b) <= 2*keep {
		return strconv.Quote(string(b))
	}
	return fmt.Sprintf("%q…(%d bytes)…%q", b[:keep], len(b)-2*keep, b[len(b)-keep:])
}

// checkLeaks is a subtest that checks nothing was left behind.
func (s *suite) checkLeaks(t *testing.T) {
	if s.h.Leaks == nil {
		t.Skip("Harness.Leaks is nil: leak check skipped")
	}
	s.assertNoLeaks(t)
}

// assertNoLeaks asks Leaks until it reports nothing or leakGrace runs out.
func (s *suite) assertNoLeaks(t testing.TB) {
	t.Helper()
	if s.h.Leaks == nil {
		t.Log("Harness.Leaks is nil: leak check skipped")
		return
	}
	start := time.Now()
	for {
		ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
		leaks, err := s.h.Leaks(ctx)
		cancel()
		if err != nil {
			t.Fatalf("Leaks: got error %v, want a list", err)
		}
		if len(leaks) == 0 {
			if d := time.Since(start); d > 500*time.Millisecond {
				t.Logf("leaks cleared %v after the boxes were closed", d.Round(time.Millisecond))
			}
			return
		}
		if time.Since(start) > leakGrace {
			t.Fatalf("closed boxes left %d things behind %v after Close (want none):\n\t%s",
				len(leaks), leakGrace, strings.Join(leaks, "\n\t"))
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// readPID reads a pid that a finished (or killed) command wrote to path,
// relative to the box's working directory.
func readPID(t testing.TB, box sandbox.Sandbox, path string) int {
	t.Helper()
	pid, err := waitPID(box, path, 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	return pid
}

// waitPID polls ReadFile(path) until it holds "<pid>\n" or wait runs out.
func waitPID(box sandbox.Sandbox, path string, wait time.Duration) (int, error) {
	deadline := time.Now().Add(wait)
	var last string
	var lastErr error
	for {
		ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
		data, err := box.ReadFile(ctx, path)
		cancel()
		last, lastErr = string(data), err
		if err == nil && strings.HasSuffix(last, "\n") {
			pid, perr := strconv.Atoi(strings.TrimSpace(last))
			if perr != nil || pid <= 0 {
				return 0, fmt.Errorf("pid file %s holds %q, want a pid", path, last)
			}
			return pid, nil
		}
		if time.Now().After(deadline) {
			return 0, fmt.Errorf("pid file %s: after %v got %q, error %v; want a pid and a newline", path, wait, last, lastErr)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// aliveScript prints one line for each of its arguments that is a running
// process in the box. Zombies (state Z, X) count as gone: in a box without
// an init that reaps, a killed orphan may stay a zombie forever.
const aliveScript = `
for p in "$@"; do
  if [ -d /proc/self ]; then
    [ -r "/proc/$p/stat" ] || continue
    st=$(sed -e 's/^.*) //' "/proc/$p/stat" 2>/dev/null | cut -c1)
    case "$st" in ''|Z|X|x) continue ;; esac
    echo "pid $p (state $st): $(tr '\0' ' ' < "/proc/$p/cmdline" 2>/dev/null)"
  elif kill -0 "$p" 2>/dev/null; then
    echo "pid $p: kill -0 succeeds"
  fi
done
exit 0
`

// waitGone fails the test unless every pid disappears from the box within
// goneGrace.
func waitGone(t testing.TB, box sandbox.Sandbox, what string, pids ...int) {
	t.Helper()
	cmd := []string{"bash", "-c", aliveScript, "alive"}
	for _, p := range pids {
		cmd = append(cmd, strconv.Itoa(p))
	}
	deadline := time.Now().Add(goneGrace)
	for {
		res := run(t, box, sandbox.ExecRequest{Cmd: cmd})
		if res.ExitCode != 0 {
			t.Fatalf("process check: got %s, want exit 0", showRes(res))
		}
		alive := strings.TrimSpace(string(res.Output))
		if alive == "" {
			return
		}
		if time.Now().After(deadline) {
			t.Errorf("%s: processes still running %v later (want them killed):\n%s", what, goneGrace, alive)
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// bigOutputScript prints exactly argv[1] bytes: a first line "HEAD-MARK",
// lines of 99 'x', and a last line "TAIL-MARK". bigOutput is the same in Go.
const bigOutputScript = `
import sys
n = int(sys.argv[1])
head, tail = b"HEAD-MARK\n", b"TAIL-MARK\n"
size = n - len(head) - len(tail)
line = b"x" * 99 + b"\n"
body = (line * (size // len(line) + 1))[:size]
sys.stdout.buffer.write(head + body + tail)
`

func bigOutputCmd(n int) []string {
	return []string{"python3", "-c", bigOutputScript, strconv.Itoa(n)}
}

func bigOutput(n int) []byte {
	head, tail := []byte("HEAD-MARK\n"), []byte("TAIL-MARK\n")
	size := n - len(head) - len(tail)
	line := append(bytes.Repeat([]byte("x"), 99), '\n')
	body := bytes.Repeat(line, size/len(line)+1)[:size]
	return slices.Concat(head, body, tail)
}
