package e2b

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/swerve-dev/swerve/internal/sandbox"
)

// Errors of the control plane beyond the sandbox package's sentinels.
var (
	// ErrUnauthorized: the API key is missing or refused (HTTP 401/403).
	ErrUnauthorized = errors.New("unauthorized")
	// ErrRateLimited: the control plane refused for now (HTTP 429), also
	// after the retries.
	ErrRateLimited = errors.New("rate limited")
)

// StatusError is a refusal of the control plane or of envd: the HTTP status
// and the message of its error body. It unwraps to ErrUnauthorized,
// sandbox.ErrNotFound, ErrRateLimited or sandbox.ErrUnavailable by status.
type StatusError struct {
	Op      string // "create sandbox from template django-123", ...
	Status  int
	Message string
}

func (e *StatusError) Error() string {
	msg := e.Message
	if msg == "" {
		msg = http.StatusText(e.Status)
	}
	hint := ""
	switch e.Status {
	case http.StatusUnauthorized, http.StatusForbidden:
		hint = " (check E2B_API_KEY)"
	}
	return fmt.Sprintf("e2b: %s: HTTP %d: %s%s", e.Op, e.Status, msg, hint)
}

func (e *StatusError) Unwrap() error {
	switch {
	case e.Status == http.StatusUnauthorized || e.Status == http.StatusForbidden:
		return ErrUnauthorized
	case e.Status == http.StatusNotFound:
		return sandbox.ErrNotFound
	case e.Status == http.StatusTooManyRequests:
		return ErrRateLimited
	case e.Status >= 500:
		return sandbox.ErrUnavailable
	}
	return nil
}

// API is a client of E2B's REST control plane (spec/openapi.yml of
// e2b-dev/infra): create, list, set the timeout of and kill sandboxes.
type API struct {
	// URL is the control plane, e.g. https://api.e2b.app.
	URL string
	// Key is sent as X-API-Key.
	Key string
	// HTTP is the client to use; nil means http.DefaultClient.
	HTTP *http.Client
	// Retries is how many times a request refused with 429 or 503 is tried
	// again, waiting Retry-After (or Backoff, doubling) in between.
	Retries int
	Backoff time.Duration
}

// CreateRequest is the body of POST /sandboxes (NewSandbox).
type CreateRequest struct {
	TemplateID          string            `json:"templateID"`
	Timeout             int               `json:"timeout,omitempty"` // seconds
	Metadata            map[string]string `json:"metadata,omitempty"`
	EnvVars             map[string]string `json:"envVars,omitempty"`
	AllowInternetAccess *bool             `json:"allow_internet_access,omitempty"`
	Secure              bool              `json:"secure,omitempty"`
}

// Created is the answer to a create (Sandbox).
type Created struct {
	TemplateID         string  `json:"templateID"`
	SandboxID          string  `json:"sandboxID"`
	ClientID           string  `json:"clientID"`
	EnvdVersion        string  `json:"envdVersion"`
	EnvdAccessToken    string  `json:"envdAccessToken,omitempty"`
	TrafficAccessToken *string `json:"trafficAccessToken,omitempty"`
	Domain             *string `json:"domain,omitempty"`
}

// Listed is one sandbox of a list (ListedSandbox).
type Listed struct {
	TemplateID  string            `json:"templateID"`
	Alias       string            `json:"alias,omitempty"`
	SandboxID   string            `json:"sandboxID"`
	ClientID    string            `json:"clientID"`
	StartedAt   time.Time         `json:"startedAt"`
	EndAt       time.Time         `json:"endAt"`
	CPUCount    int               `json:"cpuCount"`
	MemoryMB    int               `json:"memoryMB"`
	DiskSizeMB  int               `json:"diskSizeMB"`
	Metadata    map[string]string `json:"metadata,omitempty"`
	State       string            `json:"state"`
	EnvdVersion string            `json:"envdVersion"`
}

// Create starts a sandbox from a template.
func (a *API) Create(ctx context.Context, req CreateRequest) (Created, error) {
	var out Created
	err := a.do(ctx, "create sandbox from template "+req.TemplateID, http.MethodPost, "/sandboxes", req, &out, http.StatusCreated, http.StatusOK)
	return out, err
}

// SetTimeout makes the sandbox expire d from now.
func (a *API) SetTimeout(ctx context.Context, id string, d time.Duration) error {
	body := map[string]int{"timeout": int(d.Round(time.Second) / time.Second)}
	return a.do(ctx, "set timeout of sandbox "+id, http.MethodPost, "/sandboxes/"+url.PathEscape(id)+"/timeout", body, nil, http.StatusNoContent, http.StatusOK)
}

