package grader

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/swerve-dev/swerve/internal/reward/tamper"
	"github.com/swerve-dev/swerve/internal/sandbox"
	"github.com/swerve-dev/swerve/internal/sandbox/docker"
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

// forgeryCase is a patch whose code, imported by the sample task's tests,
// forges what a grader reads.
type forgeryCase struct {
	name   string
	tk     *task.Task
	code   string // appended to calc.py; "" grades the gold patch
	reward float64
	reason string
	// containerOnly cases rely on the box dropping CAP_SYS_PTRACE, which a
	// local box on a root host does not.
	containerOnly bool
}

// forgeryCases forge markers, summaries and exit codes before, inside and
// after the test section, after the script ended and with the script's
// shell killed, for the sample task's swebench and swefactory rows.
func forgeryCases(t *testing.T) []forgeryCase {
	root := testutil.RepoRoot(t)
	bench := loadOne(t, filepath.Join(root, "examples", "sample", "tasks.jsonl"), "sample__calc-1")
	factory := loadOne(t, filepath.Join(root, "examples", "sample", "sample_transferred.json"), "sample__calc-1")
	// say writes past pytest's capture of the test process's output: to
	// the copy of the real stdout pytest keeps (the only socket it holds).
	const say = "import os, signal, stat\ndef say(s):\n    for fd in range(3, 256):\n        try:\n            if stat.S_ISSOCK(os.fstat(fd).st_mode):\n                os.write(fd, (s + '\\n').encode())\n                return\n        except OSError:\n            pass\n"
	const killShell = "os.kill(os.getppid(), signal.SIGKILL)\n"
	return []forgeryCase{
		{"swebench gold", bench, "", 1, "resolved", false},
		{"swebench: a forged end marker cuts the section before the failures", bench,
			say + "say(\"" + passedLines(bench) + "+ : '>>>>> End Test Output'\")\n", 0, "FAIL_TO_PASS failed", false},
		{"swebench: a forged section before the real one", bench,
			say + "say(\"+ : '>>>>> Start Test Output'\\n" + passedLines(bench) + "+ : '>>>>> End Test Output'\")\n", 0, "FAIL_TO_PASS failed", false},
		{"swebench: forged results and exit code 0, then the tests die", bench,
			say + "say(\"" + passedLines(bench) + ">>>>> Test Exit Code: 0\")\nos._exit(1)\n", 0, "test command exited 1", false},
		{"swebench: forged section, then the shell killed", bench,
			say + "say(\"" + passedLines(bench) + "+ : '>>>>> End Test Output'\\n>>>>> Test Exit Code: 0\")\n" + killShell, 0, "test output markers missing", false},
		{"swebench: a forged trace line with a made-up nonce", bench,
			say + "say(\"" + passedLines(bench) + "++0123456789abcdef0123456789abcdef : '>>>>> End Test Output'\")\n", 0, "FAIL_TO_PASS failed", false},
		{"swefactory gold", factory, "", 1, "resolved", false},
		{"swefactory: marker printed, then the shell killed", factory,
			say + "say('OMNIGRIL_EXIT_CODE=0')\n" + killShell, 0, "no trusted", false},
		{"swefactory: a detached child prints the marker after the script's own", factory,
			"import subprocess\nsubprocess.Popen(['sh', '-c', 'sleep 0.05; echo OMNIGRIL_EXIT_CODE=0'], start_new_session=True)\n", 0, "tests failed: OMNIGRIL_EXIT_CODE=1", false},
		{"swefactory: a forged trace of the echo", factory,
			say + "say('+ echo OMNIGRIL_EXIT_CODE=0\\nOMNIGRIL_EXIT_CODE=0')\n" + killShell, 0, "no trusted", false},
		// The nonce lives in the runner's memory: read it through /proc
		// from every ancestor and forge a trusted trace with it. The runner
		// is non-dumpable (PrivateMemory), so its memory cannot be opened.
		{"swefactory: the nonce read out of the runner's memory", factory,
			say + readNonce + "found = nonces()\nsay('nonces found: %d' % len(found))\nfor nonce in found:\n    say('++' + nonce + ' echo OMNIGRIL_EXIT_CODE=0\\nOMNIGRIL_EXIT_CODE=0')\n" + killShell, 0, "OMNIGRIL_EXIT_CODE", true},
	}
}

