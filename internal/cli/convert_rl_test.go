package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/swerve-dev/swerve/internal/convert/verl"
	"github.com/swerve-dev/swerve/internal/task"
	"github.com/swerve-dev/swerve/internal/testutil"
)

func TestConvertVerlCLI(t *testing.T) {
	path := filepath.Join(testutil.SharedDir(t), "data", "swebench", "verified-test.parquet")
	dir := t.TempDir()
	train, val := filepath.Join(dir, "train.parquet"), filepath.Join(dir, "val.parquet")
	out, stderr, err := execTasksCLI(t, "convert", "verl", "--dataset", path, "--output", train, "--val_size", "0.1", "--val_output", val, "--ground_truth_patch")
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	if want := "swerve convert verl: wrote 450 rows to " + train + ", 50 to " + val + " (data_source swerve/swebench)\n"; out != want {
		t.Errorf("stdout %q, want %q", out, want)
	}
	tr, err := verl.Read(train)
	if err != nil {
		t.Fatal(err)
	}
	va, err := verl.Read(val)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[int64]bool{}
	for _, r := range append(tr, va...) {
		if seen[r.ExtraInfo.Index] || r.ExtraInfo.GroundTruthPatch == "" || len(r.ExtraInfo.FailToPass) == 0 {
			t.Fatalf("row %+v: index repeated, or no patch or tests", r.ExtraInfo)
		}
		seen[r.ExtraInfo.Index] = true
	}
	if len(tr) != 450 || len(va) != 50 || len(seen) != 500 {
		t.Errorf("%d train + %d val rows, %d indexes", len(tr), len(va), len(seen))
	}

	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--dataset", path}, "--output: name the parquet file"},
		{[]string{"--dataset", path, "--output", train, "--val_size", "3"}, "--val_output: name the parquet file"},
		{[]string{"--dataset", path, "--output", train, "--val_size", "x", "--val_output", val}, "--val_size x: want a count"},
		{[]string{"--dataset", path, "--output", train, "--val_size", "501", "--val_output", val}, "--val_size: 501 tasks asked for validation, the dataset has 500"},
		{[]string{"--dataset", path, "--output", train, "--val_output", val}, "--val_output needs --val_size"},
	} {
		_, _, err := execTasksCLI(t, append([]string{"convert", "verl"}, c.args...)...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: error %v, want %q", c.args, err, c.want)
		}
	}
}

