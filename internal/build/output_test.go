package build

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/swerve-dev/swerve/internal/task"
	"github.com/swerve-dev/swerve/internal/testutil"
)

func TestBuildSetFields(t *testing.T) {
	raw := json.RawMessage(`{"repo":"a/b","docker_image":"old","n":1,"s":"<\u003e"}`)
	got, err := setFields(raw, []field{{"dockerfile", "FROM x\nRUN a && b <c>"}, {"docker_image", "new"}})
	if err != nil {
		t.Fatal(err)
	}
	want := `{"repo":"a/b","docker_image":"new","n":1,"s":"<\u003e","dockerfile":"FROM x\nRUN a && b <c>"}`
	if string(got) != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	if _, err := setFields(json.RawMessage(`[1]`), nil); err == nil {
		t.Error("a list is not a row")
	}
}

func TestBuildDatasetStem(t *testing.T) {
	for in, want := range map[string]string{
		"results.json": "results", "/x/y/results_fixed.json": "results_fixed", "a.b.jsonl": "a.b", "plain": "plain",
	} {
		if got := DatasetStem(in); got != want {
			t.Errorf("DatasetStem(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestBuildWriteAggregates checks the top-level files from hand-written
// statuses: every row that did not succeed is in the failed dataset (never
// run, interrupted and errored ones too) with failure_reason and
// docker_image, a row's own docker_image is kept, and the transferred rows
// load as SWE-Factory tasks.
func TestBuildWriteAggregates(t *testing.T) {
	dir := t.TempDir()
	input := filepath.Join(dir, "in.json")
	row := func(id, extra string) string {
		return `{"repo": "o/r", "instance_id": "` + id + `", "base_commit": "abc", "patch": "p", "test_patch": "tp", "problem_statement": "ü <issue>", "dockerfile": "FROM old", "eval_script": "old"` + extra + `}`
	}
	rows := "[\n" + strings.Join([]string{
		row("o__r-1", ""),
		row("o__r-2", ""),
		row("o__r-3", ""),
		row("o__r-4", ""),
		row("o__r-5", ""),
		row("o__r-6", `, "docker_image": "mine:v1"`),
		row("o__r-7", `, "docker_image": null, "docker_name": "named:v2"`),
	}, ",\n") + "\n]"
	if err := os.WriteFile(input, []byte(rows), 0o644); err != nil {
		t.Fatal(err)
	}
	res, err := task.Load(context.Background(), input, task.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out")
	put := func(id string, st Status, files map[string]string) {
		d := InstanceDir(out, id)
		st.InstanceID = id
		if err := writeJSON(filepath.Join(d, FileStatus), st); err != nil {
			t.Fatal(err)
		}
		for name, data := range files {
			if err := os.WriteFile(filepath.Join(d, name), []byte(data), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	proven := map[string]string{FileDockerfile: "FROM new\n", FileRunTests: "echo OMNIGRIL_EXIT_CODE=$rc\n", FileEvalScript: "stale\n"}
	put("o__r-1", Status{Status: StatusSuccess, DockerImage: "o__r-1_swefactory_root", Model: ModelUsage{Cost: 0.25}}, proven)
	put("o__r-2", Status{Status: StatusFailed, Reason: "the gold patch does not apply"}, nil)
	put("o__r-3", Status{Status: StatusRunning}, nil) // interrupted
	put("o__r-4", Status{Status: StatusError, Reason: "engine: gone"}, nil)
	// o__r-5 never ran.
	put("o__r-6", Status{Status: StatusFailed, Reason: "why"}, nil)
	put("o__r-7", Status{Status: StatusSuccess, DockerImage: "o__r-7_swefactory_root"}, proven)

	ran := []SummaryEntry{{InstanceID: "o__r-2", Reason: "the gold patch does not apply"}, {InstanceID: "o__r-1", Success: true, Cost: 0.25}}
	agg, err := WriteAggregates(out, "in", res.Tasks, AggregateOptions{Ran: ran, InputFile: input})
	if err != nil {
		t.Fatal(err)
	}
	wantMain := SummaryMain{Total: 7, Succeeded: 2, Failed: 5, SuccessRate: 2.0 / 7, FailedInstances: []FailedSummary{
		{"o__r-2", "the gold patch does not apply"}, {"o__r-3", ReasonInterrupted},
		{"o__r-4", "error (runs again next time): engine: gone"}, {"o__r-5", ReasonNotRun}, {"o__r-6", "why"},
	}}
	if diff := cmp.Diff(wantMain, agg.Main); diff != "" {
		t.Errorf("summary_main (-want +got):\n%s", diff)
	}
	data, err := os.ReadFile(filepath.Join(out, FileSummary))
	if err != nil {
		t.Fatal(err)
	}
	wantSummary := `[
  {
    "instance_id": "o__r-2",
    "success": false,
    "reason": "the gold patch does not apply",
    "cost": 0
  },
  {
    "instance_id": "o__r-1",
    "success": true,
    "cost": 0.25
  }
]
`
	if diff := cmp.Diff(wantSummary, string(data)); diff != "" {
		t.Errorf("summary.json (-want +got):\n%s", diff)
	}

	data, err = os.ReadFile(filepath.Join(out, "in_transferred.json"))
	if err != nil {
		t.Fatal(err)
	}
	wantRows := `[
  {
    "repo": "o/r",
    "instance_id": "o__r-1",
    "base_commit": "abc",
    "patch": "p",
    "test_patch": "tp",
    "problem_statement": "ü <issue>",
    "dockerfile": "FROM new\n",
    "eval_script": "echo OMNIGRIL_EXIT_CODE=$rc\n",
    "docker_image": "o__r-1_swefactory_root"
  },
  {
    "repo": "o/r",
    "instance_id": "o__r-7",
    "base_commit": "abc",
    "patch": "p",
    "test_patch": "tp",
    "problem_statement": "ü <issue>",
    "dockerfile": "FROM new\n",
    "eval_script": "echo OMNIGRIL_EXIT_CODE=$rc\n",
    "docker_image": "named:v2",
    "docker_name": "named:v2"
  }
]
`
	if diff := cmp.Diff(wantRows, string(data)); diff != "" {
		t.Errorf("transferred (-want +got):\n%s", diff)
	}
	tr, err := task.Load(context.Background(), agg.Transferred, task.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if tr.Dialect != task.DialectSWEFactory || len(tr.Tasks) != 2 || tr.Tasks[0].Image != "o__r-1_swefactory_root" || tr.Tasks[0].Grader != task.GraderSWEFactory {
		t.Errorf("transferred loads as %s: %+v", tr.Dialect, tr.Tasks)
	}

	var failed []map[string]any
	data, err = os.ReadFile(agg.FailedFile)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &failed); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range failed {
		got = append(got, fmt.Sprint(f["instance_id"], " | ", f["failure_reason"], " | ", f["docker_image"]))
	}
	want := []string{
		"o__r-2 | the gold patch does not apply | o__r-2_swefactory_root",
		"o__r-3 | " + ReasonInterrupted + " | o__r-3_swefactory_root",
		"o__r-4 | error (runs again next time): engine: gone | o__r-4_swefactory_root",
		"o__r-5 | " + ReasonNotRun + " | o__r-5_swefactory_root",
		"o__r-6 | why | mine:v1",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("failed rows (-want +got):\n%s", diff)
	}

	// summary_history.jsonl gains one line per call.
	if _, err := WriteAggregates(out, "in", res.Tasks[:1], AggregateOptions{InputFile: input}); err != nil {
		t.Fatal(err)
	}
	data, err = os.ReadFile(filepath.Join(out, FileSummaryHistory))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	var first, second SummaryMain
	if len(lines) != 2 || json.Unmarshal([]byte(lines[0]), &first) != nil || json.Unmarshal([]byte(lines[1]), &second) != nil ||
		first.Total != 7 || second.Total != 1 || second.InputFile != input {
		t.Errorf("summary_history.jsonl:\n%s", data)
	}
}

// TestBuildRealRows runs SWE-Factory's own results through the parts that
// need no engine: the repo-cache rewrite of their Dockerfiles, and the
// transferred and failed rows, which must keep every other field byte for
// byte and in order.
func TestBuildRealRows(t *testing.T) {
	input := filepath.Join(testutil.SharedDir(t), "data", "swe-factory", "results_fixed.json")
	res, err := task.Load(context.Background(), input, task.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Dialect != task.DialectSWEFactory || len(res.Tasks) != 2 {
		t.Fatalf("%s: %s, %d rows", input, res.Dialect, len(res.Tasks))
	}
	cache := t.TempDir()
	mkMirror(t, filepath.Join(cache, "gabime__spdlog.git"))
	for _, tk := range res.Tasks {
		off, err := UseRepoCache(tk.Dockerfile, cache)
		if err != nil {
			t.Fatal(err)
		}
		if len(off.Mirrors) != 1 || !strings.Contains(off.Dockerfile, "COPY .swerve-repos/gabime__spdlog.git /swerve-repos/gabime__spdlog.git\nRUN git clone file:///swerve-repos/gabime__spdlog.git /testbed \\\n") {
			t.Errorf("%s: rewritten Dockerfile:\n%s", tk.InstanceID, off.Dockerfile)
		}
	}

	out := t.TempDir()
	ok, bad := res.Tasks[0], res.Tasks[1]
	d := InstanceDir(out, ok.InstanceID)
	if err := writeJSON(filepath.Join(d, FileStatus), Status{InstanceID: ok.InstanceID, Status: StatusSuccess, DockerImage: ImageTag(ok.InstanceID)}); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(d, FileDockerfile), []byte("FROM fixed\n"), 0o644)
	os.WriteFile(filepath.Join(d, FileEvalScript), []byte("echo OMNIGRIL_EXIT_CODE=0\n"), 0o644)
	if err := writeJSON(filepath.Join(InstanceDir(out, bad.InstanceID), FileStatus), Status{InstanceID: bad.InstanceID, Status: StatusFailed, Reason: "why"}); err != nil {
		t.Fatal(err)
	}
	agg, err := WriteAggregates(out, DatasetStem(input), res.Tasks, AggregateOptions{InputFile: input})
	if err != nil {
		t.Fatal(err)
	}
	if filepath.Base(agg.Transferred) != "results_fixed_transferred.json" {
		t.Errorf("transferred file %s", agg.Transferred)
	}
	keys := func(path string) []string {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		var rows []json.RawMessage
		if err := json.Unmarshal(data, &rows); err != nil || len(rows) != 1 {
			t.Fatalf("%s: %d rows, %v", path, len(rows), err)
		}
		dec := json.NewDecoder(strings.NewReader(string(rows[0])))
		dec.Token()
		var ks []string
		for dec.More() {
			k, _ := dec.Token()
			ks = append(ks, k.(string))
			var skip json.RawMessage
			dec.Decode(&skip)
		}
		return ks
	}
	upstream := []string{"repo", "pull_number", "instance_id", "issue_numbers", "base_commit", "patch", "test_patch", "problem_statement", "hints_text", "created_at", "version", "dockerfile", "eval_script", "eval_script_skeleton"}
	if diff := cmp.Diff(append(upstream, "docker_image"), keys(agg.Transferred)); diff != "" {
		t.Errorf("transferred keys (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(append(upstream, "failure_reason", "docker_image"), keys(agg.FailedFile)); diff != "" {
		t.Errorf("failed keys (-want +got):\n%s", diff)
	}
	tr, err := task.Load(context.Background(), agg.Transferred, task.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got := tr.Tasks[0]
	if got.Image != "gabime__spdlog-3366_swefactory_root" || got.Dockerfile != "FROM fixed\n" || got.Patch != ok.Patch || got.TestPatch != ok.TestPatch || got.ProblemStatement != ok.ProblemStatement {
		t.Errorf("transferred task: image %q, dockerfile %q", got.Image, got.Dockerfile)
	}
}

// statusSchema is SWE-Factory's status.json, written down from its field
// names and JSON types: every key must be there with a value of one of the
// listed kinds.
var statusSchema = map[string][]string{
	"instance_id":              {"string"},
	"status":                   {"string"},
	"final_iteration":          {"number", "null"},
	"last_iteration_attempted": {"number", "null"},
	"reason":                   {"string", "null"},
	"total_iterations":         {"number"},
	"aggregate":                {"object"},
	"iterations":               {"array"},
	"artifacts":                {"object"},
	"response_logs":            {"array"},
	"generated_at":             {"string"},
	"mode":                     {"string"},
	"exit_reason":              {"string", "null"},
}

var (
	aggregateSchema = []string{"total_cost", "total_input_tokens", "total_output_tokens"}
	iterationSchema = []string{"iteration", "status", "metadata_path", "cost", "llm_calls", "response_log"}
)

func jsonKind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case string:
		return "string"
	case float64:
		return "number"
	case bool:
		return "bool"
	case []any:
		return "array"
	}
	return "object"
}

// TestBuildStatusSchema: the status.json swerve writes has SWE-Factory's
// keys and types, and a status.json in SWE-Factory's shape reads back, so
// --skip-existing keeps what an upstream build proved.
func TestBuildStatusSchema(t *testing.T) {
	out := t.TempDir()
	if _, err := Run(context.Background(), Options{Tasks: fakeTasks("o__r-1"), Output: out, Stem: "in", MaxIterations: 1, Engine: &fakeEngine{err: errNoBuild}}); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(InstanceDir(out, "o__r-1"), FileStatus))
	if err != nil {
		t.Fatal(err)
	}
	var st map[string]any
	if err := json.Unmarshal(data, &st); err != nil {
		t.Fatal(err)
	}
	for key, kinds := range statusSchema {
		v, ok := st[key]
		if !ok || !slices.Contains(kinds, jsonKind(v)) {
			t.Errorf("status.json %s = %v (%s); want one of %v", key, v, jsonKind(v), kinds)
		}
	}
	agg, _ := st["aggregate"].(map[string]any)
	for _, k := range aggregateSchema {
		if jsonKind(agg[k]) != "number" {
			t.Errorf("status.json aggregate.%s = %v", k, agg[k])
		}
	}
	its, _ := st["iterations"].([]any)
	if len(its) != 1 {
		t.Fatalf("status.json iterations: %v", st["iterations"])
	}
	it := its[0].(map[string]any)
	for _, k := range iterationSchema {
		if _, ok := it[k]; !ok {
			t.Errorf("status.json iterations[0] lacks %s: %v", k, it)
		}
	}
	if it["iteration"] != 0.0 || it["metadata_path"] != "iteration_0/metadata.json" {
		t.Errorf("iterations[0] = %v; want iteration 0 in iteration_0/", it)
	}
	for _, f := range []string{FileRunTests, FileRunTestsOriginal, FileEvalScript, FileEvalOriginal, FileDockerfile, FileDockerfileOriginal, "iteration_0/" + FileMetadata} {
		if _, err := os.Stat(filepath.Join(InstanceDir(out, "o__r-1"), f)); err != nil {
			t.Error(err)
		}
	}
	for _, f := range []string{FileDockerfileResolved, FileCheckSummary} {
		if _, err := os.Stat(filepath.Join(InstanceDir(out, "o__r-1"), f)); err == nil {
			t.Errorf("%s written for an instance that failed", f)
		}
	}

	// An upstream-shaped status.json (hand-written from the field names).
	up := t.TempDir()
	upstream := `{"instance_id": "o__r-2", "status": "success", "final_iteration": 1, "last_iteration_attempted": 1,
  "reason": null, "total_iterations": 2, "aggregate": {"total_cost": 0.5, "total_input_tokens": 10, "total_output_tokens": 2},
  "iterations": [{"iteration": 0, "status": "failed", "metadata_path": "iteration_0/metadata.json", "cost": 0.25, "llm_calls": 1, "response_log": "responses/iteration_0.jsonl"},
                 {"iteration": 1, "status": "success", "metadata_path": "iteration_1/metadata.json", "cost": 0.25, "llm_calls": 1, "response_log": null}],
  "artifacts": {"dockerfile": "Dockerfile"}, "response_logs": [], "generated_at": "2025-01-01T00:00:00Z", "mode": "auto", "exit_reason": null}`
	if err := os.WriteFile(filepath.Join(up, FileStatus), []byte(upstream), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := ReadStatus(up)
	if err != nil || got.Status != StatusSuccess || got.FinalIteration == nil || *got.FinalIteration != 1 || len(got.Iterations) != 2 || got.Aggregate.TotalCost != 0.5 {
		t.Errorf("upstream status.json reads as %+v, %v", got, err)
	}
}
