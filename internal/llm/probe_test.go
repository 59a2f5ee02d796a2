package llm

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// TestProbe: one cheap request tells apart an endpoint nothing answers at,
// a refused key and a model the server does not serve, in one line each;
// what it cannot judge passes.
func TestProbe(t *testing.T) {
	t.Parallel()
	const (
		vllmList    = `{"object":"list","data":[{"id":"Qwen/Qwen3-8B","object":"model"}]}`
		vllmMissing = `{"object":"error","message":"The model ` + "`nope`" + ` does not exist.","type":"NotFoundError","param":null,"code":404}`
		openAI401   = `{"error":{"message":"Incorrect API key provided: sk-x.","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}`
	)
	type route struct {
		status int
		body   string
	}
	tests := []struct {
		name    string
		model   string
		routes  map[string]route // "METHOD /path" -> answer; others 404
		want    error
		msg     string
		anthrop bool
	}{
		{"listed", "hosted_vllm/Qwen/Qwen3-8B", map[string]route{"GET /v1/models": {200, vllmList}}, nil, "", false},
		{"bare name listed", "Qwen/Qwen3-8B", map[string]route{"GET /v1/models": {200, vllmList}}, nil, "", false},
		{"not in the list", "hosted_vllm/nope", map[string]route{"GET /v1/models": {200, vllmList}}, ErrUnknownModel, `does not serve model "nope" (it serves: Qwen/Qwen3-8B)`, false},
		{"401 on the list", "openai/gpt-x", map[string]route{"GET /v1/models": {401, openAI401}}, ErrUnauthorized, "refused the key (401 Unauthorized: Incorrect API key provided: sk-x.): check OPENAI_API_KEY", false},
		{"403 on the list and the completion", "openai/gpt-x", map[string]route{"GET /v1/models": {403, `{"error":"forbidden"}`}, "POST /v1/chat/completions": {403, `{"error":"forbidden"}`}}, ErrUnauthorized, "refused the key (403 Forbidden", false},
		{"a key kept from the list that completes", "openai/gpt-x", map[string]route{"GET /v1/models": {403, `{"error":"insufficient permissions"}`}, "POST /v1/chat/completions": {200, `{"choices":[]}`}}, nil, "", false},
		{"no list, completion answers", "m", map[string]route{"POST /v1/chat/completions": {200, `{"choices":[]}`}}, nil, "", false},
		{"no list, completion 404", "nope", map[string]route{"POST /v1/chat/completions": {404, vllmMissing}}, ErrUnknownModel, "does not serve model \"nope\" (404 Not Found: The model `nope` does not exist.)", false},
		{"no list, completion 400 does not exist", "nope", map[string]route{"POST /v1/chat/completions": {400, `{"error":{"message":"model nope does not exist"}}`}}, ErrUnknownModel, "does not serve", false},
		{"no list, completion 401", "m", map[string]route{"POST /v1/chat/completions": {401, openAI401}}, ErrUnauthorized, "refused the key", false},
		{"no key set", "hosted_vllm/m", map[string]route{"GET /v1/models": {401, openAI401}}, ErrUnauthorized, "wants a key (401 Unauthorized: Incorrect API key provided: sk-x.): set HOSTED_VLLM_API_KEY (or OPENAI_API_KEY)", false},
		{"a wildcard route passes", "openai/anthropic/claude-x", map[string]route{"GET /v1/models": {200, `{"data":[{"id":"gpt-4o"},{"id":"anthropic/*"}]}`}}, nil, "", false},
		{"a list it cannot read passes", "m", map[string]route{"GET /v1/models": {200, `not json`}}, nil, "", false},
		{"a 5xx passes", "m", map[string]route{"GET /v1/models": {503, `busy`}}, nil, "", false},
		{"anthropic known", "anthropic/claude-x", map[string]route{"GET /v1/models/claude-x": {200, `{"id":"claude-x"}`}}, nil, "", true},
		{"anthropic unknown", "anthropic/claude-nope", nil, ErrUnknownModel, `does not serve model "claude-nope"`, true},
		{"anthropic 401", "anthropic/claude-x", map[string]route{"GET /v1/models/claude-x": {401, `{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}`}}, ErrUnauthorized, "check ANTHROPIC_API_KEY", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var auth atomic.Value
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				auth.Store(r.Header.Get("Authorization") + r.Header.Get("X-Api-Key"))
				if a, ok := tt.routes[r.Method+" "+r.URL.Path]; ok {
					w.WriteHeader(a.status)
					w.Write([]byte(a.body))
					return
				}
				w.WriteHeader(http.StatusNotFound)
				w.Write([]byte(`{"detail":"Not Found"}`))
			}))
			defer srv.Close()
			env := map[string]string{"LLM_BASE_URL": srv.URL + "/v1", "OPENAI_API_KEY": "sk-x", "ANTHROPIC_API_KEY": "ak-x"}
			if tt.anthrop {
				env["ANTHROPIC_BASE_URL"] = srv.URL
			}
			if tt.name == "no key set" {
				delete(env, "OPENAI_API_KEY")
			}
			err := Probe(context.Background(), tt.model, Options{Getenv: func(k string) string { return env[k] }})
			if !errors.Is(err, tt.want) || (tt.want == nil) != (err == nil) {
				t.Fatalf("Probe(%s) = %v, want %v", tt.model, err, tt.want)
			}
			if err != nil && (!strings.Contains(err.Error(), tt.msg) || strings.Contains(err.Error(), "\n")) {
				t.Errorf("Probe(%s) = %q, want one line with %q", tt.model, err, tt.msg)
			}
			if a, _ := auth.Load().(string); a == "" {
				t.Errorf("Probe(%s) sent no key", tt.model)
			}
		})
	}
}

