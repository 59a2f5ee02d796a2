package task

import (
	"bufio"
	"context"
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/swerve-dev/swerve/internal/testutil"
)

// sharedCase describes what loading one file of ../shared/data must give.
// The counts come from shared/data/README.md.
type sharedCase struct {
	path     string // relative to shared/data
	wantErr  string // the load must fail with this in the message
	format   Format
	dialect  Dialect
	rows     int
	firstID  string
	grader   Grader
	emptyP2P int // rows with an empty PASS_TO_PASS
	emptyF2P int
	repos    int
	check    func(t *testing.T, tasks []Task)
}

var sharedCases = []sharedCase{
	{path: "swebench/verified-test.parquet", format: FormatParquet, dialect: DialectSWEBench, rows: 500,
		firstID: "astropy__astropy-12907", grader: GraderSWEBench, emptyP2P: 11, repos: 12,
		check: func(t *testing.T, tasks []Task) {
			checkHarnessImages(t, tasks)
			checkEmptyHints(t, tasks, 162)
			checkDistinct(t, tasks, func(t Task) string { return t.LogParser }, 12)
			difficulty := map[string]int{}
			for _, task := range tasks {
				raw, _ := task.RawField("difficulty")
				var d string
				json.Unmarshal(raw, &d)
				difficulty[d]++
			}
			want := map[string]int{"<15 min fix": 194, "15 min - 1 hour": 261, "1-4 hours": 42, ">4 hours": 3}
			if diff := cmp.Diff(want, difficulty); diff != "" {
				t.Errorf("difficulty counts (-want +got):\n%s", diff)
			}
		}},
	{path: "swebench/lite-test.parquet", format: FormatParquet, dialect: DialectSWEBench, rows: 300,
		firstID: "astropy__astropy-12907", grader: GraderSWEBench, emptyP2P: 6, repos: 12,
		check: func(t *testing.T, tasks []Task) {
			checkHarnessImages(t, tasks)
			checkEmptyHints(t, tasks, 75)
		}},
	{path: "swebench/lite-dev.parquet", format: FormatParquet, dialect: DialectSWEBench, rows: 23,
		firstID: "sqlfluff__sqlfluff-1625", grader: GraderSWEBench, emptyP2P: 2, repos: 6,
		check: func(t *testing.T, tasks []Task) {
			checkHarnessImages(t, tasks)
			checkEmptyHints(t, tasks, 7)
			if got := tasks[0].FailToPass; !slices.Equal(got, []string{"test/cli/commands_test.py::test__cli__command_directed"}) {
				t.Errorf("FAIL_TO_PASS of %s = %q", tasks[0].InstanceID, got)
			}
		}},
	{path: "swebench/multilingual-test.parquet", format: FormatParquet, dialect: DialectSWEBench, rows: 300,
		firstID: "apache__druid-13704", grader: GraderSWEBench, emptyP2P: 25, emptyF2P: 1, repos: 41,
		check: func(t *testing.T, tasks []Task) {
			checkHarnessImages(t, tasks)
			checkEmptyHints(t, tasks, 135)
			checkDistinct(t, tasks, func(t Task) string { return t.LogParser }, 19)
			// LIST<string> columns arrive as real lists.
			want := []string{"org.apache.druid.query.aggregation.post.ArithmeticPostAggregatorTest#testPow"}
			if diff := cmp.Diff(want, tasks[0].FailToPass); diff != "" {
				t.Errorf("FAIL_TO_PASS of %s (-want +got):\n%s", tasks[0].InstanceID, diff)
			}
			if tasks[0].Version != "13704" || tasks[0].Language != "java" {
				t.Errorf("version, language = %q, %q; want 13704, java", tasks[0].Version, tasks[0].Language)
			}
			for _, task := range tasks {
				if task.Language == "" {
					t.Errorf("%s (%s): no language", task.InstanceID, task.LogParser)
				}
				raw, _ := task.RawField("FAIL_TO_PASS")
				if len(raw) == 0 || raw[0] != '[' {
					t.Errorf("%s: raw FAIL_TO_PASS is %.20s, want a JSON list", task.InstanceID, raw)
				}
			}
		}},
	{path: "swe-factory/results.json", format: FormatJSON, dialect: DialectSWEFactory, rows: 1,
		firstID: "gabime__spdlog-3398", grader: GraderSWEFactory, emptyP2P: 1, emptyF2P: 1, repos: 1,
		check: func(t *testing.T, tasks []Task) {
			task := tasks[0]
			if task.Image != "gabime__spdlog-3398_swefactory_root" {
				t.Errorf("image = %q, want the SWE-Factory default", task.Image)
			}
			if !strings.Contains(task.Dockerfile, "\nFROM ") || !strings.Contains(task.EvalScript, "OMNIGRIL_EXIT_CODE=$rc") {
				t.Errorf("dockerfile %.30q / eval_script lacks the expected content", task.Dockerfile)
			}
		}},
	{path: "swe-factory/results_fixed.json", format: FormatJSON, dialect: DialectSWEFactory, rows: 2,
		firstID: "gabime__spdlog-3366", grader: GraderSWEFactory, emptyP2P: 2, emptyF2P: 2, repos: 1},
	{path: "swe-smith/pandas-dev__pandas.95280573.pr_53652.json", format: FormatJSONObject, dialect: DialectSWESmith, rows: 1,
		firstID: "pandas-dev__pandas.95280573.pr_53652", grader: GraderSWESmith, repos: 1,
		check: func(t *testing.T, tasks []Task) {
			task := tasks[0]
			if task.Repo != "swesmith/pandas-dev__pandas.95280573" || task.Image != "swesmith.x86_64.pandas-dev__pandas.95280573" {
				t.Errorf("repo, image = %q, %q", task.Repo, task.Image)
			}
			if len(task.FailToPass) != 2 || len(task.PassToPass) != 9 {
				t.Errorf("F2P, P2P sizes = %d, %d; want 2, 9", len(task.FailToPass), len(task.PassToPass))
			}
			// The shipped patch introduces the bug; Patch is the fix.
			if !strings.Contains(task.BugPatch, "+        if keyarr.dtype.kind in \"mM\":") ||
				!strings.Contains(task.Patch, "-        if keyarr.dtype.kind in \"mM\":") {
				t.Errorf("bug patch / fix not the right way round:\n%s", task.Patch)
			}
		}},
	{path: "nemo-gym/mini_swe_resource/example.jsonl", format: FormatJSONL, dialect: DialectNeMoGym, rows: 5,
		firstID: "getmoto__moto-7365", grader: GraderSWEBench, repos: 1,
		check: func(t *testing.T, tasks []Task) {
			for _, task := range tasks {
				if task.Split != "train" || !strings.HasPrefix(task.Image, "xingyaoww/sweb.eval.x86_64.getmoto_s_moto-") {
					t.Errorf("%s: split %q, image %q; want train and a SWE-Gym image", task.InstanceID, task.Split, task.Image)
				}
			}
		}},
	{path: "nemo-gym/mini_swe_resource/example_rollouts.jsonl", wantErr: "NeMo Gym rollouts file"},
	{path: "nemo-gym/swebench/example.jsonl", format: FormatJSONL, dialect: DialectNeMoGym, rows: 5,
		firstID: "astropy__astropy-12907", grader: GraderSWEBench, repos: 1,
		check: func(t *testing.T, tasks []Task) {
			for _, task := range tasks {
				if task.Split != "test" || task.Image != SWEBenchImage(task.InstanceID) {
					t.Errorf("%s: split %q, image %q", task.InstanceID, task.Split, task.Image)
				}
			}
		}},
	{path: "verl/simple_cases_val.json", wantErr: "verl swe_agent recipe's simple cases"},
	{path: "harbor", format: FormatHarbor, dialect: DialectHarbor, rows: 2, firstID: "dns-blacklisting",
		grader: GraderHarbor, emptyP2P: 2, emptyF2P: 2, repos: 1},
	{path: "harbor/simple-task", format: FormatHarbor, dialect: DialectHarbor, rows: 1, firstID: "simple-task",
		grader: GraderHarbor, emptyP2P: 1, emptyF2P: 1, repos: 1,
		check: func(t *testing.T, tasks []Task) {
			task := tasks[0]
			if !strings.Contains(task.ProblemStatement, "hello.txt") || !strings.HasPrefix(task.Dockerfile, "FROM") {
				t.Errorf("problem statement %q, dockerfile %q", task.ProblemStatement, task.Dockerfile)
			}
			var conf struct {
				Verifier struct {
					TimeoutSec float64 `json:"timeout_sec"`
				} `json:"verifier"`
			}
			if err := json.Unmarshal(task.Raw, &conf); err != nil || conf.Verifier.TimeoutSec != 120 {
				t.Errorf("raw task.toml = %s (%v), want verifier.timeout_sec 120", task.Raw, err)
			}
			if !filepath.IsAbs(task.TaskDir) {
				t.Errorf("task_dir %q is not absolute", task.TaskDir)
			}
		}},
}

