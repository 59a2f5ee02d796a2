package sessions

import (
	"strings"
	"testing"

	"github.com/swerve-dev/swerve/internal/testutil"
)

// TestSandboxesGrade runs the sandbox API with swerve's real grader on the
// sample task: create (twice with one request id: one box), bash, the
// editor, submit_solution before and after the fix, release twice.
func TestSandboxesGrade(t *testing.T) {
	testutil.HostPytest(t)
	o := newLocalOpener(t)
	ts := startServer(t, Options{Open: o.Open, Verifier: GraderVerifier{Open: o.Open}})
	url := ts.URL + "/sandboxes"

	var c1, c2 CreateResponse
	if st := doJSON(t, "POST", url, CreateRequest{RequestID: "traj-7", InstanceID: "sample__calc-1"}, &c1); st != 201 || !c1.Created {
		t.Fatalf("create: %d %+v", st, c1)
	}
	if st := doJSON(t, "POST", url, CreateRequest{RequestID: "traj-7", InstanceID: "sample__calc-1"}, &c2); st != 200 || c2.Created || c2.ID != c1.ID {
		t.Fatalf("second create: %d %+v, first %+v", st, c2, c1)
	}
	exec := func(tool string, args any) ExecuteResponse {
		t.Helper()
		var out ExecuteResponse
		if st := doJSON(t, "POST", url+"/"+c1.ID+"/execute", map[string]any{"tool": tool, "arguments": args}, &out); st != 200 {
			t.Fatalf("execute %s: %d %+v", tool, st, out)
		}
		return out
	}
	if out := exec("bash", map[string]any{"command": "ls tests; exit 4"}); out.ExitCode == nil || *out.ExitCode != 4 || !strings.Contains(out.Output, "test_calc.py") {
		t.Errorf("bash: %+v", out)
	}
	if out := exec("submit_solution", nil); out.Reward != 0 || out.Resolved == nil || *out.Resolved || !out.Done || out.Signals != nil {
		t.Errorf("submit before the fix: %+v", out)
	}
	fix := map[string]any{"command": "str_replace", "path": "calc.py", "old_str": "    return ordered[middle]\n", "new_str": "    if len(ordered) % 2 == 0:\n        return (ordered[middle - 1] + ordered[middle]) / 2\n    return ordered[middle]\n"}
	if out := exec("str_replace_editor", fix); out.Error {
		t.Fatalf("editor: %+v", out)
	}
	exec("bash", map[string]any{"command": "git reflog | head -2"})
	out := exec("submit_solution", map[string]any{})
	// The audit flags the reflog (the third tool call: bash, editor,
	// bash; submits are not counted), and never changes the reward.
	if len(out.SignalFlags) != 1 || out.SignalFlags[0].Step != 2 || out.Signals["git_history"] != 1 {
		t.Errorf("submit after the fix: signals %v %+v, want the reflog at call 2", out.Signals, out.SignalFlags)
	}
	if out.Reward != 1 || out.Resolved == nil || !*out.Resolved || out.Patch == nil || !strings.Contains(*out.Patch, "ordered[middle - 1]") || out.Timings == nil {
		t.Errorf("submit after the fix: %+v", out)
	}
	if out := exec("nope", nil); !out.Error || !strings.Contains(out.Output, "unknown tool") {
		t.Errorf("unknown tool: %+v", out)
	}
	for range 2 {
		if st := doJSON(t, "DELETE", url+"/"+c1.ID, nil, nil); st != 204 {
			t.Errorf("release: %d", st)
		}
	}
	if st := doJSON(t, "POST", url+"/"+c1.ID+"/execute", map[string]any{"tool": "bash", "arguments": map[string]any{"command": "true"}}, nil); st != 404 {
		t.Errorf("execute after release: %d", st)
	}
	// Hidden tests: the sample task keeps its tests in the test patch, so
	// the agent's box never had the new test; the grading box did.
	if o.open.Load() != 0 {
		t.Errorf("%d boxes open", o.open.Load())
	}
}

// TestSandboxesFromRow: a create may carry the task's row (a recorded Gym
// row) instead of naming a served task.
func TestSandboxesFromRow(t *testing.T) {
	rows := recordedRows(t)
	ts := startServer(t, Options{Verifier: &fakeVerifier{}})
	var c CreateResponse
	if st := doJSON(t, "POST", ts.URL+"/sandboxes", map[string]any{"trajectory_id": "t-1", "row": rows[1]}, &c); st != 201 || c.InstanceID != rows[1]["instance_id"] {
		t.Fatalf("create from a row: %d %+v", st, c)
	}
	var out ExecuteResponse
	if st := doJSON(t, "POST", ts.URL+"/sandboxes/"+c.ID+"/execute", map[string]any{"tool": "bash", "arguments": map[string]any{"command": "git status --short | wc -l"}}, &out); st != 200 || strings.TrimSpace(out.Output) != "0" {
		t.Errorf("bash: %d %+v", st, out)
	}
}
