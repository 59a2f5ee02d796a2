package r2e

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/swerve-dev/swerve/internal/reward"
	"github.com/swerve-dev/swerve/internal/reward/tamper"
	"github.com/swerve-dev/swerve/internal/sandbox"
	"github.com/swerve-dev/swerve/internal/sandbox/local"
	"github.com/swerve-dev/swerve/internal/task"
	"github.com/swerve-dev/swerve/internal/testutil"
)

func readLog(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "logs", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func expected(t *testing.T, js string) map[string]string {
	t.Helper()
	var m map[string]string
	if err := json.Unmarshal([]byte(js), &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// TestOracle checks Evaluate against R2E-Gym's own reward code: the logs in
// testdata/logs are genuine pytest output (testdata/gen.sh), and
// testdata/oracle.json holds the reward and parsed map R2E-Gym's
// _calculate_reward_r2e and parse_log_pytest (DeepSWE revision) gave for
// each of them with the expectation shown.
func TestOracle(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("testdata", "oracle.json"))
	if err != nil {
		t.Fatal(err)
	}
	var cases []struct {
		Name     string            `json:"name"`
		Log      string            `json:"log"`
		Expected string            `json:"expected_output_json"`
		Reward   float64           `json:"reward"`
		Parsed   map[string]string `json:"parsed"`
	}
	if err := json.Unmarshal(b, &cases); err != nil {
		t.Fatal(err)
	}
	if len(cases) < 10 {
		t.Fatalf("%d oracle cases", len(cases))
	}
	for _, c := range cases {
		t.Run(c.Name, func(t *testing.T) {
			tk := &task.Task{InstanceID: "x", Repo: "aiohttp", ExpectedOutput: expected(t, c.Expected)}
			r, err := Evaluate(tk, readLog(t, c.Log))
			if err != nil {
				t.Fatal(err)
			}
			if r.Reward != c.Reward || r.Resolved != (c.Reward == 1) {
				t.Errorf("reward %v (%s), R2E-Gym gave %v", r.Reward, r.Reason, c.Reward)
			}
			if diff := cmp.Diff(c.Parsed, r.Parsed); diff != "" {
				t.Errorf("parsed map differs from R2E-Gym's (-r2e +swerve):\n%s", diff)
			}
		})
	}
}

func TestEvaluateReasons(t *testing.T) {
	suite := readLog(t, "suite.log")
	full := map[string]string{
		"TestGroup.test_method": "PASSED", "TestGroup.test_method_fails": "FAILED", "test_fails_with_dash": "FAILED",
		"test_fixture_error": "ERROR", "test_param[1]": "PASSED", "test_param[2]": "FAILED", "test_param[a.b]": "PASSED",
		"test_param[p": "PASSED", "test_plain": "PASSED", "test_prints_passed_word": "PASSED",
	}
	with := func(changes map[string]string) map[string]string {
		m := map[string]string{}
		for k, v := range full {
			m[k] = v
		}
		for k, v := range changes {
			if v == "" {
				delete(m, k)
			} else {
				m[k] = v
			}
		}
		return m
	}
	tests := []struct {
		name       string
		log        string
		want       map[string]string
		wantReward float64
		wantReason string
	}{
		{"resolved", suite, full, 1, "resolved"},
		{"status differs", suite, with(map[string]string{"test_param[2]": "PASSED"}), 0, "tests failed: test_param[2] (want PASSED, got FAILED)"},
		{"missing from the log", suite, with(map[string]string{"test_plain": "", "test_gone": "PASSED"}), 0,
			"tests failed: test_gone (want PASSED, not in the log), test_plain (PASSED, not expected)"},
		{"count differs", suite, with(map[string]string{"test_new": "PASSED"}), 0, "the log has 10 test results, expected_output_json 11: test_new (want PASSED, not in the log)"},
		{"many mismatches", suite, map[string]string{"a": "PASSED", "b": "PASSED", "c": "PASSED", "d": "PASSED", "e": "PASSED", "f": "PASSED", "g": "PASSED", "h": "PASSED", "i": "PASSED", "j": "PASSED"}, 0,
			"tests failed: TestGroup.test_method (PASSED, not expected), TestGroup.test_method_fails (FAILED, not expected), a (want PASSED, not in the log) and 17 more"},
		// Node ids in the expectation are read the way the parser names tests.
		{"node ids expected", readLog(t, "aiohttp_buggy.log"), map[string]string{"tests/test_client.py::test_basic": "PASSED", "tests/test_client.py::test_redirect": "FAILED"}, 1, "resolved"},
		// R2E-Gym's DeepSWE code skips the unnamed result a collection error
		// gives and pays 1 when exactly one test was expected; swerve counts
		// the expected test missing from the log.
		{"collection error in place of one test", readLog(t, "collect_error.log"), map[string]string{"test_x": "PASSED"}, 0, "test_x (want PASSED, not in the log)"},
		{"no output at all", "", map[string]string{"test_x": "PASSED"}, 0, "the log has 0 test results, expected_output_json 1"},
		{"empty expectation, empty log", "", map[string]string{}, 1, "resolved (expected_output_json is empty"},
		{"crlf and colour", "\x1b[1m=== short test summary info ===\x1b[0m\r\nPASSED t.py::test_a\r\nFAILED t.py::\x1b[1mtest_b\x1b[0m - boom\r\n", map[string]string{"test_a": "PASSED", "test_b": "FAILED"}, 1, "resolved"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := Evaluate(&task.Task{InstanceID: "x", ExpectedOutput: tt.want}, tt.log)
			if err != nil {
				t.Fatal(err)
			}
			if r.Reward != tt.wantReward || !strings.Contains(r.Reason, tt.wantReason) {
				t.Errorf("Evaluate = reward %v, reason %q; want %v, reason containing %q", r.Reward, r.Reason, tt.wantReward, tt.wantReason)
			}
		})
	}
}

func TestEvaluateNeedsExpectation(t *testing.T) {
	_, err := Evaluate(&task.Task{InstanceID: "aiohttp-1"}, "")
	if err == nil || !strings.Contains(err.Error(), "task aiohttp-1: expected_output_json") {
		t.Errorf("err = %v", err)
	}
}

func TestParsePytest(t *testing.T) {
	tests := []struct {
		name, log string
		want      map[string]string
	}{
		{"no header", "PASSED a.py::test_x\n", map[string]string{}},
		{"only the first section", "short test summary info\nPASSED a.py::t1\nshort test summary info\nPASSED a.py::t2\n", map[string]string{"t1": "PASSED"}},
		// R2E-Gym reads "PASSED" anywhere in the line and so records a pass
		// here; the status is the line's first word.
		{"a failure whose message says PASSED", "short test summary info\nFAILED a.py::t1 - expected PASSED\nXFAIL a.py::t2 - reason\n", map[string]string{"t1": "FAILED"}},
		{"error without a node id", "short test summary info\nERROR a.py - ImportError\n", map[string]string{"": "ERROR"}},
		{"classes and params", "short test summary info\nPASSED a.py::C::t[x::y]\n", map[string]string{"C.t[x.y]": "PASSED"}},
		// Worst copy wins: a PASSED line printed after pytest's summary (at
		// exit, by the code under test) does not undo its FAILED / ERROR.
		{"pass after the failure", "short test summary info\nPASSED a.py::t3\nERROR a.py::t2 - RuntimeError\nFAILED a.py::t1 - assert 1 == 2\nPASSED a.py::t1\nPASSED a.py::t2\n",
			map[string]string{"t1": "FAILED", "t2": "ERROR", "t3": "PASSED"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, ParsePytest(tt.log)); diff != "" {
				t.Error(diff)
			}
		})
	}
}

