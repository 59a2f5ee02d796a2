package llm_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/swerve-dev/swerve/internal/llm"
	"github.com/swerve-dev/swerve/internal/llm/llmtest"
)

func tokenClient(t *testing.T, srv *llmtest.Server, on bool) llm.Client {
	t.Helper()
	c, err := llm.New("hosted_vllm/policy", llm.Options{BaseURL: srv.URL, APIKey: "dummy", TokenIDs: on, BaseDelay: time.Millisecond, MaxDelay: 2 * time.Millisecond, MaxRetries: 2, Getenv: func(string) string { return "" }})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// converse plays a three-turn tool-calling conversation against c and
// returns the history with the last reply.
func converse(t *testing.T, c llm.Client) []llm.Message {
	t.Helper()
	msgs := []llm.Message{{Role: llm.RoleSystem, Content: "You fix bugs."}, {Role: llm.RoleUser, Content: "Fix median()."}}
	for i := range 3 {
		resp, err := c.Complete(t.Context(), llm.Request{Messages: msgs, Tools: bashTool})
		if err != nil {
			t.Fatalf("turn %d: %v", i, err)
		}
		msgs = append(msgs, resp.Message)
		for _, tc := range resp.Message.ToolCalls {
			msgs = append(msgs, llm.Message{Role: llm.RoleTool, ToolCallID: tc.ID, Content: "ok " + tc.Function.Arguments})
		}
	}
	return msgs
}

var bashTool = []llm.Tool{{Type: "function", Function: llm.FunctionDef{Name: "execute_bash", Parameters: json.RawMessage(`{"type":"object","properties":{"cmd":{"type":"string"}}}`)}}}

func toolTurns() []llmtest.Turn {
	call := func(cmd string) llmtest.Turn {
		return llmtest.Turn{Content: "Looking.", ToolCalls: []llmtest.ToolCall{{Name: "execute_bash", Arguments: json.RawMessage(`{"cmd":"` + cmd + `"}`)}}}
	}
	return []llmtest.Turn{call("ls"), call("cat calc.py"), {Content: "Done."}}
}

func TestTokenIDsContiguousAcrossTurns(t *testing.T) {
	for _, style := range []string{llmtest.StyleNeMoRL, llmtest.StyleVLLM, llmtest.StyleVLLMTokenize} {
		t.Run(style, func(t *testing.T) {
			srv := llmtest.NewVLLMServer(t, style, toolTurns()...)
			msgs := converse(t, tokenClient(t, srv, true))
			if err := llm.CheckTokenIDs(msgs); err != nil {
				t.Fatal(err)
			}
			n := 0
			for _, m := range msgs {
				if m.Role != llm.RoleAssistant {
					continue
				}
				n++
				if !m.HasTokenIDs() || len(m.PromptTokenIDs) == 0 || len(m.GenerationLogProbs) != len(m.GenerationTokenIDs) {
					t.Errorf("assistant message %d: %d prompt ids, %d generation ids, %d log-probs", n, len(m.PromptTokenIDs), len(m.GenerationTokenIDs), len(m.GenerationLogProbs))
				}
				for i, id := range m.GenerationTokenIDs {
					if m.GenerationLogProbs[i] != llmtest.LogProb(id) {
						t.Fatalf("log-prob %d of message %d is %v, want %v", i, n, m.GenerationLogProbs[i], llmtest.LogProb(id))
					}
				}
			}
			if n != 3 {
				t.Fatalf("%d assistant messages", n)
			}
			wantTok := 0
			if style == llmtest.StyleVLLMTokenize {
				wantTok = 3
			}
			if got := srv.Tokenizes(); got != wantTok {
				t.Errorf("%d /tokenize calls, want %d", got, wantTok)
			}
			// Every request asked for the ids, and from the second on sent
			// the earlier replies back with theirs.
			for i, body := range srv.Bodies() {
				var req struct {
					Logprobs    bool `json:"logprobs"`
					TopLogprobs *int `json:"top_logprobs"`
					AsIDs       bool `json:"return_tokens_as_token_ids"`
					Messages    []struct {
						Role string `json:"role"`
						Gen  []int  `json:"generation_token_ids"`
					} `json:"messages"`
				}
				if err := json.Unmarshal(body, &req); err != nil {
					t.Fatal(err)
				}
				if !req.Logprobs || req.TopLogprobs == nil || *req.TopLogprobs != 0 || !req.AsIDs {
					t.Errorf("request %d: logprobs %v top_logprobs %v return_tokens_as_token_ids %v", i, req.Logprobs, req.TopLogprobs, req.AsIDs)
				}
				sent := 0
				for _, m := range req.Messages {
					if m.Role == llm.RoleAssistant && len(m.Gen) > 0 {
						sent++
					}
				}
				if sent != i {
					t.Errorf("request %d sent %d assistant messages with ids, want %d", i, sent, i)
				}
			}
		})
	}
}

func TestTokenIDsOffByDefault(t *testing.T) {
	srv := llmtest.NewVLLMServer(t, llmtest.StyleNeMoRL, toolTurns()...)
	msgs := converse(t, tokenClient(t, srv, false))
	for i, m := range msgs {
		if m.HasTokenIDs() {
			t.Errorf("message %d has token ids", i)
		}
	}
	for i, body := range srv.Bodies() {
		for _, f := range []string{"logprobs", "return_tokens_as_token_ids", "return_token_ids", "token_ids"} {
			if strings.Contains(string(body), `"`+f+`"`) {
				t.Errorf("request %d carries %s:\n%s", i, f, body)
			}
		}
	}
	// Messages that carry ids (a history from a policy server) are not sent
	// to a client that has them off.
	srv2 := llmtest.NewOpenAIServer(t, llmtest.Turn{Content: "ok"})
	hist := append(msgs[:2:2], llm.Message{Role: llm.RoleAssistant, Content: "x", PromptTokenIDs: []int{1}, GenerationTokenIDs: []int{2}, GenerationLogProbs: []float64{-1}}, llm.Message{Role: llm.RoleUser, Content: "go on"})
	if _, err := tokenClient(t, srv2, false).Complete(t.Context(), llm.Request{Messages: hist}); err != nil {
		t.Fatal(err)
	}
	if b := srv2.Bodies()[0]; strings.Contains(string(b), "token_ids") {
		t.Errorf("ids sent with TokenIDs off:\n%s", b)
	}
}

func TestTokenIDsBadReplies(t *testing.T) {
	reply := func(msgExtra, choiceExtra string) llmtest.Turn {
		return llmtest.Turn{Body: json.RawMessage(`{"id":"c","object":"chat.completion","model":"policy","choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant","content":"hi"` + msgExtra + `}` + choiceExtra + `}],"usage":{"prompt_tokens":3,"completion_tokens":2,"total_tokens":5}}`)}
	}
	// A reply with vLLM's top-level prompt_token_ids [1,2,3].
	replyTop := func(choiceExtra string, msgExtra ...string) llmtest.Turn {
		return llmtest.Turn{Body: json.RawMessage(`{"id":"c","object":"chat.completion","model":"policy","prompt_token_ids":[1,2,3],"choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant","content":"hi"` + strings.Join(msgExtra, "") + `}` + choiceExtra + `}]}`)}
	}
	for _, tc := range []struct {
		name string
		turn llmtest.Turn
		want string
	}{
		{"null log-prob", reply(`,"prompt_token_ids":[1,2,3],"generation_token_ids":[4,5],"generation_log_probs":[-0.1,null]`, ""), "generation_log_probs[1]"},
		{"NaN string", reply(`,"prompt_token_ids":[1,2,3],"generation_token_ids":[4,5],"generation_log_probs":["NaN",-0.1]`, ""), "generation_log_probs[0]"},
		{"NaN in logprobs content", replyTop(`,"token_ids":[4],"logprobs":{"content":[{"token":"token_id:4","logprob":null}]}`), "logprobs.content[0]"},
		{"count mismatch", reply(`,"prompt_token_ids":[1,2,3],"generation_token_ids":[4,5],"generation_log_probs":[-0.1]`, ""), "1 log-probs for 2 generation ids"},
		{"message bundle partial", reply(`,"generation_token_ids":[4,5],"generation_log_probs":[-0.1,-0.2]`, ""), "no prompt_token_ids"},
		{"top-level ids partial", reply("", `,"token_ids":[4],"logprobs":{"content":[{"token":"token_id:4","logprob":-0.5}]}`), "no prompt_token_ids"},
		{"token_ids disagree", replyTop(`,"token_ids":[5],"logprobs":{"content":[{"token":"token_id:4","logprob":-0.5}]}`), "disagree"},
		{"bundle disagrees", replyTop(`,"token_ids":[4]`, `,"prompt_token_ids":[1,2],"generation_token_ids":[4],"generation_log_probs":[-0.1]`), "disagree"},
		{"text tokens", reply("", `,"logprobs":{"content":[{"token":"hi","logprob":-0.5}]}`), "not token_id:N"},
		{"no ids at all", reply("", ""), "no token ids and no logprobs"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := llmtest.NewOpenAIServer(t, tc.turn)
			_, err := tokenClient(t, srv, true).Complete(t.Context(), llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Content: "hi"}}})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err %v, want one containing %q", err, tc.want)
			}
			if n := len(srv.Requests()); n != 1 {
				t.Errorf("%d requests: a bad reply must not be retried", n)
			}
		})
	}
}

