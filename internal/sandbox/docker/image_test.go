package docker

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/moby/moby/client"

	"github.com/swerve-dev/swerve/internal/sandbox"
)

// fakeEngine answers the few Engine API calls ensureImage makes: the image
// is absent, and each pull attempt gets the next scripted answer.
type fakeEngine struct {
	mu    sync.Mutex
	pulls []func() *http.Response
	n     int
}

func (f *fakeEngine) RoundTrip(r *http.Request) (*http.Response, error) {
	resp := func(code int, body string) *http.Response {
		return &http.Response{StatusCode: code, Header: http.Header{"Content-Type": {"application/json"}, "Api-Version": {"1.41"}}, Body: io.NopCloser(strings.NewReader(body)), Request: r}
	}
	switch {
	case strings.HasSuffix(r.URL.Path, "/_ping"):
		return resp(200, "OK"), nil
	case strings.Contains(r.URL.Path, "/images/") && strings.HasSuffix(r.URL.Path, "/json"):
		return resp(404, `{"message":"No such image: x"}`), nil
	case strings.HasSuffix(r.URL.Path, "/images/create"):
		f.mu.Lock()
		defer f.mu.Unlock()
		f.n++
		if f.n > len(f.pulls) {
			return resp(500, `{"message":"unexpected extra pull"}`), nil
		}
		out := f.pulls[f.n-1]()
		out.Request = r
		return out, nil
	}
	return resp(404, `{"message":"not faked: `+r.URL.Path+`"}`), nil
}

func jsonResp(code int, body string) func() *http.Response {
	return func() *http.Response {
		return &http.Response{StatusCode: code, Header: http.Header{"Content-Type": {"application/json"}}, Body: io.NopCloser(strings.NewReader(body))}
	}
}

func fakeBackend(t *testing.T, f *fakeEngine) *Backend {
	t.Helper()
	cli, err := client.New(client.WithHost("tcp://fake.invalid:2375"), client.WithHTTPClient(&http.Client{Transport: f}), client.WithAPIVersion("1.41"))
	if err != nil {
		t.Fatal(err)
	}
	old := pullBaseDelay
	pullBaseDelay = 10 * time.Millisecond
	t.Cleanup(func() { pullBaseDelay = old })
	return &Backend{cli: cli}
}

const rateLimitBody = `{"message":"toomanyrequests: You have reached your pull rate limit."}`

func TestPullRetriesRateLimit(t *testing.T) {
	f := &fakeEngine{pulls: []func() *http.Response{
		jsonResp(500, rateLimitBody),
		// A rate limit can also arrive inside the progress stream.
		jsonResp(200, `{"status":"Pulling from swebench/x"}`+"\n"+`{"errorDetail":{"message":"toomanyrequests: slow down"},"error":"toomanyrequests: slow down"}`+"\n"),
		jsonResp(200, `{"status":"Pulling from swebench/x","id":"latest"}`+"\n"+`{"status":"Downloading","id":"abc","progressDetail":{"current":1,"total":2}}`+"\n"+`{"status":"Downloading","id":"abc","progressDetail":{"current":2,"total":2}}`+"\n"+`{"status":"Pull complete","id":"abc"}`+"\n"),
	}}
	b := fakeBackend(t, f)
	var progress bytes.Buffer
	if _, err := b.ensureImage(context.Background(), "swebench/x:latest", sandbox.PullMissing, &progress); err != nil {
		t.Fatalf("ensureImage: %v", err)
	}
	if f.n != 3 {
		t.Errorf("%d pull attempts, want 3", f.n)
	}
	out := progress.String()
	if strings.Count(out, "rate limit, retrying") != 2 || strings.Count(out, "abc Downloading") != 1 || !strings.Contains(out, "abc Pull complete") {
		t.Errorf("progress:\n%s\nwant two retry notes and one line per layer status", out)
	}
}

func TestPullFailsClearly(t *testing.T) {
	tests := []struct {
		name   string
		pulls  []func() *http.Response
		policy string
		want   []string
		is     error
		tries  int
	}{
		{"not in the registry", []func() *http.Response{jsonResp(404, `{"message":"pull access denied for swebench/x, repository does not exist"}`)}, sandbox.PullMissing,
			[]string{"swebench/x:latest", "could not be pulled", "repository does not exist", "docker pull swebench/x:latest"}, sandbox.ErrNotFound, 1},
		{"rate limited every time", []func() *http.Response{jsonResp(500, rateLimitBody), jsonResp(500, rateLimitBody), jsonResp(500, rateLimitBody), jsonResp(500, rateLimitBody), jsonResp(500, rateLimitBody), jsonResp(500, rateLimitBody)}, sandbox.PullMissing,
			[]string{"could not be pulled", "toomanyrequests"}, sandbox.ErrNotFound, pullAttempts},
		// A registry that cannot be reached (an offline machine): the
		// image is missing all the same, an image error, not a box one.
		{"registry unreachable", []func() *http.Response{jsonResp(500, `{"message":"Get \"https://registry-1.docker.io/v2/\": dial tcp: lookup registry-1.docker.io: no such host"}`)}, sandbox.PullMissing,
			[]string{"could not be pulled", "no such host", "docker pull swebench/x:latest"}, sandbox.ErrNotFound, 1},
		{"never", nil, sandbox.PullNever, []string{"--pull is never", "docker build -t swebench/x:latest"}, sandbox.ErrNotFound, 0},
		{"bad policy", nil, "sometimes", []string{`pull policy "sometimes"`}, nil, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := &fakeEngine{pulls: tt.pulls}
			b := fakeBackend(t, f)
			_, err := b.ensureImage(context.Background(), "swebench/x:latest", tt.policy, io.Discard)
			if err == nil {
				t.Fatal("ensureImage succeeded")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
			if tt.is != nil && !errors.Is(err, tt.is) {
				t.Errorf("error %v is not %v", err, tt.is)
			}
			if f.n != tt.tries {
				t.Errorf("%d pull attempts, want %d", f.n, tt.tries)
			}
		})
	}
}