func TestLoadSharedData(t *testing.T) {
	data := filepath.Join(testutil.SharedDir(t), "data")
	for _, tc := range sharedCases {
		t.Run(tc.path, func(t *testing.T) {
			t.Parallel()
			res, err := Load(context.Background(), filepath.Join(data, tc.path), LoadOptions{})
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("Load: got error %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("Load: %v", err)
			}
			if res.Format != tc.format || res.Dialect != tc.dialect {
				t.Errorf("format, dialect = %s, %s; want %s, %s", res.Format, res.Dialect, tc.format, tc.dialect)
			}
			if len(res.Tasks) != tc.rows || len(res.Skipped) != 0 {
				t.Fatalf("got %d tasks (%d skipped), want %d", len(res.Tasks), len(res.Skipped), tc.rows)
			}
			if res.Tasks[0].InstanceID != tc.firstID {
				t.Errorf("first id = %q, want %q", res.Tasks[0].InstanceID, tc.firstID)
			}
			ids := map[string]bool{}
			repos := map[string]bool{}
			var emptyP2P, emptyF2P int
			for _, task := range res.Tasks {
				if task.InstanceID == "" || ids[task.InstanceID] {
					t.Errorf("id %q empty or repeated", task.InstanceID)
				}
				ids[task.InstanceID] = true
				repos[task.Repo] = true
				if task.Grader != tc.grader || task.Dialect != tc.dialect {
					t.Errorf("%s: grader, dialect = %s, %s", task.InstanceID, task.Grader, task.Dialect)
				}
				if task.FailToPass == nil || task.PassToPass == nil {
					t.Errorf("%s: nil test list", task.InstanceID)
				}
				if len(task.PassToPass) == 0 {
					emptyP2P++
				}
				if len(task.FailToPass) == 0 {
					emptyF2P++
				}
				if tc.dialect != DialectHarbor && (task.BaseCommit == "" || task.ProblemStatement == "" || task.Patch == "") {
					t.Errorf("%s: base_commit, problem_statement or patch empty", task.InstanceID)
				}
				if !json.Valid(task.Raw) {
					t.Errorf("%s: raw is not valid JSON", task.InstanceID)
				}
			}
			if emptyP2P != tc.emptyP2P || emptyF2P != tc.emptyF2P {
				t.Errorf("empty PASS_TO_PASS, FAIL_TO_PASS = %d, %d; want %d, %d", emptyP2P, emptyF2P, tc.emptyP2P, tc.emptyF2P)
			}
			if len(repos) != tc.repos {
				t.Errorf("%d repositories, want %d", len(repos), tc.repos)
			}
			if tc.check != nil {
				tc.check(t, res.Tasks)
			}
		})
	}
}

