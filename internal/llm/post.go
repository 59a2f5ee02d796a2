package llm

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
)

// poster sends one JSON request and decodes the JSON reply. The model
// clients use plain HTTP rather than the providers' SDKs: the requests are
// small and fixed, and the SDKs' package initialisation and size (tens of
// megabytes) slowed every start of the binary, including the helper that
// starts in each sandbox.
type poster struct {
	provider string
	client   *http.Client
	url      string
	headers  map[string]string // set on every request
}

// post sends body to p.url. A status of 400 or more is an *APIError (with
// the server's message and Retry-After); otherwise the reply decodes into
// out.
func (p *poster) post(ctx context.Context, body []byte, out any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, p.url, bytes.NewReader(body))
	if err != nil {
		return permanent{err}
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	for k, v := range p.headers {
		req.Header.Set(k, v)
	}
	resp, err := p.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode >= 400 {
		return newAPIError(p.provider, resp)
	}
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return fmt.Errorf("read reply: %w", err)
	}
	if err := json.Unmarshal(data, out); err != nil {
		return fmt.Errorf("decode reply (status %d): %w", resp.StatusCode, err)
	}
	return nil
}

// withExtra marshals v and adds extra's fields to the object (extra wins).
func withExtra(v any, extra map[string]any) ([]byte, error) {
	b, err := json.Marshal(v)
	if err != nil || len(extra) == 0 {
		return b, err
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	for k, x := range extra {
		raw, err := json.Marshal(x)
		if err != nil {
			return nil, fmt.Errorf("extra body field %q: %w", k, err)
		}
		m[k] = raw
	}
	return json.Marshal(m)
}
