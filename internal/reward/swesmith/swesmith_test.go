package swesmith

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/swerve-dev/swerve/internal/reward"
	"github.com/swerve-dev/swerve/internal/reward/swebench"
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

// deviations are the oracle cases where swerve is deliberately stricter
// than SWE-smith: the parser found no test result at all, which the harness
// grades as every test passed.
var deviations = map[string]bool{
	"collection error":             true, // pytest could not import the test file
	"autograd: xdist lines":        true, // today's pytest-xdist prints "[gw0] [ 50%] PASSED"
	"markers without bash's trace": true, // no "+ : '>>>>> Start Test Output'" line
}

// TestOracle checks Evaluate against SWE-smith's own get_eval_report: the
// missingF2PFails turns SWE-smith's report into swerve's where they
// differ on purpose: a FAIL_TO_PASS test absent from the log is a failure
// in swerve, a success in SWE-smith (see the package doc).
func missingF2PFails(want map[string]any, f2p []string, sm swebench.StatusMap) map[string]any {
	ts, ok := want["tests_status"].(map[string]any)
	if !ok {
		return want
	}
	o := ts["FAIL_TO_PASS"].(map[string]any)
	listed := map[string]string{}
	for _, k := range []string{"success", "failure"} {
		for _, n := range o[k].([]any) {
			listed[n.(string)] = k
		}
	}
	success, failure := []any{}, []any{}
	moved := false
	for _, n := range f2p {
		k, ok := listed[n]
		if !ok {
			continue
		}
		if _, inLog := sm[n]; k == "success" && !inLog {
			k, moved = "failure", true
		}
		if k == "success" {
			success = append(success, n)
		} else {
			failure = append(failure, n)
		}
	}
	if !moved {
		return want
	}
	out := map[string]any{}
	for k, v := range want {
		out[k] = v
	}
	nts := map[string]any{}
	for k, v := range ts {
		nts[k] = v
	}
	nts["FAIL_TO_PASS"] = map[string]any{"success": success, "failure": failure}
	out["tests_status"] = nts
	out["resolved"] = false
	return out
}

// logs in testdata/logs are genuine test runs (testdata/gen.sh) plus a few
// synthetic marker cases, and testdata/oracle.json holds the report.json
// SWE-smith's grading code wrote for each (its swebench imports stubbed).
func TestOracle(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("testdata", "oracle.json"))
	if err != nil {
		t.Fatal(err)
	}
	var cases []struct {
		Name     string `json:"name"`
		Log      string `json:"log"`
		Instance struct {
			InstanceID string   `json:"instance_id"`
			ImageName  string   `json:"image_name"`
			F2P        []string `json:"FAIL_TO_PASS"`
			P2P        []string `json:"PASS_TO_PASS"`
		} `json:"instance"`
		Report map[string]any `json:"report"`
	}
	if err := json.Unmarshal(b, &cases); err != nil {
		t.Fatal(err)
	}
	if len(cases) < 20 {
		t.Fatalf("%d oracle cases", len(cases))
	}
	for _, c := range cases {
		t.Run(c.Name, func(t *testing.T) {
			tk := &task.Task{InstanceID: c.Instance.InstanceID, Image: c.Instance.ImageName, FailToPass: c.Instance.F2P, PassToPass: c.Instance.P2P}
			r, err := Evaluate(tk, readLog(t, c.Log), Options{})
			if err != nil {
				t.Fatal(err)
			}
			var got map[string]any
			js, _ := json.Marshal(r)
			json.Unmarshal(js, &got)
			// SWE-smith never sets patch_successfully_applied; swerve sets it
			// for a log that held a test run.
			if got["patch_successfully_applied"] != r.Found {
				t.Errorf("patch_successfully_applied %v, found %v", got["patch_successfully_applied"], r.Found)
			}
			got["patch_successfully_applied"] = false
			want := c.Report
			if deviations[c.Name] {
				if want["resolved"] != true || r.Resolved || r.Found || !strings.Contains(r.Reason, "no test results") && !strings.Contains(r.Reason, "markers missing") {
					t.Fatalf("deviation case: SWE-smith resolved=%v; swerve %+v", want["resolved"], r)
				}
				want = map[string]any{"patch_is_None": false, "patch_exists": true, "patch_successfully_applied": false, "resolved": false}
			}
			want = missingF2PFails(want, c.Instance.F2P, r.Status)
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("report differs from SWE-smith's (-swesmith +swerve):\n%s\nreason: %s", diff, r.Reason)
			}
			if (r.Reward() == 1) != r.Resolved {
				t.Errorf("reward %v, resolved %v", r.Reward(), r.Resolved)
			}
		})
	}
}

