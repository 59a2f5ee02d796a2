package run_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/swerve-dev/swerve/internal/run"
)

// A record of a swerve from before exit_reason took upstream's names: its
// exit_reason is swerve's own, its steps count from 1 and keep the command
// as the model wrote it.
const oldRecord = `{"instance_id":"old__task-1","docker_image":"img:1","repo":"o/r","exp_name":"bench","scaffold":"mini_swe_agent","mode":"text","model":"m",` +
	`"status":"graded","attempts":1,"reward":1,"reward_reason":"tests pass","reward_calc_time":1.5,"test_timeout":false,"exit_reason":"submitted","output_patch":"diff\n",` +
	`"trajectory":{"instance_id":"old__task-1","scaffold":"mini_swe_agent","mode":"text","model":"m","exit_reason":"submitted","output_patch":"diff\n","messages":[{"role":"system","content":"s"},{"role":"user","content":"u"}],` +
	`"trajectory_steps":[{"step_idx":1,"thought":"look","action":"ls","calls":[{"name":"bash","args":{"command":"ls"},"raw":"ls"}],"observation":"a.py","done":false,"token_usage_total":10},` +
	`{"step_idx":2,"thought":"done","action":"echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT","calls":[{"name":"bash","args":{"command":"echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"},"raw":"echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"}],"observation":"","done":true,"token_usage_total":20}]},` +
	`"fingerprint":"0123"}`

// TestOldRecordsLoad: an older swerve's record still loads, and its row
// in <exp_name>.jsonl is an upstream row with both exit reasons.
func TestOldRecordsLoad(t *testing.T) {
	dir := t.TempDir()
	td := run.TaskDir(dir, "old__task-1")
	os.MkdirAll(td, 0o755)
	if err := os.WriteFile(filepath.Join(td, "result.json"), []byte(oldRecord), 0o644); err != nil {
		t.Fatal(err)
	}
	recs, err := run.LoadRecords(dir)
	if err != nil {
		t.Fatal(err)
	}
	rec := recs["old__task-1"]
	if rec.ExitReason != "submitted" || rec.UpstreamExitReason != "agent" {
		t.Errorf("exit reasons: swerve %q, upstream %q; want submitted, agent", rec.ExitReason, rec.UpstreamExitReason)
	}
	if st := rec.Trajectory.Steps; st[0].Index != 0 || st[0].Count != 1 || st[1].Index != 1 || st[0].RawAction != "ls" {
		t.Errorf("steps not brought up to date: %+v", st)
	}
	sum, err := run.WriteAggregates(dir, "bench")
	if err != nil {
		t.Fatal(err)
	}
	if sum.ExitReasons["agent"] != 1 || sum.SwerveExitReasons["submitted"] != 1 {
		t.Errorf("reward_summary exit reasons: %v, swerve's %v", sum.ExitReasons, sum.SwerveExitReasons)
	}
	checkUpstreamRows(t, filepath.Join(dir, "bench.jsonl"))
	rows := readLines(t, filepath.Join(dir, "bench.jsonl"))
	if len(rows) != 1 || rows[0]["exit_reason"] != "agent" || rows[0]["swerve_exit_reason"] != "submitted" {
		t.Errorf("row: exit_reason %v, swerve_exit_reason %v", rows[0]["exit_reason"], rows[0]["swerve_exit_reason"])
	}
	ds, _ := rows[0]["ds"].(map[string]any)
	if ds["instance_id"] != "old__task-1" || ds["docker_image"] != "img:1" {
		t.Errorf("ds made for an old record: %v", ds)
	}
}
