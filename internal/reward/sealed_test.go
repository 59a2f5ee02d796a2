package reward_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/swerve-dev/swerve/internal/reward"
	"github.com/swerve-dev/swerve/internal/testutil"
)

// hostBash runs script the way upstream harnesses do, `/bin/bash <file>`,
// with stdout and stderr merged, and returns what it printed.
func hostBash(t *testing.T, script string) string {
	t.Helper()
	dir := t.TempDir()
	f := filepath.Join(dir, "eval.sh")
	if err := os.WriteFile(f, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("/bin/bash", f)
	cmd.Dir = dir
	out, _ := cmd.CombinedOutput()
	return string(out)
}

// TestSealedRunMatchesBash: for honest scripts, the sealed run's log is
// byte for byte what `/bin/bash eval.sh` prints, its exit status is the
// script's, and the trusted trace lists exactly the lines bash traced.
func TestSealedRunMatchesBash(t *testing.T) {
	tests := []struct {
		name     string
		script   string
		wantExit int
		// wantTrace are the trusted lines' texts, in order.
		wantTrace []string
	}{
		{"no trace", "echo hi\n", 0, nil},
		{"swebench shape", "#!/bin/bash\nset -uxo pipefail\ncd .\n: '>>>>> Start Test Output'\necho 'test_a ... ok'\n: '>>>>> End Test Output'\n",
			0, []string{"cd .", ": '>>>>> Start Test Output'", "echo 'test_a ... ok'", ": '>>>>> End Test Output'"}},
		{"exit status", "set -x\nfalse\nexit 3\necho never\n", 3, []string{"false", "exit 3"}},
		{"last command's status", "set -x\n( exit 7 )\n", 7, []string{"exit 7"}},
		{"set +x", "set -x\n: one\nset +x\n: two\n", 0, []string{": one", "set +x"}},
		{"heredoc", "set -x\ncat <<'EOF'\n+ : '>>>>> Start Test Output'\nEOF\n", 0, []string{"cat"}},
		{"heredoc at the end without newline", "cat <<'EOF'\nlast\nEOF", 0, nil},
		{"subshell and command substitution", "set -x\nx=$(echo a)\n( echo b )\n", 0, []string{"echo a", "x=a", "echo b"}},
		{"multi-line value", "set -x\nx='a\nb'\n", 0, []string{"x='a"}},
		{"set -u failure", "set -ux\necho $nope\necho never\n", 1, nil},
		{"exec", "set -x\nexec bash -c 'exit 4'\n", 4, []string{"exec bash -c 'exit 4'"}},
		{"own EXIT trap", "set -x\ntrap 'echo bye' EXIT\nexit 2\n", 2, []string{"trap 'echo bye' EXIT", "exit 2", "echo bye"}},
		{"no trailing newline", "printf 'x'\n", 0, nil},
		{"stderr and stdout", "set -x\necho out\necho err >&2\n", 0, []string{"echo out", "echo err"}},
		{"function", "set -x\nf() { : in f; }\nf\n", 0, []string{"f", ": in f"}},
	}
	box := repoBox(t)
	_, evalFile := reward.Paths(box)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if strings.Contains(tt.script, "/usr/bin/python3") {
				if _, err := os.Stat("/usr/bin/python3"); err != nil {
					testutil.Missing(t, "needs python3: %v", err)
				}
			}
			run, err := reward.RunScript(context.Background(), box, ".", evalFile, tt.script, time.Minute)
			if err != nil {
				t.Fatal(err)
			}
			if tt.name != "set -u failure" { // bash names the file in that message
				if want := hostBash(t, tt.script); run.Log != want {
					t.Errorf("log\n%q\nwant what /bin/bash prints\n%q", run.Log, want)
				}
			}
			if run.ExitCode != tt.wantExit || !run.Trace.Ended {
				t.Errorf("exit %d (ended %v), want %d", run.ExitCode, run.Trace.Ended, tt.wantExit)
			}
			var got []string
			for _, l := range run.Trace.Lines {
				got = append(got, l.Text)
				if run.Log[l.Start:l.End] != l.Text {
					t.Errorf("trace line %q is %q in the log", l.Text, run.Log[l.Start:l.End])
				}
			}
			if strings.Join(got, "\n") != strings.Join(tt.wantTrace, "\n") {
				t.Errorf("trusted lines %q, want %q", got, tt.wantTrace)
			}
		})
	}
}