// TestSampleRows grades genuine pytest logs against the R2E-Gym rows in the
// task package's samples, as loaded.
func TestSampleRows(t *testing.T) {
	res, err := task.Load(context.Background(), filepath.Join(testutil.RepoRoot(t), "internal", "task", "testdata", "r2e.jsonl"), task.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	byID := map[string]*task.Task{}
	for i := range res.Tasks {
		byID[res.Tasks[i].InstanceID] = &res.Tasks[i]
	}
	tests := []struct {
		id, log    string
		wantReward float64
		wantReason string
	}{
		// The expectation is the state after the commit: test_redirect fails.
		{"aiohttp-222222222222", "aiohttp_buggy.log", 1, "resolved"},
		{"aiohttp-222222222222", "aiohttp_fixed.log", 0, "tests failed: test_redirect (want FAILED, got PASSED)"},
		{"aiohttp-222222222222", "pillow.log", 0, "the log has 1 test results, expected_output_json 2"},
		{"pillow-333333333333", "pillow.log", 1, "resolved"},
		{"pillow-333333333333", "collect_error.log", 0, "test_crop_zero (want PASSED, not in the log)"},
	}
	for _, tt := range tests {
		tk := byID[tt.id]
		if tk == nil {
			t.Fatalf("no task %s in the sample", tt.id)
		}
		if tk.Grader != task.GraderR2E {
			t.Errorf("%s: grader %s", tt.id, tk.Grader)
		}
		r, err := Evaluate(tk, readLog(t, tt.log))
		if err != nil {
			t.Fatal(err)
		}
		if r.Reward != tt.wantReward || !strings.Contains(r.Reason, tt.wantReason) {
			t.Errorf("%s on %s: reward %v, reason %q; want %v, %q", tt.id, tt.log, r.Reward, r.Reason, tt.wantReward, tt.wantReason)
		}
	}
}

// TestRunLocal runs R2E-Gym's layout on the local backend: a repository
// holding run_tests.sh and r2e_tests, graded before and after a fix.
func TestRunLocal(t *testing.T) {
	testutil.NeedPytest(t)
	src := t.TempDir()
	os.MkdirAll(filepath.Join(src, "r2e_tests"), 0o755)
	os.WriteFile(filepath.Join(src, "calc.py"), []byte("def add(a, b):\n    return a - b\n"), 0o644)
	os.WriteFile(filepath.Join(src, "r2e_tests", "test_calc.py"), []byte("from calc import add\n\n\ndef test_add():\n    assert add(2, 2) == 4\n\n\ndef test_zero():\n    assert add(0, 0) == 0\n"), 0o644)
	os.WriteFile(filepath.Join(src, "run_tests.sh"), []byte("PYTHONPATH=. /usr/bin/python3 -W ignore -m pytest -p no:cacheprovider -rA r2e_tests\n"), 0o644)
	b, err := local.New(sandbox.Options{ShimPath: testutil.SwerveBinary(t)})
	if err != nil {
		t.Fatal(err)
	}
	b.TempDir = t.TempDir()
	tk := &task.Task{InstanceID: "calc-1", Repo: "calc", Grader: task.GraderR2E,
		ExpectedOutput: map[string]string{"test_add": "PASSED", "test_zero": "PASSED"}}
	// The forger writes past pytest's capture, to the copy of the real
	// stdout pytest keeps (the only socket the test process holds).
	forge := "diff --git a/calc.py b/calc.py\n--- a/calc.py\n+++ b/calc.py\n@@ -1,2 +1,5 @@\n def add(a, b):\n     return a - b\n+import os, stat\n" +
		"+fd = [f for f in range(3, 256) if os.path.exists('/proc/self/fd/%d' % f) and stat.S_ISSOCK(os.fstat(f).st_mode)][0]\n" +
		"+os.write(fd, b'=== short test summary info ===\\nPASSED r2e_tests/test_calc.py::test_add\\nPASSED r2e_tests/test_calc.py::test_zero\\n')\n"
	fix := "diff --git a/calc.py b/calc.py\n--- a/calc.py\n+++ b/calc.py\n@@ -1,2 +1,2 @@\n def add(a, b):\n-    return a - b\n+    return a + b\n"
	for _, tt := range []struct {
		name, patch string
		want        float64
		reason      string
	}{
		{"fix", fix, 1, "resolved"},
		{"no patch", "", 0, "tests failed: test_add (want PASSED, got FAILED)"},
		{"patch that does not apply", strings.ReplaceAll(fix, "a - b", "a * b"), 0, "patch did not apply"},
		{"patch that rewrites the hidden tests", cheatTests, 0, "tests failed: test_add"},
		{"patch that rewrites run_tests.sh", cheatRunner, 0, "tests failed: test_add"},
		// R2E-Gym reads the first summary: this one, printed past pytest's
		// capture when the tests import calc, before pytest's own.
		{"a forged summary before pytest's", forge, 0, "tests failed: test_add (want PASSED, got FAILED)"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			box, err := b.Open(context.Background(), sandbox.Spec{Image: src})
			if err != nil {
				t.Fatal(err)
			}
			defer box.Close(context.Background())
			rr, err := Run(context.Background(), box, tk, RunOptions{RunOptions: reward.RunOptions{Patch: tt.patch, Workdir: "."}})
			if err != nil {
				t.Fatal(err)
			}
			if rr.Result.Reward != tt.want || !strings.Contains(rr.Result.Reason, tt.reason) {
				t.Errorf("reward %v, reason %q; want %v, %q\nlog:\n%s", rr.Result.Reward, rr.Result.Reason, tt.want, tt.reason, rr.Log)
			}
			if tt.patch == forge && !strings.Contains(rr.Log, "PASSED r2e_tests/test_calc.py::test_add") {
				t.Errorf("the forged summary is not in the log:\n%s", rr.Log)
			}
			if tt.patch == forge {
				// R2E-Gym's reading of the same log is fooled.
				if first, err := Evaluate(tk, rr.Log); err != nil || !first.Resolved {
					t.Errorf("the first summary resolves %v (%v); the case no longer forges", first, err)
				}
			}
		})
	}
}