// Kill stops a sandbox; one already gone is sandbox.ErrNotFound.
func (a *API) Kill(ctx context.Context, id string) error {
	return a.do(ctx, "kill sandbox "+id, http.MethodDelete, "/sandboxes/"+url.PathEscape(id), nil, nil, http.StatusNoContent, http.StatusOK)
}

// List lists the running sandboxes whose metadata has every key and value
// of match (all of them when match is empty), following X-Next-Token pages.
func (a *API) List(ctx context.Context, match map[string]string) ([]Listed, error) {
	q := url.Values{}
	if len(match) > 0 {
		q.Set("metadata", EncodeMetadataQuery(match))
	}
	q.Set("state", "running")
	var all []Listed
	for range 1000 {
		var page []Listed
		h, err := a.doHeader(ctx, "list sandboxes", http.MethodGet, "/v2/sandboxes?"+q.Encode(), nil, &page, http.StatusOK)
		if err != nil {
			return nil, err
		}
		all = append(all, page...)
		next := h.Get("X-Next-Token")
		if next == "" || len(page) == 0 {
			break
		}
		q.Set("nextToken", next)
	}
	return all, nil
}

// EncodeMetadataQuery writes a metadata filter the way the API reads it:
// key=value pairs joined by &, each key and value URL-encoded, sorted.
func EncodeMetadataQuery(m map[string]string) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = url.QueryEscape(k) + "=" + url.QueryEscape(m[k])
	}
	return strings.Join(parts, "&")
}

// DecodeMetadataQuery reads what EncodeMetadataQuery wrote.
func DecodeMetadataQuery(s string) (map[string]string, error) {
	out := map[string]string{}
	if s == "" {
		return out, nil
	}
	for _, part := range strings.Split(s, "&") {
		k, v, _ := strings.Cut(part, "=")
		dk, err := url.QueryUnescape(k)
		if err != nil {
			return nil, fmt.Errorf("metadata key %q: %w", k, err)
		}
		dv, err := url.QueryUnescape(v)
		if err != nil {
			return nil, fmt.Errorf("metadata value %q: %w", v, err)
		}
		out[dk] = dv
	}
	return out, nil
}

func (a *API) do(ctx context.Context, op, method, path string, in, out any, ok ...int) error {
	_, err := a.doHeader(ctx, op, method, path, in, out, ok...)
	return err
}

func (a *API) doHeader(ctx context.Context, op, method, path string, in, out any, ok ...int) (http.Header, error) {
	var body []byte
	if in != nil {
		var err error
		if body, err = json.Marshal(in); err != nil {
			return nil, fmt.Errorf("e2b: %s: %w", op, err)
		}
	}
	hc := a.HTTP
	if hc == nil {
		hc = http.DefaultClient
	}
	backoff := a.Backoff
	if backoff <= 0 {
		backoff = time.Second
	}
	for attempt := 0; ; attempt++ {
		req, err := http.NewRequestWithContext(ctx, method, strings.TrimRight(a.URL, "/")+path, bytes.NewReader(body))
		if err != nil {
			return nil, fmt.Errorf("e2b: %s: %w", op, err)
		}
		req.Header.Set("X-API-Key", a.Key)
		if in != nil {
			req.Header.Set("Content-Type", "application/json")
		}
		resp, err := hc.Do(req)
		if err != nil {
			if ctx.Err() != nil {
				return nil, fmt.Errorf("e2b: %s: %w", op, ctx.Err())
			}
			return nil, fmt.Errorf("e2b: %s: %w: %w", op, sandbox.ErrUnavailable, err)
		}
		data, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
		resp.Body.Close()
		if err != nil {
			return nil, fmt.Errorf("e2b: %s: read answer: %w", op, err)
		}
		for _, code := range ok {
			if resp.StatusCode == code {
				if out != nil && len(data) > 0 {
					if err := json.Unmarshal(data, out); err != nil {
						return nil, fmt.Errorf("e2b: %s: bad answer: %w", op, err)
					}
				}
				return resp.Header, nil
			}
		}
		serr := &StatusError{Op: op, Status: resp.StatusCode, Message: errorMessage(data)}
		retryable := resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode == http.StatusServiceUnavailable
		if !retryable || attempt >= a.Retries {
			return nil, serr
		}
		wait := backoff << attempt
		if s, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil && s >= 0 {
			wait = time.Duration(s) * time.Second
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("%w (%w)", serr, ctx.Err())
		case <-time.After(wait):
		}
	}
}

// errorMessage takes the message out of an Error body ({code, message}),
// or the body itself, cut short.
func errorMessage(data []byte) string {
	var e struct {
		Message string `json:"message"`
	}
	if json.Unmarshal(data, &e) == nil && e.Message != "" {
		return e.Message
	}
	s := strings.TrimSpace(string(data))
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}
