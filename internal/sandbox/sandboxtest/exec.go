package sandboxtest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"math/rand/v2"
	"path"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/swerve-dev/swerve/internal/sandbox"
)

func (s *suite) execTests() []subtest {
	return []subtest{
		{"ID", s.testID},
		{"ExitStatus", s.testExitStatus},
		{"CommandNotFound", s.testCommandNotFound},
		{"Signal", s.testSignal},
		{"MergedOutput", s.testMergedOutput},
		{"Argv", s.testArgv},
		{"BinaryOutput", s.testBinaryOutput},
		{"Duration", s.testDuration},
		{"BackgroundHoldsOutput", s.testBackgroundHoldsOutput},
	}
}

func (s *suite) testID(t *testing.T) {
	box := s.open(t, nil)
	if box.ID() == "" {
		t.Errorf("ID() = %q, want a non-empty name", box.ID())
	}
}

func (s *suite) testExitStatus(t *testing.T) {
	box := s.open(t, nil)
	for _, tc := range []struct {
		cmd  []string
		code int
		out  string
	}{
		{sandbox.Bash("true"), 0, ""},
		{sandbox.Bash("exit 3"), 3, ""},
		{sandbox.Bash("echo partial; exit 7"), 7, "partial\n"},
		{sandbox.Bash("exit 124"), 124, ""},
		{sandbox.Bash("exit 255"), 255, ""},
		{[]string{"sh", "-c", "exit 5"}, 5, ""},
	} {
		req := sandbox.ExecRequest{Cmd: tc.cmd}
		res := run(t, box, req)
		if res.ExitCode != tc.code || res.TimedOut || string(res.Output) != tc.out {
			t.Errorf("Exec(%s):\n got %s\nwant exit %d, timedOut false, output %q", showCmd(tc.cmd), showRes(res), tc.code, tc.out)
		}
	}
}

func (s *suite) testCommandNotFound(t *testing.T) {
	box := s.open(t, nil)
	for _, cmd := range [][]string{
		sandbox.Bash("sbt-no-such-command-4711 --flag"),
		{"sbt-no-such-command-4711", "--flag"},
	} {
		res, err := execErr(t, box, sandbox.ExecRequest{Cmd: cmd})
		if err != nil {
			t.Errorf("Exec(%s): got error %v, want a result with exit 127", showCmd(cmd), err)
			continue
		}
		if res.ExitCode != 127 || res.TimedOut {
			t.Errorf("Exec(%s):\n got %s\nwant exit 127 (command not found)", showCmd(cmd), showRes(res))
		}
	}
}

func (s *suite) testSignal(t *testing.T) {
	box := s.open(t, nil)
	for _, tc := range []struct {
		line string
		code int
	}{
		{"kill -TERM $$", 128 + 15},
		{"kill -KILL $$", 128 + 9},
	} {
		req := sandbox.ExecRequest{Cmd: sandbox.Bash(tc.line)}
		res := run(t, box, req)
		if res.ExitCode != tc.code || res.TimedOut {
			t.Errorf("Exec(%s):\n got %s\nwant exit %d (128 + signal), timedOut false", showCmd(req.Cmd), showRes(res), tc.code)
		}
	}
}

func (s *suite) testMergedOutput(t *testing.T) {
	box := s.open(t, nil)
	req := sandbox.ExecRequest{Cmd: sandbox.Bash("echo a; echo b >&2; echo c")}
	wantOutput(t, req, run(t, box, req), "a\nb\nc\n")

	// Many alternations: a backend that reads stdout and stderr from two
	// pipes and merges them afterwards gets this wrong.
	var want strings.Builder
	for i := 1; i <= 200; i++ {
		fmt.Fprintf(&want, "out%d\nerr%d\n", i, i)
	}
	req = sandbox.ExecRequest{Cmd: sandbox.Bash("for i in $(seq 1 200); do echo out$i; echo err$i >&2; done")}
	wantOutput(t, req, run(t, box, req), want.String())
}

func (s *suite) testArgv(t *testing.T) {
	box := s.open(t, nil)
	// The argv must reach the program untouched: no shell in between that
	// splits, expands or globs.
	req := sandbox.ExecRequest{Cmd: []string{"printf", "%s|", "a b", "$HOME", "'q'", `"d"`, "*", "", "x\ny"}}
	wantOutput(t, req, run(t, box, req), "a b|$HOME|'q'|\"d\"|*||x\ny|")
}

