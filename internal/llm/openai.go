package llm

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// openAIClient speaks OpenAI chat completions to OpenAI, OpenRouter, vLLM,
// SGLang or any compatible server.
type openAIClient struct {
	ep    Endpoint
	post  poster
	pol   policy
	extra map[string]any
	// tokenIDs: ask for, keep and send back token ids (Options.TokenIDs).
	tokenIDs bool
}

var _ Client = (*openAIClient)(nil)

func newOpenAI(ep Endpoint, o Options) *openAIClient {
	// Everything the request carries is set here: no OPENAI_* variable of
	// the process reaches it except through Resolve.
	headers := map[string]string{}
	if ep.apiKey != "" {
		headers["Authorization"] = "Bearer " + ep.apiKey
	}
	for k, v := range o.Headers {
		headers[k] = v
	}
	return &openAIClient{
		ep: ep,
		post: poster{
			provider: ep.Provider,
			client:   o.httpClient(),
			url:      strings.TrimRight(ep.BaseURL, "/") + "/chat/completions",
			headers:  headers,
		},
		pol:      o.policy(),
		extra:    o.ExtraBody,
		tokenIDs: o.TokenIDs,
	}
}

func (c *openAIClient) Name() string { return c.ep.Name }

func (c *openAIClient) Complete(ctx context.Context, req Request) (Response, error) {
	body, err := c.body(req)
	if err != nil {
		return Response{}, fmt.Errorf("%s: %w", c.ep.Name, err)
	}
	start := time.Now()
	var out Response
	retries, err := c.pol.do(ctx, c.ep.Name, func(ctx context.Context) error {
		var cc oaCompletion
		if err := c.post.post(ctx, body, &cc); err != nil {
			return err
		}
		out, err = c.response(&cc, req)
		if err == nil && c.tokenIDs {
			err = c.readTokenIDs(ctx, &out.Message, &cc, body)
		}
		return err
	})
	out.Duration = time.Since(start)
	out.Retries = retries
	if err != nil {
		return Response{Duration: out.Duration, Retries: retries}, err
	}
	return out, nil
}

// The chat completions request, as far as swerve fills it.
type (
	oaRequest struct {
		Model               string      `json:"model"`
		Messages            []oaMessage `json:"messages"`
		Tools               []oaTool    `json:"tools,omitempty"`
		Temperature         *float64    `json:"temperature,omitempty"`
		TopP                *float64    `json:"top_p,omitempty"`
		MaxTokens           *int        `json:"max_tokens,omitempty"`
		MaxCompletionTokens *int        `json:"max_completion_tokens,omitempty"`
		Stop                []string    `json:"stop,omitempty"`
		// Token-id capture (Options.TokenIDs), as NeMo Gym's vllm_model
		// asks for it, plus vLLM's return_token_ids.
		Logprobs               bool `json:"logprobs,omitempty"`
		TopLogprobs            *int `json:"top_logprobs,omitempty"`
		ReturnTokensAsTokenIDs bool `json:"return_tokens_as_token_ids,omitempty"`
		ReturnTokenIDs         bool `json:"return_token_ids,omitempty"`
	}
	oaMessage struct {
		Role       string       `json:"role"`
		Content    *string      `json:"content,omitempty"`
		ToolCallID string       `json:"tool_call_id,omitempty"`
		ToolCalls  []oaToolCall `json:"tool_calls,omitempty"`
		// Sent back on assistant messages when token ids are on.
		PromptTokenIDs     []int     `json:"prompt_token_ids,omitempty"`
		GenerationTokenIDs []int     `json:"generation_token_ids,omitempty"`
		GenerationLogProbs []float64 `json:"generation_log_probs,omitempty"`
	}
	oaToolCall struct {
		ID       string `json:"id"`
		Type     string `json:"type"`
		Function struct {
			Name      string `json:"name"`
			Arguments string `json:"arguments"`
		} `json:"function"`
	}
	oaTool struct {
		Type     string `json:"type"`
		Function struct {
			Name        string          `json:"name"`
			Description string          `json:"description,omitempty"`
			Parameters  json.RawMessage `json:"parameters,omitempty"`
		} `json:"function"`
	}
)

