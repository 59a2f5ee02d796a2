package view

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestSplitObs(t *testing.T) {
	tests := []struct {
		name, in string
		want     Obs
	}{
		{"mini", "<returncode>0</returncode>\n<output>\n22:def median(values):\n</output>", Obs{Code: "0", Body: "22:def median(values):"}},
		{"mini failing, empty output", "<returncode>2</returncode>\n<output>\n</output>", Obs{Code: "2"}},
		{"mini timeout", "<warning>killed after 60 seconds</warning>\n<returncode>124</returncode>\n<output>\npartial\n</output>",
			Obs{Code: "124", Notes: []string{"killed after 60 seconds"}, Body: "partial"}},
		{"mini long", "<returncode>0</returncode>\n<warning>too long</warning>\n<output_head>\nhead\n</output_head>\n<elided_chars>\n9 characters elided\n</elided_chars>\n<output_tail>\ntail\n</output_tail>",
			Obs{Code: "0", Notes: []string{"too long"}, Body: "head\n9 characters elided\ntail"}},
		{"swerve tool", "[exit code 1]\nTraceback (most recent call last):\n", Obs{Code: "1", Body: "Traceback (most recent call last):\n"}},
		{"swerve tool killed", "The command was killed after 90 seconds, the step time limit.\n[exit code 137]\nout",
			Obs{Code: "137", Notes: []string{"The command was killed after 90 seconds, the step time limit."}, Body: "out"}},
		{"r2e-gym", "Exit code: 0\nExecution output of [execute_bash]:\n10:    return value", Obs{Code: "0", Body: "10:    return value"}},
		{"plain text", "Replaced the text at line 28.", Obs{Body: "Replaced the text at line 28."}},
		{"not a number", "<returncode>x</returncode>\n<output>\na\n</output>", Obs{Body: "<returncode>x</returncode>\n<output>\na\n</output>"}},
		{"unclosed", "<returncode>0\n", Obs{Body: "<returncode>0\n"}},
	}
	for _, tc := range tests {
		got := splitObs(tc.in)
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: got %+v, want %+v", tc.name, got, tc.want)
		}
		if strings.Contains(got.Body, "<returncode>") && tc.want.Code != "" {
			t.Errorf("%s: raw tag left in %q", tc.name, got.Body)
		}
	}
}

func TestShowAction(t *testing.T) {
	call := "<function=execute_bash>\n<parameter=cmd>grep -n value src/mod.py</parameter>\n</function>"
	tests := []struct {
		name         string
		thought, act string
		show         bool
	}{
		{"function calling: reply without the call", "I look at the code.", call, true},
		{"text mode: the reply holds the call", "I look at the code.\n\n" + call, call, false},
		{"text mode, re-indented", "I look.\n<function=execute_bash>\n  <parameter=cmd>\n  grep -n value src/mod.py\n  </parameter>\n</function>", call, false},
		{"another command in the reply", "I look.\n<function=execute_bash>\n<parameter=cmd>ls</parameter>\n</function>", call, true},
		{"mini: the command is the reply's bash block", "THOUGHT: find it.\n\n```bash\ngrep -n 'def median' -A8 calc.py\n```", "grep -n 'def median' -A8 calc.py", false},
		{"empty call", "no call", "<function=>\n</function>", false},
		{"no action", "a message", "", false},
	}
	for _, tc := range tests {
		if got := (Step{Thought: tc.thought, Action: tc.act}).ShowAction(); got != tc.show {
			t.Errorf("%s: ShowAction %v, want %v", tc.name, got, tc.show)
		}
	}
	c := Step{Action: call}.Call()
	if c == nil || c.Name != "execute_bash" || len(c.Params) != 1 || c.Params[0] != (Setting{"cmd", "grep -n value src/mod.py"}) {
		t.Errorf("Call %+v", c)
	}
	c = Step{Action: "<function=execute_bash>\n{\"cmd\":\"grep -n round calc.py\",\"timeout\":30}\n</function>"}.Call()
	if c == nil || c.Name != "execute_bash" || len(c.Params) != 2 || c.Params[0] != (Setting{"cmd", "grep -n round calc.py"}) || c.Params[1] != (Setting{"timeout", "30"}) {
		t.Errorf("Call of JSON arguments %+v", c)
	}
	if (Step{Action: "ls -la"}).Call() != nil {
		t.Error("a plain command read as a call")
	}
}

