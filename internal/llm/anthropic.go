package llm

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

// anthropicVersion is the Messages API version swerve speaks.
const anthropicVersion = "2023-06-01"

// anthropicClient speaks the Anthropic Messages API, translating from and
// to the OpenAI-shaped messages the rest of swerve uses.
type anthropicClient struct {
	ep   Endpoint
	post poster
	pol  policy
}

var _ Client = (*anthropicClient)(nil)

func newAnthropic(ep Endpoint, o Options) *anthropicClient {
	// No ANTHROPIC_* variable reaches the request except through Resolve.
	headers := map[string]string{"anthropic-version": anthropicVersion}
	if ep.apiKey != "" {
		headers["x-api-key"] = ep.apiKey
	}
	for k, v := range o.Headers {
		headers[k] = v
	}
	return &anthropicClient{
		ep: ep,
		post: poster{
			provider: ep.Provider,
			client:   o.httpClient(),
			url:      strings.TrimRight(ep.BaseURL, "/") + "/v1/messages",
			headers:  headers,
		},
		pol: o.policy(),
	}
}

func (c *anthropicClient) Name() string { return c.ep.Name }

func (c *anthropicClient) Complete(ctx context.Context, req Request) (Response, error) {
	body, err := c.body(req)
	if err != nil {
		return Response{}, fmt.Errorf("%s: %w", c.ep.Name, err)
	}
	start := time.Now()
	var out Response
	retries, err := c.pol.do(ctx, c.ep.Name, func(ctx context.Context) error {
		var m anMessage
		if err := c.post.post(ctx, body, &m); err != nil {
			return err
		}
		out = c.response(&m, req)
		return nil
	})
	out.Duration = time.Since(start)
	out.Retries = retries
	if err != nil {
		return Response{Duration: out.Duration, Retries: retries}, err
	}
	return out, nil
}

// The Messages request, as far as swerve fills it.
type (
	anRequest struct {
		Model         string    `json:"model"`
		MaxTokens     int       `json:"max_tokens"`
		System        []anBlock `json:"system,omitempty"`
		Messages      []anTurn  `json:"messages"`
		Tools         []anTool  `json:"tools,omitempty"`
		Temperature   *float64  `json:"temperature,omitempty"`
		TopP          *float64  `json:"top_p,omitempty"`
		StopSequences []string  `json:"stop_sequences,omitempty"`
	}
	anTurn struct {
		Role    string    `json:"role"`
		Content []anBlock `json:"content"`
	}
	// anBlock is any content block: text, tool_use or tool_result.
	anBlock struct {
		Type      string          `json:"type"`
		Text      string          `json:"text,omitempty"` // never empty in a text block
		ID        string          `json:"id,omitempty"`
		Name      string          `json:"name,omitempty"`
		Input     json.RawMessage `json:"input,omitempty"`
		ToolUseID string          `json:"tool_use_id,omitempty"`
		Content   []anBlock       `json:"content,omitempty"`
	}
	anTool struct {
		Name        string         `json:"name"`
		Description string         `json:"description,omitempty"`
		InputSchema map[string]any `json:"input_schema"`
	}
)

// The reply, as far as swerve reads it.
type anMessage struct {
	Content []struct {
		Type     string          `json:"type"`
		Text     string          `json:"text"`
		Thinking string          `json:"thinking"`
		ID       string          `json:"id"`
		Name     string          `json:"name"`
		Input    json.RawMessage `json:"input"`
	} `json:"content"`
	StopReason string `json:"stop_reason"`
	Usage      *struct {
		InputTokens              int64 `json:"input_tokens"`
		OutputTokens             int64 `json:"output_tokens"`
		CacheCreationInputTokens int64 `json:"cache_creation_input_tokens"`
		CacheReadInputTokens     int64 `json:"cache_read_input_tokens"`
	} `json:"usage"`
}

func textBlock(s string) anBlock { return anBlock{Type: "text", Text: s} }

func (c *anthropicClient) body(req Request) ([]byte, error) {
	system, msgs, err := toAnthropicMessages(req.Messages)
	if err != nil {
		return nil, err
	}
	maxTokens := req.MaxTokens
	if maxTokens <= 0 {
		maxTokens = DefaultAnthropicMaxTokens
	}
	p := anRequest{
		Model:       c.ep.Model,
		MaxTokens:   maxTokens,
		Messages:    msgs,
		System:      system,
		Temperature: req.Temperature,
		TopP:        req.TopP,
	}
	for _, t := range req.Tools {
		schema, err := toAnthropicSchema(t.Function.Parameters)
		if err != nil {
			return nil, fmt.Errorf("tool %q: %w", t.Function.Name, err)
		}
		p.Tools = append(p.Tools, anTool{Name: t.Function.Name, Description: t.Function.Description, InputSchema: schema})
	}
	if len(req.Stop) > 0 {
		p.StopSequences = req.Stop
	}
	return json.Marshal(p)
}