// TestSharedDataCovered makes sure every dataset in shared/data has a case
// above, so a new file cannot slip in untested.
func TestSharedDataCovered(t *testing.T) {
	data := filepath.Join(testutil.SharedDir(t), "data")
	covered := map[string]bool{}
	for _, tc := range sharedCases {
		covered[tc.path] = true
	}
	filepath.WalkDir(data, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(data, path)
		switch {
		case d.IsDir() && covered[rel]:
			return fs.SkipDir // a Harbor task directory
		case d.IsDir() || rel == "README.md":
			return nil
		}
		if !covered[rel] {
			t.Errorf("shared/data/%s has no case in sharedCases", rel)
		}
		return nil
	})
}

// TestVerifiedMatchesRealTasks compares the parquet rows with the five
// Verified rows copied unchanged into shared/realtasks/instances.jsonl, read
// here with nothing but encoding/json.
func TestVerifiedMatchesRealTasks(t *testing.T) {
	shared := testutil.SharedDir(t)
	res, err := Load(context.Background(), filepath.Join(shared, "data/swebench/verified-test.parquet"), LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	byID := map[string]Task{}
	for _, task := range res.Tasks {
		byID[task.InstanceID] = task
	}
	jsonlPath := filepath.Join(shared, "realtasks/instances.jsonl")
	f, err := os.Open(jsonlPath)
	if err != nil {
		t.Skipf("no realtasks: %v", err)
	}
	jl, err := Load(context.Background(), jsonlPath, LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 16<<20)
	n := 0
	for sc.Scan() {
		var want map[string]any
		if err := json.Unmarshal(sc.Bytes(), &want); err != nil {
			t.Fatal(err)
		}
		id := want["instance_id"].(string)
		task, ok := byID[id]
		if !ok {
			t.Errorf("%s not in the parquet file", id)
			continue
		}
		n++
		var got map[string]any
		if err := json.Unmarshal(task.Raw, &got); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s: raw row differs from instances.jsonl (-want +got):\n%s", id, diff)
		}
		var f2p, p2p []string
		json.Unmarshal([]byte(want["FAIL_TO_PASS"].(string)), &f2p)
		json.Unmarshal([]byte(want["PASS_TO_PASS"].(string)), &p2p)
		for _, c := range []struct {
			field string
			got   any
			want  any
		}{
			{"repo", task.Repo, want["repo"]},
			{"base_commit", task.BaseCommit, want["base_commit"]},
			{"patch", task.Patch, want["patch"]},
			{"test_patch", task.TestPatch, want["test_patch"]},
			{"problem_statement", task.ProblemStatement, want["problem_statement"]},
			{"hints_text", task.Hints, want["hints_text"]},
			{"image", task.Image, want["image"]},
			{"eval_script", task.EvalScript, want["eval_script"]},
			{"log_parser", task.LogParser, want["log_parser"]},
			{"version", task.Version, want["version"]},
			{"FAIL_TO_PASS", task.FailToPass, f2p},
			{"PASS_TO_PASS", task.PassToPass, p2p},
		} {
			if diff := cmp.Diff(c.want, c.got); diff != "" {
				t.Errorf("%s: %s (-want +got):\n%s", id, c.field, diff)
			}
		}
		// The JSONL copy loads to the same task, up to the raw bytes.
		for _, other := range jl.Tasks {
			if other.InstanceID == id {
				other.Raw, task.Raw = nil, nil
				if diff := cmp.Diff(task, other); diff != "" {
					t.Errorf("%s: parquet and JSONL tasks differ (-parquet +jsonl):\n%s", id, diff)
				}
			}
		}
	}
	if n != 5 {
		t.Errorf("compared %d rows, want 5", n)
	}
}