func TestWhy(t *testing.T) {
	tests := []struct {
		s    Summary
		want string
	}{
		{Summary{Status: "graded", Reward: 1, Reason: "resolved"}, ""},
		{Summary{Status: "ungraded"}, ""},
		{Summary{Status: "error", Error: "box: the box would not open"}, "box: the box would not open"},
		{Summary{Status: "error"}, "error (no detail recorded)"},
		{Summary{Status: "graded", Reason: "FAIL_TO_PASS failed: 1", ExitReason: "agent"}, "FAIL_TO_PASS failed: 1"},
		{Summary{Status: "graded", Reason: "patch did not apply", ExitReason: "abs_step_limit"}, "patch did not apply; ended by abs_step_limit"},
		{Summary{Status: "graded", ExitReason: "llm_query_error"}, "ended by llm_query_error"},
		{Summary{Status: "graded"}, "no reason recorded"},
	}
	for _, tc := range tests {
		if got := tc.s.Why(); got != tc.want {
			t.Errorf("%+v: Why %q, want %q", tc.s, got, tc.want)
		}
	}
	// A gym rollout says why from its patch and report.
	rep := []byte(`{"x":{"tests_status":{"FAIL_TO_PASS":{"success":[],"failure":["t1","t2"]},"PASS_TO_PASS":{"success":["t3"],"failure":[]}}}}`)
	if got := reportReason("diff --git a/x b/x\n", rep); got != "FAIL_TO_PASS failed: 2" {
		t.Errorf("reportReason %q", got)
	}
	if got := reportReason(" \n", rep); got != "empty patch" {
		t.Errorf("reportReason of an empty patch %q", got)
	}
}

func TestInfo(t *testing.T) {
	tasks := []Summary{{Model: "oracle/gold", Offline: true, Scaffold: "r2egym"}, {Model: "hosted_vllm/policy", Scaffold: "r2egym"}, {Scaffold: "mini_swe_agent"}}
	row := []byte(`{"instance_id":"a","config":{"dataset":"examples/sample/tasks.jsonl","split":"test","max_steps":"40","help":"false","traj_dir":"/x","cpus":2,"image":""},"settings":{"temperature":"0"}}`)
	in := infoOf(tasks, FormatRecord, row)
	if in.ModelText() != "oracle/gold, hosted_vllm/policy" || !in.Offline["oracle/gold"] || in.Offline["hosted_vllm/policy"] || in.AllOffline() || !in.AnyOffline() {
		t.Errorf("models %+v", in)
	}
	if in.Dataset != "examples/sample/tasks.jsonl (split test)" {
		t.Errorf("dataset %q", in.Dataset)
	}
	if want := []Setting{{"cpus", "2"}, {"max_steps", "40"}, {"temperature", "0"}}; !reflect.DeepEqual(in.Settings, want) {
		t.Errorf("settings %+v, want %+v", in.Settings, want)
	}
	if want := []Setting{{"max_steps", "40"}, {"temperature", "0"}}; !reflect.DeepEqual(in.KeySettings(), want) {
		t.Errorf("key settings %+v", in.KeySettings())
	}
	if want := []string{"r2egym", "mini_swe_agent"}; !reflect.DeepEqual(in.Scaffolds, want) {
		t.Errorf("scaffolds %v", in.Scaffolds)
	}
	// A row swerve serve answered: scaffold, dataset and start time in its
	// metadata.
	var gym gymRow
	gymJSON := []byte(`{"instance_id":"a","reward":1,"response":{"model":"hosted_vllm/policy"},"metadata":{"scaffold":"r2egym","dataset":"tasks.jsonl","started":"2026-11-29T08:00:00Z"}}`)
	if err := json.Unmarshal(gymJSON, &gym); err != nil {
		t.Fatal(err)
	}
	gs := gym.summary()
	gin := infoOf([]Summary{gs}, FormatGym, gymJSON)
	if gin.Dataset != "tasks.jsonl" || !reflect.DeepEqual(gin.Scaffolds, []string{"r2egym"}) || gin.Started.Format(time.RFC3339) != "2026-11-29T08:00:00Z" {
		t.Errorf("gym row info %+v", gin)
	}
	// An old row records nothing: every field stays empty (the page says
	// "unknown").
	old := infoOf([]Summary{{}}, FormatSwerve, []byte(`{"instance_id":"a"}`))
	if old.ModelText() != "unknown" || old.Dataset != "" || len(old.Settings) != 0 || !old.Started.IsZero() {
		t.Errorf("old run %+v", old)
	}
}
