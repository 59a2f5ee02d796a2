package agent_test

import (
	"testing"

	"github.com/swerve-dev/swerve/internal/agent"
)

func TestUpstreamExitReason(t *testing.T) {
	for _, tc := range []struct {
		reason   agent.ExitReason
		lastIdx  int
		maxSteps int
		want     string
	}{
		{agent.ExitSubmitted, -1, 40, "agent"}, // a gold patch: no steps
		{agent.ExitSubmitted, 0, 40, "agent"},
		{agent.ExitSubmitted, 39, 40, "agent"},
		{agent.ExitSubmitted, 40, 40, "max_step_limit"},
		{agent.ExitSubmitted, 41, 40, "agent_max_step_limit"},
		{agent.ExitMaxSteps, 39, 40, "abs_step_limit"},
		{agent.ExitMaxStepsAbsolute, 49, 40, "abs_step_limit"},
		{agent.ExitTokenLimit, 3, 40, "token_limit"},
		{agent.ExitContextLimit, 3, 40, "token_limit"},
		{agent.ExitWallTime, 3, 40, "traj_time_limit"},
		{agent.ExitLLMError, 3, 40, "llm_query_error"},
		{agent.ExitCostLimit, 3, 40, "cost_limit"},
		{agent.ExitFormatErrors, 2, 40, "format_errors"},
		{agent.ExitSandboxError, 2, 40, "sandbox_error"},
	} {
		if got := agent.UpstreamExitReason(tc.reason, tc.lastIdx, tc.maxSteps); got != tc.want {
			t.Errorf("%s at step %d of %d: %q, want %q", tc.reason, tc.lastIdx, tc.maxSteps, got, tc.want)
		}
	}
	// Every reason of the closed set has a name.
	for _, r := range agent.ExitReasons {
		if got := agent.UpstreamExitReason(r, 0, 40); got == "" {
			t.Errorf("%s has no upstream name", r)
		}
	}
}

func TestActionMarkup(t *testing.T) {
	for _, tc := range []struct {
		name  string
		calls []agent.Call
		want  string
	}{
		{"unreadable reply", nil, "<function=>\n</function>"},
		{"mini's bash block", []agent.Call{{Name: "bash", Args: map[string]any{"command": "ls -la"}}}, "<function=bash>\n<parameter=command>ls -la</parameter>\n</function>"},
		{"editor call, command first", []agent.Call{{Name: "file_editor", Args: map[string]any{"path": "/testbed/a.py", "command": "view", "concise": true}}},
			"<function=file_editor>\n<parameter=command>view</parameter>\n<parameter=path>/testbed/a.py</parameter>\n<parameter=concise>true</parameter>\n</function>"},
		{"two calls", []agent.Call{{Name: "bash", Args: map[string]any{"command": "a"}}, {Name: "bash", Args: map[string]any{"command": "b"}}},
			"<function=bash>\n<parameter=command>a</parameter>\n</function>\n<function=bash>\n<parameter=command>b</parameter>\n</function>"},
	} {
		if got := agent.ActionMarkup(tc.calls); got != tc.want {
			t.Errorf("%s:\n%s\nwant\n%s", tc.name, got, tc.want)
		}
	}
}