func TestEvaluateReasons(t *testing.T) {
	m := "tests/test_mod.py::"
	pandas := func(f2p, p2p []string) *task.Task {
		return &task.Task{InstanceID: "pandas-dev__pandas.95280573.x1", FailToPass: f2p, PassToPass: p2p}
	}
	tests := []struct {
		name, log  string
		task       *task.Task
		wantReason string
	}{
		{"resolved", "pytest_verbose.log", pandas([]string{m + "test_fixed"}, nil), "resolved"},
		{"f2p", "pytest_verbose.log", pandas([]string{m + "test_still_broken", m + "TestIndex::test_param[Series]"}, nil),
			"tests failed: FAIL_TO_PASS tests/test_mod.py::test_still_broken, tests/test_mod.py::TestIndex::test_param[Series]"},
		{"both", "pytest_verbose.log", pandas([]string{m + "test_still_broken"}, []string{m + "test_error"}),
			"tests failed: FAIL_TO_PASS tests/test_mod.py::test_still_broken; PASS_TO_PASS tests/test_mod.py::test_error"},
		{"p2p", "pytest_verbose.log", pandas(nil, []string{m + "test_error"}), "tests failed: PASS_TO_PASS tests/test_mod.py::test_error"},
		{"apply failed", "synthetic_apply_failed.log", pandas(nil, nil), "log says Patch Apply Failed"},
		{"timed out", "synthetic_timeout.log", pandas(nil, nil), "log says Tests Timed Out"},
		{"out of order", "synthetic_out_of_order.log", pandas(nil, nil), "test output markers out of order"},
		{"collection error", "pytest_collect_error.log", pandas([]string{m + "test_fixed"}, nil), "no test results in the log's test section (parse_log_pytest)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := Evaluate(tt.task, readLog(t, tt.log), Options{})
			if err != nil {
				t.Fatal(err)
			}
			if r.Reason != tt.wantReason || r.Resolved != (tt.wantReason == "resolved") {
				t.Errorf("reason %q, want %q", r.Reason, tt.wantReason)
			}
		})
	}
}

func TestParsers(t *testing.T) {
	tests := []struct {
		parser swebench.Parser
		log    string
		want   swebench.StatusMap
	}{
		{parsePytest, "a.py::t PASSED [ 50%]\n  b.py::t FAILED\nc.py::t\tERROR\nd.py::t XFAIL (why)\ne.py::t\u00a0SKIPPED\nf.py::t PASSEDX\nno_status_here\n", swebench.StatusMap{
			"a.py::t": swebench.Passed, "c.py::t": swebench.Error, "d.py::t": swebench.XFail, "e.py::t": swebench.Skipped, "f.py::t": swebench.Passed}},
		{parseParamiko, "PASSED a.py::t\nFAILED  b.py::t\nSKIPPED [1] c.py:3: why\nXFAIL d.py::t - r\n", swebench.StatusMap{
			"a.py::t": swebench.Passed, "[1]": swebench.Skipped, "d.py::t": swebench.XFail}},
		{parseAutograd, "[gw0] PASSED a.py::t\n[gw12] PASSED b.py::t\n[gw1] [ 50%] FAILED c.py::t\n[gw٣] ERROR d.py::t\n", swebench.StatusMap{
			"a.py::t": swebench.Passed, "d.py::t": swebench.Error}},
		{parseMypy, "x PASSED check-a.test::testA\nFAILED y::testB\nnothing\n", swebench.StatusMap{"check-a.test::testA": swebench.Passed, "y::testB": swebench.Failed}},
		{parseTornado, "test_a (m.C) ... ok\ntest_b (m.C) ... skipped 'x'\nFAIL: test_c (m.C)\nERROR: test_d (m.C)\ntest_e (m.C) ... ok\r\n", swebench.StatusMap{
			"test_a (m.C)": swebench.Passed, "test_b (m.C)": swebench.Skipped, "test_c (m.C)": swebench.Failed, "test_d (m.C)": swebench.Failed}},
		{parseSlugify, "test_a (m.C) ... ok\ntest_b (m.C) ... FAIL\ntest_c (m.C) ... ERROR\ntest_d [x] ... ok\ntest_e ... ok\r\n", swebench.StatusMap{
			"test_a (m.C)": swebench.Passed, "test_b (m.C)": swebench.Failed, "test_c (m.C)": swebench.Error}},
	}
	for i, tt := range tests {
		if diff := cmp.Diff(tt.want, tt.parser(tt.log, nil)); diff != "" {
			t.Errorf("case %d:\n%s", i, diff)
		}
	}
}

