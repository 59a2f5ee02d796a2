package cli

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/swerve-dev/swerve/internal/sandbox/docker"
	_ "github.com/swerve-dev/swerve/internal/sandbox/local"
	"github.com/swerve-dev/swerve/internal/task"
	"github.com/swerve-dev/swerve/internal/testutil"
)

func TestExecSampleLocal(t *testing.T) {
	testutil.HostPython(t)
	t.Setenv("SWERVE_SHIM_BINARY", testutil.SwerveBinary(t))
	data := tasksSampleDataset(t)
	out, _, err := execTasksCLI(t, "exec", "--dataset", data, "--instance_id", "sample__calc-1", "--backend", "local", "--",
		"git status --porcelain; git rev-list --count HEAD; python3 -c 'import calc; print(calc.median([1, 2, 3, 4]))'")
	if err != nil {
		t.Fatal(err)
	}
	if out != "1\n3\n" {
		t.Errorf("exec output %q; want a clean one-commit repo and the buggy median (3)", out)
	}
	_, _, err = execTasksCLI(t, "exec", "--dataset", data, "--instance_id", "sample__calc-1", "--backend", "local", "--", "exit 9")
	if ee, ok := err.(exitError); !ok || ee.code != 9 {
		t.Errorf("exec exit 9: err = %v, want exit status 9", err)
	}
	_, _, err = execTasksCLI(t, "exec", "--dataset", data, "--instance_id", "sample__calc-1", "--backend", "local", "--timeout", "500ms", "--", "sleep 30")
	if ee, ok := err.(exitError); !ok || ee.code != 124 {
		t.Errorf("exec timeout: err = %v, want exit status 124", err)
	}
	_, _, err = execTasksCLI(t, "exec", "--dataset", data, "--instance_id", "nope", "--backend", "local", "--", "true")
	if err == nil || !strings.Contains(err.Error(), "nope") {
		t.Errorf("exec of an unknown task: %v", err)
	}
}

