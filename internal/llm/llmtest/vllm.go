package llmtest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"testing"

	"github.com/swerve-dev/swerve/internal/llm"
)

// Token styles of a fake vLLM server: where a reply's token ids go.
const (
	// StyleNeMoRL puts prompt_token_ids, generation_token_ids and
	// generation_log_probs on choices[0].message, as NeMo RL's vLLM server
	// does.
	StyleNeMoRL = "nemo_rl"
	// StyleVLLM answers as plain vLLM does when asked for logprobs,
	// return_tokens_as_token_ids and return_token_ids: the prompt's ids at
	// the top level, the reply's as choices[0].token_ids, and
	// logprobs.content[] entries whose token reads "token_id:N".
	StyleVLLM = "vllm"
	// StyleVLLMTokenize answers as an older vLLM does: only the
	// logprobs.content entries; the client gets the prompt's ids from the
	// server's /tokenize, which this style serves.
	StyleVLLMTokenize = "vllm_tokenize"
)

// NewVLLMServer starts an OpenAI-compatible server that also returns token
// ids and log-probs the way a vLLM policy server does, in the given style,
// when the request asks for them (logprobs and return_tokens_as_token_ids).
// In StyleVLLMTokenize it also answers POST /tokenize (Tokenizes counts the
// calls).
//
// It tokenises deterministically (one token per byte of a chat template,
// plus role and end-of-message tokens) and, like NeMo RL's server, takes
// the last assistant message of the request that carries token ids as the
// exact prefix of the prompt, tokenising only what follows it. Before
// answering it checks what NeMo RL asserts on a finished rollout: every
// assistant message came back with its ids, each one's prompt ids start
// with all the tokens seen before it, and no log-prob is NaN; a request
// that breaks this fails the test and gets a 500.
func NewVLLMServer(t testing.TB, style string, script ...Turn) *Server {
	t.Helper()
	if style != StyleNeMoRL && style != StyleVLLM && style != StyleVLLMTokenize {
		t.Fatalf("llmtest: unknown token style %q", style)
	}
	s := newServer(t, OpenAI, script)
	s.tokenStyle = style
	return s
}

// Token ids of the fake template. Bytes are 256 + the byte.
const (
	tokEnd       = 2
	tokSystem    = 10
	tokUser      = 11
	tokAssistant = 12
	tokTool      = 13
	tokCall      = 20
)

// Tokenize is the fake server's tokenizer: one token per byte.
func Tokenize(text string) []int {
	out := make([]int, 0, len(text))
	for _, b := range []byte(text) {
		out = append(out, 256+int(b))
	}
	return out
}

func roleToken(role string) int {
	switch role {
	case llm.RoleSystem:
		return tokSystem
	case llm.RoleUser:
		return tokUser
	case llm.RoleAssistant:
		return tokAssistant
	default:
		return tokTool
	}
}

// messageBody is what a message adds after its role token: its text, its
// tool calls, and the end token.
func messageBody(m llm.Message) []int {
	out := Tokenize(m.Content)
	for _, c := range m.ToolCalls {
		out = append(out, tokCall)
		out = append(out, Tokenize(c.Function.Name+" "+c.Function.Arguments)...)
	}
	return append(out, tokEnd)
}

// LogProb is the log-prob the fake server gives token id.
func LogProb(id int) float64 { return -float64(id%97+1) / 100 }

// tokenMessage is a request message with the token fields.
type tokenMessage struct {
	Role               string    `json:"role"`
	PromptTokenIDs     []int     `json:"prompt_token_ids"`
	GenerationTokenIDs []int     `json:"generation_token_ids"`
	GenerationLogProbs []float64 `json:"generation_log_probs"`
}

