package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// imageDataset is the sample tasks, each naming an image (a task the local
// backend must not take in the image's place).
func imageDataset(t *testing.T) string {
	t.Helper()
	data, err := os.ReadFile(tasksSampleDataset(t))
	if err != nil {
		t.Fatal(err)
	}
	var out []byte
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		var row map[string]any
		if err := json.Unmarshal([]byte(line), &row); err != nil {
			t.Fatal(err)
		}
		row["image"] = "swerve-test/never-pulled:1"
		delete(row, "source_dir")
		row["base_commit"] = "0123456789abcdef0123456789abcdef01234567"
		b, _ := json.Marshal(row)
		out = append(append(out, b...), '\n')
	}
	p := filepath.Join(t.TempDir(), "tasks.jsonl")
	if err := os.WriteFile(p, out, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// deadEngine points Docker's and Podman's address at a socket nothing
// listens on.
func deadEngine(t *testing.T) {
	sock := "unix://" + filepath.Join(t.TempDir(), "no-engine.sock")
	t.Setenv("DOCKER_HOST", sock)
	t.Setenv("CONTAINER_HOST", sock)
}

// TestEngineDownAuto: with --backend auto, tasks that name an image and
// no engine that answers, every command that picks a backend stops before
// any task with one line — the engine's error and the way out — instead
// of running the tasks on the host (where they fail one by one).
func TestEngineDownAuto(t *testing.T) {
	deadEngine(t)
	data := imageDataset(t)
	id := "sample__calc-1"
	dir := t.TempDir()
	preds := filepath.Join(dir, "preds.jsonl")
	os.WriteFile(preds, []byte(`{"instance_id": "`+id+`", "model_name_or_path": "m", "model_patch": ""}`+"\n"), 0o644)
	traj := filepath.Join(dir, "traj")
	tests := []struct {
		name string
		args []string
	}{
		{"run", []string{"run", "--dataset", data, "--llm_name", "oracle/gold", "--traj_dir", traj, "--exp_name", "e"}},
		{"run --run_golden", []string{"run", "--dataset", data, "--run_golden", "--traj_dir", traj, "--exp_name", "g"}},
		{"solve", []string{"solve", "--dataset", data, "--instance_id", id, "--llm_name", "oracle/gold", "--out", filepath.Join(dir, "solve")}},
		{"validate", []string{"validate", "--dataset", data}},
		{"grade --gold", []string{"grade", "--dataset", data, "--instance_id", id, "--gold"}},
		{"grade --predictions", []string{"grade", "--dataset", data, "--predictions", preds, "--run_id", "r", "--log_dir", filepath.Join(dir, "logs"), "--report_dir", dir}},
		{"exec", []string{"exec", "--dataset", data, "--instance_id", id, "--", "true"}},
		{"shell", []string{"shell", "--dataset", data, "--instance_id", id, "--", "true"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			start := time.Now()
			_, stderr, err := execTasksCLI(t, tt.args...)
			took := time.Since(start)
			if err == nil {
				t.Fatalf("%s succeeded with no engine; stderr:\n%s", tt.name, stderr)
			}
			if _, ok := err.(exitError); ok {
				t.Fatalf("%s: %v, want the engine's one-line error; stderr:\n%s", tt.name, err, stderr)
			}
			msg := err.Error()
			for _, want := range []string{"no container engine answers", "no-engine.sock", "--backend local"} {
				if !strings.Contains(msg, want) {
					t.Errorf("%s: error %q lacks %q", tt.name, msg, want)
				}
			}
			if strings.Contains(msg, "\n") {
				t.Errorf("%s: error is not one line: %q", tt.name, msg)
			}
			if strings.Contains(stderr, "source_dir") || strings.Contains(msg, "source_dir:") {
				t.Errorf("%s: fell back to the local backend: %q %q", tt.name, msg, stderr)
			}
			if took > 5*time.Second {
				t.Errorf("%s: the error took %s", tt.name, took)
			}
			t.Logf("%s: %s to %q", tt.name, took.Round(time.Millisecond), msg)
		})
	}
	// No task started: the run wrote no task record.
	if m, _ := filepath.Glob(filepath.Join(traj, "*", "result.json")); len(m) > 0 {
		t.Errorf("a task ran with no engine: %v", m)
	}
}
