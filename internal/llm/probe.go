package llm

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// DefaultProbeTimeout bounds Probe when its context has no deadline.
const DefaultProbeTimeout = 10 * time.Second

// What a Probe found wrong, for errors.Is.
var (
	// ErrUnreachable: nothing answers at the base URL (connection refused,
	// no such host, a timeout).
	ErrUnreachable = errors.New("model endpoint unreachable")
	// ErrUnauthorized: the server refused the key (401, 403).
	ErrUnauthorized = errors.New("model endpoint refused the key")
	// ErrUnknownModel: the server answers but does not serve the model.
	ErrUnknownModel = errors.New("model not served")
)

// ProbeError is a Probe's finding: one line for the user, and its kind.
type ProbeError struct {
	msg  string
	kind error
}

func (e *ProbeError) Error() string { return e.msg }
func (e *ProbeError) Unwrap() error { return e.kind }

// Probe asks the endpoint of model name, once and without retries, whether
// a run could use it: it tells apart an endpoint nothing answers at, a key
// the server refuses and a model it does not serve, each as a *ProbeError
// of one line (wrapping ErrUnreachable, ErrUnauthorized or ErrUnknownModel).
// Offline models (replay/, oracle/) pass without a request.
//
// OpenAI-compatible servers (OpenAI, OpenRouter, vLLM, SGLang, LiteLLM's
// proxy) are asked GET <base>/models; a model missing from a list that
// holds some is unknown. A server without that route (404, 405), or one
// that keeps the list from this key (403), is asked a one-token chat
// completion instead, whose 404 (vLLM's "model does not
// exist") names an unknown model. Anthropic is asked GET /v1/models/<model>.
// Answers that say nothing of the three (a 5xx, a 429, an unreadable list)
// pass: the run's own retries deal with those.
func Probe(ctx context.Context, name string, opts Options) error {
	ep, err := Resolve(name, opts)
	if err != nil {
		return err
	}
	switch ep.Provider {
	case ProviderReplay, ProviderOracle:
		return nil
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, DefaultProbeTimeout)
		defer cancel()
	}
	base := strings.TrimRight(ep.BaseURL, "/")
	headers := map[string]string{}
	if ep.Provider == ProviderAnthropic {
		headers["anthropic-version"] = anthropicVersion
		if ep.apiKey != "" {
			headers["x-api-key"] = ep.apiKey
		}
	} else if ep.apiKey != "" {
		headers["Authorization"] = "Bearer " + ep.apiKey
	}
	for k, v := range opts.Headers {
		headers[k] = v
	}
	p := prober{ep: ep, client: opts.httpClient(), headers: headers}
	if ep.Provider == ProviderAnthropic {
		status, body, err := p.get(ctx, base+"/v1/models/"+url.PathEscape(ep.Model))
		if err != nil {
			return err
		}
		return p.judge(status, body, base)
	}
	status, body, err := p.get(ctx, base+"/models")
	if err != nil {
		return err
	}
	switch {
	case status == http.StatusOK:
		return p.inList(body, base)
	case status == http.StatusNotFound, status == http.StatusMethodNotAllowed, status == http.StatusForbidden:
		// No model list here, or a key scoped away from it (OpenAI's
		// restricted keys): one token of a completion answers instead.
		req, _ := json.Marshal(map[string]any{
			"model":      ep.Model,
			"messages":   []map[string]string{{"role": "user", "content": "ping"}},
			"max_tokens": 1,
		})
		status, body, err = p.do(ctx, http.MethodPost, base+"/chat/completions", req)
		if err != nil {
			return err
		}
	}
	return p.judge(status, body, base)
}

type prober struct {
	ep      Endpoint
	client  *http.Client
	headers map[string]string
}

func (p prober) get(ctx context.Context, u string) (int, []byte, error) {
	return p.do(ctx, http.MethodGet, u, nil)
}