func (s *suite) testBinaryOutput(t *testing.T) {
	box := s.open(t, nil)
	data := allBytes()
	writeFile(t, box, "all.bytes", data, 0o644)
	req := sandbox.ExecRequest{Cmd: []string{"cat", "all.bytes"}}
	res := run(t, box, req)
	if res.ExitCode != 0 || !bytes.Equal(res.Output, data) {
		t.Errorf("Exec(%s):\n got %s\nwant exit 0 and the 256 byte values in order, unchanged", showCmd(req.Cmd), showRes(res))
	}
}

func (s *suite) testDuration(t *testing.T) {
	box := s.open(t, nil)
	req := sandbox.ExecRequest{Cmd: sandbox.Bash("true")}
	if res := run(t, box, req); res.Duration <= 0 {
		t.Errorf("Exec(%s): Duration = %v, want > 0", showCmd(req.Cmd), res.Duration)
	}

	req = sandbox.ExecRequest{Cmd: sandbox.Bash("sleep 0.3")}
	start := time.Now()
	res := run(t, box, req)
	wall := time.Since(start)
	if res.Duration < 290*time.Millisecond {
		t.Errorf("Exec(%s): Duration = %v, want at least 300ms", showCmd(req.Cmd), res.Duration)
	}
	if res.Duration > wall+250*time.Millisecond {
		t.Errorf("Exec(%s): Duration = %v, but the call took only %v", showCmd(req.Cmd), res.Duration, wall)
	}
}

func (s *suite) testBackgroundHoldsOutput(t *testing.T) {
	box := s.open(t, nil)
	// The background sleep keeps the output pipe open after the shell has
	// exited; Exec must not wait for it.
	req := sandbox.ExecRequest{Cmd: sandbox.Bash("sleep 30 & echo done"), Timeout: time.Minute}
	start := time.Now()
	res := run(t, box, req)
	took := time.Since(start)
	wantOutput(t, req, res, "done\n")
	if took > 5*time.Second {
		t.Errorf("Exec(%s) took %v, want under 5s: it waited for the background process", showCmd(req.Cmd), took)
	}
}

// Env

func (s *suite) envTests() []subtest {
	return []subtest{{"SpecAndRequest", s.testEnv}}
}

func (s *suite) testEnv(t *testing.T) {
	box := s.open(t, func(spec *sandbox.Spec) {
		spec.Env = slices.Concat(spec.Env, []string{"SBT_SPEC=from-spec", "SBT_BOTH=spec", "SBT_SPACES=a b=c", "SBT_EMPTY="})
	})
	line := `printf '%s|%s|%s|%s|%s\n' "$SBT_SPEC" "$SBT_REQ" "$SBT_BOTH" "$SBT_SPACES" "${SBT_EMPTY+set}"`

	req := sandbox.ExecRequest{Cmd: sandbox.Bash(line), Env: []string{"SBT_REQ=from-req", "SBT_BOTH=req"}}
	wantOutput(t, req, run(t, box, req), "from-spec|from-req|req|a b=c|set\n")

	// The request's Env is for that request only.
	req = sandbox.ExecRequest{Cmd: sandbox.Bash(line)}
	wantOutput(t, req, run(t, box, req), "from-spec||spec|a b=c|set\n")

	// Without a shell in between: the program's environment must hold the
	// override once, not the spec's value and then the request's.
	req = sandbox.ExecRequest{Cmd: []string{"printenv", "SBT_BOTH", "SBT_SPEC", "SBT_REQ"}, Env: []string{"SBT_REQ=r", "SBT_BOTH=req"}}
	wantOutput(t, req, run(t, box, req), "req\nfrom-spec\nr\n")
}

// Cwd

func (s *suite) cwdTests() []subtest {
	return []subtest{
		{"Relative", s.testCwdRelative},
		{"Absolute", s.testCwdAbsolute},
		{"Missing", s.testCwdMissing},
	}
}

// workdir returns the box's working directory with symlinks resolved.
func workdir(t testing.TB, box sandbox.Sandbox) string {
	t.Helper()
	out := bashOK(t, box, "pwd -P")
	dir := strings.TrimSuffix(out, "\n")
	if !strings.HasPrefix(dir, "/") || strings.Contains(dir, "\n") {
		t.Fatalf("pwd -P printed %q, want one absolute path", out)
	}
	return dir
}

