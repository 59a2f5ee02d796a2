package cli

import (
	"compress/gzip"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/swerve-dev/swerve/internal/reward/grader"
	"github.com/swerve-dev/swerve/internal/testutil"
)

// TestGradeLogGraders grades existing logs with the log-reading graders
// other than SWE-bench's (TestGradeLogNoBox covers that one).
func TestGradeLogGraders(t *testing.T) {
	root := testutil.RepoRoot(t)
	r2eRows := filepath.Join(root, "internal", "task", "testdata", "r2e.jsonl")
	r2eLogs := filepath.Join(root, "internal", "reward", "r2e", "testdata", "logs")
	harborTask := filepath.Join(root, "internal", "reward", "harbor", "testdata", "tasks", "hello")

	out, stderr, err := execTasksCLI(t, "grade", "--dataset", r2eRows, "--instance_id", "aiohttp-222222222222", "--log", filepath.Join(r2eLogs, "aiohttp_buggy.log"))
	if err != nil {
		t.Fatalf("r2e: %v\n%s", err, stderr)
	}
	v := readVerdict(t, out)
	var rep struct {
		Reward   float64           `json:"reward"`
		Resolved bool              `json:"resolved"`
		Parsed   map[string]string `json:"parsed"`
	}
	if err := json.Unmarshal(v.Report, &rep); err != nil || v.Reward != 1 || !v.Resolved || v.Grader != "r2e" || v.Anchored || rep.Reward != 1 || !rep.Resolved || len(rep.Parsed) != 2 {
		t.Errorf("r2e verdict %s (%v)", out, err)
	}
	if !strings.Contains(stderr, "aiohttp-222222222222: resolved") {
		t.Errorf("stderr %q", stderr)
	}
	_, stderr, err = execTasksCLI(t, "grade", "--dataset", r2eRows, "--instance_id", "aiohttp-222222222222", "--log", filepath.Join(r2eLogs, "aiohttp_fixed.log"))
	if ee, ok := err.(exitError); !ok || ee.code != 1 || !strings.Contains(stderr, "not resolved: tests failed: test_redirect (want FAILED, got PASSED)") {
		t.Errorf("r2e mismatch: %v, %q", err, stderr)
	}
	// --reward forces another grader.
	log := filepath.Join(t.TempDir(), "log")
	os.WriteFile(log, []byte("OMNIGRIL_EXIT_CODE=0\n"), 0o644)
	if _, stderr, err := execTasksCLI(t, "grade", "--dataset", r2eRows, "--instance_id", "aiohttp-222222222222", "--log", log, "--reward", "swefactory"); err != nil {
		t.Errorf("--reward swefactory: %v (%s)", err, stderr)
	}
	_, _, err = execTasksCLI(t, "grade", "--dataset", r2eRows, "--instance_id", "aiohttp-222222222222", "--log", log, "--reward", "magic")
	if err == nil || !strings.Contains(err.Error(), `task aiohttp-222222222222: --reward: unknown grader "magic"`) {
		t.Errorf("--reward magic: %v", err)
	}
	_, _, err = execTasksCLI(t, "grade", "--dataset", harborTask, "--instance_id", "hello", "--log", log)
	if err == nil || !strings.Contains(err.Error(), "task hello: harbor grading reads the reward file") {
		t.Errorf("harbor --log: %v", err)
	}
}

