package view

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/swerve-dev/swerve/internal/agent"
	"github.com/swerve-dev/swerve/internal/agent/signals"
	"github.com/swerve-dev/swerve/internal/llm"
	"github.com/swerve-dev/swerve/internal/run"
)

// genRun writes a swerve run directory of n tasks with swerve's own record
// type (run.Record, so the fixture is what swerve run writes): every 7th
// task an error (no reward), every 3rd resolved, the rest unresolved with a
// failing FAIL_TO_PASS and a failing PASS_TO_PASS test, task 5 tampered.
// Task 0 ("demo__calc-0000") has every kind of step; the others have
// steps(i) steps.
func genRun(tb testing.TB, dir string, n int, steps func(i int) int) {
	tb.Helper()
	repos := []string{"demo/calc", "demo/http", "demo/orm", "demo/cli"}
	scaffolds := []string{"r2egym", "mini_swe_agent"}
	base := time.Date(2026, 11, 20, 10, 0, 0, 0, time.UTC)
	for i := range n {
		id := fmt.Sprintf("demo__%s-%04d", strings.Split(repos[i%len(repos)], "/")[1], i)
		rec := run.Record{
			InstanceID: id, Repo: repos[i%len(repos)], ExpName: "gen", Scaffold: scaffolds[i%2], Mode: "text", Model: "replay/gen",
			Offline: true, Standing: run.Standing{Status: run.StatusGraded, Attempts: 1},
			Started: base, Finished: base.Add(time.Duration(30+i%50) * time.Second),
			ProblemStatement: "The function in " + id + " returns the wrong value for an empty input.\nIt should return 0.",
		}
		ns := steps(i)
		traj := &agent.Trajectory{InstanceID: id, Scaffold: rec.Scaffold, Mode: "text", Model: rec.Model, Offline: true,
			Bounds: agent.Limits{}.Bounds(), Started: base}
		tokens := 0
		for s := range ns {
			tokens += 900 + 40*s
			st := agent.Step{Index: s, Count: s + 1, Thought: fmt.Sprintf("Step %d: I look at the code around the bug.", s),
				Action:      "<function=execute_bash>\n<parameter=cmd>grep -n value src/mod.py</parameter>\n</function>",
				Observation: fmt.Sprintf("Exit code: 0\nExecution output of [execute_bash]:\n%d:    return value", 10+s),
				Info:        map[string]any{"total_time": 0.05}, PromptTokens: 800 + 40*s, OutputTokens: 100, TotalTokens: tokens,
				LLMTime: 1.5, EnvTime: 0.05, StepTime: 1.55, TotalTime: 1.55 * float64(s+1)}
			if i == 0 {
				switch s {
				case 0:
					st.Reasoning = "The issue mentions empty input; the guard is probably missing."
				case 1:
					st.Observation = "Exit code: 0\nExecution output of [execute_bash]:\n" + strings.Repeat("a line of a long listing of the source tree\n", 120)
				case 2:
					st.Action, st.FormatError = "<function=>\n</function>", "no function call in the reply"
					st.Observation = "You forgot to use a function call in your response."
				case 3:
					st.Action, st.Observation = "", ""
					st.Thought = "Let me think about which file holds the function."
				}
			}
			if s == ns-1 {
				st.Action = "<function=finish>\n<parameter=command>submit</parameter>\n</function>"
				st.Observation, st.Done = "<<<Finished>>>", true
			}
			traj.Steps = append(traj.Steps, st)
		}
		traj.Messages = []llm.Message{{Role: "system", Content: "You are a careful engineer."}, {Role: "user", Content: rec.ProblemStatement}}
		traj.Usage = llm.Usage{InputTokens: tokens * 9 / 10, OutputTokens: tokens / 10, TotalTokens: tokens}
		traj.Cost = float64(tokens) * 2e-6
		traj.Duration = 1.55*float64(ns) + float64(i%13)
		traj.ExitReason = agent.ExitSubmitted
		rec.Trajectory = traj
		rec.ExitReason, rec.UpstreamExitReason = string(agent.ExitSubmitted), agent.UpstreamAgent
		if i%11 == 4 {
			traj.ExitReason = agent.ExitMaxSteps
			rec.ExitReason, rec.UpstreamExitReason = string(agent.ExitMaxSteps), agent.UpstreamAbsStepLimit
		}
		rec.Patch = "diff --git a/src/mod.py b/src/mod.py\nindex 1111111..2222222 100644\n--- a/src/mod.py\n+++ b/src/mod.py\n@@ -8,4 +8,6 @@ def value(xs):\n     \"\"\"Return the value.\"\"\"\n-    return xs[0]\n+    if not xs:\n+        return 0\n+    return xs[0]\n"
		f2p, p2p := "tests/test_mod.py::test_empty", "tests/test_mod.py::test_first"
		status := map[string]any{"FAIL_TO_PASS": map[string][]string{"success": {f2p}, "failure": {}}, "PASS_TO_PASS": map[string][]string{"success": {p2p}, "failure": {}}}
		testOut := "+ python3 -m pytest -rA tests/test_mod.py\ncollected 2 items\n\n"
		switch {
		case i%7 == 6:
			rec.Status, rec.ErrorKind, rec.ErrorStage, rec.Error = run.StatusError, "box", run.StageAgent, "the box would not open: container exited"
			rec.Trajectory, rec.Patch, rec.Report = nil, "", nil
			rec.ExitReason, rec.UpstreamExitReason = "sandbox_error", "sandbox_error"
		case i%3 == 0 && i != 5:
			rec.Reward, rec.RewardReason = 1, "resolved"
			testOut += "PASSED " + f2p + "\nPASSED " + p2p + "\n===== 2 passed in 0.10s =====\n"
		default:
			rec.RewardReason = "FAIL_TO_PASS failed: 1"
			status = map[string]any{"FAIL_TO_PASS": map[string][]string{"success": {}, "failure": {f2p}}, "PASS_TO_PASS": map[string][]string{"success": {}, "failure": {p2p}}}
			testOut += "FAILED " + f2p + " - AssertionError: assert None == 0\nFAILED " + p2p + " - IndexError\n===== 2 failed in 0.12s =====\n"
		}
		if i == 8 && len(traj.Steps) > 1 {
			// An audit flag on step 1.
			traj.Steps[1].Signals = []signals.Flag{{Step: 1, Kind: signals.GitHistory, Command: "git log --all --oneline"}}
			rec.Signals = signals.Counts(traj.Signals())
		}
		if i == 5 {
			rec.Reward, rec.RewardReason, rec.Tampered = 0, "tampered: the patch edits test infrastructure (conftest.py)", []string{"the patch edits test infrastructure (conftest.py)"}
		}
		if rec.Status != run.StatusError {
			rep, _ := json.Marshal(map[string]any{id: map[string]any{"patch_is_None": false, "patch_exists": true, "patch_successfully_applied": true,
				"resolved": rec.Reward == 1, "tests_status": status}})
			rec.Report = rep
		}
		td := filepath.Join(dir, id)
		if err := os.MkdirAll(td, 0o755); err != nil {
			tb.Fatal(err)
		}
		rj, err := json.Marshal(&rec)
		if err != nil {
			tb.Fatal(err)
		}
		for name, data := range map[string]string{"result.json": string(rj), "test_output.log": testOut, "output_patch.diff": rec.Patch,
			"agent.log": "2026-11-20 10:00:00 [INFO] agent.py:1  task " + id + "\n"} {
			if err := os.WriteFile(filepath.Join(td, name), []byte(data), 0o644); err != nil {
				tb.Fatal(err)
			}
		}
	}
}

// fewSteps is the step count of the small fixture's tasks.
func fewSteps(i int) int { return 5 + i%4 }
