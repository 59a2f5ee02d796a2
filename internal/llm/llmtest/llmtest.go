// Package llmtest provides fake model servers for tests: httptest servers
// that speak the OpenAI chat completions and Anthropic Messages wire
// formats, answer from a script of turns, and record every request they
// got so a test can check what the model was sent.
//
// A script is a list of Turns, answered in order, one per request
// (retries included). A turn is a reply (text, reasoning, tool calls,
// usage, finish reason), rendered in the server's wire format; a recorded
// response body sent as is; or an HTTP error with its status, headers and
// body. A turn marked Repeat answers every request from then on. A request
// that finds the script used up fails the test and gets a 400, which the
// clients do not retry. Like the real APIs, the servers also answer 400,
// without using a turn, to a history in which a tool call is not followed
// by its result or a tool result answers no call.
//
// Turns decode from JSON, so scripts can live in testdata:
//
//	[
//	  {"content": "Let me look.", "tool_calls": [{"name": "execute_bash", "arguments": {"cmd": "ls"}}]},
//	  {"status": 429, "headers": {"Retry-After": "1"}, "error": {"type": "requests", "code": "rate_limit_exceeded", "message": "Rate limit reached"}},
//	  {"file": "testdata/recorded/chat_finish.json"},
//	  {"status": 500, "error": {"type": "server_error", "message": "boom"}, "repeat": true}
//	]
package llmtest

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/swerve-dev/swerve/internal/llm"
)

// Providers a Server speaks.
const (
	OpenAI    = "openai"
	Anthropic = "anthropic"
)

// Turn is one scripted answer. Exactly one of the reply fields, Body/File,
// or Status with an error is meant to be used; see the package comment.
type Turn struct {
	// A reply, rendered in the server's wire format.
	Content   string     `json:"content,omitempty"`
	Reasoning string     `json:"reasoning,omitempty"`
	ToolCalls []ToolCall `json:"tool_calls,omitempty"`
	// Usage reported with the reply; nil makes one up from the sizes of the
	// request and the reply (about four characters a token).
	Usage *Usage `json:"usage,omitempty"`
	// FinishReason in OpenAI's words ("stop", "tool_calls", "length");
	// empty means tool_calls when there are tool calls, else stop. The
	// Anthropic server translates it to a stop_reason.
	FinishReason string `json:"finish_reason,omitempty"`

	// Body is a response body sent verbatim (a recorded chat.completion or
	// Anthropic message, or an error body when Status is set).
	Body json.RawMessage `json:"body,omitempty"`
	// File names a file holding such a body, read when the server is made
	// (relative to the test's working directory, the package directory).
	File string `json:"file,omitempty"`

	// Status, when set and not 200, makes the turn an HTTP error.
	Status int `json:"status,omitempty"`
	// Headers are added to the response (Retry-After, retry-after-ms, ...).
	Headers map[string]string `json:"headers,omitempty"`
	// Error is rendered as the provider's error body when Body is empty.
	Error *Error `json:"error,omitempty"`

	// Repeat makes this turn the answer to every request from here on.
	Repeat bool `json:"repeat,omitempty"`
	// Delay holds the answer back (a Go duration such as "200ms"); the
	// server gives up early when the client does.
	Delay Duration `json:"delay,omitempty"`
}

// ToolCall is one call in a scripted reply.
type ToolCall struct {
	// ID is the call's id; empty makes one up in the provider's style
	// (call_..., toolu_...), the same one on every run of the script.
	ID   string `json:"id,omitempty"`
	Name string `json:"name"`
	// Arguments is either a JSON object (sent as its text) or a JSON string
	// holding the argument text as the model wrote it, which may be
	// malformed (the OpenAI server only: Anthropic sends objects).
	Arguments json.RawMessage `json:"arguments,omitempty"`
}

// ArgumentText is the arguments as the model's text.
func (c ToolCall) ArgumentText() string {
	raw := bytes.TrimSpace(c.Arguments)
	if len(raw) == 0 {
		return "{}"
	}
	if raw[0] == '"' {
		var s string
		if json.Unmarshal(raw, &s) == nil {
			return s
		}
	}
	var b bytes.Buffer
	if json.Compact(&b, raw) == nil {
		return b.String()
	}
	return string(raw)
}

// Usage is the token count a reply reports.
type Usage struct {
	Input  int `json:"input"`
	Output int `json:"output"`
}

// Error is a provider error, rendered as {"error":{...}} by the OpenAI
// server and {"type":"error","error":{...}} by the Anthropic one.
type Error struct {
	Type    string `json:"type"`
	Code    string `json:"code,omitempty"` // OpenAI only
	Message string `json:"message"`
}