func TestTestCommand(t *testing.T) {
	tests := []struct {
		id        string
		f2p       []string
		wantCmd   string
		wantFiles []string
	}{
		{"pandas-dev__pandas.95280573.pr_1", []string{"b/test_x.py::t1", "a/test_y.py::C::t2", "b/test_x.py::t3"},
			TestPytest + " a/test_y.py b/test_x.py", []string{"a/test_y.py", "b/test_x.py"}},
		{"pandas-dev__pandas.95280573.pr_1", nil, TestPytest, nil},
		{"python__mypy.e93f06ce.x", []string{"mypy/test/testcheck.py::TypeCheckSuite::check-a.test::testA", "testB"}, `pytest --color=no -rA -k "testA or testB"`, nil},
		{"tornadoweb__tornado.d5ac65c1.x", []string{"test_a (m.C)"}, "python -m tornado.test --verbose", nil},
		{"gin-gonic__gin.3c12d2a8.x", []string{"TestA"}, "go test -v ./...", nil},
		{"paramiko__paramiko.23f92003.x", []string{"tests/test_a.py::t"}, "pytest -rA --color=no --disable-warnings tests/test_a.py", []string{"tests/test_a.py"}},
		{"HIPS__autograd.ac044f0d.x", []string{"tests/test_a.py::t"}, TestPytest + " tests/test_a.py", []string{"tests/test_a.py"}},
	}
	for _, tt := range tests {
		cmd, files := TestCommand(&task.Task{InstanceID: tt.id, FailToPass: tt.f2p})
		if cmd != tt.wantCmd || !cmp.Equal(files, tt.wantFiles) {
			t.Errorf("%s: %q %q; want %q %q", tt.id, cmd, files, tt.wantCmd, tt.wantFiles)
		}
	}
	if p, name, _ := parserFor(&task.Task{}, "HIPS/autograd"); p == nil || name != "parse_log_autograd" {
		t.Errorf("autograd parser %s", name)
	}
	if _, name, _ := parserFor(&task.Task{}, "gin-gonic/gin"); name != "parse_log_gotest" {
		t.Errorf("gin parser %s", name)
	}
	if _, name, _ := parserFor(&task.Task{LogParser: "parse_log_django"}, "x/y"); name != "parse_log_django" {
		t.Errorf("explicit parser %s", name)
	}
	if _, _, err := parserFor(&task.Task{LogParser: "parse_log_nope"}, "x/y"); err == nil {
		t.Error("unknown explicit parser accepted")
	}
}

func TestEvalScript(t *testing.T) {
	tk := &task.Task{InstanceID: "pandas-dev__pandas.95280573.pr_1", FailToPass: []string{"t/test_a.py::x"}}
	want := "#!/bin/bash\nset -uxo pipefail\nsource /opt/miniconda3/bin/activate\nconda activate testbed\ncd '/testbed'\n" +
		": '>>>>> Start Test Output'\n" + TestPytest + " t/test_a.py\n: '>>>>> End Test Output'\n"
	if got := EvalScript(tk, "/testbed", false); got != want {
		t.Errorf("EvalScript:\n%s\nwant:\n%s", got, want)
	}
	if got := EvalScript(tk, ".", true); strings.Contains(got, "conda") || strings.Contains(got, "cd ") {
		t.Errorf("scratch EvalScript:\n%s", got)
	}
	tk.EvalScript = "echo mine"
	if got := EvalScript(tk, "/testbed", false); got != "echo mine" {
		t.Errorf("row's eval_script not used: %q", got)
	}
}