func TestEvaluateRun(t *testing.T) {
	const nonce = "b0b1b2b3b4b5b6b7b8b9babbbcbdbebf"
	tk := &task.Task{InstanceID: "x-1", ExpectedOutput: map[string]string{"test_a": "PASSED"}}
	const real = "=== short test summary info ===\nFAILED t.py::test_a - boom\n=== 1 failed ===\n"
	const fake = "=== short test summary info ===\nPASSED t.py::test_a\n"
	tests := []struct {
		name, raw string // "@" is bash's trace prefix
		want      float64
	}{
		{"honest pass", "@bash run_tests.sh\n=== short test summary info ===\nPASSED t.py::test_a\n", 1},
		{"honest failure", "@bash run_tests.sh\n" + real, 0},
		{"forged summary before pytest's", "@bash /root/run_tests.sh\n" + fake + real, 0},
		{"forged summary before run_tests.sh", fake + "@bash run_tests.sh\n" + real, 0},
		{"forged summary after run_tests.sh", "@bash run_tests.sh\n" + real + "@true\n" + fake, 0},
		{"forged summary after the script ended", "@bash run_tests.sh\n" + real + "\n" + nonce + " end 1\n" + fake, 0},
		{"no run_tests.sh trace: the whole log, last summary", fake + real, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			log, tr, _ := reward.ParseSealed(strings.ReplaceAll(tt.raw, "@", "++"+nonce+" "), nonce)
			r, err := EvaluateRun(tk, log, tr)
			if err != nil {
				t.Fatal(err)
			}
			if r.Reward != tt.want {
				t.Errorf("reward %v (%s), want %v", r.Reward, r.Reason, tt.want)
			}
		})
	}
}