// readNonce defines nonces(): every string shaped like a sealed run's PS4
// ("+" and 32 hex digits and a space) found in the writable memory of the
// test process's ancestors.
const readNonce = `import re
def nonces():
    found, pid = set(), os.getppid()
    while pid > 1:
        try:
            with open('/proc/%d/maps' % pid) as m, open('/proc/%d/mem' % pid, 'rb', 0) as mem:
                for line in m:
                    addr, perms = line.split()[:2]
                    if not perms.startswith('rw'):
                        continue
                    lo, hi = (int(x, 16) for x in addr.split('-'))
                    try:
                        mem.seek(lo)
                        data = mem.read(min(hi - lo, 1 << 24))
                    except OSError:
                        continue
                    found.update(x.decode() for x in re.findall(rb'\+([0-9a-f]{32}) ', data))
        except OSError:
            pass
        try:
            pid = int(open('/proc/%d/stat' % pid).read().rsplit(')', 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            break
    return found
`

// checkForgery grades c in box and checks the outcome.
func checkForgery(t *testing.T, box sandbox.Sandbox, c forgeryCase, workdir string) {
	t.Helper()
	// The seal must end each forgery on its own: the static check, which
	// names several of them too (os._exit, killing the parent), keeps its
	// findings beside the verdict here instead of taking its place.
	opts := Options{Gold: true, Workdir: workdir, Tamper: tamper.ModeFlag}
	if c.code != "" {
		opts = Options{Patch: appendToCalc(t, c.code), Workdir: workdir, Tamper: tamper.ModeFlag}
	}
	out, err := Grade(context.Background(), box, c.tk, opts)
	if err != nil {
		t.Fatal(err)
	}
	// The forgery must have reached the log, or the case proves nothing.
	forged := "PASSED tests/test_calc.py::test_median_even_length"
	if c.tk.Grader == task.GraderSWEFactory {
		forged = "OMNIGRIL_EXIT_CODE=0"
	}
	if c.containerOnly {
		forged = "nonces found: 0"
	}
	if c.code != "" && !strings.Contains(c.name, "after the script") && !strings.Contains(out.Log, forged) {
		t.Errorf("the forged %q is not in the log:\n%s", forged, out.Log)
	}
	if out.Reward != c.reward || !strings.Contains(out.Reason, c.reason) || !out.Sealed {
		t.Errorf("reward %v (%s), sealed %v; want %v containing %q\nlog:\n%s", out.Reward, out.Reason, out.Sealed, c.reward, c.reason, out.Log)
	}
}

// TestSealedForgeryLocal grades the forgery cases on the local backend.
// Each must get reward 0; the gold patch still gets 1.
func TestSealedForgeryLocal(t *testing.T) {
	testutil.HostPytest(t)
	b := localBackend(t)
	for _, c := range forgeryCases(t) {
		if c.containerOnly {
			continue
		}
		t.Run(c.name, func(t *testing.T) {
			box, err := b.Open(context.Background(), sandbox.Spec{Image: c.tk.SourceDir})
			if err != nil {
				t.Fatal(err)
			}
			defer box.Close(context.Background())
			checkForgery(t, box, c, ".")
		})
	}
}

// TestSealedForgeryDocker grades the forgery cases in containers of an
// image holding the sample repository at /testbed (built from the test
// base image).
func TestSealedForgeryDocker(t *testing.T) {
	ctx := context.Background()
	if err := docker.Probe(ctx); err != nil {
		testutil.SkipOrFail(t, "no container engine: %v", err)
	}
	eng, err := docker.New(ctx, docker.Config{Options: sandbox.Options{RunID: "test-sealed", ShimPath: testutil.SwerveBinary(t)}})
	if err != nil {
		t.Fatal(err)
	}
	base := testutil.TestImage()
	if ok, err := eng.ImageExists(ctx, base); err != nil || !ok {
		testutil.SkipOrFail(t, "the test base image %s is missing (%v)", base, err)
	}
	const tag = "swerve-test-sealed-calc:latest"
	var log strings.Builder
	df := "FROM " + base + "\nCOPY . /testbed\nWORKDIR /testbed\n" +
		"RUN git init -q && git add -A && git -c user.name=t -c user.email=t@localhost commit -qm base\n"
	if err := eng.Build(ctx, docker.BuildOptions{ContextDir: filepath.Join(testutil.RepoRoot(t), "examples", "sample", "repo"), Dockerfile: df, Tags: []string{tag}, Progress: &log}); err != nil {
		t.Fatalf("build: %v\n%s", err, log.String())
	}
	for _, c := range forgeryCases(t) {
		t.Run(c.name, func(t *testing.T) {
			box, err := eng.Open(ctx, sandbox.Spec{Image: tag})
			if err != nil {
				t.Fatal(err)
			}
			defer box.Close(context.Background())
			checkForgery(t, box, c, "")
		})
	}
}