// TestSampleRow grades a genuine log against the SWE-smith sample in
// shared/data, loaded as swerve loads it.
func TestSampleRow(t *testing.T) {
	shared := testutil.SharedDir(t)
	res, err := task.Load(context.Background(), filepath.Join(shared, "data", "swe-smith", "pandas-dev__pandas.95280573.pr_53652.json"), task.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	tk := &res.Tasks[0]
	if tk.Grader != task.GraderSWESmith || Repo(tk) != "pandas-dev/pandas" {
		t.Fatalf("grader %s, repo %s", tk.Grader, Repo(tk))
	}
	cmd, files := TestCommand(tk)
	if cmd != TestPytest+" pandas/tests/indexing/test_datetime.py" || len(files) != 1 {
		t.Errorf("command %q", cmd)
	}
	// A verbose pytest run in which both FAIL_TO_PASS tests pass and one
	// PASS_TO_PASS test fails.
	var b strings.Builder
	b.WriteString("+ : '>>>>> Start Test Output'\n+ pytest --disable-warnings --color=no --tb=no --verbose pandas/tests/indexing/test_datetime.py\n")
	for _, name := range tk.FailToPass {
		b.WriteString(name + " PASSED\n")
	}
	for i, name := range tk.PassToPass {
		status := "PASSED"
		if i == 1 {
			status = "FAILED"
		}
		b.WriteString(name + " " + status + "\n")
	}
	b.WriteString("+ : '>>>>> End Test Output'\n")
	r, err := Evaluate(tk, b.String(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if r.Resolved || r.Reason != "tests failed: PASS_TO_PASS "+tk.PassToPass[1] {
		t.Errorf("%+v", r)
	}
}

func run(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1",
		"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@t", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@t")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

// TestRunLocal grades SWE-smith-shaped tasks on the local backend: a
// repository whose HEAD is the clean commit and whose bug commit sits on a
// branch, as in SWE-smith's images and mirrors.
func TestRunLocal(t *testing.T) {
	testutil.NeedPytest(t)
	// SWE-smith's command is plain "pytest".
	bin := t.TempDir()
	os.WriteFile(filepath.Join(bin, "pytest"), []byte("#!/bin/sh\nexec /usr/bin/python3 -m pytest -p no:cacheprovider \"$@\"\n"), 0o755)
	t.Setenv("PATH", bin+":"+os.Getenv("PATH"))

	src := t.TempDir()
	os.MkdirAll(filepath.Join(src, "tests"), 0o755)
	os.WriteFile(filepath.Join(src, "calc.py"), []byte("def add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n    return a - b\n"), 0o644)
	os.WriteFile(filepath.Join(src, "tests", "test_calc.py"), []byte("from calc import add, sub\n\n\ndef test_add():\n    assert add(2, 3) == 5\n\n\ndef test_sub():\n    assert sub(2, 2) == 0\n"), 0o644)
	os.WriteFile(filepath.Join(src, "conftest.py"), []byte("import sys, os\nsys.path.insert(0, os.path.dirname(__file__))\n"), 0o644)
	run(t, src, "git", "init", "-q", "-b", "main")
	run(t, src, "git", "add", "-A")
	run(t, src, "git", "commit", "-qm", "clean")
	run(t, src, "git", "checkout", "-qb", "acme__calc.abcd1234.bug1")
	os.WriteFile(filepath.Join(src, "calc.py"), []byte("def add(a, b):\n    return a * b\n\n\ndef sub(a, b):\n    return a - b\n"), 0o644)
	run(t, src, "git", "commit", "-qam", "Bug Patch")
	bugCommit := run(t, src, "git", "rev-parse", "HEAD")
	bug := run(t, src, "git", "diff", "main", "HEAD") + "\n"
	run(t, src, "git", "checkout", "-q", "main")

	fix, err := task.ReverseDiff(bug)
	if err != nil {
		t.Fatal(err)
	}
	cheat := "diff --git a/tests/test_calc.py b/tests/test_calc.py\n--- a/tests/test_calc.py\n+++ b/tests/test_calc.py\n@@ -2,7 +2,7 @@ from calc import add, sub\n \n \n def test_add():\n-    assert add(2, 3) == 5\n+    assert add(2, 3) == 6\n \n \n def test_sub():\n"
	b, err := local.New(sandbox.Options{ShimPath: testutil.SwerveBinary(t)})
	if err != nil {
		t.Fatal(err)
	}
	b.TempDir = t.TempDir()
	tk := func(base string) *task.Task {
		return &task.Task{InstanceID: "acme__calc.abcd1234.bug1", Repo: "swesmith/acme__calc.abcd1234", BaseCommit: base, BugPatch: bug, Patch: fix,
			FailToPass: []string{"tests/test_calc.py::test_add"}, PassToPass: []string{"tests/test_calc.py::test_sub"}, Grader: task.GraderSWESmith}
	}
	missing := strings.Repeat("0", 40)
	for _, tt := range []struct {
		name, base, patch string
		want              float64
		reason            string
	}{
		{"gold", bugCommit, fix, 1, "resolved"},
		{"no patch", bugCommit, "", 0, "tests failed: FAIL_TO_PASS tests/test_calc.py::test_add"},
		{"editing the tests does not help", bugCommit, cheat, 0, "tests failed: FAIL_TO_PASS tests/test_calc.py::test_add"},
		{"offline: bug rebuilt from the row's patch", missing, fix, 1, "resolved"},
		{"offline, no patch", missing, "", 0, "tests failed: FAIL_TO_PASS"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			box, err := b.Open(context.Background(), sandbox.Spec{Image: src})
			if err != nil {
				t.Fatal(err)
			}
			defer box.Close(context.Background())
			rr, err := Run(context.Background(), box, tk(tt.base), RunOptions{RunOptions: reward.RunOptions{Patch: tt.patch, Workdir: "."}})
			if err != nil {
				t.Fatal(err)
			}
			if rr.Result.Reward() != tt.want || !strings.HasPrefix(rr.Result.Reason, tt.reason) {
				t.Errorf("reward %v, reason %q; want %v, %q\nlog:\n%s", rr.Result.Reward(), rr.Result.Reason, tt.want, tt.reason, rr.Log)
			}
		})
	}
	t.Run("no bug commit and no bug patch", func(t *testing.T) {
		box, err := b.Open(context.Background(), sandbox.Spec{Image: src})
		if err != nil {
			t.Fatal(err)
		}
		defer box.Close(context.Background())
		k := tk(missing)
		k.BugPatch = ""
		_, err = Run(context.Background(), box, k, RunOptions{RunOptions: reward.RunOptions{Patch: fix, Workdir: "."}})
		if err == nil || !strings.Contains(err.Error(), "base_commit "+missing+": cannot check it out") {
			t.Errorf("err = %v", err)
		}
	})
}

// Worst copy wins: a pass line the code under test prints for a test that
// then fails does not turn the failure into a pass.
func TestWorstCopyWins(t *testing.T) {
	tests := []struct {
		name   string
		parser swebench.Parser
		log    string
		want   swebench.StatusMap
	}{
		// pytest --verbose --tb=no: "PASSED" written to fd 1 right after
		// pytest's "path::test ", its own FAILED on the next line, and the
		// default short summary's "FAILED path::test - ...".
		{"pytest", parsePytest, "t.py::test_x PASSED\nFAILED [ 50%]\nt.py::test_y PASSED [100%]\n" +
			"=========================== short test summary info ============================\nFAILED t.py::test_x - assert 1 == 2\n",
			swebench.StatusMap{"t.py::test_x": swebench.Failed, "t.py::test_y": swebench.Passed}},
		{"paramiko", parseParamiko, "FAILED t.py::x\nPASSED t.py::x\n", swebench.StatusMap{"t.py::x": swebench.Failed}},
		{"autograd", parseAutograd, "[gw0] FAILED t.py::x\n[gw1] PASSED t.py::x\n", swebench.StatusMap{"t.py::x": swebench.Failed}},
		{"mypy", parseMypy, "FAILED check-a.test::testA\nPASSED check-a.test::testA\n", swebench.StatusMap{"check-a.test::testA": swebench.Failed}},
		{"tornado", parseTornado, "test_c (m.C) ... ok\nFAIL\nFAIL: test_c (m.C)\ntest_c (m.C) ... ok\n", swebench.StatusMap{"test_c (m.C)": swebench.Failed}},
		// unittest -v: "ok" after the label, unittest's FAIL on the next
		// line, and its "FAIL: <label>" header, which upstream never reads.
		{"slugify", parseSlugify, "test_a (test.T.test_a) ... ok\nFAIL\ntest_b (test.T.test_b) ... ok\ntest_s (test.T.test_s) ... ok\n" +
			"\n======================================================================\nFAIL: test_a (test.T.test_a)\n----------------------------------------------------------------------\n" +
			"AssertionError\n\n======================================================================\nERROR: test_s (test.T.test_s) (i=1)\n",
			swebench.StatusMap{"test_a (test.T.test_a)": swebench.Failed, "test_b (test.T.test_b)": swebench.Passed, "test_s (test.T.test_s)": swebench.Error}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, tt.parser(tt.log, nil)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}