// cheatTests replaces the hidden tests with ones that always pass, under
// the same names.
const cheatTests = "diff --git a/r2e_tests/test_calc.py b/r2e_tests/test_calc.py\n--- a/r2e_tests/test_calc.py\n+++ b/r2e_tests/test_calc.py\n" +
	"@@ -1,9 +1,6 @@\n-from calc import add\n-\n-\n def test_add():\n-    assert add(2, 2) == 4\n+    pass\n \n \n def test_zero():\n-    assert add(0, 0) == 0\n+    pass\n"

// cheatRunner makes run_tests.sh print passing results without testing.
const cheatRunner = "diff --git a/run_tests.sh b/run_tests.sh\n--- a/run_tests.sh\n+++ b/run_tests.sh\n" +
	"@@ -1 +1,3 @@\n-PYTHONPATH=. /usr/bin/python3 -W ignore -m pytest -p no:cacheprovider -rA r2e_tests\n" +
	"+echo '=========================== short test summary info ============================'\n" +
	"+echo 'PASSED r2e_tests/test_calc.py::test_add'\n+echo 'PASSED r2e_tests/test_calc.py::test_zero'\n"

// TestHideLocal: the agent's copy of the repository loses r2e_tests, and
// the removal is not part of its patch.
func TestHideLocal(t *testing.T) {
	src := t.TempDir()
	os.MkdirAll(filepath.Join(src, "r2e_tests"), 0o755)
	os.WriteFile(filepath.Join(src, "calc.py"), []byte("x = 1\n"), 0o644)
	os.WriteFile(filepath.Join(src, "r2e_tests", "test_calc.py"), []byte("def test_x():\n    pass\n"), 0o644)
	b, err := local.New(sandbox.Options{ShimPath: testutil.SwerveBinary(t)})
	if err != nil {
		t.Fatal(err)
	}
	b.TempDir = t.TempDir()
	ctx := context.Background()
	box, err := b.Open(ctx, sandbox.Spec{Image: src})
	if err != nil {
		t.Fatal(err)
	}
	defer box.Close(ctx)
	if err := Hide(ctx, box, ""); err != nil {
		t.Fatal(err)
	}
	res, err := box.Exec(ctx, sandbox.ExecRequest{Cmd: sandbox.Bash("ls r2e_tests >/dev/null 2>&1 || echo hidden; git add -A && git diff --cached --stat")})
	if err != nil || string(res.Output) != "hidden\n" {
		t.Errorf("after Hide: %q, %v; want r2e_tests gone and an empty patch", res.Output, err)
	}
	if _, err := os.Stat(filepath.Join(src, "r2e_tests", "test_calc.py")); err != nil {
		t.Errorf("Hide touched the source directory: %v", err)
	}
}

