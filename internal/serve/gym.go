package serve

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"strconv"
	"time"
)

// Row is one NeMo Gym row as it travels between the collector and an agent
// server: a JSON object whose fields are kept as they came, so a row read and
// written again loses nothing swerve does not know about.
type Row map[string]json.RawMessage

// ParseRow reads one JSON object into a Row.
func ParseRow(data []byte) (Row, error) {
	var r Row
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, fmt.Errorf("row: %w", err)
	}
	if r == nil {
		return nil, errors.New("row: not a JSON object")
	}
	return r, nil
}

// Clone returns a shallow copy (the raw values are never modified in place).
func (r Row) Clone() Row { return maps.Clone(r) }

// Set stores v under key, encoded as JSON.
func (r Row) Set(key string, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		// Only values swerve builds itself are set; they always encode.
		panic(fmt.Sprintf("row: field %s: %v", key, err))
	}
	r[key] = b
}

// String returns the field as a string ("" when absent or not a string).
func (r Row) String(key string) string {
	var s string
	if raw, ok := r[key]; ok {
		_ = json.Unmarshal(raw, &s)
	}
	return s
}

// Number returns the field as a number and whether it is one: JSON numbers
// and booleans (true is 1) count, as Gym's metrics treat them.
func (r Row) Number(key string) (float64, bool) {
	return number(r[key])
}

func number(raw json.RawMessage) (float64, bool) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return 0, false
	}
	switch raw[0] {
	case 't':
		return 1, string(raw) == "true"
	case 'f':
		return 0, string(raw) == "false"
	case '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
		f, err := strconv.ParseFloat(string(raw), 64)
		return f, err == nil
	}
	return 0, false
}

// CreateParams is the part of responses_create_params swerve reads. The
// whole object stays in the row; these are only the fields a rollout uses.
type CreateParams struct {
	Input           json.RawMessage `json:"input"`
	Tools           json.RawMessage `json:"tools,omitempty"`
	Model           string          `json:"model,omitempty"`
	Temperature     *float64        `json:"temperature,omitempty"`
	TopP            *float64        `json:"top_p,omitempty"`
	MaxOutputTokens *int            `json:"max_output_tokens,omitempty"`
}

// Response is an OpenAI Responses object as Gym carries it in a row's
// "response" field.
type Response struct {
	ID                string          `json:"id"`
	Object            string          `json:"object"`
	CreatedAt         float64         `json:"created_at"`
	Model             string          `json:"model"`
	Status            string          `json:"status,omitempty"`
	Output            []OutputItem    `json:"output"`
	ParallelToolCalls bool            `json:"parallel_tool_calls"`
	ToolChoice        string          `json:"tool_choice"`
	Tools             json.RawMessage `json:"tools"`
	Temperature       *float64        `json:"temperature,omitempty"`
	TopP              *float64        `json:"top_p,omitempty"`
	MaxOutputTokens   *int            `json:"max_output_tokens,omitempty"`
	Usage             *Usage          `json:"usage,omitempty"`
	Error             *ResponseError  `json:"error,omitempty"`
}

// ResponseError is a Responses object's error field.
type ResponseError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// Usage counts the tokens of a whole rollout, in the Responses API's names.
type Usage struct {
	InputTokens  int `json:"input_tokens"`
	OutputTokens int `json:"output_tokens"`
	TotalTokens  int `json:"total_tokens"`
}

// OutputItem is one item of a Response's output: a "message", a
// "function_call" or a "function_call_output". The token fields are set, all
// three or none, on the last item of each model call whose server returned
// token ids (Gym's TokenIDLogProbMixin).
type OutputItem struct {
	Type string `json:"type"`
	ID   string `json:"id,omitempty"`

	// message
	Role    string        `json:"role,omitempty"`
	Content []ContentPart `json:"content,omitempty"`

	// function_call and function_call_output
	CallID    string `json:"call_id,omitempty"`
	Name      string `json:"name,omitempty"`
	Arguments string `json:"arguments,omitempty"`
	Output    string `json:"output,omitempty"`

	Status string `json:"status,omitempty"`

	PromptTokenIDs     []int     `json:"prompt_token_ids,omitempty"`
	GenerationTokenIDs []int     `json:"generation_token_ids,omitempty"`
	GenerationLogProbs []float64 `json:"generation_log_probs,omitempty"`
}

// ContentPart is one part of a message item's content.
type ContentPart struct {
	Type        string `json:"type"`
	Text        string `json:"text"`
	Annotations []any  `json:"annotations"`
}

// MarshalJSON writes a function_call_output's output even when it is empty
// (Gym requires the field) and keeps the other kinds free of it.
func (it OutputItem) MarshalJSON() ([]byte, error) {
	type plain OutputItem
	if it.Type != "function_call_output" || it.Output != "" {
		return json.Marshal(plain(it))
	}
	return json.Marshal(struct {
		plain
		Output string `json:"output"`
	}{plain(it), ""})
}

// Tokens are the token ids and log-probs of one model call.
type Tokens struct {
	PromptTokenIDs     []int
	GenerationTokenIDs []int
	GenerationLogProbs []float64
}

// Timings are the phases of one rollout, in seconds.
type Timings struct {
	Queue   float64 `json:"queue_seconds"`
	BoxOpen float64 `json:"box_open_seconds"`
	Agent   float64 `json:"agent_seconds"`
	Grade   float64 `json:"grade_seconds"`
	Total   float64 `json:"total_seconds"`
}

// CheckTokens reports the first place where the output breaks the rules
// NeMo RL asserts on a Gym response: the three token fields come together,
// with as many log-probs as generated tokens, no NaN, and each item's prompt
// starts with every token seen so far (prompt and generation of the items
// before it). nil when no item carries tokens.
func CheckTokens(items []OutputItem) error {
	var seen []int
	for i, it := range items {
		n := 0
		for _, l := range []int{len(it.PromptTokenIDs), len(it.GenerationTokenIDs), len(it.GenerationLogProbs)} {
			if l > 0 {
				n++
			}
		}
		if n == 0 {
			continue
		}
		if len(it.GenerationTokenIDs) == 0 || len(it.GenerationLogProbs) != len(it.GenerationTokenIDs) {
			return fmt.Errorf("output[%d]: %d generation tokens but %d log-probs", i, len(it.GenerationTokenIDs), len(it.GenerationLogProbs))
		}
		for _, lp := range it.GenerationLogProbs {
			if math.IsNaN(lp) {
				return fmt.Errorf("output[%d]: generation_log_probs holds NaN", i)
			}
		}
		if len(it.PromptTokenIDs) < len(seen) || !equalInts(it.PromptTokenIDs[:len(seen)], seen) {
			return fmt.Errorf("output[%d]: prompt_token_ids does not start with the %d tokens seen so far", i, len(seen))
		}
		seen = append(append(seen[:0:0], it.PromptTokenIDs...), it.GenerationTokenIDs...)
	}
	return nil
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func secondsSince(t time.Time) float64 { return time.Since(t).Seconds() }
