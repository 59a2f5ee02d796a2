package run_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/swerve-dev/swerve/internal/agent"
	"github.com/swerve-dev/swerve/internal/run"
)

// A row of upstream's own runner, for a task swerve never ran.
const foreignRow = `{"trajectory_steps":[],"problem_statement":"p","docker_image":"namanjain12/x:1","exp_name":"bench","max_steps":40,"max_steps_absolute":50,"max_token_limit":65536,"max_llm_time":7200,"max_exec_time":90,"max_total_time":50000,"exit_reason":"agent","output_patch":"","reward":1}` + "\n"

// TestForeignFilesAreNeverRewritten: a run-level file swerve did not write
// (rows appended by another tool, a file cut short, another tool's file in
// a fresh directory) makes the rebuild refuse with one line naming it, and
// the file stays byte for byte.
func TestForeignFilesAreNeverRewritten(t *testing.T) {
	for _, tc := range []struct {
		name   string
		file   string
		swerve bool // swerve wrote the aggregates first
		edit   func(old []byte) []byte
	}{
		{"a foreign row appended", "bench.jsonl", true, func(old []byte) []byte { return append(old, foreignRow...) }},
		{"a partial file", "bench.jsonl", true, func(old []byte) []byte { return old[:len(old)/2] }},
		{"a row rewritten, same size", "trajectories.jsonl", true, func(old []byte) []byte {
			b := []byte(string(old))
			b[2] ^= 1
			return b
		}},
		{"upstream's trajectories.jsonl in a fresh directory", "trajectories.jsonl", false, func([]byte) []byte { return []byte(`[{"role":"user","content":"x"}]` + "\n") }},
		{"upstream's rows in a fresh directory", "bench.jsonl", false, func([]byte) []byte { return []byte(foreignRow) }},
		{"another tool's preds.json", "preds.json", false, func([]byte) []byte { return []byte(`{"x":{"model_patch":""}}`) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := fakeRunDir(t, 3)
			if tc.swerve {
				if _, err := run.WriteAggregates(dir, "bench"); err != nil {
					t.Fatal(err)
				}
			}
			path := filepath.Join(dir, tc.file)
			old, _ := os.ReadFile(path)
			data := tc.edit(old)
			if err := os.WriteFile(path, data, 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := run.WriteAggregates(dir, "bench")
			var fe *run.ForeignError
			if !errors.As(err, &fe) || fe.Path != path {
				t.Fatalf("got %v, want a ForeignError naming %s", err, path)
			}
			if msg := err.Error(); strings.Contains(msg, "\n") || !strings.Contains(msg, path) {
				t.Errorf("not one line naming the file: %q", msg)
			}
			if got, _ := os.ReadFile(path); string(got) != string(data) {
				t.Errorf("%s was changed", tc.file)
			}
		})
	}
}

// TestRunRefusesForeignFilesBeforeStarting: swerve run in a --traj_dir
// holding another tool's rows stops before any task starts.
func TestRunRefusesForeignFilesBeforeStarting(t *testing.T) {
	o := options(t, allTasks(t)[:1], "mini_swe_agent", agent.ModeText)
	if err := os.MkdirAll(o.TrajDir, 0o755); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(o.TrajDir, o.ExpName+".jsonl")
	if err := os.WriteFile(path, []byte(foreignRow), 0o644); err != nil {
		t.Fatal(err)
	}
	started := 0
	o.Events = func(run.Event) { started++ }
	_, err := run.Run(context.Background(), o)
	var fe *run.ForeignError
	if !errors.As(err, &fe) || started != 0 {
		t.Fatalf("got %v after %d events, want a ForeignError before any task", err, started)
	}
	if got, _ := os.ReadFile(path); string(got) != foreignRow {
		t.Error("the foreign file was changed")
	}
}

// TestAggregatesOfAnOlderSwerve: a directory an older swerve wrote (no
// record of its files) is rebuilt when its rows are all swerve's, and
// refused when one is not.
func TestAggregatesOfAnOlderSwerve(t *testing.T) {
	for _, tc := range []struct {
		name    string
		extra   string
		refused bool
	}{
		{"swerve's rows only", "", false},
		{"plus a foreign row", foreignRow, true},
		{"plus a partial row", `{"instance_id":"bench__agg-00000","scaffold":"mini`, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := fakeRunDir(t, 2)
			if _, err := run.WriteAggregates(dir, "bench"); err != nil {
				t.Fatal(err)
			}
			os.Remove(filepath.Join(dir, ".swerve-aggregates.json")) // as an older swerve left it
			path := filepath.Join(dir, "bench.jsonl")
			f, _ := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
			f.WriteString(tc.extra)
			f.Close()
			_, err := run.WriteAggregates(dir, "bench")
			var fe *run.ForeignError
			if tc.refused != errors.As(err, &fe) || (!tc.refused && err != nil) {
				t.Fatalf("got %v, want refused %v", err, tc.refused)
			}
		})
	}
}

// TestTwoExperimentsInOneDirectory: runs of two experiments in turn in one
// --traj_dir each find the other's files still recorded as swerve's.
func TestTwoExperimentsInOneDirectory(t *testing.T) {
	dir := fakeRunDir(t, 2)
	for _, exp := range []string{"a", "b", "a", "b"} {
		if _, err := run.WriteAggregates(dir, exp); err != nil {
			t.Fatalf("experiment %s: %v", exp, err)
		}
	}
	if err := run.CheckAggregates(dir, "a"); err != nil {
		t.Fatal(err)
	}
}