// Duration is a time.Duration written as a Go duration string in JSON.
type Duration time.Duration

// UnmarshalJSON reads "1.5s" or a number of nanoseconds.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if json.Unmarshal(b, &s) == nil {
		v, err := time.ParseDuration(s)
		if err != nil {
			return err
		}
		*d = Duration(v)
		return nil
	}
	var n int64
	if err := json.Unmarshal(b, &n); err != nil {
		return fmt.Errorf("duration: want a string like \"200ms\": %w", err)
	}
	*d = Duration(n)
	return nil
}

// MarshalJSON writes the duration as a string.
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(time.Duration(d).String()) }

// isError reports whether the turn answers with an error status.
func (t Turn) isError() bool { return t.Status != 0 && t.Status != http.StatusOK }

// Request is one request the server got, with what it answered.
type Request struct {
	Provider string
	Method   string
	Path     string
	Header   http.Header
	Body     []byte
	// Turn is the index of the script turn that answered it (-1 when the
	// script was used up).
	Turn int
	// Status and Response are the answer sent.
	Status   int
	Response []byte
}

// Server is a fake model endpoint. URL is the base URL to give llm.New.
type Server struct {
	*httptest.Server
	provider string
	t        testing.TB
	mu       sync.Mutex
	script   []Turn
	next     int
	count    int // requests served, for made-up ids
	reqs     []Request
	// tokenStyle, when set, makes the server a vLLM policy server
	// (NewVLLMServer).
	tokenStyle string
	tokenizes  int
}

// NewOpenAIServer starts a server answering POST /chat/completions in the
// OpenAI wire format. Give llm.New its URL as BaseURL.
func NewOpenAIServer(t testing.TB, script ...Turn) *Server {
	t.Helper()
	return newServer(t, OpenAI, script)
}

// NewAnthropicServer starts a server answering POST /v1/messages in the
// Anthropic wire format. Give llm.New its URL as BaseURL.
func NewAnthropicServer(t testing.TB, script ...Turn) *Server {
	t.Helper()
	return newServer(t, Anthropic, script)
}

func newServer(t testing.TB, provider string, script []Turn) *Server {
	t.Helper()
	script = append([]Turn(nil), script...)
	for i, turn := range script {
		if turn.File != "" && len(turn.Body) == 0 {
			b, err := os.ReadFile(turn.File)
			if err != nil {
				t.Fatalf("llmtest: turn %d: %v", i, err)
			}
			script[i].Body = b
		}
		if provider == Anthropic {
			for _, c := range turn.ToolCalls {
				if a := bytes.TrimSpace(c.Arguments); len(a) > 0 && a[0] != '{' {
					t.Fatalf("llmtest: turn %d: Anthropic tool_use input must be a JSON object, got %s", i, a)
				}
			}
		}
	}
	s := &Server{provider: provider, t: t, script: script}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.Close)
	return s
}

// Provider is OpenAI or Anthropic.
func (s *Server) Provider() string { return s.provider }

// Requests returns every request received so far, in order.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.reqs...)
}

// Bodies returns the body of every request received so far.
func (s *Server) Bodies() [][]byte {
	var out [][]byte
	for _, r := range s.Requests() {
		out = append(out, r.Body)
	}
	return out
}

// Remaining is how many turns were not used (a Repeat turn counts as one
// until it has been used).
func (s *Server) Remaining() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.script) - s.next
}

