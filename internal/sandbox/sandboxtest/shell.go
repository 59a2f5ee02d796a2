package sandboxtest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/swerve-dev/swerve/internal/sandbox"
)

// shellTests check persistent shells (sandbox.Shell) on backends whose
// boxes have them; the group is skipped for the others.
func (s *suite) shellTests() []subtest {
	return []subtest{
		{"State", s.testShellState},
		{"Timeout", s.testShellTimeout},
		{"Cancel", s.testShellCancel},
		{"Contain", s.testShellContain},
		{"ContainClearedEnv", s.testShellContainClearedEnv},
		{"FakeMarker", s.testShellFakeMarker},
		{"LateOutput", s.testShellLateOutput},
		{"ClosedOutput", s.testShellClosedOutput},
		{"Ends", s.testShellEnds},
		{"Output", s.testShellOutput},
		{"Serialized", s.testShellSerialized},
		{"Close", s.testShellClose},
	}
}

// runShellTests runs shellTests when the backend's boxes implement
// sandbox.Shell, which one probe box tells.
func (s *suite) runShellTests(t *testing.T) {
	if _, ok := s.open(t, nil).(sandbox.Shell); !ok {
		t.Skip("the backend's boxes do not implement sandbox.Shell")
	}
	runParallel(t, s.shellTests())
}

// openShell opens a box and a shell in it, closed when the test ends.
func (s *suite) openShell(t *testing.T) (sandbox.Sandbox, sandbox.ShellSession) {
	t.Helper()
	box := s.open(t, nil)
	sb, ok := box.(sandbox.Shell)
	if !ok {
		t.Fatalf("%T implemented sandbox.Shell in the probe box but not now", box)
	}
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	sh, err := sb.OpenShell(ctx, sandbox.ShellOptions{})
	if err != nil {
		t.Fatalf("OpenShell: got error %v, want a shell", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), closeTimeout)
		defer cancel()
		if err := sh.Close(ctx); err != nil {
			t.Errorf("ShellSession.Close: %v", err)
		}
	})
	return box, sh
}

// shellRun runs one call and fails the test on an error.
func shellRun(t testing.TB, sh sandbox.ShellSession, req sandbox.ShellRequest) sandbox.ShellResult {
	t.Helper()
	if req.Timeout == 0 {
		req.Timeout = time.Minute
	}
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	res, err := sh.Run(ctx, req)
	if err != nil {
		t.Fatalf("Run(%q): got error %v, want a result", req.Cmd, err)
	}
	return res
}

func showShell(res sandbox.ShellResult) string {
	return fmt.Sprintf("exit %d, timedOut %v, exited %v, restarted %v, output %s", res.ExitCode, res.TimedOut, res.Exited, res.Restarted, clip(res.Output))
}

// wantShell fails unless a call ended normally in the same shell with
// this exit code and output.
func wantShell(t testing.TB, cmd string, res sandbox.ShellResult, code int, out string) {
	t.Helper()
	if res.ExitCode != code || string(res.Output) != out || res.TimedOut || res.Exited || res.Restarted {
		t.Errorf("Run(%q):\n got %s\nwant exit %d, output %q, in the same shell", cmd, showShell(res), code, out)
	}
}

// call runs cmd and checks it like wantShell.
func call(t testing.TB, sh sandbox.ShellSession, cmd string, code int, out string) {
	t.Helper()
	wantShell(t, cmd, shellRun(t, sh, sandbox.ShellRequest{Cmd: cmd}), code, out)
}

// checkFresh checks that a call ran in a new shell: Restarted, and the
// variable the old one exported is gone.
func checkFresh(t testing.TB, sh sandbox.ShellSession, after string) {
	t.Helper()
	cmd := `echo "x=$SBT_STATE"`
	res := shellRun(t, sh, sandbox.ShellRequest{Cmd: cmd})
	if !res.Restarted || res.ExitCode != 0 || string(res.Output) != "x=\n" {
		t.Errorf("Run(%q) after %s:\n got %s\nwant restarted true, exit 0, output \"x=\\n\": a fresh shell", cmd, after, showShell(res))
	}
}