// TestGradeHarborLocal grades and validates a Harbor task on the local
// backend (an empty directory as the box), and grades predictions for it:
// the run summary reads a grader's own report.
func TestGradeHarborLocal(t *testing.T) {
	t.Setenv("SWERVE_SHIM_BINARY", testutil.SwerveBinary(t))
	root := testutil.RepoRoot(t)
	tasks := filepath.Join(root, "internal", "reward", "harbor", "testdata", "tasks")
	hello := filepath.Join(tasks, "hello")
	src := t.TempDir()
	box := []string{"--backend", "local", "--source", src}

	out, stderr, err := execTasksCLI(t, append([]string{"grade", "--dataset", hello, "--instance_id", "hello", "--gold"}, box...)...)
	if err != nil {
		t.Fatalf("grade --gold: %v\n%s", err, stderr)
	}
	v := readVerdict(t, out)
	var rep struct {
		Reward float64 `json:"reward"`
		Source string  `json:"source"`
	}
	if err := json.Unmarshal(v.Report, &rep); err != nil || v.Reward != 1 || !v.Resolved || v.Anchored || rep.Reward != 1 || rep.Source != "reward.txt" {
		t.Errorf("verdict %s", out)
	}
	patch := filepath.Join(t.TempDir(), "p.diff")
	os.WriteFile(patch, []byte("diff --git a/hello.txt b/hello.txt\nnew file mode 100644\n--- /dev/null\n+++ b/hello.txt\n@@ -0,0 +1 @@\n+Goodbye\n"), 0o644)
	out, stderr, err = execTasksCLI(t, append([]string{"grade", "--dataset", hello, "--instance_id", "hello", "--patch", patch, "--log-level", "info"}, box...)...)
	if ee, ok := err.(exitError); !ok || ee.code != 1 || !strings.Contains(stderr, "not resolved: tests failed: reward 0 from reward.txt") {
		t.Errorf("wrong patch: %v %q", err, stderr)
	}
	// The phases show while it works (in the log here: stderr is no
	// terminal), in order, and never on stdout.
	last := -1
	for _, phase := range []string{"phase=\"opening a box\"", "phase=\"box open (", "phase=\"applying the patch\"", "phase=\"patch applied (", "running the tests", "phase=\"graded in "} {
		i := strings.Index(stderr, phase)
		if i <= last {
			t.Errorf("phase %s missing or out of order in stderr:\n%s", phase, stderr)
		}
		last = max(last, i)
	}
	if strings.Contains(out, "phase=") || strings.Contains(out, "opening a box") {
		t.Errorf("phases on stdout: %s", out)
	}
	// A file that is no diff is refused before any box opens.
	notDiff := filepath.Join(t.TempDir(), "README.md")
	os.WriteFile(notDiff, []byte("# hello\n\nSome notes.\n\n---\n\nMore.\n"), 0o644)
	_, stderr, err = execTasksCLI(t, append([]string{"grade", "--dataset", hello, "--instance_id", "hello", "--patch", notDiff, "--log-level", "info"}, box...)...)
	if err == nil || !strings.Contains(err.Error(), "not a diff") || !strings.Contains(err.Error(), "patch did not apply") || strings.Contains(stderr, "opening a box") {
		t.Errorf("non-diff --patch: %v\n%s", err, stderr)
	}
	// An empty file stays valid: the tests run on the unpatched repository.
	empty := filepath.Join(t.TempDir(), "empty.diff")
	os.WriteFile(empty, nil, 0o644)
	_, stderr, err = execTasksCLI(t, append([]string{"grade", "--dataset", hello, "--instance_id", "hello", "--patch", empty, "--log-level", "info"}, box...)...)
	if ee, ok := err.(exitError); !ok || ee.code != 1 || !strings.Contains(stderr, "unpatched repository") {
		t.Errorf("empty --patch: %v\n%s", err, stderr)
	}

	out, stderr, err = execTasksCLI(t, append([]string{"validate", "--dataset", tasks, "--instance_ids", "hello,scored", "--json"}, box...)...)
	if err != nil {
		t.Fatalf("validate: %v\n%s\n%s", err, out, stderr)
	}
	var sum validationSummary
	if err := json.Unmarshal([]byte(out), &sum); err != nil || sum.Total != 2 || sum.Passed != 2 {
		t.Errorf("validate: %s", out)
	}

	dir := t.TempDir()
	preds := filepath.Join(dir, "preds.jsonl")
	good := "diff --git a/hello.txt b/hello.txt\nnew file mode 100644\n--- /dev/null\n+++ b/hello.txt\n@@ -0,0 +1 @@\n+Hello, world!\n"
	lines := []map[string]any{
		{"instance_id": "hello", "model_name_or_path": "m", "model_patch": good},
		{"instance_id": "scored", "model_name_or_path": "m", "model_patch": strings.ReplaceAll(good, "hello.txt", "a.txt")},
	}
	var b strings.Builder
	for _, l := range lines {
		j, _ := json.Marshal(l)
		b.Write(append(j, '\n'))
	}
	os.WriteFile(preds, []byte(b.String()), 0o644)
	args := append([]string{"grade", "--dataset", tasks, "--predictions", preds, "--run_id", "h", "--log_dir", filepath.Join(dir, "logs"), "--report_dir", dir}, box...)
	if _, stderr, err := execTasksCLI(t, args...); err != nil {
		t.Fatalf("grade --predictions: %v\n%s", err, stderr)
	}
	var run runSummary
	if err := readJSONFile(filepath.Join(dir, "m.h.json"), &run); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(run.ResolvedIDs, []string{"hello"}) || !reflect.DeepEqual(run.UnresolvedIDs, []string{"scored"}) || len(run.ErrorIDs) != 0 {
		t.Errorf("summary: %+v", run)
	}
}

