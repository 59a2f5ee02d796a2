package cli

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/swerve-dev/swerve/internal/testutil"
)

// execTasksCLI runs the command tree with args and returns stdout, stderr and
// the error.
func execTasksCLI(t *testing.T, args ...string) (string, string, error) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	root := NewRoot(&stdout, &stderr)
	root.SetArgs(args)
	err := root.Execute()
	return stdout.String(), stderr.String(), err
}

func tasksSampleDataset(t *testing.T) string {
	return filepath.Join(testutil.RepoRoot(t), "examples", "sample", "tasks.jsonl")
}

func TestTasksLsVerifiedJSON(t *testing.T) {
	path := filepath.Join(testutil.SharedDir(t), "data", "swebench", "verified-test.parquet")
	out, _, err := execTasksCLI(t, "tasks", "ls", "--dataset", path, "--json")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(lines) != 500 {
		t.Fatalf("%d lines, want 500", len(lines))
	}
	var first struct {
		InstanceID string          `json:"instance_id"`
		FailToPass []string        `json:"FAIL_TO_PASS"`
		Grader     string          `json:"grader"`
		Raw        json.RawMessage `json:"raw"`
	}
	if err := json.Unmarshal([]byte(lines[0]), &first); err != nil {
		t.Fatal(err)
	}
	if first.InstanceID != "astropy__astropy-12907" || len(first.FailToPass) != 2 || first.Grader != "swebench" || len(first.Raw) == 0 {
		t.Errorf("first line = %+v", first)
	}

	out, _, err = execTasksCLI(t, "tasks", "ls", "--dataset", path, "--json", "--raw=false", "--start_idx", "10", "--k", "3")
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(out, "\n"); n != 3 || strings.Contains(out, `"raw"`) {
		t.Errorf("--k 3 --raw=false gave %d lines (raw present: %v)", n, strings.Contains(out, `"raw"`))
	}
}

func TestTasksLsTable(t *testing.T) {
	out, _, err := execTasksCLI(t, "tasks", "ls", "--dataset", tasksSampleDataset(t))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"INSTANCE_ID     REPO         IMAGE  F2P  P2P  GRADER",
		"sample__calc-1  sample/calc  -      2    7    swebench",
		"sample__calc-2  sample/calc  -      3    7    swebench",
	}
	if got := strings.Split(strings.TrimSuffix(out, "\n"), "\n"); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("table:\n%s\nwant:\n%s", out, strings.Join(want, "\n"))
	}
}

func TestTasksLsSelection(t *testing.T) {
	for _, args := range [][]string{
		{"--instance_ids", "sample__calc-2"},
		{"--instance-ids", "sample__calc-2"},
		{"--instance_id", "sample__calc-2"},
		{"--instance_ids", "sample__calc-2,sample__calc-2"},
		{"--start_idx", "1"},
		{"--start-idx", "1", "--k", "5"},
	} {
		out, _, err := execTasksCLI(t, append([]string{"tasks", "ls", "--dataset", tasksSampleDataset(t), "--json"}, args...)...)
		if err != nil {
			t.Fatalf("%v: %v", args, err)
		}
		if strings.Count(out, "\n") != 1 || !strings.HasPrefix(out, `{"instance_id":"sample__calc-2"`) {
			t.Errorf("%v: got %q", args, out)
		}
	}
	out, _, err := execTasksCLI(t, "tasks", "ls", "--dataset", tasksSampleDataset(t), "--json", "--instance_ids", "sample__calc-1 sample__calc-2", "--split", "demo")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Count(out, "\n") != 2 || strings.Count(out, `"split":"demo"`) != 2 {
		t.Errorf("two ids with --split demo: got %q", out)
	}
	_, _, err = execTasksCLI(t, "tasks", "ls", "--dataset", tasksSampleDataset(t), "--instance_ids", "nope")
	if err == nil || !strings.Contains(err.Error(), "no task nope in the dataset") {
		t.Errorf("unknown id: error %v", err)
	}
}

func TestTasksShow(t *testing.T) {
	out, _, err := execTasksCLI(t, "tasks", "show", "--dataset", tasksSampleDataset(t), "sample__calc-1")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"instance_id  sample__calc-1\n",
		"grader       swebench\n",
		"=== FAIL_TO_PASS (2) ===\ntests/test_calc.py::test_median_even_length\n",
		"=== problem_statement ===\nmedian() gives the wrong answer",
		"=== patch ===\ndiff --git a/calc.py b/calc.py\n",
		"=== eval_script ===\n#!/bin/bash\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("show output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "=== hints_text") {
		t.Errorf("empty hints printed")
	}

	out, _, err = execTasksCLI(t, "tasks", "show", "--dataset", tasksSampleDataset(t), "--instance_id", "sample__calc-2", "--json")
	if err != nil {
		t.Fatal(err)
	}
	var task map[string]any
	if err := json.Unmarshal([]byte(out), &task); err != nil || task["instance_id"] != "sample__calc-2" {
		t.Errorf("show --json = %q (%v)", out, err)
	}

	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{}, "name exactly one task"},
		{[]string{"a", "--instance_id", "b"}, "name exactly one task"},
		{[]string{"missing"}, "no task missing in the dataset"},
	} {
		_, _, err := execTasksCLI(t, append([]string{"tasks", "show", "--dataset", tasksSampleDataset(t)}, tc.args...)...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("show %v: error %v, want %q", tc.args, err, tc.want)
		}
	}
}