func (s *suite) testShellState(t *testing.T) {
	_, sh := s.openShell(t)
	call(t, sh, `mkdir -p sub && cd sub && export SBT_STATE=kept; plain=1; f() { echo "fn $1"; }`, 0, "")
	call(t, sh, `echo "${PWD##*/} $SBT_STATE $plain"; f x`, 0, "sub kept 1\nfn x\n")
	call(t, sh, `bash -c 'echo $SBT_STATE'`, 0, "kept\n")
	call(t, sh, `false`, 1, "")
	call(t, sh, `(exit 7)`, 7, "")
	call(t, sh, `echo out; echo err >&2; return 4`, 4, "out\nerr\n")
	// break and continue outside a loop do not reach the shell's own loop.
	if res := shellRun(t, sh, sandbox.ShellRequest{Cmd: "break; continue; echo after"}); res.ExitCode != 0 || !strings.HasSuffix(string(res.Output), "after\n") || res.Exited {
		t.Errorf("Run(%q): got %s, want exit 0 and output ending in after, in the same shell", "break; continue; echo after", showShell(res))
	}
	if res := shellRun(t, sh, sandbox.ShellRequest{Cmd: "if then"}); res.ExitCode != 2 || !strings.Contains(string(res.Output), "syntax error") || res.Exited {
		t.Errorf("Run(%q): got %s, want exit 2 and bash's syntax error in the same shell", "if then", showShell(res))
	}
	call(t, sh, `cat`, 0, "") // stdin is empty, not the shell's input
	call(t, sh, `echo "$SBT_STATE"`, 0, "kept\n")
	// A set -x lasts, and traces the commands, not the shell's own loop.
	call(t, sh, `set -x`, 0, "")
	res := shellRun(t, sh, sandbox.ShellRequest{Cmd: "echo traced"})
	if res.ExitCode != 0 || !strings.Contains(string(res.Output), "+ echo traced\n") || !strings.HasSuffix(string(res.Output), "traced\n") || strings.Contains(string(res.Output), "swerve") {
		t.Errorf("Run(%q) after set -x: got %s, want the command traced and nothing else", "echo traced", showShell(res))
	}
	if res := shellRun(t, sh, sandbox.ShellRequest{Cmd: "set +x; echo quiet"}); res.ExitCode != 0 || !strings.HasSuffix(string(res.Output), "quiet\n") {
		t.Errorf("Run(%q): got %s", "set +x; echo quiet", showShell(res))
	}
	call(t, sh, `echo quiet`, 0, "quiet\n")
}

func (s *suite) testShellTimeout(t *testing.T) {
	box, sh := s.openShell(t)
	call(t, sh, `export SBT_STATE=kept`, 0, "")
	start := time.Now()
	cmd := daemonLine("d.pid") + "echo before; sleep 1000"
	res := shellRun(t, sh, sandbox.ShellRequest{Cmd: cmd, Timeout: time.Second})
	if !res.TimedOut || res.ExitCode != sandbox.TimeoutExitCode || !strings.HasSuffix(string(res.Output), "before\n") {
		t.Errorf("Run(%q) with Timeout 1s:\n got %s\nwant timedOut true, exit %d, output ending in before", cmd, showShell(res), sandbox.TimeoutExitCode)
	}
	if strings.Contains(string(res.Output), lateMark) {
		t.Errorf("Run(%q): output %s holds %q, printed by a leftover after the call ended", cmd, clip(res.Output), lateMark)
	}
	if d := time.Since(start); d > 30*time.Second {
		t.Errorf("a call with Timeout 1s took %v", d)
	}
	waitGone(t, box, "a double-forked daemon of a timed-out shell call", readPID(t, box, "d.pid"))
	checkFresh(t, sh, "a timeout")
	call(t, sh, `echo again`, 0, "again\n")
}

func (s *suite) testShellCancel(t *testing.T) {
	box, sh := s.openShell(t)
	call(t, sh, `export SBT_STATE=kept`, 0, "")
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	cmd := daemonLine("d.pid") + "sleep 1000"
	if _, err := sh.Run(ctx, sandbox.ShellRequest{Cmd: cmd}); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Run(%q) with a ctx that ends in 1s: got error %v, want one wrapping context.DeadlineExceeded", cmd, err)
	}
	waitGone(t, box, "a double-forked daemon of a cancelled shell call", readPID(t, box, "d.pid"))
	checkFresh(t, sh, "a cancel")
}

// testShellContain: after each call, whatever it started is gone, and the
// shell with its state is still there.
func (s *suite) testShellContain(t *testing.T) {
	box, sh := s.openShell(t)
	call(t, sh, `export SBT_STATE=kept`, 0, "")
	cmd := daemonLine("d.pid") + `sleep 1000 & echo $! > bg.pid; setsid sleep 1000 & echo $! > sid.pid; echo done`
	call(t, sh, cmd, 0, "done\n")
	waitGone(t, box, "what a shell call started (a double-forked daemon, a background job, a setsid child)",
		readPID(t, box, "d.pid"), readPID(t, box, "bg.pid"), readPID(t, box, "sid.pid"))
	checkNoLateFile(t, box)
	// Its background job's end is no news for the next call.
	call(t, sh, `echo "$SBT_STATE"`, 0, "kept\n")
}

func (s *suite) testShellContainClearedEnv(t *testing.T) {
	box, sh := s.openShell(t)
	call(t, sh, clearedEnvLine("e.pid")+"echo done", 0, "done\n")
	waitGone(t, box, "a child of a shell call that cleared its environment and detached", readPID(t, box, "e.pid"))
}