// The reply, as far as swerve reads it.
type oaCompletion struct {
	Choices []struct {
		Message struct {
			Content          *string         `json:"content"`
			ToolCalls        []oaToolCall    `json:"tool_calls"`
			ReasoningContent json.RawMessage `json:"reasoning_content"`
			Reasoning        json.RawMessage `json:"reasoning"`
			// NeMo RL's vLLM server puts the token fields here.
			PromptTokenIDs     []int             `json:"prompt_token_ids"`
			GenerationTokenIDs []int             `json:"generation_token_ids"`
			GenerationLogProbs []json.RawMessage `json:"generation_log_probs"`
		} `json:"message"`
		FinishReason string `json:"finish_reason"`
		// vLLM: the reply's ids (return_token_ids) and per-token log-probs
		// whose tokens read "token_id:N" (return_tokens_as_token_ids).
		TokenIDs []int `json:"token_ids"`
		Logprobs *struct {
			Content []struct {
				Token   string          `json:"token"`
				Logprob json.RawMessage `json:"logprob"`
			} `json:"content"`
		} `json:"logprobs"`
		PromptTokenIDs []int `json:"prompt_token_ids"`
	} `json:"choices"`
	// vLLM: the prompt's ids (return_token_ids).
	PromptTokenIDs []int `json:"prompt_token_ids"`
	Usage          *struct {
		PromptTokens     int64           `json:"prompt_tokens"`
		CompletionTokens int64           `json:"completion_tokens"`
		TotalTokens      int64           `json:"total_tokens"`
		Cost             json.RawMessage `json:"cost"`
	} `json:"usage"`
	Error json.RawMessage `json:"error"`
}

func (c *openAIClient) body(req Request) ([]byte, error) {
	msgs, err := toOpenAIMessages(req.Messages)
	if err != nil {
		return nil, err
	}
	p := oaRequest{Model: c.ep.Model, Messages: msgs, Temperature: req.Temperature, TopP: req.TopP}
	for _, t := range req.Tools {
		var tool oaTool
		tool.Type = "function"
		tool.Function.Name = t.Function.Name
		tool.Function.Description = t.Function.Description
		if len(t.Function.Parameters) > 0 {
			var schema map[string]any
			if err := json.Unmarshal(t.Function.Parameters, &schema); err != nil {
				return nil, fmt.Errorf("tool %q: parameters are not a JSON object: %w", t.Function.Name, err)
			}
			if schema != nil {
				tool.Function.Parameters = t.Function.Parameters
			}
		}
		p.Tools = append(p.Tools, tool)
	}
	if req.MaxTokens > 0 {
		// OpenAI's newer models only take max_completion_tokens; the
		// open-source servers and OpenRouter all understand max_tokens.
		n := req.MaxTokens
		if c.ep.Provider == ProviderOpenAI {
			p.MaxCompletionTokens = &n
		} else {
			p.MaxTokens = &n
		}
	}
	if len(req.Stop) > 0 {
		p.Stop = req.Stop
	}
	if c.tokenIDs {
		zero := 0
		p.Logprobs, p.TopLogprobs, p.ReturnTokensAsTokenIDs, p.ReturnTokenIDs = true, &zero, true, true
		for i, m := range req.Messages {
			if m.Role == RoleAssistant && m.HasTokenIDs() {
				p.Messages[i].PromptTokenIDs = m.PromptTokenIDs
				p.Messages[i].GenerationTokenIDs = m.GenerationTokenIDs
				p.Messages[i].GenerationLogProbs = m.GenerationLogProbs
			}
		}
	}
	return withExtra(p, c.extra)
}