func (s *suite) testCwdRelative(t *testing.T) {
	box := s.open(t, nil)
	base := workdir(t, box)
	bashOK(t, box, "mkdir -p sub/dir")

	req := sandbox.ExecRequest{Cmd: sandbox.Bash("pwd -P"), Cwd: "sub/dir"}
	wantOutput(t, req, run(t, box, req), path.Join(base, "sub/dir")+"\n")

	// Files written from a relative Cwd land where the file API looks.
	req = sandbox.ExecRequest{Cmd: sandbox.Bash("echo hi > f.txt"), Cwd: "sub"}
	wantOutput(t, req, run(t, box, req), "")
	if got := readFile(t, box, "sub/f.txt"); string(got) != "hi\n" {
		t.Errorf("ReadFile(sub/f.txt) after writing it from Cwd sub = %q, want %q", got, "hi\n")
	}

	// An empty Cwd is the box's working directory again.
	req = sandbox.ExecRequest{Cmd: sandbox.Bash("pwd -P")}
	wantOutput(t, req, run(t, box, req), base+"\n")
}

func (s *suite) testCwdAbsolute(t *testing.T) {
	box := s.open(t, nil)
	base := workdir(t, box)
	bashOK(t, box, "mkdir -p abs/dir")

	abs := path.Join(base, "abs/dir") // base may be "/"
	req := sandbox.ExecRequest{Cmd: sandbox.Bash("pwd -P"), Cwd: abs}
	wantOutput(t, req, run(t, box, req), abs+"\n")

	req = sandbox.ExecRequest{Cmd: []string{"pwd", "-P"}, Cwd: "/"}
	wantOutput(t, req, run(t, box, req), "/\n")
}

func (s *suite) testCwdMissing(t *testing.T) {
	box := s.open(t, nil)
	req := sandbox.ExecRequest{Cmd: sandbox.Bash("pwd -P"), Cwd: "sbt-missing-dir"}
	res, err := execErr(t, box, req)
	if err == nil && res.ExitCode == 0 {
		t.Errorf("Exec(%s) with Cwd %q (which does not exist): got %s, want an error or a non-zero exit",
			showCmd(req.Cmd), req.Cwd, showRes(res))
	}
}

// Stdin

func (s *suite) stdinTests() []subtest {
	return []subtest{
		{"Text", s.testStdinText},
		{"Binary", s.testStdinBinary},
		{"Large", s.testStdinLarge},
		{"NilIsEOF", func(t *testing.T) { s.testStdinEOF(t, nil) }},
		{"EmptyIsEOF", func(t *testing.T) { s.testStdinEOF(t, []byte{}) }},
	}
}

func (s *suite) testStdinText(t *testing.T) {
	box := s.open(t, nil)
	req := sandbox.ExecRequest{Cmd: []string{"cat"}, Stdin: []byte("hello\nworld\n")}
	wantOutput(t, req, run(t, box, req), "hello\nworld\n")
}

// digestScript prints the length and SHA-256 of its stdin.
const digestScript = `import sys, hashlib
d = sys.stdin.buffer.read()
print(len(d), hashlib.sha256(d).hexdigest())`

func digest(data []byte) string {
	sum := sha256.Sum256(data)
	return fmt.Sprintf("%d %s\n", len(data), hex.EncodeToString(sum[:]))
}

func (s *suite) testStdinBinary(t *testing.T) {
	box := s.open(t, nil)
	data := append(allBytes(), randomBytes(64<<10, 1)...)
	req := sandbox.ExecRequest{Cmd: []string{"python3", "-c", digestScript}, Stdin: data}
	wantOutput(t, req, run(t, box, req), digest(data))
}

func (s *suite) testStdinLarge(t *testing.T) {
	box := s.open(t, nil)
	// More than any pipe buffer, echoed back: a backend that writes all of
	// stdin before it reads any output deadlocks here.
	var in bytes.Buffer
	for i := 0; in.Len() < 512<<10; i++ {
		fmt.Fprintf(&in, "line %07d of the stdin test\n", i)
	}
	req := sandbox.ExecRequest{Cmd: []string{"cat"}, Stdin: in.Bytes(), Timeout: time.Minute}
	res := run(t, box, req)
	if res.ExitCode != 0 || !bytes.Equal(res.Output, in.Bytes()) {
		t.Errorf("Exec(%s) with %d bytes of stdin:\n got %s\nwant exit 0 and the input echoed unchanged", showCmd(req.Cmd), in.Len(), showRes(res))
	}
}