// testShellFakeMarker: a command that prints what looks like an end
// marker ends neither its own call nor the next one early.
func (s *suite) testShellFakeMarker(t *testing.T) {
	_, sh := s.openShell(t)
	fake := `printf '\036swerve:%s:0\036' 00112233445566778899aabbccddeeff; `
	res := shellRun(t, sh, sandbox.ShellRequest{Cmd: fake + `sleep 0.2; echo after; exit 3`})
	if !res.Exited || res.ExitCode != 3 || !strings.HasSuffix(string(res.Output), "after\n") {
		t.Errorf("a call printing a fake marker, then exit 3:\n got %s\nwant exited true, exit 3, output ending in after", showShell(res))
	}
	res = shellRun(t, sh, sandbox.ShellRequest{Cmd: fake + `echo after; false`})
	if res.ExitCode != 1 || !strings.HasSuffix(string(res.Output), "after\n") || res.Exited {
		t.Errorf("a call printing a fake marker, then false:\n got %s\nwant exit 1, output ending in after", showShell(res))
	}
	call(t, sh, `echo next`, 0, "next\n")
}

// testShellLateOutput: what a call's background job writes after the
// call's end (before it is killed) is in no call's output.
func (s *suite) testShellLateOutput(t *testing.T) {
	_, sh := s.openShell(t)
	for range 3 {
		res := shellRun(t, sh, sandbox.ShellRequest{Cmd: `(while :; do echo ` + lateMark + `; done) & sleep 0.2`, MaxOutput: 1000})
		if res.ExitCode != 0 || res.Exited || res.OutputBytes == 0 {
			t.Errorf("a call with a background writer: %s", showShell(res))
		}
		call(t, sh, `echo next`, 0, "next\n")
	}
}

// testShellClosedOutput: a command that closes the shell's stdout and
// stderr does not take the next call's output with it.
func (s *suite) testShellClosedOutput(t *testing.T) {
	_, sh := s.openShell(t)
	call(t, sh, `export SBT_STATE=kept; exec >&- 2>&-; echo lost; false`, 1, "")
	call(t, sh, `echo "back $SBT_STATE"`, 0, "back kept\n")
	call(t, sh, `exec 1>/dev/null; echo lost`, 0, "")
	call(t, sh, `echo back`, 0, "back\n")
}

// testShellEnds: calls that end the shell say so with the shell's own
// status, and the next call gets a fresh shell.
func (s *suite) testShellEnds(t *testing.T) {
	_, sh := s.openShell(t)
	tests := []struct {
		cmd  string
		code int
	}{
		{`exit 3`, 3},
		{`exec sh -c 'exit 5'`, 5},
		{`kill -9 $$`, 137},
		{`set -e; false; echo not reached`, 1},
	}
	for _, tc := range tests {
		call(t, sh, `export SBT_STATE=kept`, 0, "")
		res := shellRun(t, sh, sandbox.ShellRequest{Cmd: tc.cmd})
		if !res.Exited || res.ExitCode != tc.code || res.TimedOut {
			t.Errorf("Run(%q):\n got %s\nwant exited true, exit %d", tc.cmd, showShell(res), tc.code)
		}
		checkFresh(t, sh, fmt.Sprintf("%q", tc.cmd))
	}
}

func (s *suite) testShellOutput(t *testing.T) {
	_, sh := s.openShell(t)
	cmd := `head -c 100000 /dev/zero | tr '\0' a`
	res := shellRun(t, sh, sandbox.ShellRequest{Cmd: cmd, MaxOutput: 1000})
	if res.ExitCode != 0 || res.OutputBytes != 100000 || res.ElidedBytes != 99000 || !strings.HasPrefix(string(res.Output), strings.Repeat("a", 500)) {
		t.Errorf("Run(%q) with MaxOutput 1000:\n got %s, %d bytes, %d elided\nwant 100000 bytes, 99000 elided", cmd, showShell(res), res.OutputBytes, res.ElidedBytes)
	}
	call(t, sh, `printf 'no newline'`, 0, "no newline")
	call(t, sh, `printf '\000\001binary'`, 0, "\x00\x01binary")
}

// testShellSerialized: concurrent calls on one shell run one at a time.
func (s *suite) testShellSerialized(t *testing.T) {
	_, sh := s.openShell(t)
	call(t, sh, `n=0`, 0, "")
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			res := shellRun(t, sh, sandbox.ShellRequest{Cmd: `m=$n; sleep 0.02; n=$((m+1))`})
			if res.ExitCode != 0 || res.Exited || res.Restarted {
				t.Errorf("concurrent call: %s", showShell(res))
			}
		})
	}
	wg.Wait()
	call(t, sh, `echo $n`, 0, "8\n")
}

func (s *suite) testShellClose(t *testing.T) {
	box, sh := s.openShell(t)
	call(t, sh, `sleep 1000 & echo $! > bg.pid; disown`, 0, "")
	ctx := context.Background()
	if err := sh.Close(ctx); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := sh.Close(ctx); err != nil {
		t.Errorf("second Close: %v, want nil", err)
	}
	if _, err := sh.Run(ctx, sandbox.ShellRequest{Cmd: "true"}); err == nil {
		t.Errorf("Run after Close: got no error")
	}
	bashOK(t, box, "true") // the box lives on
}