// TestRealTasksBoxes opens the box of each real SWE-bench Verified task that
// ../shared/realtasks builds, the way a user would: the row from the
// dataset's parquet, its image by the harness's own name, never pulled. CI
// builds the images and sets SWERVE_REALTASKS=1, which makes this mandatory.
func TestRealTasksBoxes(t *testing.T) {
	shared := testutil.SharedDir(t)
	required := os.Getenv("SWERVE_REALTASKS") == "1"
	if err := docker.Probe(t.Context()); err != nil {
		if required {
			t.Fatalf("SWERVE_REALTASKS=1 but %v", err)
		}
		testutil.SkipOrFail(t, "no container engine: %v", err)
	}
	t.Setenv("SWERVE_SHIM_BINARY", testutil.SwerveBinary(t))
	f, err := os.Open(filepath.Join(shared, "realtasks", "instances.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	parquet := filepath.Join(shared, "data", "swebench", "verified-test.parquet")
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<24)
	n := 0
	for sc.Scan() {
		var row struct {
			InstanceID string `json:"instance_id"`
			BaseCommit string `json:"base_commit"`
			Image      string `json:"image"`
		}
		if err := json.Unmarshal(sc.Bytes(), &row); err != nil {
			t.Fatal(err)
		}
		n++
		t.Run(row.InstanceID, func(t *testing.T) {
			if _, _, err := execTasksCLI(t, "exec", "--dataset", parquet, "--instance_id", row.InstanceID, "--pull", "never", "--", "true"); err != nil {
				if required {
					t.Fatalf("SWERVE_REALTASKS=1 but the box of %s did not open (build the images with ../shared/realtasks/build.sh): %v", row.Image, err)
				}
				t.Skipf("image %s not built (../shared/realtasks/build.sh): %v", row.Image, err)
			}
			out, _, err := execTasksCLI(t, "exec", "--dataset", parquet, "--instance_id", row.InstanceID, "--pull", "never", "--",
				"cd /testbed && git rev-parse HEAD && git status --porcelain && python -c 'import django; print(django.__file__)'")
			if err != nil {
				t.Fatal(err)
			}
			want := row.BaseCommit + "\n/testbed/django/__init__.py\n"
			if out != want {
				t.Errorf("in the box of %s: %q; want HEAD at the base commit, a clean tree and django from /testbed (%q)", row.Image, out, want)
			}
		})
	}
	if n != 5 {
		t.Errorf("%d real tasks, want 5", n)
	}
}

// TestValidateRealTasks is the regression users run before training, on real
// SWE-bench Verified tasks: gold patch → reward 1 and no patch → reward 0
// for each, in fresh boxes from the harness-named images, with the dataset's
// own eval_script.
func TestValidateRealTasks(t *testing.T) {
	shared := testutil.SharedDir(t)
	if err := docker.Probe(t.Context()); err != nil {
		testutil.SkipOrFail(t, "no container engine: %v", err)
	}
	ids := []string{"django__django-15499", "django__django-16139", "django__django-16901", "django__django-16938", "django__django-17087"}
	t.Setenv("SWERVE_SHIM_BINARY", testutil.SwerveBinary(t))
	parquet := filepath.Join(shared, "data", "swebench", "verified-test.parquet")
	if _, _, err := execTasksCLI(t, "exec", "--dataset", parquet, "--instance_id", ids[0], "--pull", "never", "--", "true"); err != nil {
		if os.Getenv("SWERVE_REALTASKS") == "1" {
			t.Fatalf("SWERVE_REALTASKS=1 but the real task images are missing: %v", err)
		}
		t.Skipf("real task images not built (../shared/realtasks/build.sh): %v", err)
	}
	out, stderr, err := execTasksCLI(t, "validate", "--dataset", parquet, "--instance_ids", strings.Join(ids, ","), "--pull", "never", "--max_workers", "2", "--json")
	if err != nil {
		t.Fatalf("validate: %v\n%s\n%s", err, out, stderr)
	}
	var sum validationSummary
	if err := json.Unmarshal([]byte(out), &sum); err != nil {
		t.Fatalf("summary: %v\n%s", err, out)
	}
	if sum.Total != 5 || sum.Passed != 5 || len(sum.Failed) != 0 {
		t.Errorf("validate: %+v", sum)
	}
	for _, v := range sum.Tasks {
		if v.Gold == nil || *v.Gold != 1 || v.Empty == nil || *v.Empty != 0 || !v.OK || v.Status != validOK {
			t.Errorf("%s: %s: gold %s (%s), empty %s (%s)", v.InstanceID, v.Status, showReward(v.Gold), v.GoldReason, showReward(v.Empty), v.EmptyReason)
		}
	}
}

func TestGradeLogNoBox(t *testing.T) {
	shared := testutil.SharedDir(t)
	dir := filepath.Join(testutil.RepoRoot(t), "internal", "reward", "swebench", "testdata", "reports", "django__django-16901.gold")
	parquet := filepath.Join(shared, "data", "swebench", "verified-test.parquet")
	out, stderr, err := execTasksCLI(t, "grade", "--dataset", parquet, "--instance_id", "django__django-16901", "--log", filepath.Join(dir, "test_output.txt"))
	if err != nil {
		t.Fatalf("grade --log: %v (%s)", err, stderr)
	}
	// The verdict on top, the harness's report under "report", unchanged.
	v := readVerdict(t, out)
	if v.Reward != 1 || !v.Resolved || v.Reason != "resolved" || v.Grader != "swebench" || !v.Anchored || v.Sealed || v.Tamper != "" {
		t.Errorf("grade --log verdict %+v", v)
	}
	var got, want any
	json.Unmarshal(v.Report, &got)
	b, _ := os.ReadFile(filepath.Join(dir, "report.json"))
	json.Unmarshal(b, &want)
	if !reflect.DeepEqual(got, want) {
		t.Errorf("grade --log printed\n%s\nwant the harness's report under \"report\"\n%s", out, b)
	}
	if strings.Contains(stderr, "unanchored") {
		t.Errorf("a log whose markers bash traced is anchored; stderr %s", stderr)
	}
	_, _, err = execTasksCLI(t, "grade", "--dataset", parquet, "--instance_id", "django__django-16901", "--log", filepath.Join(dir, "..", "django__django-16901.nopatch", "test_output.txt"))
	if ee, ok := err.(exitError); !ok || ee.code != 1 {
		t.Errorf("grade of an unresolved log: %v, want exit status 1", err)
	}
}

func TestGradePredictions(t *testing.T) {
	shared := testutil.SharedDir(t)
	if err := docker.Probe(t.Context()); err != nil {
		testutil.SkipOrFail(t, "no container engine: %v", err)
	}
	t.Setenv("SWERVE_SHIM_BINARY", testutil.SwerveBinary(t))
	rows := filepath.Join(shared, "realtasks", "instances.jsonl")
	if _, _, err := execTasksCLI(t, "exec", "--dataset", rows, "--instance_id", "django__django-16901", "--pull", "never", "--", "true"); err != nil {
		if os.Getenv("SWERVE_REALTASKS") == "1" {
			t.Fatalf("SWERVE_REALTASKS=1 but the real task images are missing: %v", err)
		}
		t.Skipf("real task images not built: %v", err)
	}
	res, err := task.Load(t.Context(), rows, task.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	gold := map[string]string{}
	for _, tk := range res.Tasks {
		gold[tk.InstanceID] = tk.Patch
	}
	dir := t.TempDir()
	preds := filepath.Join(dir, "preds.json") // the JSON list form
	list := []map[string]any{
		{"instance_id": "django__django-16901", "model_name_or_path": "org/m", "model_patch": gold["django__django-16901"]},
		{"instance_id": "django__django-17087", "model_name_or_path": "org/m", "model_patch": "diff --git a/nope.py b/nope.py\n--- a/nope.py\n+++ b/nope.py\n@@ -1 +1 @@\n-x\n+y\n"},
		{"instance_id": "django__django-16938", "model_name_or_path": "org/m", "model_patch": nil},
	}
	b, _ := json.Marshal(list)
	os.WriteFile(preds, b, 0o644)
	logs, reports := filepath.Join(dir, "logs"), filepath.Join(dir, "reports")
	args := []string{"grade", "--dataset", rows, "--predictions", preds, "--run_id", "r1", "--log_dir", logs, "--report_dir", reports, "--pull", "never"}
	// --baseline learns each graded task's gold test count first, once.
	cache := t.TempDir()
	t.Setenv("SWERVE_CACHE_DIR", cache)
	if _, stderr, err := execTasksCLI(t, append(args, "--baseline")...); err != nil {
		t.Fatalf("grade --predictions: %v\n%s", err, stderr)
	}
	if kept, _ := filepath.Glob(filepath.Join(cache, "baseline", "tests-*.json")); len(kept) != 2 {
		t.Errorf("--baseline kept %d gold test counts, want 2 (16901, 17087): %q", len(kept), kept)
	}
	var sum runSummary
	if err := readJSONFile(filepath.Join(reports, "org__m.r1.json"), &sum); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(sum.ResolvedIDs, []string{"django__django-16901"}) || !reflect.DeepEqual(sum.ErrorIDs, []string{"django__django-17087"}) ||
		!reflect.DeepEqual(sum.EmptyPatchIDs, []string{"django__django-16938"}) || sum.Total != 5 || sum.Submitted != 3 || len(sum.IncompleteIDs) != 2 || sum.SchemaVersion != 2 {
		t.Errorf("summary: %+v", sum)
	}
	for _, f := range []string{"patch.diff", "test_output.txt", "report.json"} {
		if _, err := os.Stat(filepath.Join(logs, "r1", "org__m", "django__django-16901", f)); err != nil {
			t.Error(err)
		}
	}
	// A second run reuses the report instead of grading again.
	_, stderr, err := execTasksCLI(t, args...)
	if err != nil || !strings.Contains(stderr, "django__django-16901: report exists, reusing it") {
		t.Errorf("rerun: %v\n%s", err, stderr)
	}
}

func readJSONFile(path string, v any) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, v)
}

// TestValidateSampleLocal runs validate on the shipped sample tasks with the
// local backend (no engine): the gold patch resolves each, no patch does not.
func TestValidateSampleLocal(t *testing.T) {
	// The box runs host commands: put a python3 that has pytest first.
	testutil.HostPytest(t)
	t.Setenv("SWERVE_SHIM_BINARY", testutil.SwerveBinary(t))
	// The same two tasks as SWE-bench rows (graded from the parsed test
	// log) and as SWE-Factory rows (graded from OMNIGRIL_EXIT_CODE).
	for _, name := range []string{"tasks.jsonl", "sample_transferred.json"} {
		data := filepath.Join(testutil.RepoRoot(t), "examples", "sample", name)
		out, stderr, err := execTasksCLI(t, "validate", "--dataset", data, "--backend", "local", "--json")
		if err != nil {
			t.Fatalf("validate %s: %v\n%s\n%s", name, err, out, stderr)
		}
		var sum validationSummary
		if err := json.Unmarshal([]byte(out), &sum); err != nil {
			t.Fatal(err)
		}
		if sum.Total != 2 || sum.Passed != 2 {
			t.Errorf("validate on %s: %+v", name, sum)
		}
	}
}