func (s *suite) testStdinEOF(t *testing.T, stdin []byte) {
	box := s.open(t, nil)
	req := sandbox.ExecRequest{
		Cmd:     sandbox.Bash(`if read -r line; then echo "got $line"; else echo eof; fi; cat; echo end`),
		Stdin:   stdin,
		Timeout: 30 * time.Second,
	}
	start := time.Now()
	res := run(t, box, req)
	took := time.Since(start)
	wantOutput(t, req, res, "eof\nend\n")
	if took > 10*time.Second {
		t.Errorf("Exec(%s) with Stdin %#v took %v, want EOF at once", showCmd(req.Cmd), stdin, took)
	}
}

// Timeout

func (s *suite) timeoutTests() []subtest {
	return []subtest{
		{"KillsGroup", func(t *testing.T) {
			s.testTimeout(t, "sleep 1000 & echo $! > bg.pid; echo $$ > fg.pid; echo before; sleep 1000")
		}},
		{"IgnoresTERM", func(t *testing.T) {
			s.testTimeout(t, "trap '' TERM; sleep 1000 & echo $! > bg.pid; echo $$ > fg.pid; echo before; sleep 1000")
		}},
		{"NotReached", s.testTimeoutNotReached},
	}
}

func (s *suite) testTimeout(t *testing.T, line string) {
	box := s.open(t, nil)
	req := sandbox.ExecRequest{Cmd: sandbox.Bash(line), Timeout: time.Second}
	start := time.Now()
	res, err := execErr(t, box, req)
	took := time.Since(start)
	if err != nil {
		t.Fatalf("Exec(%s) with Timeout 1s: got error %v, want a result with TimedOut (a timeout is not an error)", showCmd(req.Cmd), err)
	}
	if !res.TimedOut || res.ExitCode != sandbox.TimeoutExitCode {
		t.Errorf("Exec(%s) with Timeout 1s:\n got %s\nwant timedOut true, exit %d", showCmd(req.Cmd), showRes(res), sandbox.TimeoutExitCode)
	}
	if !bytes.HasPrefix(res.Output, []byte("before\n")) {
		t.Errorf("Exec(%s) with Timeout 1s: output %s, want it to keep %q printed before the timeout", showCmd(req.Cmd), clip(res.Output), "before\n")
	}
	if took < 900*time.Millisecond || took > 10*time.Second {
		t.Errorf("Exec(%s) with Timeout 1s returned after %v, want between 1s and 10s", showCmd(req.Cmd), took)
	}
	fg := readPID(t, box, "fg.pid")
	bg := readPID(t, box, "bg.pid")
	waitGone(t, box, "after a timeout", fg, bg)
}

func (s *suite) testTimeoutNotReached(t *testing.T) {
	box := s.open(t, nil)
	req := sandbox.ExecRequest{Cmd: sandbox.Bash("echo quick"), Timeout: 30 * time.Second}
	start := time.Now()
	res := run(t, box, req)
	wantOutput(t, req, res, "quick\n")
	if took := time.Since(start); took > 10*time.Second {
		t.Errorf("Exec(%s) with Timeout 30s took %v, want it to return when the command ends", showCmd(req.Cmd), took)
	}

	// A command's own exit 124 is not a timeout.
	req = sandbox.ExecRequest{Cmd: sandbox.Bash("exit 124"), Timeout: 30 * time.Second}
	res = run(t, box, req)
	if res.ExitCode != 124 || res.TimedOut {
		t.Errorf("Exec(%s) with Timeout 30s:\n got %s\nwant exit 124, timedOut false", showCmd(req.Cmd), showRes(res))
	}
}

// Context

func (s *suite) contextTests() []subtest {
	return []subtest{
		{"Cancel", s.testCancel},
		{"Deadline", s.testDeadline},
		{"AlreadyCancelled", s.testAlreadyCancelled},
	}
}

