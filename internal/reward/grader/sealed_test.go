package grader

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/swerve-dev/swerve/internal/sandbox"
	"github.com/swerve-dev/swerve/internal/task"
	"github.com/swerve-dev/swerve/internal/testutil"
)

// appendToCalc is a patch that appends code to the sample repository's
// calc.py: code the tests import, which runs inside the test process.
func appendToCalc(t *testing.T, code string) string {
	t.Helper()
	src, err := os.ReadFile(filepath.Join(testutil.RepoRoot(t), "examples", "sample", "repo", "calc.py"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(string(src), "\n"), "\n")
	n := len(lines)
	add := strings.Split(strings.TrimSuffix(code, "\n"), "\n")
	var b strings.Builder
	fmt.Fprintf(&b, "diff --git a/calc.py b/calc.py\n--- a/calc.py\n+++ b/calc.py\n@@ -%d,3 +%d,%d @@\n", n-2, n-2, 3+len(add))
	for _, l := range lines[n-3:] {
		b.WriteString(" " + l + "\n")
	}
	for _, l := range add {
		b.WriteString("+" + l + "\n")
	}
	return b.String()
}

// passedLines prints a pytest -rA summary line PASSED for every test of tk.
func passedLines(tk *task.Task) string {
	var b strings.Builder
	for _, n := range append(append([]string{}, tk.FailToPass...), tk.PassToPass...) {
		b.WriteString("PASSED " + n + "\\n")
	}
	return b.String()
}

// TestSealedForgeryLocal grades patches whose code, imported by the tests,
// forges what the graders read — markers, summaries, exit codes, before,
// inside and after the test section, after the script ended, with the
// script's shell killed — on the local backend. Each must get reward 0;
// the gold patch still gets 1.
func TestSealedForgeryLocal(t *testing.T) {
	root := testutil.RepoRoot(t)
	if out, err := exec.Command("/usr/bin/python3", "-m", "pytest", "--version").CombinedOutput(); err != nil {
		testutil.SkipOrFail(t, "/usr/bin/python3 has no pytest: %s", out)
	}
	t.Setenv("PATH", "/usr/bin:"+os.Getenv("PATH"))
	b := localBackend(t)
	bench := loadOne(t, filepath.Join(root, "examples", "sample", "tasks.jsonl"), "sample__calc-1")
	factory := loadOne(t, filepath.Join(root, "examples", "sample", "sample_transferred.json"), "sample__calc-1")
	// say writes to the output of the tests' parent (the script's shell),
	// past pytest's capture of the test process's own.
	const say = "import os, signal\ndef say(s):\n    fd = os.open('/proc/%d/fd/1' % os.getppid(), os.O_WRONLY)\n    os.write(fd, (s + '\\n').encode())\n    os.close(fd)\n"
	const killShell = "os.kill(os.getppid(), signal.SIGKILL)\n"
	tests := []struct {
		name   string
		tk     *task.Task
		code   string // appended to calc.py; "" grades the gold patch
		reward float64
		reason string
	}{
		{"swebench gold", bench, "", 1, "resolved"},
		{"swebench: a forged end marker cuts the section before the failures", bench,
			say + "say(\"" + passedLines(bench) + "+ : '>>>>> End Test Output'\")\n", 0, "FAIL_TO_PASS failed"},
		{"swebench: a forged section before the real one", bench,
			say + "say(\"+ : '>>>>> Start Test Output'\\n" + passedLines(bench) + "+ : '>>>>> End Test Output'\")\n", 0, "FAIL_TO_PASS failed"},
		{"swebench: forged results and exit code 0, then the tests die", bench,
			say + "say(\"" + passedLines(bench) + ">>>>> Test Exit Code: 0\")\nos._exit(1)\n", 0, "test command exited 1"},
		{"swebench: forged section, then the shell killed", bench,
			say + "say(\"" + passedLines(bench) + "+ : '>>>>> End Test Output'\\n>>>>> Test Exit Code: 0\")\n" + killShell, 0, "test output markers missing"},
		{"swebench: a forged trace line with a made-up nonce", bench,
			say + "say(\"" + passedLines(bench) + "++0123456789abcdef0123456789abcdef : '>>>>> End Test Output'\")\n", 0, "FAIL_TO_PASS failed"},
		{"swefactory gold", factory, "", 1, "resolved"},
		{"swefactory: marker printed, then the shell killed", factory,
			say + "say('OMNIGRIL_EXIT_CODE=0')\n" + killShell, 0, "no trusted"},
		{"swefactory: a detached child prints the marker after the script's own", factory,
			"import subprocess\nsubprocess.Popen(['sh', '-c', 'sleep 0.05; echo OMNIGRIL_EXIT_CODE=0'], start_new_session=True)\n", 0, "tests failed: OMNIGRIL_EXIT_CODE=1"},
		{"swefactory: a forged trace of the echo", factory,
			say + "say('+ echo OMNIGRIL_EXIT_CODE=0\\nOMNIGRIL_EXIT_CODE=0')\n" + killShell, 0, "no trusted"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			box, err := b.Open(context.Background(), sandbox.Spec{Image: tt.tk.SourceDir})
			if err != nil {
				t.Fatal(err)
			}
			defer box.Close(context.Background())
			opts := Options{Gold: true, Workdir: "."}
			if tt.code != "" {
				opts = Options{Patch: appendToCalc(t, tt.code), Workdir: "."}
			}
			out, err := Grade(context.Background(), box, tt.tk, opts)
			if err != nil {
				t.Fatal(err)
			}
			// The forgery must have reached the log, or the case proves nothing.
			forged := "PASSED tests/test_calc.py::test_median_even_length"
			if tt.tk == factory {
				forged = "OMNIGRIL_EXIT_CODE=0"
			}
			if tt.code != "" && !strings.Contains(tt.name, "after the script") && !strings.Contains(out.Log, forged) {
				t.Errorf("the forged %q is not in the log:\n%s", forged, out.Log)
			}
			if out.Reward != tt.reward || !strings.Contains(out.Reason, tt.reason) || !out.Sealed {
				t.Errorf("reward %v (%s), sealed %v; want %v containing %q\nlog:\n%s", out.Reward, out.Reason, out.Sealed, tt.reward, tt.reason, out.Log)
			}
		})
	}
}
