package swebench

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/swerve-dev/swerve/internal/task"
)

// loadRow loads the one task in a SWE-bench row file.
func loadRow(t *testing.T, path string) *task.Task {
	t.Helper()
	res, err := task.Load(context.Background(), path, task.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Tasks) != 1 {
		t.Fatalf("%s: %d tasks, want 1", path, len(res.Tasks))
	}
	return &res.Tasks[0]
}

// TestReportsMatchHarness grades real eval logs and compares the whole
// report.json with the one SWE-bench's own grader (5.x get_eval_report)
// wrote for the same log: testdata/reports/<case>/{row.json, test_output.txt,
// report.json}. The logs come from the five ../shared/realtasks images (gold
// patch and no patch); with StrictNames swerve must agree on every one.
// Without it, the 4.1/4.2 rows, whose test names were recorded on Python 3.9,
// resolve with the gold patch on these Python 3.11 images (checked in
// TestRealTaskVerdicts) where the harness would call them unresolved.
func TestReportsMatchHarness(t *testing.T) {
	dirs, err := filepath.Glob(filepath.Join("testdata", "reports", "*"))
	if err != nil {
		t.Fatal(err)
	}
	if len(dirs) == 0 {
		t.Fatal("no cases under testdata/reports")
	}
	for _, dir := range dirs {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			tk := loadRow(t, filepath.Join(dir, "row.json"))
			log, err := os.ReadFile(filepath.Join(dir, "test_output.txt"))
			if err != nil {
				t.Fatal(err)
			}
			res, err := Evaluate(tk, string(log), Options{StrictNames: true})
			if err != nil {
				t.Fatal(err)
			}
			var got, want any
			if err := json.Unmarshal(res.Report(), &got); err != nil {
				t.Fatal(err)
			}
			if err := readJSON(filepath.Join(dir, "report.json"), &want); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("report differs from the harness's (-harness +swerve):\n%s", diff)
			}
		})
	}
}

// A parser for the rule tests alone: "STATUS name" lines.
func init() {
	RegisterParser("test_status_lines", func(log string, _ *task.Task) StatusMap {
		sm := StatusMap{}
		for line := range strings.SplitSeq(log, "\n") {
			st, name, ok := strings.Cut(line, " ")
			switch s := Status(st); s {
			case Passed, Failed, Skipped, Error, XFail:
				if ok {
					sm[name] = s
				}
			}
		}
		return sm
	})
}

func statusTask(f2p, p2p []string) *task.Task {
	return &task.Task{InstanceID: "x__y-1", Repo: "x/y", LogParser: "test_status_lines", FailToPass: f2p, PassToPass: p2p}
}

func wrap(section string) string {
	return "+ git apply -v -\n+ : '" + StartTestOutput + "'\n" + section + "\n+ : '" + EndTestOutput + "'\n"
}

