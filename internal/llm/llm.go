package llm

import (
	"context"
	"encoding/json"
	"errors"
	"time"
)

// Roles of a Message.
const (
	RoleSystem    = "system"
	RoleUser      = "user"
	RoleAssistant = "assistant"
	RoleTool      = "tool"
)

// Message is one chat message.
type Message struct {
	Role    string `json:"role"`
	Content string `json:"content"`
	// ToolCalls are the calls an assistant message makes (function calling).
	ToolCalls []ToolCall `json:"tool_calls,omitempty"`
	// ToolCallID ties a tool message to the call it answers.
	ToolCallID string `json:"tool_call_id,omitempty"`
	// Name is the tool's name on a tool message.
	Name string `json:"name,omitempty"`
	// Reasoning is the model's separate reasoning text, when the provider
	// returns one (reasoning_content, thinking blocks). It is kept in the
	// trajectory but not sent back to the model.
	Reasoning string `json:"reasoning_content,omitempty"`
	// Token ids and log-probs of an assistant reply, set when the client
	// asked for them (Options.TokenIDs) and the server sent them (vLLM,
	// NeMo RL's and NeMo Gym's model servers): the ids of the whole prompt
	// the reply was sampled from, the ids of the reply, and one log-prob
	// per reply token. All three or none. The OpenAI client sends them back
	// with the message, so the server can take them as the exact prefix of
	// the next prompt; see CheckTokenIDs.
	PromptTokenIDs     []int     `json:"prompt_token_ids,omitempty"`
	GenerationTokenIDs []int     `json:"generation_token_ids,omitempty"`
	GenerationLogProbs []float64 `json:"generation_log_probs,omitempty"`
}

// HasTokenIDs reports whether m carries token ids.
func (m Message) HasTokenIDs() bool { return len(m.GenerationTokenIDs) > 0 }

// ToolCall is one function call in an assistant message.
type ToolCall struct {
	ID       string       `json:"id"`
	Type     string       `json:"type"` // always "function"
	Function FunctionCall `json:"function"`
}

// FunctionCall names the function and carries its arguments as the JSON
// text the model wrote (which may be malformed: the scaffold reports that).
type FunctionCall struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// Tool is a tool schema offered to the model, in the OpenAI shape
// ({"type":"function","function":{...}}); trajectories record these
// exactly as sent.
type Tool struct {
	Type     string      `json:"type"` // always "function"
	Function FunctionDef `json:"function"`
}

// FunctionDef describes one function: Parameters is a JSON schema object.
type FunctionDef struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters"`
}

// Request is one call to a model.
type Request struct {
	Messages []Message
	// Tools, when set, are offered for function calling.
	Tools []Tool
	// Sampling; nil leaves the provider's default.
	Temperature *float64
	TopP        *float64
	// MaxTokens caps the reply; zero leaves the provider's default (the
	// Anthropic client needs one and uses 8192).
	MaxTokens int
	// Stop sequences.
	Stop []string
}

// Usage is what one call cost in tokens.
type Usage struct {
	InputTokens  int `json:"input"`
	OutputTokens int `json:"output"`
	TotalTokens  int `json:"total"`
	// Estimated is set when the provider gave no usage and the counts come
	// from an offline tokenizer.
	Estimated bool `json:"estimated,omitempty"`
}

// Add returns u + v.
func (u Usage) Add(v Usage) Usage {
	return Usage{
		InputTokens:  u.InputTokens + v.InputTokens,
		OutputTokens: u.OutputTokens + v.OutputTokens,
		TotalTokens:  u.TotalTokens + v.TotalTokens,
		Estimated:    u.Estimated || v.Estimated,
	}
}

// Response is a model's answer.
type Response struct {
	Message Message
	Usage   Usage
	// FinishReason as the provider reports it ("stop", "length",
	// "tool_calls", ...), normalised to the OpenAI words.
	FinishReason string
	// Cost in USD when the provider reports it (OpenRouter), else zero.
	Cost float64
	// Duration of the call including retries.
	Duration time.Duration
	// Retries is how many failed attempts preceded this answer.
	Retries int
}

// Client is a model.
type Client interface {
	// Name is the model name as the user gave it ("openai/gpt-4o-mini").
	Name() string
	// Complete sends the request and returns the model's answer. Transient
	// failures (429, 5xx, connection errors, timeouts) are retried inside;
	// the errors that come out are final. A request larger than the model's
	// context window gives an error wrapping ErrContextWindow.
	Complete(ctx context.Context, req Request) (Response, error)
}

// Offline is implemented by clients that are not real models (replay,
// oracle): results they produce must be labelled as such.
type Offline interface {
	Offline() bool
}

// IsOffline reports whether c is an offline model.
func IsOffline(c Client) bool {
	o, ok := c.(Offline)
	return ok && o.Offline()
}

// Errors callers tell apart with errors.Is.
var (
	// ErrContextWindow: the request does not fit the model's context.
	ErrContextWindow = errors.New("context window exceeded")
	// ErrNoKey: the provider's API key is not set.
	ErrNoKey = errors.New("api key not set")
	// ErrExhausted: a scripted or replayed model has no replies left.
	ErrExhausted = errors.New("no replies left")
)