type outcome struct {
	res sandbox.ExecResult
	err error
	at  time.Time
}

// startExec runs Exec in a goroutine.
func startExec(ctx context.Context, box sandbox.Sandbox, req sandbox.ExecRequest) <-chan outcome {
	ch := make(chan outcome, 1)
	go func() {
		res, err := box.Exec(ctx, req)
		ch <- outcome{res, err, time.Now()}
	}()
	return ch
}

// waitRunning waits until the command started by startExec has written
// its pid file, failing if the Exec returns first.
func waitRunning(t testing.TB, box sandbox.Sandbox, done <-chan outcome, pidFile string) int {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		select {
		case o := <-done:
			t.Fatalf("Exec returned before its command got going: %s, error %v", showRes(o.res), o.err)
		default:
		}
		if pid, err := waitPID(box, pidFile, 0); err == nil {
			return pid
		} else if time.Now().After(deadline) {
			t.Fatalf("the command never started: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (s *suite) testCancel(t *testing.T) {
	box := s.open(t, nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req := sandbox.ExecRequest{Cmd: sandbox.Bash("sleep 1000 & echo $! > bg.pid; echo $$ > fg.pid; sleep 1000")}
	done := startExec(ctx, box, req)
	fg := waitRunning(t, box, done, "fg.pid")
	bg := readPID(t, box, "bg.pid")

	cancelled := time.Now()
	cancel()
	var o outcome
	select {
	case o = <-done:
	case <-time.After(10 * time.Second):
		t.Fatalf("Exec(%s) still running 10s after its context was cancelled", showCmd(req.Cmd))
	}
	if !errors.Is(o.err, context.Canceled) {
		t.Errorf("Exec(%s) after cancel: got %s, error %v; want an error wrapping context.Canceled", showCmd(req.Cmd), showRes(o.res), o.err)
	}
	if took := o.at.Sub(cancelled); took > 5*time.Second {
		t.Errorf("Exec(%s) returned %v after its context was cancelled, want under 5s", showCmd(req.Cmd), took)
	}
	waitGone(t, box, "after the context was cancelled", fg, bg)
}

func (s *suite) testDeadline(t *testing.T) {
	box := s.open(t, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	req := sandbox.ExecRequest{Cmd: sandbox.Bash("sleep 1000 & echo $! > bg.pid; sleep 1000")}
	start := time.Now()
	res, err := box.Exec(ctx, req)
	took := time.Since(start)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Exec(%s) with a 2s context deadline: got %s, error %v; want an error wrapping context.DeadlineExceeded", showCmd(req.Cmd), showRes(res), err)
	}
	if took > 10*time.Second {
		t.Errorf("Exec(%s) with a 2s context deadline returned after %v, want under 10s", showCmd(req.Cmd), took)
	}
	// A slow backend may not have got the command going before the
	// deadline; then there is nothing to check.
	bg, err := waitPID(box, "bg.pid", 0)
	if err != nil {
		t.Logf("no background pid to check: %v", err)
		return
	}
	waitGone(t, box, "after the context deadline", bg)
}

func (s *suite) testAlreadyCancelled(t *testing.T) {
	box := s.open(t, nil)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	req := sandbox.ExecRequest{Cmd: sandbox.Bash("echo ran > ran.txt")}
	res, err := box.Exec(ctx, req)
	if !errors.Is(err, context.Canceled) {
		t.Errorf("Exec(%s) with a cancelled context: got %s, error %v; want an error wrapping context.Canceled", showCmd(req.Cmd), showRes(res), err)
	}
	if data, err := readFileErr(box, "ran.txt"); !errors.Is(err, sandbox.ErrNotFound) {
		t.Errorf("ReadFile(ran.txt): got %q, error %v; want ErrNotFound: a command whose context was already cancelled must not run", data, err)
	}
}

// Output cap

func (s *suite) outputTests() []subtest {
	return []subtest{
		{"Capped", s.testOutputCapped},
		{"CapBoundary", s.testOutputCapBoundary},
		{"Uncapped", s.testOutputUncapped},
		{"DefaultCapKeepsAll", s.testOutputDefaultKeepsAll},
		{"DefaultCapElides", s.testOutputDefaultElides},
	}
}

// checkElided checks a result whose n bytes of bigOutput were cut to limit.
func checkElided(t testing.TB, req sandbox.ExecRequest, res sandbox.ExecResult, n, limit int) {
	t.Helper()
	what := fmt.Sprintf("Exec(%s) with MaxOutput %d", showCmd(req.Cmd), req.MaxOutput)
	if res.ExitCode != 0 || res.TimedOut {
		t.Fatalf("%s: got %s, want exit 0", what, showRes(res))
	}
	if res.OutputBytes != int64(n) {
		t.Errorf("%s: OutputBytes = %d, want %d (all the output produced)", what, res.OutputBytes, n)
	}
	if res.ElidedBytes <= 0 {
		t.Fatalf("%s: ElidedBytes = %d, want > 0 for %d bytes of output", what, res.ElidedBytes, n)
	}
	kept := res.OutputBytes - res.ElidedBytes
	if kept > int64(limit) || kept < int64(limit/2) {
		t.Errorf("%s: kept %d bytes (OutputBytes - ElidedBytes), want between %d and %d", what, kept, limit/2, limit)
	}
	marker := int64(len(res.Output)) - kept
	if marker <= 0 || marker > 512 {
		t.Errorf("%s: len(Output) = %d for %d bytes kept, want an elision marker of 1 to 512 bytes on top", what, len(res.Output), kept)
	}
	head, tail := []byte("HEAD-MARK\n"), []byte("TAIL-MARK\n")
	if !bytes.HasPrefix(res.Output, head) || !bytes.HasSuffix(res.Output, tail) {
		t.Errorf("%s: output %s, want the head (%q) and the tail (%q) kept", what, clip(res.Output), head, tail)
		return
	}
	middle := res.Output[len(head) : len(res.Output)-len(tail)]
	if len(bytes.Trim(middle, "x\n")) == 0 {
		t.Errorf("%s: output %s has no elision marker between head and tail", what, clip(res.Output))
	}
}

func (s *suite) testOutputCapped(t *testing.T) {
	box := s.open(t, nil)
	const n, limit = 100000, 1000
	req := sandbox.ExecRequest{Cmd: bigOutputCmd(n), MaxOutput: limit}
	checkElided(t, req, run(t, box, req), n, limit)

	// Output on stderr counts the same.
	req = sandbox.ExecRequest{Cmd: []string{"bash", "-c", `exec python3 -c "$1" "$2" >&2`, "big", bigOutputScript, strconv.Itoa(n)}, MaxOutput: limit}
	checkElided(t, req, run(t, box, req), n, limit)
}

func (s *suite) testOutputCapBoundary(t *testing.T) {
	box := s.open(t, nil)
	const limit = 1000
	req := sandbox.ExecRequest{Cmd: bigOutputCmd(limit), MaxOutput: limit}
	res := run(t, box, req)
	if res.ExitCode != 0 || res.ElidedBytes != 0 || !bytes.Equal(res.Output, bigOutput(limit)) {
		t.Errorf("Exec(%s) printing exactly MaxOutput=%d bytes:\n got %s\nwant all of it, nothing elided", showCmd(req.Cmd), limit, showRes(res))
	}
	req = sandbox.ExecRequest{Cmd: bigOutputCmd(limit + 1), MaxOutput: limit}
	res = run(t, box, req)
	if kept := res.OutputBytes - res.ElidedBytes; res.ElidedBytes <= 0 || kept > limit || res.OutputBytes != limit+1 {
		t.Errorf("Exec(%s) printing MaxOutput+1=%d bytes:\n got %s\nwant OutputBytes %d, ElidedBytes > 0, at most %d kept", showCmd(req.Cmd), limit+1, showRes(res), limit+1, limit)
	}
}

func (s *suite) testOutputUncapped(t *testing.T) {
	box := s.open(t, nil)
	for _, n := range []int{100000, 3 << 20} {
		req := sandbox.ExecRequest{Cmd: bigOutputCmd(n), MaxOutput: -1}
		res := run(t, box, req)
		if res.ExitCode != 0 || res.ElidedBytes != 0 || res.OutputBytes != int64(n) || !bytes.Equal(res.Output, bigOutput(n)) {
			t.Errorf("Exec(%s) with MaxOutput -1:\n got %s\nwant exit 0 and all %d bytes, nothing elided", showCmd(req.Cmd), showRes(res), n)
		}
	}
}

func (s *suite) testOutputDefaultKeepsAll(t *testing.T) {
	box := s.open(t, nil)
	const n = 200 << 10
	req := sandbox.ExecRequest{Cmd: bigOutputCmd(n)}
	res := run(t, box, req)
	if res.ExitCode != 0 || res.ElidedBytes != 0 || res.OutputBytes != n || !bytes.Equal(res.Output, bigOutput(n)) {
		t.Errorf("Exec(%s) with the default cap:\n got %s\nwant exit 0 and all %d bytes, nothing elided", showCmd(req.Cmd), showRes(res), n)
	}
}

func (s *suite) testOutputDefaultElides(t *testing.T) {
	box := s.open(t, nil)
	n := sandbox.DefaultMaxOutput + 100000
	req := sandbox.ExecRequest{Cmd: bigOutputCmd(n)}
	checkElided(t, req, run(t, box, req), n, sandbox.DefaultMaxOutput)
}

// Concurrency

func (s *suite) concurrencyTests() []subtest {
	return []subtest{{"SameBox", s.testConcurrentExec}}
}

func (s *suite) testConcurrentExec(t *testing.T) {
	box := s.open(t, nil)
	const n, nap = 20, 500 * time.Millisecond
	// Warm up, so that a backend's lazy start is not counted.
	bashOK(t, box, "true")

	line := fmt.Sprintf("echo start-$SBT_N; sleep %g; cat; echo; echo end-$SBT_N", nap.Seconds())
	var wg sync.WaitGroup
	start := time.Now()
	for i := range n {
		wg.Go(func() {
			req := sandbox.ExecRequest{
				Cmd:   sandbox.Bash(line),
				Env:   []string{fmt.Sprintf("SBT_N=%d", i)},
				Stdin: fmt.Appendf(nil, "stdin-%d", i),
			}
			res, err := execErr(t, box, req)
			if err != nil {
				t.Errorf("Exec #%d: got error %v, want a result", i, err)
				return
			}
			wantOutput(t, req, res, fmt.Sprintf("start-%d\nstdin-%d\nend-%d\n", i, i, i))
		})
	}
	wg.Wait()
	took := time.Since(start)
	t.Logf("%d concurrent Execs of %v each took %v", n, nap, took)
	if serial := n * nap; took >= serial/2 {
		t.Errorf("%d concurrent Execs of %v each took %v, want under %v: they did not overlap", n, nap, took, serial/2)
	}
}

// Spec

func (s *suite) specTests() []subtest {
	return []subtest{{"Workdir", s.testSpecWorkdir}}
}

// testSpecWorkdir opens a box whose Workdir is "/", the one directory every
// image has. It only reads: the local backend's "/" is the host's.
func (s *suite) testSpecWorkdir(t *testing.T) {
	box := s.open(t, func(spec *sandbox.Spec) { spec.Workdir = "/" })
	req := sandbox.ExecRequest{Cmd: sandbox.Bash("pwd -P")}
	wantOutput(t, req, run(t, box, req), "/\n")

	req = sandbox.ExecRequest{Cmd: []string{"pwd", "-P"}, Cwd: "usr"}
	wantOutput(t, req, run(t, box, req), "/usr\n")

	// Relative file paths follow Workdir too.
	want := run(t, box, sandbox.ExecRequest{Cmd: []string{"cat", "/etc/passwd"}})
	if want.ExitCode != 0 || len(want.Output) == 0 {
		t.Fatalf("cat /etc/passwd: got %s, want exit 0 and some output", showRes(want))
	}
	if got := readFile(t, box, "etc/passwd"); !bytes.Equal(got, want.Output) {
		t.Errorf("ReadFile(etc/passwd) with Workdir / = %s, want the content of /etc/passwd, %s", clip(got), clip(want.Output))
	}
}

// allBytes returns the 256 byte values in order.
func allBytes() []byte {
	b := make([]byte, 256)
	for i := range b {
		b[i] = byte(i)
	}
	return b
}

// randomBytes returns n pseudo-random bytes, the same for the same seed.
func randomBytes(n int, seed uint64) []byte {
	r := rand.NewChaCha8([32]byte{byte(seed), byte(seed >> 8), 's', 'b', 't'})
	b := make([]byte, n)
	r.Read(b)
	return b
}