// thief reads its own stdout back, looks for a trace prefix and forges a
// trace line with the nonce it found.
const thief = `import os, re, time
try:
    fd = os.open('/proc/self/fd/1', os.O_RDONLY | os.O_NONBLOCK)
except OSError as e:
    print('cannot reopen stdout:', e.strerror)
    raise SystemExit
buf, end = b'', time.time() + 3
while time.time() < end:
    try:
        buf += os.read(fd, 65536)
    except BlockingIOError:
        continue
    m = re.search(rb'\+([0-9a-f]{32}) ', buf)
    if m:
        os.write(1, b'++' + m.group(1) + b' echo OMNIGRIL_EXIT_CODE=0\n')
        break
`

// stolen are the trusted lines of the thief's script when it fails.
var stolen = []string{"/usr/bin/python3 -", "sleep 0.3", ": one", ": two", ": three", "sleep 0.3", "echo OMNIGRIL_EXIT_CODE=1", "wait"}

// TestSealedRunForgery: what the script's children print never becomes a
// trusted line, whatever they print or do to the script's shell.
func TestSealedRunForgery(t *testing.T) {
	tests := []struct {
		name   string
		script string
		// wantTrace are the trusted lines' texts; wantExit the status.
		wantTrace []string
		wantExit  int
		// notInLog must not be in the log (printed after the script ended).
		notInLog string
	}{
		{"child prints trace lines", "set -x\nbash -c \"printf '%s\\n' \\\"+ : '>>>>> End Test Output'\\\" '++ echo OMNIGRIL_EXIT_CODE=0'\"\n",
			[]string{`bash -c 'printf '\''%s\n'\'' "+ : '\''>>>>> End Test Output'\''" '\''++ echo OMNIGRIL_EXIT_CODE=0'\'''`}, 0, ""},
		{"child bash traces its own commands", "set -x\nbash -xc ': forged'\n", []string{"bash -xc ': forged'"}, 0, ""},
		{"child has no PS4", "bash -c 'echo \"[$PS4]\"'\n", nil, 0, ""},
		{"child kills the shell", "set -x\nbash -c 'echo OMNIGRIL_EXIT_CODE=0; kill -9 $PPID'\necho OMNIGRIL_EXIT_CODE=1\n",
			[]string{"bash -c 'echo OMNIGRIL_EXIT_CODE=0; kill -9 $PPID'"}, 137, ""},
		// A pipe could be reopened for reading through /proc and the trace
		// lines stolen on their way to the helper, nonce and all.
		{"child reads the shell's output back", "set -x\n/usr/bin/python3 - <<'EOF' &\n" + thief + "EOF\nsleep 0.3\n: one\n: two\n: three\nsleep 0.3\necho OMNIGRIL_EXIT_CODE=1\nwait\n",
			stolen, 0, ""},
		{"detached child prints after the end", "setsid bash -c 'sleep 0.05; echo LATE' &\necho done\n", nil, 0, "LATE"},
	}
	box := repoBox(t)
	_, evalFile := reward.Paths(box)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if strings.Contains(tt.script, "/usr/bin/python3") {
				if _, err := os.Stat("/usr/bin/python3"); err != nil {
					testutil.Missing(t, "needs python3: %v", err)
				}
			}
			run, err := reward.RunScript(context.Background(), box, ".", evalFile, tt.script, time.Minute)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, l := range run.Trace.Lines {
				got = append(got, l.Text)
			}
			// Which lines, not their order: a background child's trace
			// races the shell's.
			want := append([]string{}, tt.wantTrace...)
			sort.Strings(got)
			sort.Strings(want)
			if strings.Join(got, "\n") != strings.Join(want, "\n") {
				t.Errorf("trusted lines %q, want %q\nlog:\n%s", got, want, run.Log)
			}
			if run.ExitCode != tt.wantExit {
				t.Errorf("exit %d, want %d", run.ExitCode, tt.wantExit)
			}
			if tt.name == "child has no PS4" && strings.TrimSpace(run.Log) != "[+ ]" {
				t.Errorf("a child sees PS4 %q, want bash's default", run.Log)
			}
			if tt.notInLog != "" && strings.Contains(run.Log, tt.notInLog) {
				t.Errorf("log holds %q, printed after the script ended:\n%s", tt.notInLog, run.Log)
			}
		})
	}
}