// TestProbeUnreachable: a refused connection and a host that does not
// resolve are ErrUnreachable at once, naming the URL; offline models ask
// nothing.
func TestProbeUnreachable(t *testing.T) {
	t.Parallel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := "http://" + l.Addr().String() + "/v1"
	l.Close()
	for _, base := range []string{dead, "http://no-such-host.invalid/v1"} {
		start := time.Now()
		err := Probe(context.Background(), "hosted_vllm/m", Options{BaseURL: base})
		if !errors.Is(err, ErrUnreachable) || !strings.Contains(err.Error(), base) || strings.Contains(err.Error(), "\n") {
			t.Errorf("Probe at %s = %v; want one line, ErrUnreachable, naming the URL", base, err)
		}
		if d := time.Since(start); d > 5*time.Second {
			t.Errorf("Probe at %s took %s", base, d)
		}
		t.Logf("%s: %s: %v", base, time.Since(start).Round(time.Millisecond), err)
	}
	for _, name := range []string{"oracle/gold", "replay/whatever.json"} {
		if err := Probe(context.Background(), name, Options{BaseURL: dead}); err != nil {
			t.Errorf("Probe(%s) = %v; offline models ask nothing", name, err)
		}
	}
}

// TestRetryHook: every retry is reported before its wait, numbered among
// the attempts, with the cause in a few words.
func TestRetryHook(t *testing.T) {
	t.Parallel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := "http://" + l.Addr().String() + "/v1"
	l.Close()
	var got []string
	c, err := New("hosted_vllm/m", Options{
		BaseURL: dead, MaxRetries: 2,
		sleep:   func(context.Context, time.Duration) error { return nil },
		OnRetry: func(r Retry) { got = append(got, r.String()) },
	})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Complete(context.Background(), Request{Messages: []Message{{Role: RoleUser, Content: "hi"}}})
	if err == nil || !strings.Contains(err.Error(), "giving up after 3 attempts") {
		t.Fatalf("Complete = %v", err)
	}
	if len(got) != 2 || !strings.HasPrefix(got[0], "retry 2/3 in ") || !strings.HasSuffix(got[0], ": connection refused") || !strings.HasPrefix(got[1], "retry 3/3 in ") {
		t.Errorf("retries reported: %q", got)
	}
}
