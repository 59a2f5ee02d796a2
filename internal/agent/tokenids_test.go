package agent_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/swerve-dev/swerve/internal/agent"
	"github.com/swerve-dev/swerve/internal/llm"
	"github.com/swerve-dev/swerve/internal/llm/llmtest"
)

// A whole episode against a vLLM-style policy server: every assistant
// message of the trajectory carries token ids, contiguous across turns as
// NeMo RL asserts.
func TestEpisodeTokenIDsContiguous(t *testing.T) {
	for _, style := range []string{llmtest.StyleNeMoRL, llmtest.StyleVLLM, llmtest.StyleVLLMTokenize} {
		t.Run(style, func(t *testing.T) { episodeTokenIDs(t, style) })
	}
}

func episodeTokenIDs(t *testing.T, style string) {
	call := func(name, args string) llmtest.Turn {
		return llmtest.Turn{Content: "Next step.", ToolCalls: []llmtest.ToolCall{{Name: name, Arguments: json.RawMessage(args)}}}
	}
	srv := llmtest.NewVLLMServer(t, style,
		call("execute_bash", `{"cmd":"grep -n 'return ordered' calc.py"}`),
		call("execute_bash", `{"cmd":"ls"}`),
		call("execute_bash", `{"cmd":"git status --short"}`),
		call("finish", `{"result":"No change."}`),
	)
	model, err := llm.New("hosted_vllm/policy", llm.Options{BaseURL: srv.URL, APIKey: "dummy", TokenIDs: true, BaseDelay: time.Millisecond, Getenv: func(string) string { return "" }})
	if err != nil {
		t.Fatal(err)
	}
	traj := run(t, "r2egym", agent.ModeFn, model, agent.Limits{})
	if traj.ExitReason != agent.ExitSubmitted {
		t.Fatalf("exit %s (%s)", traj.ExitReason, traj.ExitDetail)
	}
	n := 0
	for i, m := range traj.Messages {
		if m.Role != llm.RoleAssistant {
			continue
		}
		n++
		if !m.HasTokenIDs() {
			t.Errorf("assistant message %d has no token ids", i)
		}
	}
	if n != 4 {
		t.Fatalf("%d assistant messages, want 4", n)
	}
	if err := llm.CheckTokenIDs(traj.Messages); err != nil {
		t.Fatal(err)
	}
}