// A /tokenize that fails is retried with the call, like any server error.
func TestTokenizeRetried(t *testing.T) {
	var chats, tokenizes atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/v1/chat/completions":
			chats.Add(1)
			io.WriteString(w, `{"id":"c","object":"chat.completion","model":"policy","choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant","content":"hi"},"logprobs":{"content":[{"token":"token_id:7","logprob":-0.5}]}}]}`)
		case "/tokenize":
			if tokenizes.Add(1) == 1 {
				w.WriteHeader(http.StatusServiceUnavailable)
				io.WriteString(w, `{"error":{"message":"busy"}}`)
				return
			}
			io.WriteString(w, `{"count":3,"max_model_len":100,"tokens":[1,2,3]}`)
		default:
			t.Errorf("unexpected %s", r.URL.Path)
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	c, err := llm.New("hosted_vllm/policy", llm.Options{BaseURL: srv.URL + "/v1", APIKey: "dummy", TokenIDs: true, BaseDelay: time.Millisecond, MaxDelay: 2 * time.Millisecond, MaxRetries: 2, Getenv: func(string) string { return "" }})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := c.Complete(t.Context(), llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Content: "hi"}}})
	if err != nil {
		t.Fatal(err)
	}
	m := resp.Message
	if !slices.Equal(m.PromptTokenIDs, []int{1, 2, 3}) || !slices.Equal(m.GenerationTokenIDs, []int{7}) || !slices.Equal(m.GenerationLogProbs, []float64{-0.5}) {
		t.Errorf("ids %v %v %v", m.PromptTokenIDs, m.GenerationTokenIDs, m.GenerationLogProbs)
	}
	if chats.Load() != 2 || tokenizes.Load() != 2 || resp.Retries != 1 {
		t.Errorf("%d chat calls, %d tokenize calls, %d retries; want 2, 2, 1", chats.Load(), tokenizes.Load(), resp.Retries)
	}
}