// TestTasksShowField: --field prints one field as it is: a text field
// verbatim (the gold patch, ready for grade --patch), others as JSON, and
// an unknown name is an error listing the fields.
func TestTasksShowField(t *testing.T) {
	var row map[string]any
	b, _ := os.ReadFile(tasksSampleDataset(t))
	if err := json.Unmarshal([]byte(strings.SplitN(string(b), "\n", 2)[0]), &row); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ field, want, err string }{
		{"patch", row["patch"].(string), ""},
		{"instance_id", "sample__calc-1", ""},
		{"FAIL_TO_PASS", `["tests/test_calc.py::test_median_even_length","tests/test_calc.py::test_median_even_unsorted"]` + "\n", ""},
		{"nope", "", `sample__calc-1: no field "nope" (fields: FAIL_TO_PASS, PASS_TO_PASS,`},
	} {
		out, _, err := execTasksCLI(t, "tasks", "show", "--dataset", tasksSampleDataset(t), "sample__calc-1", "--field", c.field)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("--field %s: error %v, want %q", c.field, err, c.err)
			}
			continue
		}
		if err != nil || out != c.want {
			t.Errorf("--field %s = %q, %v; want %q", c.field, out, err, c.want)
		}
	}
}

func TestTasksStats(t *testing.T) {
	out, _, err := execTasksCLI(t, "tasks", "stats", "--dataset", tasksSampleDataset(t), "--json")
	if err != nil {
		t.Fatal(err)
	}
	var s taskStats
	if err := json.Unmarshal([]byte(out), &s); err != nil {
		t.Fatal(err)
	}
	if s.Tasks != 2 || s.Format != "jsonl" || len(s.ByRepo) != 1 || s.ByRepo[0] != (count{"sample/calc", 2}) ||
		s.FailToPass != (sizeStats{Min: 2, Median: 2.5, Mean: 2.5, Max: 3, Total: 5}) {
		t.Errorf("stats = %+v", s)
	}

	path := filepath.Join(testutil.SharedDir(t), "data", "swebench", "multilingual-test.parquet")
	out, _, err = execTasksCLI(t, "tasks", "stats", "--dataset", path)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"tasks         300\n", "language (8)\n", "repo (41)\n", "empty 25\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("stats output lacks %q:\n%s", want, out)
		}
	}
}

func TestTasksBadDataset(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "bad.jsonl")
	good := `{"instance_id":"a__b-1","repo":"a/b","base_commit":"c","problem_statement":"p","FAIL_TO_PASS":[]}`
	bad := `{"instance_id":"a__b-2","repo":"a/b","base_commit":"c","problem_statement":"p","FAIL_TO_PASS":"oops"}`
	if err := os.WriteFile(path, []byte(good+"\n"+bad+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, _, err := execTasksCLI(t, "tasks", "ls", "--dataset", path)
	want := path + ": row 1 (a__b-2): FAIL_TO_PASS: not a JSON list of strings; pass --skip-invalid to load the other rows"
	if err == nil || err.Error() != want {
		t.Errorf("error:\n got  %v\n want %s", err, want)
	}
	out, stderr, err := execTasksCLI(t, "tasks", "ls", "--dataset", path, "--skip_invalid")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "a__b-1") || strings.Contains(out, "a__b-2") {
		t.Errorf("--skip-invalid output:\n%s", out)
	}
	wantErr := "swerve: skipped 1 invalid row of " + path + ":\n  row 1 (a__b-2): FAIL_TO_PASS: not a JSON list of strings\n"
	if stderr != wantErr {
		t.Errorf("stderr:\n got  %q\n want %q", stderr, wantErr)
	}

	if _, _, err := execTasksCLI(t, "tasks", "ls"); err == nil || !strings.Contains(err.Error(), "--dataset is required") {
		t.Errorf("no --dataset: error %v", err)
	}
}

// Every tasks command documents itself.
func TestTasksHelp(t *testing.T) {
	root := NewRoot(&bytes.Buffer{}, &bytes.Buffer{})
	tasks, _, err := root.Find([]string{"tasks"})
	if err != nil {
		t.Fatal(err)
	}
	cmds := append(tasks.Commands(), tasks)
	if len(cmds) != 4 {
		t.Errorf("%d commands under tasks, want ls, show, stats", len(cmds)-1)
	}
	for _, c := range cmds {
		if c.Short == "" || c.Long == "" || c.Example == "" {
			t.Errorf("%s: Short, Long or Example missing", c.CommandPath())
		}
	}
	out, _, err := execTasksCLI(t, "tasks", "ls", "--help")
	if err != nil {
		t.Fatal(err)
	}
	for _, flag := range []string{"--dataset", "--split", "--start-idx", "--k", "--instance-ids", "--skip-invalid", "--json"} {
		if !strings.Contains(out, flag) {
			t.Errorf("ls --help lacks %s", flag)
		}
	}
}

func TestSecondsFlag(t *testing.T) {
	tests := []struct {
		in   string
		want string
		err  bool
	}{
		{"300", "5m0s", false}, {"1.5", "1.5s", false}, {"90s", "1m30s", false}, {"5m", "5m0s", false},
		{"0", "0s", false}, {"-3", "", true}, {"soon", "", true},
	}
	for _, tt := range tests {
		var s seconds
		err := s.Set(tt.in)
		if (err != nil) != tt.err || (err == nil && s.String() != tt.want) {
			t.Errorf("Set(%q) = %v, %v; want %s (error %v)", tt.in, s.String(), err, tt.want, tt.err)
		}
	}
}
