package preds

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/swerve-dev/swerve/internal/task"
)

// writeRecord writes a task record the way a run leaves it.
func writeRecord(t *testing.T, dir string, rec map[string]any) {
	t.Helper()
	d := filepath.Join(dir, rec["instance_id"].(string))
	if err := os.MkdirAll(d, 0o755); err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(rec)
	if err := os.WriteFile(filepath.Join(d, "result.json"), b, 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestFromRun(t *testing.T) {
	dir := t.TempDir()
	writeRecord(t, dir, map[string]any{"instance_id": "b__b-2", "model": "openai/m", "status": "graded", "reward": 0, "output_patch": ""})
	writeRecord(t, dir, map[string]any{"instance_id": "a__a-1", "model": "openai/m", "status": "graded", "reward": 1, "output_patch": "diff --git a/x b/x\n"})
	writeRecord(t, dir, map[string]any{"instance_id": "c__c-3", "model": "openai/m", "status": "error", "error_kind": "box", "error": "container died", "output_patch": "diff half"})
	// A record of an older swerve: no status, an error: an infrastructure error.
	writeRecord(t, dir, map[string]any{"instance_id": "d__d-4", "model": "openai/m", "error": "docker gone", "swerve_exit_reason": "sandbox_error"})
	ps, skipped, err := FromRun(dir)
	if err != nil {
		t.Fatal(err)
	}
	want := []Prediction{{"a__a-1", "openai/m", "diff --git a/x b/x\n"}, {"b__b-2", "openai/m", ""}}
	if len(ps) != len(want) || ps[0] != want[0] || ps[1] != want[1] {
		t.Errorf("predictions %+v, want %+v", ps, want)
	}
	if len(skipped) != 2 || skipped[0].InstanceID != "c__c-3" || !strings.Contains(skipped[0].Reason, "box error: container died") || skipped[1].InstanceID != "d__d-4" {
		t.Errorf("skipped %+v", skipped)
	}
	for _, jsonl := range []bool{false, true} {
		var buf bytes.Buffer
		if err := Write(&buf, ps, jsonl); err != nil {
			t.Fatal(err)
		}
		var got []Prediction
		if jsonl {
			for _, line := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
				var p Prediction
				if err := json.Unmarshal([]byte(line), &p); err != nil {
					t.Fatal(err)
				}
				got = append(got, p)
			}
		} else if err := json.Unmarshal(buf.Bytes(), &got); err != nil {
			t.Fatal(err)
		}
		if len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
			t.Errorf("jsonl=%v: wrote %s", jsonl, buf.String())
		}
	}
	if _, _, err := FromRun(t.TempDir()); err == nil || !strings.Contains(err.Error(), "no task records") {
		t.Errorf("empty dir: %v", err)
	}
}

func sampleTasks(t *testing.T) (string, []task.Task) {
	_, file, _, _ := runtime.Caller(0)
	path := filepath.Join(filepath.Dir(file), "..", "..", "..", "examples", "sample", "tasks.jsonl")
	res, err := task.Load(context.Background(), path, task.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return path, res.Tasks
}

func TestPatchRowsLoadAsDataset(t *testing.T) {
	_, tasks := sampleTasks(t)
	if len(tasks) < 2 {
		t.Fatalf("want 2 sample tasks, have %d", len(tasks))
	}
	id := tasks[1].InstanceID
	rows, err := PatchRows(tasks, map[string]Prediction{id: {id, "m/x", "diff --git a/calc.py b/calc.py\n<&>\n"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 1 {
		t.Fatalf("%d rows, want 1 (the task with a prediction)", len(rows))
	}
	var p Prediction
	if err := json.Unmarshal(rows[0], &p); err != nil || p != (Prediction{id, "m/x", "diff --git a/calc.py b/calc.py\n<&>\n"}) {
		t.Errorf("row as a prediction: %+v, %v", p, err)
	}
	path := filepath.Join(t.TempDir(), "tasks.jsonl")
	if err := os.WriteFile(path, bytes.Join(rows, nil), 0o644); err != nil {
		t.Fatal(err)
	}
	res, err := task.Load(context.Background(), path, task.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got := res.Tasks[0]
	want := tasks[1]
	if got.InstanceID != want.InstanceID || got.Patch != want.Patch || got.EvalScript != want.EvalScript || got.Grader != want.Grader ||
		got.Image != want.Image || got.SourceDir != want.SourceDir || strings.Join(got.FailToPass, ",") != strings.Join(want.FailToPass, ",") {
		t.Errorf("reloaded task differs:\n got %+v\nwant %+v", got, want)
	}
	if _, err := PatchRows(tasks, map[string]Prediction{"nope__x-1": {"nope__x-1", "m", ""}}); err == nil || !strings.Contains(err.Error(), "prediction nope__x-1: instance_id: not in the dataset") {
		t.Errorf("unknown id: %v", err)
	}
}