func (s *Server) path() string {
	if s.provider == Anthropic {
		return "/v1/messages"
	}
	return "/chat/completions"
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	rec := Request{Provider: s.provider, Method: r.Method, Path: r.URL.Path, Header: r.Header.Clone(), Body: body, Turn: -1}

	if s.tokenStyle != "" && r.Method == http.MethodPost && r.URL.Path == "/tokenize" {
		s.serveTokenize(w, body)
		return
	}
	if r.Method == http.MethodGet && (r.URL.Path == "/models" || strings.HasPrefix(r.URL.Path, "/v1/models")) {
		// The model list real servers answer, which swerve asks once
		// before a run (llm.Probe): empty, so any model passes. Not a
		// request of the script, so not recorded.
		if strings.HasPrefix(r.URL.Path, "/v1/models/") {
			s.write(w, http.StatusOK, nil, []byte(`{"type":"model","id":"`+strings.TrimPrefix(r.URL.Path, "/v1/models/")+`"}`))
			return
		}
		s.write(w, http.StatusOK, nil, []byte(`{"object":"list","data":[]}`))
		return
	}
	if r.Method != http.MethodPost || r.URL.Path != s.path() {
		s.t.Errorf("llmtest: %s server got %s %s, want POST %s", s.provider, r.Method, r.URL.Path, s.path())
		rec.Status, rec.Response = http.StatusNotFound, s.errorBody(&Error{Type: "invalid_request_error", Message: "Unknown request URL: " + r.Method + " " + r.URL.Path})
		s.record(rec)
		s.write(w, rec.Status, nil, rec.Response)
		return
	}

	// Like the real APIs, refuse a history whose tool calls are not
	// answered: a 400 the clients do not retry.
	if e := s.validate(rec); e != nil {
		rec.Status, rec.Response = http.StatusBadRequest, s.errorBody(e)
		s.record(rec)
		s.write(w, rec.Status, nil, rec.Response)
		return
	}

	s.mu.Lock()
	s.count++
	n := s.count
	var turn Turn
	idx := -1
	switch {
	case s.next < len(s.script):
		idx = s.next
		turn = s.script[idx]
		if !turn.Repeat {
			s.next++
		}
	}
	s.mu.Unlock()

	if idx < 0 {
		s.t.Errorf("llmtest: request %d to the %s server found the script used up (%d turns)", n, s.provider, len(s.script))
		rec.Status, rec.Response = http.StatusBadRequest, s.errorBody(&Error{Type: "invalid_request_error", Message: "llmtest: the script has no turns left"})
		s.record(rec)
		s.write(w, rec.Status, nil, rec.Response)
		return
	}
	rec.Turn = idx

	if turn.Delay > 0 {
		select {
		case <-time.After(time.Duration(turn.Delay)):
		case <-r.Context().Done():
		}
	}

	status := http.StatusOK
	var out []byte
	switch {
	case turn.isError():
		status = turn.Status
		out = turn.Body
		if len(out) == 0 {
			e := turn.Error
			if e == nil {
				e = &Error{Type: "api_error", Message: http.StatusText(status)}
			}
			out = s.errorBody(e)
		}
	case len(turn.Body) > 0:
		out = turn.Body
	default:
		var err error
		out, err = s.reply(turn, n, body)
		if err != nil {
			s.t.Errorf("llmtest: turn %d: %v", idx, err)
			status, out = http.StatusInternalServerError, s.errorBody(&Error{Type: "api_error", Message: err.Error()})
		}
	}
	rec.Status, rec.Response = status, out
	s.record(rec)
	s.write(w, status, turn.Headers, out)
}

// validate checks a request the way the providers do before answering:
// the body must decode, and every tool call in the history must be
// answered by a tool result right after it, and only those.
func (s *Server) validate(r Request) *Error {
	chat, err := r.Decode()
	if err != nil {
		return &Error{Type: "invalid_request_error", Message: "We could not parse the JSON body of your request: " + err.Error()}
	}
	if len(chat.Messages) == 0 {
		return &Error{Type: "invalid_request_error", Message: "messages: at least one message is required"}
	}
	var pending []string
	for i, m := range chat.Messages {
		if m.Role == llm.RoleTool {
			j := slices.Index(pending, m.ToolCallID)
			if j < 0 {
				if s.provider == Anthropic {
					return &Error{Type: "invalid_request_error", Message: fmt.Sprintf("messages.%d.content: unexpected `tool_use_id` found in `tool_result` blocks: %s. Each `tool_result` block must have a corresponding `tool_use` block in the previous message.", i, m.ToolCallID)}
				}
				return &Error{Type: "invalid_request_error", Message: fmt.Sprintf("Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls' (messages.[%d], tool_call_id %s).", i, m.ToolCallID)}
			}
			pending = slices.Delete(pending, j, j+1)
			continue
		}
		if len(pending) > 0 {
			if s.provider == Anthropic {
				return &Error{Type: "invalid_request_error", Message: fmt.Sprintf("messages.%d: `tool_use` ids were found without `tool_result` blocks immediately after: %s. Each `tool_use` block must have a corresponding `tool_result` block in the next message.", i, strings.Join(pending, ", "))}
			}
			return &Error{Type: "invalid_request_error", Message: "An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: " + strings.Join(pending, ", ")}
		}
		for _, tc := range m.ToolCalls {
			pending = append(pending, tc.ID)
		}
	}
	return nil
}

func (s *Server) record(r Request) {
	s.mu.Lock()
	s.reqs = append(s.reqs, r)
	s.mu.Unlock()
}

