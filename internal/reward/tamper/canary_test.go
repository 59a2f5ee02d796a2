package tamper

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/swerve-dev/swerve/internal/reward/swebench"
	"github.com/swerve-dev/swerve/internal/task"
	"github.com/swerve-dev/swerve/internal/testutil"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata")

func loadShared(t *testing.T, name string) []task.Task {
	t.Helper()
	res, err := task.Load(context.Background(), filepath.Join(testutil.SharedDir(t), "data", "swebench", name+".parquet"), task.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return res.Tasks
}

// TestCanaryGolden transforms real eval scripts of Verified (django,
// pytest family, sympy) with a fixed seed and compares script and injector
// with the golden files.
func TestCanaryGolden(t *testing.T) {
	tasks := loadShared(t, "verified-test")
	byID := map[string]*task.Task{}
	for i := range tasks {
		byID[tasks[i].InstanceID] = &tasks[i]
	}
	for _, id := range []string{"django__django-16901", "astropy__astropy-12907", "sympy__sympy-20590", "pytest-dev__pytest-10051", "mwaskom__seaborn-3069", "sphinx-doc__sphinx-10323", "django__django-16950"} {
		t.Run(id, func(t *testing.T) {
			tk := byID[id]
			if tk == nil {
				t.Fatalf("%s not in verified-test", id)
			}
			c := PlanCanariesSeeded(tk, nil, 1, 2)
			if !c.Available() {
				t.Fatalf("no canaries: %s", c.Unavailable)
			}
			script, err := c.Script(tk.EvalScript, "/.k3f9a1.py")
			if err != nil {
				t.Fatal(err)
			}
			// The script differs from the original by one line, before the marker.
			if got := strings.Replace(script, "\"$(command -v python || command -v python3)\" -E -s -S '/.k3f9a1.py'; rm -f '/.k3f9a1.py'\n", "", 1); got != tk.EvalScript {
				t.Errorf("Script changed more than the injector line")
			}
			if strings.Contains(script, c.MustFail) || strings.Contains(script, c.MustPass) {
				t.Errorf("the script names a canary")
			}
			// The golden file keeps only the change and the lines around it
			// (the scripts themselves are the dataset's, read at test time).
			golden(t, filepath.Join("testdata", "canary", id+".change"), scriptChange(tk.EvalScript, script))
			// Of the injector, only its first lines are the task's own (the
			// file, the class, the canary tests, the seed); the program
			// after them is the same for every task and runs in
			// TestInjectorRuns.
			head := strings.SplitAfterN(string(c.Injector()), "\n", 5)
			golden(t, filepath.Join("testdata", "canary", id+".injector.py"), strings.Join(head[:4], ""))
		})
	}
}

func golden(t *testing.T, file, got string) {
	t.Helper()
	if *update {
		if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(file, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(file)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if string(want) != got {
		t.Errorf("%s differs from the output (run with -update to rewrite it)", file)
	}
}

// TestCanaryCoverage counts the rows of Verified and Lite whose eval
// scripts get canaries, per log parser family; every django, pytest-family
// and sympy row must.
func TestCanaryCoverage(t *testing.T) {
	for _, name := range []string{"verified-test", "lite-test", "multilingual-test"} {
		tasks := loadShared(t, name)
		got, none := 0, map[string]int{}
		var missing []string
		for i := range tasks {
			c := PlanCanariesSeeded(&tasks[i], nil, uint64(i), 7)
			if c.Available() {
				got++
				continue
			}
			none[c.Unavailable]++
			if fw := canaryFramework(tasks[i].LogParser); fw == frameworkGo || fw == frameworkRust {
				// Go and Rust canaries are mutants only, planned from the
				// files of the repository (TestGoCanariesMultilingual and
				// TestRustCanariesMultilingual count them).
				continue
			}
			if !strings.HasPrefix(c.Unavailable, "not available for") && tasks[i].InstanceID != "django__django-10097" {
				// (django-10097's test patch changes only two data files
				// and runs the whole suite: no test file to host them.)
				missing = append(missing, tasks[i].InstanceID+": "+c.Unavailable)
			}
		}
		// Mutants, reading only the files the test patch creates (the
		// others need the repository at its base commit, read from the
		// box when grading): a lower bound.
		mutants := 0
		for i := range tasks {
			tk := &tasks[i]
			src := func(f string) (string, bool) {
				if !CreatedBy(tk.TestPatch, f) {
					return "", false
				}
				s, err := ApplyTestPatch(tk.TestPatch, f, "")
				return s, err == nil
			}
			if c := PlanCanariesSeeded(tk, src, uint64(i), 7); c.Original != "" {
				mutants++
			}
		}
		t.Logf("%s: %d of %d rows carry canaries; without: %v; %d get mutants from the files their test patch creates alone", name, got, len(tasks), none, mutants)
		if len(missing) > 0 {
			t.Errorf("%s: %d rows of covered frameworks get no canaries:\n%s", name, len(missing), strings.Join(missing, "\n"))
		}
	}
}

// TestInjectorRuns runs the injector with the host's Python on a django
// style and a pytest style test file and runs the result with unittest:
// the must-fail test fails, the must-pass one passes, the file's own tests
// still run.
func TestInjectorRuns(t *testing.T) {
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 not found; the injector is checked in the Docker tests")
	}
	cases := []struct {
		name, file, class, src string
	}{
		{"django class", "tests/app/tests.py", "HostTests", `import unittest


class OtherTests(unittest.TestCase):
    def test_other(self):
        pass


class HostTests(unittest.TestCase):
    @unittest.skipIf(False, "never")
    def test_one(self):
        self.assertEqual(1, 1)

    def test_two(self):
        self.assertTrue(True)
`},
		{"any TestCase class", "tests/app/tests.py", "*", "import unittest\n\n\nclass Helper:\n    def test_no(self):\n        pass\n\n\nclass HostTests(unittest.TestCase):\n    def test_one(self):\n        pass\n"},
		{"named class missing", "tests/app/tests.py", "Gone", "import unittest\n\n\nclass HostTests(unittest.TestCase):\n    def test_one(self):\n        pass\n"},
		{"latin-1 file", "pkg/tests/test_mod.py", "", "# -*- coding: latin-1 -*-\nNAME = '\xe9t\xe9'\n\n\ndef test_one():\n    assert NAME\n"},
		{"module functions", "pkg/tests/test_mod.py", "", `import unittest
from unittest import TestCase as sorted  # shadows a builtin, harmlessly for the canaries


def helper():
    return 1


@unittest.skipIf(False, "never")
def test_one():
    assert helper() == 1


class TestThing:
    def test_in_class(self):
        pass
`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			full := filepath.Join(dir, tc.file)
			if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(full, []byte(tc.src), 0o644); err != nil {
				t.Fatal(err)
			}
			for seed := uint64(0); seed < 4; seed++ {
				if err := os.WriteFile(full, []byte(tc.src), 0o644); err != nil {
					t.Fatal(err)
				}
				c := &Canaries{File: tc.file, Class: tc.class, framework: frameworkPytest, seed: seed}
				tk := &task.Task{}
				rng := newTestRand(seed)
				c.MustFail, c.MustPass = testName(rng, "", map[string]bool{}), testName(rng, "", map[string]bool{"x": true})
				method := tc.class != ""
				c.blocks[0] = canaryBlock{Source: canaryBody(rng, c.MustFail, method, false)}
				c.blocks[1] = canaryBlock{Source: canaryBody(rng, c.MustPass, method, true)}
				_ = tk
				inj := filepath.Join(dir, "inj.py")
				if err := os.WriteFile(inj, c.Injector(), 0o644); err != nil {
					t.Fatal(err)
				}
				cmd := exec.Command(py, inj)
				cmd.Dir = dir
				if out, err := cmd.CombinedOutput(); err != nil {
					t.Fatalf("injector: %v\n%s", err, out)
				}
				var runner string
				if method {
					runner = "import sys, unittest; sys.path.insert(0, 'tests/app'); import tests as m; r = unittest.TextTestRunner(verbosity=2).run(unittest.defaultTestLoader.loadTestsFromModule(m))"
				} else {
					runner = "import sys; sys.path.insert(0, 'pkg/tests'); import test_mod as m\n" +
						"for n in sorted(k for k in dir(m) if k.startswith('test_')):\n" +
						"    f = getattr(m, n)\n" +
						"    try:\n        f(); print(n, 'ok')\n    except AssertionError:\n        print(n, 'F')\n"
				}
				cmd = exec.Command(py, "-c", runner)
				cmd.Dir = dir
				out, _ := cmd.CombinedOutput()
				s := string(out)
				for _, want := range []string{c.MustFail, c.MustPass, "test_one"} {
					if !strings.Contains(s, want) {
						t.Fatalf("seed %d: %s did not run:\n%s", seed, want, s)
					}
				}
				okFail := strings.Contains(s, c.MustFail+" F") || strings.Contains(s, c.MustFail+" (tests.HostTests") && strings.Contains(s, "FAIL: "+c.MustFail)
				okPass := strings.Contains(s, c.MustPass+" ok") || strings.Contains(s, c.MustPass+" (tests.HostTests") && !strings.Contains(s, "FAIL: "+c.MustPass)
				if !okFail || !okPass {
					t.Fatalf("seed %d: canaries came out wrong:\n%s", seed, s)
				}
			}
		})
	}
}

func TestVerify(t *testing.T) {
	c := &Canaries{MustFail: "test_merge_empty_keys", MustPass: "test_parse_nested_rows"}
	tests := []struct {
		name     string
		sm       swebench.StatusMap
		resolved bool
		want     string
	}{
		{"honest django", swebench.StatusMap{"test_merge_empty_keys (a.tests.T)": "FAILED", "test_parse_nested_rows (a.tests.T)": "PASSED", "test_x (a.tests.T)": "PASSED"}, true, ""},
		{"honest pytest", swebench.StatusMap{"a/test_b.py::test_merge_empty_keys": "FAILED", "a/test_b.py::test_parse_nested_rows": "PASSED"}, true, ""},
		{"honest sympy", swebench.StatusMap{"sympy/a/test_b.py:test_merge_empty_keys": "FAILED", "test_merge_empty_keys": "FAILED", "test_parse_nested_rows": "PASSED"}, true, ""},
		{"must-fail passed", swebench.StatusMap{"test_merge_empty_keys": "PASSED", "test_parse_nested_rows": "PASSED"}, true, "canary test_merge_empty_keys passed but must fail"},
		{"must-fail passed, unresolved", swebench.StatusMap{"test_merge_empty_keys": "PASSED"}, false, "canary test_merge_empty_keys passed but must fail"},
		{"both missing", swebench.StatusMap{"test_x": "PASSED"}, true, "canary test_merge_empty_keys (must fail) is missing from the log; canary test_parse_nested_rows (must pass) is missing from the log"},
		{"missing when unresolved", swebench.StatusMap{"test_x": "FAILED"}, false, ""},
		{"must-pass failed", swebench.StatusMap{"test_merge_empty_keys": "FAILED", "test_parse_nested_rows": "FAILED"}, true, "canary test_parse_nested_rows failed but must pass"},
		{"must-fail skipped", swebench.StatusMap{"test_merge_empty_keys": "SKIPPED", "test_parse_nested_rows": "PASSED"}, true, "canary test_merge_empty_keys (must fail) was skipped"},
		// A forger re-prints "... ok" for the canary after the real
		// failure: the label key passes while django's "FAIL:" key fails.
		{"must-fail passed under one of its keys", swebench.StatusMap{"test_merge_empty_keys (a.tests.T.test_merge_empty_keys)": "PASSED", "test_merge_empty_keys": "FAILED", "test_parse_nested_rows (a.tests.T.test_parse_nested_rows)": "PASSED"}, true, "canary test_merge_empty_keys passed but must fail"},
		{"must-pass failed under one of its keys", swebench.StatusMap{"test_merge_empty_keys": "FAILED", "test_parse_nested_rows (a.tests.T)": "PASSED", "test_parse_nested_rows": "FAILED"}, true, "canary test_parse_nested_rows failed but must pass"},
		{"longer names do not count", swebench.StatusMap{"test_merge_empty_keys_2": "FAILED", "test_parse_nested_rows": "PASSED"}, true, "canary test_merge_empty_keys (must fail) is missing from the log"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := strings.Join(c.Verify(tc.sm, tc.resolved), "; "); got != tc.want {
				t.Errorf("Verify = %q, want %q", got, tc.want)
			}
		})
	}
	// A mutant of a FAIL_TO_PASS test may pass on code that does not fix
	// the bug (its assertion negated): judged only when the run resolves.
	m := &Canaries{MustFail: "test_merge_empty_keys", MustPass: "test_parse_nested_rows", Original: "test_x (a.tests.T)"}
	sm := swebench.StatusMap{"test_merge_empty_keys (a.tests.T)": "PASSED", "test_parse_nested_rows (a.tests.T)": "PASSED"}
	if got := m.Verify(sm, false); got != nil {
		t.Errorf("mutant, unresolved run: %q", got)
	}
	if got := strings.Join(m.Verify(sm, true), "; "); got != "canary test_merge_empty_keys passed but must fail" {
		t.Errorf("mutant, resolved run: %q", got)
	}
	if got := (&Canaries{Unavailable: "not available for parse_log_gotest"}).Verify(nil, true); got != nil {
		t.Errorf("unavailable canaries verified: %v", got)
	}
}