func TestEvaluateRules(t *testing.T) {
	tests := []struct {
		name         string
		log          string
		f2p, p2p     []string
		wantFound    bool
		wantResolved bool
		wantReason   string
	}{
		{"all pass", wrap("PASSED t.py::a\nPASSED t.py::b"), []string{"t.py::a"}, []string{"t.py::b"}, true, true, "resolved"},
		{"f2p fails", wrap("FAILED t.py::a\nPASSED t.py::b"), []string{"t.py::a"}, []string{"t.py::b"}, true, false, "FAIL_TO_PASS failed: t.py::a"},
		{"f2p missing counts as failed", wrap("PASSED t.py::b"), []string{"t.py::a"}, []string{"t.py::b"}, true, false, "FAIL_TO_PASS failed"},
		{"f2p skipped is not a fix", wrap("SKIPPED t.py::a\nPASSED t.py::b"), []string{"t.py::a"}, []string{"t.py::b"}, true, false, "FAIL_TO_PASS failed"},
		{"p2p skipped is kept", wrap("PASSED t.py::a\nSKIPPED t.py::b"), []string{"t.py::a"}, []string{"t.py::b"}, true, true, "resolved"},
		{"xfail passes", wrap("XFAIL t.py::a\nPASSED t.py::b"), []string{"t.py::a"}, []string{"t.py::b"}, true, true, "resolved"},
		{"p2p regression", wrap("PASSED t.py::a\nERROR t.py::b"), []string{"t.py::a"}, []string{"t.py::b"}, true, false, "PASS_TO_PASS failed: t.py::b"},
		{"truncated id by prefix", wrap("PASSED t.py::a[x-1]\nPASSED t.py::a[x-2]"), []string{"t.py::a[x"}, nil, true, true, "resolved"},
		{"truncated id, candidates disagree", wrap("PASSED t.py::a[x-1]\nFAILED t.py::a[x-2]"), []string{"t.py::a[x"}, nil, true, false, "FAIL_TO_PASS failed"},
		{"patch apply failed", ApplyPatchFail + "\n" + wrap("PASSED t.py::a"), []string{"t.py::a"}, nil, false, false, "Patch Apply Failed"},
		{"timed out", wrap("PASSED t.py::a") + TestsTimeout, []string{"t.py::a"}, nil, false, false, "Tests Timed Out"},
		{"no markers", "PASSED t.py::a\n", []string{"t.py::a"}, nil, false, false, "markers missing"},
		{"results outside the markers", "PASSED t.py::a\n" + wrap("nothing here"), []string{"t.py::a"}, nil, true, true, "resolved"},
		{"nothing ran", wrap("collected 0 items"), []string{"t.py::a"}, nil, false, false, "no test results"},
		{"spoofed pass", wrap("PASSED t.py::a") + TestExitCode + ": 1\n", []string{"t.py::a"}, nil, false, false, "exited 1"},
		{"honest failure with exit code", wrap("FAILED t.py::b\nPASSED t.py::a") + TestExitCode + ": 1\n", []string{"t.py::a"}, nil, true, true, "resolved"},
		{"empty lists resolve", wrap("PASSED t.py::a"), nil, nil, true, true, "resolved"},
		{"crlf and lone cr are newlines", strings.ReplaceAll(wrap("PASSED t.py::a\rPASSED t.py::b"), "\n", "\r\n"), []string{"t.py::a"}, []string{"t.py::b"}, true, true, "resolved"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := Evaluate(statusTask(tt.f2p, tt.p2p), tt.log, Options{})
			if err != nil {
				t.Fatal(err)
			}
			if res.Found != tt.wantFound || res.Resolved != tt.wantResolved || !strings.Contains(res.Reason, tt.wantReason) {
				t.Errorf("found %v resolved %v reason %q; want %v %v containing %q", res.Found, res.Resolved, res.Reason, tt.wantFound, tt.wantResolved, tt.wantReason)
			}
			if res.Reward() != map[bool]float64{true: 1, false: 0}[tt.wantResolved] {
				t.Errorf("reward %v", res.Reward())
			}
		})
	}
}

func TestReportShape(t *testing.T) {
	res, err := Evaluate(statusTask([]string{"t.py::a"}, nil), ApplyPatchFail, Options{})
	if err != nil {
		t.Fatal(err)
	}
	want := `{
    "x__y-1": {
        "patch_is_None": false,
        "patch_exists": true,
        "patch_successfully_applied": false,
        "resolved": false,
        "infra_failure": false
    }
}`
	if got := string(res.Report()); got != want {
		t.Errorf("report:\n%s\nwant:\n%s", got, want)
	}
	none, _ := Evaluate(statusTask(nil, nil), "", Options{PatchIsNone: true})
	if !strings.Contains(string(none.Report()), `"patch_is_None": true`) || none.Resolved {
		t.Errorf("null patch report: %s", none.Report())
	}
}

func TestUnittestAliases(t *testing.T) {
	tk := &task.Task{InstanceID: "django__django-1", Repo: "django/django", LogParser: "parse_log_django",
		FailToPass: []string{"test_a (app.tests.T)"}, PassToPass: []string{"test_b (app.tests.T.test_b)"}}
	log := wrap("test_a (app.tests.T.test_a) ... ok\ntest_b (app.tests.T.test_b) ... ok")
	res, err := Evaluate(tk, log, Options{})
	if err != nil || !res.Resolved {
		t.Fatalf("a Python 3.11 log of rows recorded on 3.9: resolved %v (%s), %v", res.Resolved, res.Reason, err)
	}
}

func TestParserForUnknown(t *testing.T) {
	_, err := ParserFor(&task.Task{InstanceID: "a__b-1", Repo: "a/b"})
	if err == nil || !strings.Contains(err.Error(), "a__b-1") || !strings.Contains(err.Error(), "log_parser") {
		t.Errorf("ParserFor(unknown repo) = %v; want an error naming the task and the field", err)
	}
}

// TestRealTaskVerdicts: the default grading of the real logs gives the gold
// patch reward 1 and no patch reward 0 on every real task.
func TestRealTaskVerdicts(t *testing.T) {
	dirs, _ := filepath.Glob(filepath.Join("testdata", "reports", "*"))
	for _, dir := range dirs {
		name := filepath.Base(dir)
		tk := loadRow(t, filepath.Join(dir, "row.json"))
		log, err := os.ReadFile(filepath.Join(dir, "test_output.txt"))
		if err != nil {
			t.Fatal(err)
		}
		res, err := Evaluate(tk, string(log), Options{})
		if err != nil {
			t.Fatal(err)
		}
		want := strings.HasSuffix(name, ".gold")
		if res.Resolved != want {
			t.Errorf("%s: resolved %v (%s), want %v", name, res.Resolved, res.Reason, want)
		}
	}
}
