package llm

import (
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func anthropicEnv(url string) map[string]string {
	return map[string]string{"ANTHROPIC_BASE_URL": url, "ANTHROPIC_API_KEY": "sk-ant-test"}
}

func TestAnthropicPlainReply(t *testing.T) {
	t.Parallel()
	srv := newFake(t, step{file: "anthropic/message_plain.json"})
	c := mustNew(t, "anthropic/claude-sonnet-4-5-20250929", fastOptions(anthropicEnv(srv.URL)))
	resp, err := c.Complete(t.Context(), simpleRequest())
	if err != nil {
		t.Fatal(err)
	}
	want := Response{
		Message:      Message{Role: RoleAssistant, Content: "I'll start by reading the failing test to see what it expects."},
		Usage:        Usage{InputTokens: 1204, OutputTokens: 19, TotalTokens: 1223},
		FinishReason: "stop",
	}
	if diff := cmp.Diff(want, resp, cmpopts.IgnoreFields(Response{}, "Duration")); diff != "" {
		t.Errorf("response (-want +got):\n%s", diff)
	}
	r := srv.requests()[0]
	if r.Path != "/v1/messages" {
		t.Errorf("path %q", r.Path)
	}
	if r.Header.Get("X-Api-Key") != "sk-ant-test" || r.Header.Get("Anthropic-Version") == "" {
		t.Errorf("headers %v", r.Header)
	}
	wantBody := `{"model":"claude-sonnet-4-5-20250929","max_tokens":8192,
		"system":[{"type":"text","text":"You are a careful engineer."}],
		"messages":[{"role":"user","content":[{"type":"text","text":"Why does the test fail?"}]}]}`
	if diff := jsonDiff(t, []byte(wantBody), r.Body); diff != "" {
		t.Errorf("request body (-want +got):\n%s", diff)
	}
}

func TestAnthropicToolUseRoundTrip(t *testing.T) {
	t.Parallel()
	srv := newFake(t, step{file: "anthropic/message_tool_use.json"})
	c := mustNew(t, "anthropic/claude-sonnet-4-5-20250929", fastOptions(anthropicEnv(srv.URL)))
	resp, err := c.Complete(t.Context(), Request{
		Messages:    roundTripHistory(),
		Tools:       roundTripTools(),
		Temperature: ptr(0.0),
		Stop:        []string{"</function>"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if diff := jsonDiff(t, readTestdata(t, "anthropic/request_tool_round_trip.json"), srv.requests()[0].Body); diff != "" {
		t.Errorf("request body (-want +got):\n%s", diff)
	}
	want := Response{
		Message: Message{
			Role:      RoleAssistant,
			Content:   "Let me look at the header parser.",
			Reasoning: "The error points at headers.py; view it before editing.",
			ToolCalls: []ToolCall{{
				ID:   "toolu_01A09q90qw90lq917835lq9",
				Type: "function",
				Function: FunctionCall{
					Name:      "str_replace_editor",
					Arguments: `{"command":"view","path":"/testbed/src/http/headers.py","view_range":[1,40]}`,
				},
			}},
		},
		// Cache writes and reads count as input.
		Usage:        Usage{InputTokens: 2095 + 100 + 1800, OutputTokens: 503, TotalTokens: 2095 + 100 + 1800 + 503},
		FinishReason: "tool_calls",
	}
	if diff := cmp.Diff(want, resp, cmpopts.IgnoreFields(Response{}, "Duration")); diff != "" {
		t.Errorf("response (-want +got):\n%s", diff)
	}
}

func TestAnthropicMissingUsageIsEstimated(t *testing.T) {
	t.Parallel()
	srv := newFake(t, step{file: "anthropic/message_no_usage.json"})
	c := mustNew(t, "anthropic/claude-haiku-4-5", fastOptions(anthropicEnv(srv.URL)))
	resp, err := c.Complete(t.Context(), simpleRequest())
	if err != nil {
		t.Fatal(err)
	}
	if !resp.Usage.Estimated || resp.Usage.InputTokens == 0 || resp.Usage.OutputTokens != CountTokens("Done.") {
		t.Errorf("usage %+v", resp.Usage)
	}
	if resp.FinishReason != "length" {
		t.Errorf("max_tokens mapped to %q, want length", resp.FinishReason)
	}
}

func TestAnthropicOverloadedIsRetried(t *testing.T) {
	t.Parallel()
	for _, status := range []int{429, 500, 529} {
		t.Run(strconv.Itoa(status), func(t *testing.T) {
			t.Parallel()
			srv := newFake(t,
				step{status: status, header: map[string]string{"retry-after": "0"}, file: "anthropic/error_overloaded.json"},
				step{status: status, file: "anthropic/error_overloaded.json"},
				step{file: "anthropic/message_plain.json"},
			)
			var rec sleepRecorder
			opts := fastOptions(anthropicEnv(srv.URL))
			opts.sleep = rec.sleep
			c := mustNew(t, "anthropic/claude-sonnet-4-5", opts)
			resp, err := c.Complete(t.Context(), simpleRequest())
			if err != nil {
				t.Fatal(err)
			}
			if resp.Retries != 2 || len(srv.requests()) != 3 {
				t.Errorf("retries %d, requests %d; want 2 and 3", resp.Retries, len(srv.requests()))
			}
			if got := rec.got(); len(got) != 2 || got[0] != 0 {
				t.Errorf("waits %v: want Retry-After 0 honoured, then a backoff", got)
			}
		})
	}
}

func TestAnthropicGivesUp(t *testing.T) {
	t.Parallel()
	srv := newFake(t, step{status: 529, file: "anthropic/error_overloaded.json"})
	c := mustNew(t, "anthropic/claude-sonnet-4-5", fastOptions(anthropicEnv(srv.URL)))
	_, err := c.Complete(t.Context(), simpleRequest())
	if err == nil || !strings.Contains(err.Error(), "giving up after 4 attempts") || !strings.Contains(err.Error(), "overloaded_error") {
		t.Fatalf("err = %v", err)
	}
}

func TestAnthropicPromptTooLong(t *testing.T) {
	t.Parallel()
	srv := newFake(t, step{status: 400, file: "anthropic/error_prompt_too_long.json"})
	c := mustNew(t, "anthropic/claude-sonnet-4-5", fastOptions(anthropicEnv(srv.URL)))
	_, err := c.Complete(t.Context(), simpleRequest())
	if !errors.Is(err, ErrContextWindow) {
		t.Fatalf("err = %v, want ErrContextWindow", err)
	}
	if len(srv.requests()) != 1 {
		t.Errorf("overflow retried")
	}
}

func TestAnthropicUnauthorizedIsFinal(t *testing.T) {
	t.Parallel()
	srv := newFake(t, step{status: 401, file: "anthropic/error_401.json"}, step{file: "anthropic/message_plain.json"})
	c := mustNew(t, "anthropic/claude-sonnet-4-5", fastOptions(anthropicEnv(srv.URL)))
	_, err := c.Complete(t.Context(), simpleRequest())
	var apiErr *APIError
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 401 || apiErr.Type != "authentication_error" {
		t.Fatalf("err = %v", err)
	}
	if !strings.Contains(err.Error(), "invalid x-api-key") {
		t.Errorf("message lost: %v", err)
	}
	if len(srv.requests()) != 1 {
		t.Errorf("401 retried")
	}
}

func TestAnthropicMessageMapping(t *testing.T) {
	t.Parallel()
	// Empty turns are dropped and the neighbours merged; garbled arguments
	// become an empty object; several system messages all go to system.
	system, msgs, err := toAnthropicMessages([]Message{
		{Role: RoleSystem, Content: "one"},
		{Role: RoleUser, Content: "hi"},
		{Role: RoleAssistant, Content: "  "},
		{Role: RoleUser, Content: "again"},
		{Role: RoleAssistant, ToolCalls: []ToolCall{{ID: "c1", Function: FunctionCall{Name: "f", Arguments: "{not json"}}}},
		{Role: RoleTool, ToolCallID: "c1", Content: ""},
		{Role: RoleSystem, Content: "two"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(system) != 2 || system[0].Text != "one" || system[1].Text != "two" {
		t.Errorf("system %+v", system)
	}
	if len(msgs) != 3 {
		t.Fatalf("got %d messages, want 3 (user, assistant, user)", len(msgs))
	}
	if n := len(msgs[0].Content); n != 2 {
		t.Errorf("merged user turn has %d blocks, want 2", n)
	}
	if use := msgs[1].Content[0]; use.Type != "tool_use" || string(use.Input) != "{}" {
		t.Errorf("garbled arguments sent as %+v", use)
	}
	if tr := msgs[2].Content[0]; tr.Type != "tool_result" || tr.ToolUseID != "c1" || len(tr.Content) != 0 {
		t.Errorf("tool result %+v", tr)
	}
	if _, _, err := toAnthropicMessages([]Message{{Role: "developer", Content: "x"}}); err == nil {
		t.Error("unknown role accepted")
	}
}