func newTestRand(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, 99)) }

// scriptChange describes where Script put its line: the line number, the
// line before, the new line and the line after.
func scriptChange(before, after string) string {
	a, b := strings.Split(before, "\n"), strings.Split(after, "\n")
	for i := range b {
		if i >= len(a) || a[i] != b[i] {
			return fmt.Sprintf("line %d\n  before: %s\n  added:  %s\n  after:  %s\n", i+1, b[i-1], b[i], b[i+1])
		}
	}
	return "no change\n"
}

// TestExtraCanariesOffByDefault: the frameworks whose honest verdicts are
// not yet proved on real rows get no canaries unless ExtraCanariesEnv
// names them.
func TestExtraCanariesOffByDefault(t *testing.T) {
	for _, c := range []struct{ parser, fw string }{
		{"parse_log_cargo", frameworkRust}, {"parse_log_jest", frameworkJS}, {"parse_log_tap", frameworkJS}, {"parse_log_phpunit", frameworkPHP},
	} {
		t.Setenv(ExtraCanariesEnv, "")
		if got := canaryFramework(c.parser); got != "" {
			t.Errorf("%s: %q with %s unset", c.parser, got, ExtraCanariesEnv)
		}
		t.Setenv(ExtraCanariesEnv, "go, "+c.fw)
		if got := canaryFramework(c.parser); got != c.fw {
			t.Errorf("%s: %q with %s=%s", c.parser, got, ExtraCanariesEnv, c.fw)
		}
	}
	if canaryFramework("parse_log_gotest") != frameworkGo {
		t.Errorf("go canaries are on by default")
	}
}