// toAnthropicSchema turns an OpenAI parameters schema into input_schema:
// always of type object, with properties (empty when there are none),
// required when given, and every other keyword kept.
func toAnthropicSchema(params json.RawMessage) (map[string]any, error) {
	s := map[string]any{"type": "object", "properties": map[string]any{}}
	if len(bytes.TrimSpace(params)) == 0 || string(params) == "null" {
		return s, nil
	}
	var m map[string]any
	if err := json.Unmarshal(params, &m); err != nil {
		return nil, fmt.Errorf("parameters are not a JSON object: %w", err)
	}
	if props, ok := m["properties"]; ok {
		s["properties"] = props
	}
	if req, ok := m["required"].([]any); ok {
		var names []string
		for _, r := range req {
			if name, ok := r.(string); ok {
				names = append(names, name)
			}
		}
		if len(names) > 0 {
			s["required"] = names
		}
	}
	for k, v := range m {
		switch k {
		case "type", "properties", "required":
			continue
		}
		s[k] = v
	}
	return s, nil
}

// toAnthropicMessages maps the OpenAI chat shape onto Anthropic's: system
// messages go to the system parameter, tool results become tool_result
// blocks in a user turn, assistant tool calls become tool_use blocks, and
// consecutive turns of the same role are merged (so several tool results
// answering one assistant turn arrive together, as the API requires).
// Empty text is dropped: the API rejects empty text blocks.
func toAnthropicMessages(msgs []Message) ([]anBlock, []anTurn, error) {
	var system []anBlock
	var out []anTurn
	add := func(role string, blocks ...anBlock) {
		if len(blocks) == 0 {
			return
		}
		if n := len(out); n > 0 && out[n-1].Role == role {
			out[n-1].Content = append(out[n-1].Content, blocks...)
			return
		}
		out = append(out, anTurn{Role: role, Content: blocks})
	}
	for i, m := range msgs {
		switch m.Role {
		case RoleSystem:
			if strings.TrimSpace(m.Content) != "" {
				system = append(system, textBlock(m.Content))
			}
		case RoleUser:
			if strings.TrimSpace(m.Content) != "" {
				add("user", textBlock(m.Content))
			}
		case RoleTool:
			res := anBlock{Type: "tool_result", ToolUseID: m.ToolCallID}
			if strings.TrimSpace(m.Content) != "" {
				res.Content = []anBlock{textBlock(m.Content)}
			}
			add("user", res)
		case RoleAssistant:
			var blocks []anBlock
			if strings.TrimSpace(m.Content) != "" {
				blocks = append(blocks, textBlock(m.Content))
			}
			for _, tc := range m.ToolCalls {
				blocks = append(blocks, anBlock{Type: "tool_use", ID: tc.ID, Name: tc.Function.Name, Input: toolInput(tc.Function.Arguments)})
			}
			add("assistant", blocks...)
		default:
			return nil, nil, fmt.Errorf("message %d: unknown role %q", i, m.Role)
		}
	}
	return system, out, nil
}

// toolInput turns a call's argument text into a tool_use input, which must
// be a JSON object. Arguments a model garbled (possible when the history
// came from another provider) become an empty object.
func toolInput(args string) json.RawMessage {
	raw := bytes.TrimSpace([]byte(args))
	if len(raw) > 0 && raw[0] == '{' && json.Valid(raw) {
		return json.RawMessage(raw)
	}
	return json.RawMessage(`{}`)
}

// anthropicFinish maps stop_reason onto the OpenAI finish_reason words.
func anthropicFinish(r string) string {
	switch r {
	case "end_turn", "stop_sequence", "pause_turn":
		return "stop"
	case "max_tokens", "model_context_window_exceeded":
		return "length"
	case "tool_use":
		return "tool_calls"
	case "refusal":
		return "content_filter"
	}
	return r
}

func (c *anthropicClient) response(m *anMessage, req Request) Response {
	msg := Message{Role: RoleAssistant}
	var texts, thoughts []string
	for _, b := range m.Content {
		switch b.Type {
		case "text":
			if b.Text != "" {
				texts = append(texts, b.Text)
			}
		case "thinking":
			if b.Thinking != "" {
				thoughts = append(thoughts, b.Thinking)
			}
		case "tool_use":
			args := string(bytes.TrimSpace(b.Input))
			if args == "" || args == "null" {
				args = "{}"
			} else {
				var buf bytes.Buffer
				if json.Compact(&buf, []byte(args)) == nil {
					args = buf.String()
				}
			}
			msg.ToolCalls = append(msg.ToolCalls, ToolCall{
				ID:       b.ID,
				Type:     "function",
				Function: FunctionCall{Name: b.Name, Arguments: args},
			})
		}
	}
	msg.Content = strings.Join(texts, "\n")
	msg.Reasoning = strings.Join(thoughts, "\n")
	resp := Response{Message: msg, FinishReason: anthropicFinish(m.StopReason)}
	if u := m.Usage; u != nil && (u.InputTokens > 0 || u.OutputTokens > 0) {
		in := int(u.InputTokens + u.CacheCreationInputTokens + u.CacheReadInputTokens)
		out := int(u.OutputTokens)
		resp.Usage = Usage{InputTokens: in, OutputTokens: out, TotalTokens: in + out}
	} else {
		resp.Usage = estimateUsage(req, msg)
	}
	return resp
}
