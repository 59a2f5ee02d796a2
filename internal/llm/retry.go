package llm

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// maxRetryAfter caps how long a server's Retry-After can make us wait.
const maxRetryAfter = 5 * time.Minute

// APIError is an error status from a provider's HTTP API.
type APIError struct {
	// Provider is the provider of the model name ("openai", "anthropic", ...).
	Provider   string
	StatusCode int
	// Type and Code are the provider's error type and code, when given.
	Type string
	Code string
	// Message is the provider's explanation (truncated).
	Message string
	// RetryAfter is the wait the server asked for; meaningful when
	// HasRetryAfter is set.
	RetryAfter    time.Duration
	HasRetryAfter bool

	contextWindow bool
}

func (e *APIError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %d %s", e.Provider, e.StatusCode, http.StatusText(e.StatusCode))
	if e.Type != "" || e.Code != "" {
		b.WriteString(" (")
		b.WriteString(strings.Trim(e.Type+" "+e.Code, " "))
		b.WriteString(")")
	}
	if e.Message != "" {
		b.WriteString(": ")
		b.WriteString(e.Message)
	}
	return b.String()
}

// Unwrap makes a context-window overflow match ErrContextWindow.
func (e *APIError) Unwrap() error {
	if e.contextWindow {
		return ErrContextWindow
	}
	return nil
}

// Retryable reports whether the status is worth another attempt.
func (e *APIError) Retryable() bool {
	switch {
	case e.contextWindow:
		return false
	case e.StatusCode == http.StatusRequestTimeout, e.StatusCode == http.StatusConflict,
		e.StatusCode == http.StatusTooManyRequests, e.StatusCode >= 500:
		return true
	}
	return false
}

// newAPIError reads an error response (status >= 400) into an APIError.
func newAPIError(provider string, resp *http.Response) *APIError {
	var body []byte
	if resp.Body != nil {
		body, _ = io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	}
	e := &APIError{Provider: provider, StatusCode: resp.StatusCode}
	e.Type, e.Code, e.Message = parseErrorBody(body)
	e.RetryAfter, e.HasRetryAfter = retryAfter(resp.Header, time.Now())
	e.contextWindow = isContextOverflow(e.StatusCode, e.Code, e.Message)
	return e
}

// parseErrorBody pulls type, code and message out of the error bodies the
// OpenAI-compatible servers and Anthropic send:
//
//	{"error":{"message":..,"type":..,"code":..,"metadata":{"raw":..}}}   OpenAI, OpenRouter, Anthropic
//	{"error":"text"}                                                     some proxies
//	{"object":"error","message":..,"type":..,"code":400}                 older vLLM
//	{"detail":..}                                                        FastAPI servers
//
// Anything else is kept as text.
func parseErrorBody(body []byte) (typ, code, msg string) {
	body = bytes.TrimSpace(body)
	type errObj struct {
		Message  string          `json:"message"`
		Type     string          `json:"type"`
		Code     json.RawMessage `json:"code"`
		Metadata struct {
			Raw json.RawMessage `json:"raw"`
		} `json:"metadata"`
	}
	var top struct {
		errObj
		Error  json.RawMessage `json:"error"`
		Detail json.RawMessage `json:"detail"`
	}
	if json.Unmarshal(body, &top) != nil {
		return "", "", truncate(string(body), 1000)
	}
	obj := top.errObj
	if len(top.Error) > 0 && top.Error[0] == '{' {
		var inner errObj
		if json.Unmarshal(top.Error, &inner) == nil {
			obj = inner
		}
	} else if s, ok := jsonString(top.Error); ok && s != "" {
		obj.Message = s
	}
	msg = obj.Message
	if raw := obj.Metadata.Raw; len(raw) > 0 && string(raw) != "null" {
		// OpenRouter puts the upstream provider's error here.
		if s, ok := jsonString(raw); ok {
			msg += " (upstream: " + s + ")"
		} else {
			msg += " (upstream: " + string(raw) + ")"
		}
	}
	if msg == "" && len(top.Detail) > 0 {
		if s, ok := jsonString(top.Detail); ok {
			msg = s
		} else {
			msg = string(top.Detail)
		}
	}
	if msg == "" && obj.Type == "" && len(obj.Code) == 0 {
		msg = string(body)
	}
	code = string(obj.Code)
	if s, ok := jsonString(obj.Code); ok {
		code = s
	} else if code == "null" {
		code = ""
	}
	return obj.Type, code, truncate(msg, 1000)
}

func jsonString(raw json.RawMessage) (string, bool) {
	if len(raw) == 0 || raw[0] != '"' {
		return "", false
	}
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return "", false
	}
	return s, true
}