// checkHarnessImages checks the image column against the name the harness
// would derive, which is what a row without the column gets.
func checkHarnessImages(t *testing.T, tasks []Task) {
	t.Helper()
	for _, task := range tasks {
		if got := SWEBenchImage(task.InstanceID); got != task.Image {
			t.Errorf("%s: derived image %q, column says %q", task.InstanceID, got, task.Image)
		}
	}
}

func checkEmptyHints(t *testing.T, tasks []Task, want int) {
	t.Helper()
	n := 0
	for _, task := range tasks {
		if task.Hints == "" {
			n++
		}
	}
	if n != want {
		t.Errorf("%d tasks with empty hints_text, want %d", n, want)
	}
}

func checkDistinct(t *testing.T, tasks []Task, key func(Task) string, want int) {
	t.Helper()
	seen := map[string]bool{}
	for _, task := range tasks {
		seen[key(task)] = true
	}
	if len(seen) != want {
		t.Errorf("%d distinct values, want %d", len(seen), want)
	}
}

func BenchmarkLoadVerifiedParquet(b *testing.B) {
	path := filepath.Join(testutil.SharedDir(b), "data/swebench/verified-test.parquet")
	ctx := context.Background()
	for b.Loop() {
		res, err := Load(ctx, path, LoadOptions{})
		if err != nil {
			b.Fatal(err)
		}
		if len(res.Tasks) != 500 {
			b.Fatalf("%d tasks", len(res.Tasks))
		}
	}
}