// tokenReply adds the token fields to a rendered chat.completion.
func (s *Server) tokenReply(out []byte, reqBody []byte) ([]byte, error) {
	var req struct {
		Logprobs               bool           `json:"logprobs"`
		ReturnTokensAsTokenIDs bool           `json:"return_tokens_as_token_ids"`
		Messages               []tokenMessage `json:"messages"`
	}
	if err := json.Unmarshal(reqBody, &req); err != nil {
		return nil, err
	}
	if !req.Logprobs || !req.ReturnTokensAsTokenIDs {
		return out, nil
	}
	chat, err := decodeOpenAIRequest(reqBody)
	if err != nil {
		return nil, err
	}
	msgs := chat.Messages
	last := -1
	for i, m := range req.Messages {
		if m.Role != llm.RoleAssistant {
			continue
		}
		if len(m.GenerationTokenIDs) == 0 {
			return nil, fmt.Errorf("assistant message %d came back without its token ids", i)
		}
		msgs[i].PromptTokenIDs, msgs[i].GenerationTokenIDs, msgs[i].GenerationLogProbs = m.PromptTokenIDs, m.GenerationTokenIDs, m.GenerationLogProbs
		last = i
	}
	var prompt []int
	if last >= 0 {
		if err := llm.CheckTokenIDs(msgs); err != nil {
			return nil, fmt.Errorf("request: %w", err)
		}
		prompt = append(slices.Clone(msgs[last].PromptTokenIDs), msgs[last].GenerationTokenIDs...)
	}
	for _, m := range msgs[last+1:] {
		prompt = append(prompt, roleToken(m.Role))
		prompt = append(prompt, messageBody(m)...)
	}
	prompt = append(prompt, tokAssistant)

	reply, err := decodeOpenAIReply(out)
	if err != nil {
		return nil, err
	}
	gen := messageBody(reply)
	logProbs := make([]float64, len(gen))
	for i, id := range gen {
		logProbs[i] = LogProb(id)
	}

	var cc map[string]any
	if err := json.Unmarshal(out, &cc); err != nil {
		return nil, err
	}
	choice := cc["choices"].([]any)[0].(map[string]any)
	switch s.tokenStyle {
	case StyleNeMoRL:
		msg := choice["message"].(map[string]any)
		msg["prompt_token_ids"], msg["generation_token_ids"], msg["generation_log_probs"] = prompt, gen, logProbs
	case StyleVLLM, StyleVLLMTokenize:
		if s.tokenStyle == StyleVLLM {
			cc["prompt_token_ids"] = prompt
			choice["token_ids"] = gen
		}
		content := make([]map[string]any, len(gen))
		for i, id := range gen {
			content[i] = map[string]any{"token": fmt.Sprintf("token_id:%d", id), "logprob": logProbs[i], "bytes": nil, "top_logprobs": []any{}}
		}
		choice["logprobs"] = map[string]any{"content": content}
	}
	return json.MarshalIndent(cc, "", "  ")
}

// serveTokenize answers POST /tokenize as vLLM does: the ids of the
// request's messages under the chat template, with the generation prompt.
func (s *Server) serveTokenize(w http.ResponseWriter, body []byte) {
	s.mu.Lock()
	s.tokenizes++
	s.mu.Unlock()
	chat, err := decodeOpenAIRequest(body)
	if err != nil || len(chat.Messages) == 0 {
		s.t.Errorf("llmtest: /tokenize: bad request %s: %v", body, err)
		s.write(w, http.StatusBadRequest, nil, openAIError(&Error{Type: "BadRequestError", Message: "bad request"}))
		return
	}
	var ids []int
	for _, m := range chat.Messages {
		ids = append(ids, roleToken(m.Role))
		ids = append(ids, messageBody(m)...)
	}
	ids = append(ids, tokAssistant)
	out, _ := json.Marshal(map[string]any{"count": len(ids), "max_model_len": 32768, "tokens": ids, "token_strs": nil})
	s.write(w, http.StatusOK, nil, out)
}

// Tokenizes is how many /tokenize requests the server answered.
func (s *Server) Tokenizes() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.tokenizes
}
