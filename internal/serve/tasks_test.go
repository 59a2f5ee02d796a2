package serve

import (
	"context"
	"strings"
	"testing"

	"github.com/swerve-dev/swerve/internal/task"
)

// TestTasksFromRecordedRows loads the task of every recorded Gym input row
// from the row's own fields: FAIL_TO_PASS as a JSON string (swebench) and
// as an array (mini_swe_resource) both read.
func TestTasksFromRecordedRows(t *testing.T) {
	ts := NewTasks(nil)
	for _, rel := range []string{"swebench/example.jsonl", "mini_swe_resource/example.jsonl"} {
		for i, line := range gymRows(t, rel) {
			row, _ := ParseRow(line)
			row.Set("policy_api_key", "secret")
			tk, err := ts.Find(t.Context(), row)
			if err != nil {
				t.Fatalf("%s row %d: %v", rel, i, err)
			}
			if tk.InstanceID != row.String("instance_id") || tk.Repo != row.String("repo") || len(tk.FailToPass) == 0 {
				t.Errorf("%s row %d: task %s repo %s, %d FAIL_TO_PASS", rel, i, tk.InstanceID, tk.Repo, len(tk.FailToPass))
			}
		}
	}
}

func TestTasksDataset(t *testing.T) {
	ts := NewTasks([]task.Task{{InstanceID: "a__b-1", Repo: "a/b"}})
	row, _ := ParseRow([]byte(`{"instance_id":"a__b-1","responses_create_params":{"input":[]}}`))
	tk, err := ts.Find(t.Context(), row)
	if err != nil || tk.Repo != "a/b" {
		t.Fatalf("by id: %v %v", tk, err)
	}
	row, _ = ParseRow([]byte(`{"instance_id":"zz","responses_create_params":{"input":[]}}`))
	if _, err := ts.Find(t.Context(), row); err == nil || !strings.Contains(err.Error(), `"zz"`) {
		t.Errorf("unknown id: %v", err)
	}
}

// TestRunTaskNotFound: with Tasks set, a row whose task cannot be found is
// a 200 infrastructure row and never reaches Rollouts.
func TestRunTaskNotFound(t *testing.T) {
	var got *RolloutRequest
	f := &fake{fn: func(ctx context.Context, req *RolloutRequest) (*RolloutResult, error) {
		got = req
		return resolved(ctx, req)
	}}
	_, ts := newTest(t, Options{Rollouts: f, Tasks: NewTasks([]task.Task{{InstanceID: "astropy__astropy-12907", Repo: "astropy/astropy"}})})
	resp, b := post(t, ts.URL+"/run", `{"instance_id":"nope","responses_create_params":{"input":[]}}`)
	row, _ := ParseRow(b)
	if resp.StatusCode != 200 || row.String("_ng_failure_class") != "task_invalid" || string(row["_ng_failure_terminal"]) != "true" {
		t.Errorf("%d %s", resp.StatusCode, b)
	}
	if f.calls.Load() != 0 {
		t.Error("a row without a task reached Rollouts")
	}
	post(t, ts.URL+"/run", smallRow)
	if got == nil || got.Task == nil || got.Task.Repo != "astropy/astropy" {
		t.Errorf("the task did not reach Rollouts: %+v", got)
	}
}