// TestConvertPredsRoundTrip turns run records into predictions that
// grade --predictions reads, and those back into a dataset of patches
// that loads both as a dataset and as predictions.
func TestConvertPredsRoundTrip(t *testing.T) {
	dir := t.TempDir()
	runDir := filepath.Join(dir, "run")
	for _, rec := range []map[string]any{
		{"instance_id": "sample__calc-1", "model": "openai/m", "status": "graded", "reward": 1, "output_patch": "diff --git a/calc.py b/calc.py\n"},
		{"instance_id": "sample__calc-2", "model": "openai/m", "status": "error", "error_kind": "box", "error": "container died"},
	} {
		d := filepath.Join(runDir, rec["instance_id"].(string))
		os.MkdirAll(d, 0o755)
		b, _ := json.Marshal(rec)
		if err := os.WriteFile(filepath.Join(d, "result.json"), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	predsPath := filepath.Join(dir, "preds.jsonl")
	_, stderr, err := execTasksCLI(t, "convert", "preds", "--traj_dir", runDir, "--output", predsPath, "-v")
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	if !strings.Contains(stderr, "left out 1 task with an infrastructure error") || !strings.Contains(stderr, "sample__calc-2: box error: container died") {
		t.Errorf("stderr:\n%s", stderr)
	}
	ps, err := loadPredictions(predsPath)
	if err != nil {
		t.Fatal(err)
	}
	if len(ps) != 1 || ps["sample__calc-1"].Model != "openai/m" || *ps["sample__calc-1"].Patch != "diff --git a/calc.py b/calc.py\n" {
		t.Fatalf("predictions %+v", ps)
	}
	// To stdout as a JSON list.
	stdout, _, err := execTasksCLI(t, "convert", "preds", "--traj_dir", runDir)
	if err != nil || !strings.HasPrefix(stdout, "[\n") {
		t.Errorf("stdout list: %v\n%s", err, stdout)
	}

	tasksPath := filepath.Join(dir, "tasks.jsonl")
	stdout, stderr, err = execTasksCLI(t, "convert", "preds", "--from", predsPath, "--dataset", tasksSampleDataset(t), "--output", tasksPath)
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	if !strings.Contains(stdout, "wrote 1 tasks with their predictions") {
		t.Errorf("stdout: %s", stdout)
	}
	back, err := loadPredictions(tasksPath)
	if err != nil {
		t.Fatal(err)
	}
	if len(back) != 1 || *back["sample__calc-1"].Patch != *ps["sample__calc-1"].Patch {
		t.Errorf("dataset of patches as predictions: %+v", back)
	}
	res, err := task.Load(t.Context(), tasksPath, task.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Tasks) != 1 || res.Tasks[0].InstanceID != "sample__calc-1" || res.Tasks[0].EvalScript == "" {
		t.Errorf("dataset of patches as a dataset: %+v", res.Tasks)
	}

	for _, c := range []struct {
		args []string
		want string
	}{
		{nil, "give --traj_dir RUN"},
		{[]string{"--traj_dir", runDir, "--from", predsPath}, "not both"},
		{[]string{"--from", predsPath, "--dataset", tasksSampleDataset(t)}, "--output: name the JSONL dataset"},
		{[]string{"--traj_dir", filepath.Join(dir, "nope")}, "not a directory"},
	} {
		_, _, err := execTasksCLI(t, append([]string{"convert", "preds"}, c.args...)...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: error %v, want %q", c.args, err, c.want)
		}
	}
}

func TestConvertGymCLI(t *testing.T) {
	out := filepath.Join(t.TempDir(), "rows.jsonl")
	stdout, stderr, err := execTasksCLI(t, "convert", "gym", "--dataset", tasksSampleDataset(t), "--output", out, "--scaffold", "r2egym", "--use_fn_calling", "True", "--agent_ref", "")
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	if !strings.Contains(stdout, "wrote 2 rows") || !strings.Contains(stdout, "fn mode") {
		t.Errorf("stdout: %s", stdout)
	}
	b, _ := os.ReadFile(out)
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	var row map[string]any
	if err := json.Unmarshal([]byte(lines[0]), &row); err != nil {
		t.Fatal(err)
	}
	if _, ok := row["agent_ref"]; ok {
		t.Errorf("--agent_ref '' wrote agent_ref")
	}
	if tools := row["responses_create_params"].(map[string]any)["tools"]; tools == nil {
		t.Errorf("fn mode: no tools")
	}
	_, _, err = execTasksCLI(t, "convert", "gym", "--dataset", tasksSampleDataset(t), "--output", out, "--scaffold", "nope")
	if err == nil || !strings.Contains(err.Error(), "--scaffold") {
		t.Errorf("unknown scaffold: %v", err)
	}
}

// Every convert subcommand documents itself with an example.
func TestConvertHelp(t *testing.T) {
	root := NewRoot(&strings.Builder{}, &strings.Builder{})
	conv, _, err := root.Find([]string{"convert"})
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, c := range append(conv.Commands(), conv) {
		names[c.Name()] = true
		if c.Short == "" || c.Long == "" || c.Example == "" {
			t.Errorf("%s: Short, Long or Example missing", c.CommandPath())
		}
	}
	for _, n := range []string{"harbor", "verl", "preds", "gym"} {
		if !names[n] {
			t.Errorf("no convert %s", n)
		}
	}
}