func TestReportResolved(t *testing.T) {
	tests := []struct {
		report string
		want   bool
		err    bool
	}{
		{`{"a__b-1": {"patch_exists": true, "resolved": true}}`, true, false},
		{`{"a__b-1": {"resolved": false}}`, false, false},
		{`{"patch_is_None": false, "resolved": true, "tests_status": {}}`, true, false},
		{`{"instance_id": "a__b-1", "reward": 0, "resolved": false}`, false, false},
		{`{"other": {"resolved": true}}`, false, true},
		{`[1]`, false, true},
	}
	for _, tt := range tests {
		got, err := reportResolved([]byte(tt.report), "a__b-1")
		if got != tt.want || (err != nil) != tt.err {
			t.Errorf("reportResolved(%s) = %v, %v", tt.report, got, err)
		}
	}
}

// TestGradeLogUnanchored grades a log whose markers are plain lines (no
// bash trace of them): the harness's own rule reads it, so the verdict
// agrees with the official one, and grade says it is unanchored in its
// output and on stderr; --strict-markers refuses the log with one line
// naming the task. A log whose markers bash traced is anchored.
func TestGradeLogUnanchored(t *testing.T) {
	root := testutil.RepoRoot(t)
	foreign := filepath.Join(root, "internal", "reward", "swebench", "testdata", "foreign")
	gunzip := func(dir string) string {
		f, err := os.Open(filepath.Join(dir, "test_output.txt.gz"))
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		zr, err := gzip.NewReader(f)
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(zr)
		if err != nil {
			t.Fatal(err)
		}
		out := filepath.Join(t.TempDir(), "test_output.txt")
		if err := os.WriteFile(out, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return out
	}
	const id = "pydata__xarray__rA_pandas_strings"
	for _, tc := range []struct {
		layout   string
		anchored bool
	}{{"plain", false}, {"traced", true}} {
		dir := filepath.Join(foreign, "runner.parse_log_xarray.rA_pandas_strings."+tc.layout)
		args := []string{"grade", "--dataset", filepath.Join(dir, "row.json"), "--instance_id", id, "--log", gunzip(dir)}
		out, stderr, err := execTasksCLI(t, args...)
		if err != nil {
			t.Fatalf("%s: %v\n%s", tc.layout, err, stderr)
		}
		v := readVerdict(t, out)
		if v.Reward != 1 || !v.Resolved || v.Anchored != tc.anchored || !v.reportResolved(t) {
			t.Errorf("%s: verdict %+v, want resolved (as the official report says), anchored %v", tc.layout, v, tc.anchored)
		}
		if strings.Contains(stderr, "unanchored") == tc.anchored {
			t.Errorf("%s: stderr %q", tc.layout, stderr)
		}
		_, stderr, err = execTasksCLI(t, append(args, "--strict-markers")...)
		switch {
		case tc.anchored && err != nil:
			t.Errorf("%s --strict-markers: %v", tc.layout, err)
		case !tc.anchored:
			ee, ok := err.(exitError)
			if !ok || ee.code != exitTaskErrors || strings.Count(stderr, "\n") != 1 || !strings.HasPrefix(stderr, "swerve: task "+id+": ") || !strings.Contains(stderr, "--strict-markers") {
				t.Errorf("%s --strict-markers: %v, stderr %q; want exit 3 and one line naming the task", tc.layout, err, stderr)
			}
		}
	}
}

// TestVerdictTests: the verdict carries the test count and what it was
// held to when the grader counted tests, and neither when it did not.
func TestVerdictTests(t *testing.T) {
	tests := []struct {
		name string
		out  grader.Outcome
		want string
	}{
		{"counted, compared", grader.Outcome{Tests: 4, TestsBaseline: "4 (gold run)"}, `"tests":4,"tests_baseline":"4 (gold run)"`},
		{"counted, no gold run", grader.Outcome{Tests: 3, TestsBaseline: grader.TestsBaselineUnknown}, `"tests":3,"tests_baseline":"unknown"`},
		{"a log", grader.Outcome{Tests: 7}, `"tests":7}`},
		{"counted nothing", grader.Outcome{Tests: 0, TestsBaseline: grader.TestsBaselineUnknown}, `"tests":0,"tests_baseline":"unknown"`},
		{"not counted", grader.Outcome{}, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b, err := json.Marshal(newVerdict(&tc.out, ""))
			if err != nil {
				t.Fatal(err)
			}
			if tc.want == "" {
				if strings.Contains(string(b), `"tests`) {
					t.Errorf("verdict %s names tests", b)
				}
			} else if !strings.Contains(string(b), tc.want) {
				t.Errorf("verdict %s, want it to hold %s", b, tc.want)
			}
		})
	}
}