func truncate(s string, n int) string {
	s = strings.TrimSpace(s)
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// contextOverflowPhrases are what servers say when the prompt does not fit:
// OpenAI, vLLM, SGLang, OpenRouter ("maximum context length", "context
// length"), Anthropic ("prompt is too long", "exceed context limit").
var contextOverflowPhrases = []string{
	"context length",
	"context_length",
	"maximum context",
	"context window",
	"context limit",
	"prompt is too long",
	"too many tokens",
	"input is too long",
}

func isContextOverflow(status int, code, msg string) bool {
	switch status {
	case http.StatusBadRequest, http.StatusRequestEntityTooLarge, http.StatusUnprocessableEntity:
	default:
		return false
	}
	if code == "context_length_exceeded" {
		return true
	}
	low := strings.ToLower(msg)
	for _, p := range contextOverflowPhrases {
		if strings.Contains(low, p) {
			return true
		}
	}
	return false
}

// retryAfter reads retry-after-ms (milliseconds) or Retry-After (seconds or
// an HTTP date).
func retryAfter(h http.Header, now time.Time) (time.Duration, bool) {
	if v := strings.TrimSpace(h.Get("Retry-After-Ms")); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil && ms >= 0 {
			return min(time.Duration(ms*float64(time.Millisecond)), maxRetryAfter), true
		}
	}
	if v := strings.TrimSpace(h.Get("Retry-After")); v != "" {
		if s, err := strconv.ParseFloat(v, 64); err == nil && s >= 0 {
			return min(time.Duration(s*float64(time.Second)), maxRetryAfter), true
		}
		if t, err := http.ParseTime(v); err == nil {
			return min(max(t.Sub(now), 0), maxRetryAfter), true
		}
	}
	return 0, false
}

// permanent marks an error that retrying cannot fix.
type permanent struct{ err error }

func (p permanent) Error() string { return p.err.Error() }
func (p permanent) Unwrap() error { return p.err }

// policy is the retry loop shared by the HTTP clients.
type policy struct {
	maxRetries int
	timeout    time.Duration
	baseDelay  time.Duration
	maxDelay   time.Duration
	sleep      func(ctx context.Context, d time.Duration) error
	onRetry    func(Retry)
}

// Retry describes one retry of a model call, for Options.OnRetry.
type Retry struct {
	// Model is the model's name as given.
	Model string
	// Attempt is the number of the attempt about to start (2 for the
	// first retry); Attempts is how many the call may make in all.
	Attempt  int
	Attempts int
	// Wait is the pause before it.
	Wait time.Duration
	// Err is why the previous attempt failed.
	Err error
}

// String is the retry as one line: "retry 3/7 in 4s: connection refused".
func (r Retry) String() string {
	return fmt.Sprintf("retry %d/%d in %s: %s", r.Attempt, r.Attempts, r.Wait.Round(100*time.Millisecond), Cause(r.Err))
}

// do runs attempt until it succeeds, fails for good, or runs out of
// retries. Each attempt gets its own timeout. retries is the number of
// failed attempts before the last one.
func (p policy) do(ctx context.Context, label string, attempt func(ctx context.Context) error) (retries int, err error) {
	for n := 0; ; n++ {
		actx, cancel := context.WithTimeout(ctx, p.timeout)
		err = attempt(actx)
		timedOut := errors.Is(actx.Err(), context.DeadlineExceeded)
		cancel()
		if err == nil {
			return n, nil
		}
		if ctx.Err() != nil {
			return n, fmt.Errorf("%s: %w", label, context.Cause(ctx))
		}
		var apiErr *APIError
		isAPI := errors.As(err, &apiErr)
		if timedOut && !isAPI {
			err = fmt.Errorf("attempt timed out after %s: %w", p.timeout, err)
		}
		var perm permanent
		if errors.As(err, &perm) || (isAPI && !apiErr.Retryable()) {
			return n, fmt.Errorf("%s: %w", label, err)
		}
		if n >= p.maxRetries {
			return n, fmt.Errorf("%s: giving up after %d attempts: %w", label, n+1, err)
		}
		wait := p.backoff(n)
		if isAPI && apiErr.HasRetryAfter {
			wait = apiErr.RetryAfter
		}
		if p.onRetry != nil {
			p.onRetry(Retry{Model: label, Attempt: n + 2, Attempts: p.maxRetries + 1, Wait: wait, Err: err})
		}
		if serr := p.sleep(ctx, wait); serr != nil {
			return n, fmt.Errorf("%s: %w (last error: %v)", label, serr, err)
		}
	}
}

// backoff is the full-jitter wait before retry n (0-based).
func (p policy) backoff(n int) time.Duration {
	ceil := p.baseDelay
	for i := 0; i < n && ceil < p.maxDelay; i++ {
		ceil *= 2
	}
	ceil = min(ceil, p.maxDelay)
	if ceil <= 0 {
		return 0
	}
	return rand.N(ceil)
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return context.Cause(ctx)
	case <-t.C:
		return nil
	}
}