func toOpenAIMessages(msgs []Message) ([]oaMessage, error) {
	out := make([]oaMessage, 0, len(msgs))
	for i, m := range msgs {
		content := m.Content
		switch m.Role {
		case RoleSystem, RoleUser:
			out = append(out, oaMessage{Role: m.Role, Content: &content})
		case RoleTool:
			out = append(out, oaMessage{Role: m.Role, Content: &content, ToolCallID: m.ToolCallID})
		case RoleAssistant:
			a := oaMessage{Role: m.Role}
			if m.Content != "" || len(m.ToolCalls) == 0 {
				a.Content = &content
			}
			for _, tc := range m.ToolCalls {
				var call oaToolCall
				call.ID, call.Type = tc.ID, "function"
				call.Function.Name, call.Function.Arguments = tc.Function.Name, tc.Function.Arguments
				a.ToolCalls = append(a.ToolCalls, call)
			}
			out = append(out, a)
		default:
			return nil, fmt.Errorf("message %d: unknown role %q", i, m.Role)
		}
	}
	return out, nil
}

// response turns a chat.completion into a Response. An error here is
// retried: a 200 without choices is a server-side hiccup (OpenRouter sends
// upstream failures that way).
func (c *openAIClient) response(cc *oaCompletion, req Request) (Response, error) {
	if len(cc.Choices) == 0 {
		if raw := strings.TrimSpace(string(cc.Error)); raw != "" && raw != "null" {
			typ, code, msg := parseErrorBody([]byte(`{"error":` + raw + `}`))
			status, _ := strconv.Atoi(code)
			if status < 400 {
				status = http.StatusBadGateway
			}
			e := &APIError{Provider: c.ep.Provider, StatusCode: status, Type: typ, Code: code, Message: msg}
			e.contextWindow = isContextOverflow(status, code, msg)
			return Response{}, e
		}
		return Response{}, errors.New("reply has no choices")
	}
	ch := cc.Choices[0]
	msg := Message{Role: RoleAssistant}
	if ch.Message.Content != nil {
		msg.Content = *ch.Message.Content
	}
	for i, tc := range ch.Message.ToolCalls {
		if tc.Type != "" && tc.Type != "function" {
			continue
		}
		id := tc.ID
		if id == "" {
			id = newCallID(i)
		}
		msg.ToolCalls = append(msg.ToolCalls, ToolCall{
			ID:   id,
			Type: "function",
			Function: FunctionCall{
				Name:      tc.Function.Name,
				Arguments: tc.Function.Arguments,
			},
		})
	}
	// vLLM and SGLang send reasoning_content; OpenRouter sends reasoning.
	for _, raw := range []json.RawMessage{ch.Message.ReasoningContent, ch.Message.Reasoning} {
		if s, ok := jsonString(raw); ok && s != "" {
			msg.Reasoning = s
			break
		}
	}
	resp := Response{Message: msg, FinishReason: ch.FinishReason}
	if u := cc.Usage; u != nil && (u.PromptTokens > 0 || u.CompletionTokens > 0) {
		resp.Usage = Usage{
			InputTokens:  int(u.PromptTokens),
			OutputTokens: int(u.CompletionTokens),
			TotalTokens:  int(u.TotalTokens),
		}
		if resp.Usage.TotalTokens == 0 {
			resp.Usage.TotalTokens = resp.Usage.InputTokens + resp.Usage.OutputTokens
		}
		if len(u.Cost) > 0 {
			if cost, err := strconv.ParseFloat(string(u.Cost), 64); err == nil {
				resp.Cost = cost
			}
		}
	} else {
		resp.Usage = estimateUsage(req, msg)
	}
	return resp, nil
}

// newCallID makes an id for a tool call the server sent without one, so the
// tool message answering it can still refer to it.
func newCallID(i int) string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return fmt.Sprintf("call_%d_%s", i, hex.EncodeToString(b[:]))
}