// The canaries' results are read on their own and left out of the
// comparison with expected_output_json: an honest run that carries them
// grades as one that does not.
func TestEvaluateRunCanaries(t *testing.T) {
	tk := &task.Task{InstanceID: "x", ExpectedOutput: map[string]string{"test_add": "PASSED", "TestOps.test_mul": "PASSED"}}
	can := tamper.PlanPytestSeeded([]string{"r2e_tests/test_x.py::test_add"}, nil, nil, 1, 2)
	summary := func(extra ...string) string {
		lines := append([]string{"=== short test summary info ===",
			"PASSED r2e_tests/test_x.py::test_add", "PASSED r2e_tests/test_x.py::TestOps::test_mul"}, extra...)
		return strings.Join(lines, "\n") + "\n=== 4 passed ===\n"
	}
	honest := summary("FAILED r2e_tests/test_x.py::"+can.MustFail+" - assert 1 == 2", "PASSED r2e_tests/test_x.py::"+can.MustPass)
	r, status := evaluateRun(tk, honest, nil, can)
	if !r.Resolved || len(r.Parsed) != 2 {
		t.Errorf("honest run with canaries: %s, parsed %v", r.Reason, r.Parsed)
	}
	if status[can.MustFail] != "FAILED" || status[can.MustPass] != "PASSED" || len(status) != 2 {
		t.Errorf("canary statuses %v", status)
	}
	if got := can.Verify(status, r.Resolved); len(got) != 0 {
		t.Errorf("Verify = %v", got)
	}
	// Without the canaries named, their lines are tests the row does not
	// expect.
	if r, _ := evaluateRun(tk, honest, nil, nil); r.Resolved {
		t.Errorf("canaries counted as expected tests: %s", r.Reason)
	}
	forged := summary("PASSED r2e_tests/test_x.py::"+can.MustFail, "PASSED r2e_tests/test_x.py::"+can.MustPass)
	r, status = evaluateRun(tk, forged, nil, can)
	if got := can.Verify(status, r.Resolved); len(got) != 1 {
		t.Errorf("must-fail canary passing: Verify = %v", got)
	}
}

func TestProbeWords(t *testing.T) {
	script := "#!/bin/bash\n# run pytest with python over the tests\nPYTHONPATH=. .venv/bin/python -W ignore -m pytest -rA r2e_tests\npytest -q x; python3 -c pass\npython3 again\n"
	got := probeWords(script)
	if want := []string{".venv/bin/python", "python3", "pytest"}; strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("words %q, want %q", got, want)
	}
}