// do sends one request; a transport failure is ErrUnreachable.
func (p prober) do(ctx context.Context, method, u string, body []byte) (int, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, method, u, bytes.NewReader(body))
	if err != nil {
		return 0, nil, fmt.Errorf("llm: model %s: %w", p.ep.Name, err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "application/json")
	for k, v := range p.headers {
		req.Header.Set(k, v)
	}
	resp, err := p.client.Do(req)
	if err != nil {
		return 0, nil, &ProbeError{fmt.Sprintf("model %s: nothing answers at %s: %s (is the server up? the URL comes from %s)",
			p.ep.Name, p.ep.BaseURL, Cause(err), p.urlFrom()), ErrUnreachable}
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	return resp.StatusCode, data, nil
}

// judge reads a status that is not a model list.
func (p prober) judge(status int, body []byte, base string) error {
	if status < 400 {
		return nil
	}
	_, code, msg := parseErrorBody(body)
	detail := strings.TrimSpace(strings.Trim(fmt.Sprintf("%d %s: %s", status, http.StatusText(status), msg), ": "))
	low := strings.ToLower(msg + " " + code)
	switch {
	case status == http.StatusUnauthorized, status == http.StatusForbidden:
		what := "refused the key"
		fix := "check the key"
		switch {
		case p.ep.KeyFrom == "":
			// No key was set; a placeholder went.
			what, fix = "wants a key", "set "+keyVar(p.ep.Provider)
		case p.ep.KeyFrom != "options":
			fix = "check " + p.ep.KeyFrom
		}
		return &ProbeError{fmt.Sprintf("model %s: %s %s (%s): %s", p.ep.Name, base, what, detail, fix), ErrUnauthorized}
	case status == http.StatusNotFound,
		status == http.StatusBadRequest && (strings.Contains(low, "does not exist") || strings.Contains(low, "model_not_found") ||
			strings.Contains(low, "unknown model") || strings.Contains(low, "not a valid model")):
		return &ProbeError{fmt.Sprintf("model %s: %s does not serve model %q (%s)", p.ep.Name, base, p.ep.Model, detail), ErrUnknownModel}
	}
	return nil
}

// inList checks a GET /models answer for the model.
func (p prober) inList(body []byte, base string) error {
	var list struct {
		Data []struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	if json.Unmarshal(body, &list) != nil || len(list.Data) == 0 {
		return nil // not a list we can read: say nothing
	}
	ids := make([]string, 0, len(list.Data))
	for _, m := range list.Data {
		if m.ID == p.ep.Model || strings.Contains(m.ID, "*") {
			// A wildcard route (LiteLLM's "anthropic/*") may serve it.
			return nil
		}
		ids = append(ids, m.ID)
	}
	served := strings.Join(ids, ", ")
	if len(ids) > 5 {
		served = strings.Join(ids[:5], ", ") + fmt.Sprintf(", … %d more", len(ids)-5)
	}
	return &ProbeError{fmt.Sprintf("model %s: %s does not serve model %q (it serves: %s)", p.ep.Name, base, p.ep.Model, served), ErrUnknownModel}
}

// keyVar names the variable that sets the key of provider's requests.
func keyVar(provider string) string {
	switch provider {
	case ProviderHostedVLLM:
		return "HOSTED_VLLM_API_KEY (or OPENAI_API_KEY)"
	case ProviderOpenRouter:
		return "OPENROUTER_API_KEY"
	case ProviderAnthropic:
		return "ANTHROPIC_API_KEY"
	}
	return "OPENAI_API_KEY"
}

func (p prober) urlFrom() string {
	switch p.ep.Provider {
	case ProviderOpenAI, ProviderOpenRouter, ProviderHostedVLLM, ProviderCompatible:
		return "LLM_BASE_URL or the provider's default"
	case ProviderAnthropic:
		return "ANTHROPIC_BASE_URL or the default"
	}
	return "the model's settings"
}

// Cause is the root of a transport error in a few words ("connection
// refused", "no such host", "i/o timeout"); other errors as they are.
func Cause(err error) string {
	if err == nil {
		return ""
	}
	var dns *net.DNSError
	if errors.As(err, &dns) {
		if dns.IsNotFound {
			return "no such host " + dns.Name
		}
		return dns.Error()
	}
	var op *net.OpError
	if errors.As(err, &op) && op.Err != nil {
		s := op.Err.Error()
		if i := strings.LastIndex(s, ": "); i >= 0 {
			s = s[i+2:]
		}
		return s
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return "timed out"
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err.Error()
	}
	return err.Error()
}