func (s *Server) write(w http.ResponseWriter, status int, headers map[string]string, body []byte) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	id := "req_" + shortHash(fmt.Sprint(time.Now().UnixNano()), 24)
	if s.provider == Anthropic {
		h.Set("Request-Id", id)
		h.Set("Anthropic-Organization-Id", "5c4d3b2a-1e0f-4a9b-8c7d-6e5f4a3b2c1d")
	} else {
		h.Set("X-Request-Id", id)
		h.Set("Openai-Processing-Ms", "412")
		h.Set("Openai-Version", "2020-10-01")
	}
	for k, v := range headers {
		h.Set(k, v)
	}
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

func (s *Server) errorBody(e *Error) []byte {
	if s.provider == Anthropic {
		return anthropicError(e)
	}
	return openAIError(e)
}

// reply renders a reply turn; n numbers the request, so made-up ids differ
// between requests even when a Repeat turn answers them.
func (s *Server) reply(turn Turn, n int, reqBody []byte) ([]byte, error) {
	var req struct {
		Model string `json:"model"`
	}
	_ = json.Unmarshal(reqBody, &req)
	usage := Usage{Input: 1, Output: 1}
	if turn.Usage != nil {
		usage = *turn.Usage
	} else {
		usage.Input = max(1, len(reqBody)/4)
		n := len(turn.Content) + len(turn.Reasoning)
		for _, c := range turn.ToolCalls {
			n += len(c.Name) + len(c.ArgumentText())
		}
		usage.Output = max(1, n/4)
	}
	if s.provider == Anthropic {
		return anthropicMessage(turn, n, req.Model, usage)
	}
	out, err := openAICompletion(turn, n, req.Model, usage)
	if err != nil || s.tokenStyle == "" {
		return out, err
	}
	return s.tokenReply(out, reqBody)
}

// callID makes a stable, realistic-looking id for call i of the reply to
// request idx.
func callID(prefix string, idx, i, n int) string {
	return prefix + shortHash(fmt.Sprintf("%s/%d/%d", prefix, idx, i), n)
}

const idAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"

func shortHash(seed string, n int) string {
	var b strings.Builder
	for round := 0; b.Len() < n; round++ {
		sum := sha256.Sum256([]byte(fmt.Sprintf("%d:%s", round, seed)))
		for _, c := range sum {
			if b.Len() == n {
				break
			}
			b.WriteByte(idAlphabet[int(c)%len(idAlphabet)])
		}
	}
	return b.String()
}

func fingerprint(seed string) string {
	sum := sha256.Sum256([]byte(seed))
	return hex.EncodeToString(sum[:5])
}

// Reply decodes the answer the server sent to r as a model message; ok is
// false for error answers.
func (r Request) Reply() (msg llm.Message, ok bool, err error) {
	if r.Status != http.StatusOK {
		return llm.Message{}, false, nil
	}
	if r.Provider == Anthropic {
		msg, err = decodeAnthropicReply(r.Response)
	} else {
		msg, err = decodeOpenAIReply(r.Response)
	}
	return msg, err == nil, err
}

// Chat is a request decoded into swerve's provider-neutral shape: the
// messages in the OpenAI chat form (an Anthropic request's system blocks,
// tool_use and tool_result blocks mapped back to system, assistant tool
// calls and tool messages) and the tools as OpenAI function schemas.
type Chat struct {
	Model     string
	Messages  []llm.Message
	Tools     []llm.Tool
	MaxTokens int
	Stop      []string
	// Fields is the whole body, decoded.
	Fields map[string]any
}

// Decode reads the request body.
func (r Request) Decode() (Chat, error) {
	if r.Provider == Anthropic {
		return decodeAnthropicRequest(r.Body)
	}
	return decodeOpenAIRequest(r.Body)
}

// MustDecode is Decode failing the test on error.
func (r Request) MustDecode(t testing.TB) Chat {
	t.Helper()
	c, err := r.Decode()
	if err != nil {
		t.Fatalf("llmtest: decode %s request: %v\n%s", r.Provider, err, r.Body)
	}
	return c
}

// LoadScript reads a JSON array of turns from path. Turns naming a File
// are resolved relative to the script's directory.
func LoadScript(path string) ([]Turn, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var turns []Turn
	if err := json.Unmarshal(b, &turns); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	for i := range turns {
		if f := turns[i].File; f != "" && !filepath.IsAbs(f) {
			turns[i].File = filepath.Join(filepath.Dir(path), f)
		}
	}
	return turns, nil
}
