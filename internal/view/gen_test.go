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
			Config: map[string]any{"dataset": "demo/tasks.jsonl", "scaffold": scaffolds[i%2], "llm_name": "replay/gen", "max_steps": "40",
				"max_token_limit": "65536", "temperature": "0", "backend": "docker", "max_workers": "4", "eval_timeout": "30m0s", "help": "false"},
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

// genRollouts writes a swerve collect output of tasks × k rollouts (GRPO
// groups, adjacent as collect writes them), as swerve serve answers with a
// text-mode scaffold: the system and user prompts in the input, replies
// with a ```bash block, observations in mini-swe-agent's tags. Task i's
// rollout r is resolved when (r+1)*(i%4) >= k (task 0 never, task 3 all
// but the first); rollout 2 of task 1 failed outside the model.
func genRollouts(tb testing.TB, path string, tasks, k int) {
	tb.Helper()
	var b strings.Builder
	for i := range tasks {
		id := fmt.Sprintf("demo__calc-%04d", i)
		for r := range k {
			resolved := (r+1)*(i%4) >= k
			reward := 0.0
			if resolved {
				reward = 1
			}
			f2p := "tests/test_mod.py::test_empty"
			status := map[string]any{"FAIL_TO_PASS": map[string][]string{"success": {}, "failure": {f2p}}, "PASS_TO_PASS": map[string][]string{"success": {}, "failure": {}}}
			if resolved {
				status["FAIL_TO_PASS"] = map[string][]string{"success": {f2p}, "failure": {}}
			}
			msg := func(role, text string) map[string]any {
				typ := "output_text"
				if role != "assistant" {
					typ = "input_text"
				}
				return map[string]any{"type": "message", "role": role, "content": []map[string]any{{"type": typ, "text": text}}}
			}
			output := []map[string]any{
				msg("assistant", "THOUGHT: I look for the function first.\n\n```bash\ngrep -n 'def value' src/mod.py\n```"),
				msg("user", "<returncode>0</returncode>\n<output>\n8:def value(xs):\n</output>"),
				msg("assistant", "THOUGHT: The tests show the failure.\n\n```bash\npython3 -m pytest -q tests/test_mod.py\n```"),
				msg("user", "<returncode>1</returncode>\n<output>\nF.\nFAILED tests/test_mod.py::test_empty - IndexError\n1 failed, 1 passed in 0.05s\n</output>"),
				msg("assistant", "THOUGHT: I add the guard and submit.\n\n```bash\necho COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT && git diff\n```"),
			}
			row := map[string]any{
				"instance_id": id, "_ng_task_index": i, "_ng_rollout_index": r, "agent_ref": map[string]any{"name": "swerve_agent"},
				"responses_create_params": map[string]any{"input": []map[string]any{
					{"role": "system", "content": "You solve programming tasks with one shell command per reply, in a ```bash block."},
					{"role": "user", "content": "The function in " + id + " returns the wrong value for an empty input. It should return 0."}}},
				"response": map[string]any{"id": fmt.Sprintf("resp_%d_%d", i, r), "model": "hosted_vllm/policy", "status": "completed", "output": output,
					"usage": map[string]any{"input_tokens": 3000 + 100*r, "output_tokens": 300, "total_tokens": 3300 + 100*r}},
				"reward": reward, "resolved": resolved,
				"metadata": map[string]any{"model_patch": "diff --git a/src/mod.py b/src/mod.py\n--- a/src/mod.py\n+++ b/src/mod.py\n@@ -8,2 +8,4 @@\n def value(xs):\n+    if not xs:\n+        return 0\n     return xs[0]\n",
					"exit_reason": "submitted", "steps": 3, "timings": map[string]any{"agent_seconds": 20 + 3*r + i, "total_seconds": 45 + 3*r + i},
					"eval_report": map[string]any{id: map[string]any{"resolved": resolved, "tests_status": status}}, "repo": "demo/calc"},
			}
			if i == 1 && r == 2 {
				row["response"] = map[string]any{"id": "resp_err", "model": "hosted_vllm/policy", "status": "failed", "output": []any{},
					"error": map[string]any{"code": "server_error", "message": "box: container exited"}}
				row["reward"], row["resolved"] = 0, false
				row["infra_error"] = map[string]any{"kind": "box", "detail": "container exited"}
				row["metadata"] = map[string]any{"model_patch": "", "exit_reason": "", "steps": 0, "timings": map[string]any{"total_seconds": 1.0}}
			}
			line, err := json.Marshal(row)
			if err != nil {
				tb.Fatal(err)
			}
			b.Write(line)
			b.WriteByte('\n')
		}
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		tb.Fatal(err)
	}
}
