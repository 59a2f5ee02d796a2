package e2b

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/swerve-dev/swerve/internal/sandbox"
	"github.com/swerve-dev/swerve/internal/shim"
)

func TestStatusErrorKinds(t *testing.T) {
	for _, tc := range []struct {
		status int
		want   error
		text   string
	}{
		{401, ErrUnauthorized, "check E2B_API_KEY"},
		{403, ErrUnauthorized, "check E2B_API_KEY"},
		{404, sandbox.ErrNotFound, "HTTP 404"},
		{429, ErrRateLimited, "HTTP 429"},
		{502, sandbox.ErrUnavailable, "HTTP 502"},
	} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(tc.status)
			_, _ = w.Write([]byte(`{"code":0,"message":"said no"}`))
		}))
		api := &API{URL: srv.URL, Key: "k", Retries: 1, Backoff: time.Millisecond}
		_, err := api.Create(context.Background(), CreateRequest{TemplateID: "tpl"})
		srv.Close()
		if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.text) || !strings.Contains(err.Error(), "said no") || !strings.Contains(err.Error(), "template tpl") {
			t.Errorf("HTTP %d: got %v, want %v with %q", tc.status, err, tc.want, tc.text)
		}
	}
}

func TestRetryOn429(t *testing.T) {
	var calls int
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls++
		if calls < 3 {
			w.Header().Set("Retry-After", "0")
			w.WriteHeader(429)
			return
		}
		if r.Header.Get("X-API-Key") != "k" {
			t.Errorf("X-API-Key %q", r.Header.Get("X-API-Key"))
		}
		w.WriteHeader(201)
		_, _ = w.Write([]byte(`{"sandboxID":"s1","templateID":"tpl","clientID":"c","envdVersion":"0.6.13","envdAccessToken":"tok"}`))
	}))
	defer srv.Close()
	api := &API{URL: srv.URL, Key: "k", Retries: 3, Backoff: time.Millisecond}
	got, err := api.Create(context.Background(), CreateRequest{TemplateID: "tpl"})
	if err != nil || got.SandboxID != "s1" || got.EnvdAccessToken != "tok" || calls != 3 {
		t.Fatalf("got %+v, %v after %d calls", got, err, calls)
	}
}

func TestTemplates(t *testing.T) {
	m, err := ParseTemplateMap("m.yaml", []byte("swebench/sweb.eval.x86_64.django_1776_django-11099:latest: swe-11099\nplain: tpl-plain\n"))
	if err != nil {
		t.Fatal(err)
	}
	mj, err := ParseTemplateMap("m.json", []byte(`{"plain": "tpl-plain", "swebench/sweb.eval.x86_64.django_1776_django-11099:latest": "swe-11099"}`))
	if err != nil || len(mj) != 2 || mj["plain"] != m["plain"] {
		t.Fatalf("json map %v, %v", mj, err)
	}
	if _, err := ParseTemplateMap("bad.yaml", []byte("a: [1]\n")); err == nil || !strings.Contains(err.Error(), `image "a"`) {
		t.Errorf("bad map: %v", err)
	}
	for _, tc := range []struct {
		tpl         Templates
		image, task string
		want, err   string
	}{
		{Templates{Map: m}, "swebench/sweb.eval.x86_64.django_1776_django-11099:latest", "django__django-11099", "swe-11099", ""},
		{Templates{Map: m}, "swebench/sweb.eval.x86_64.django_1776_django-11099", "", "swe-11099", ""},
		{Templates{Map: m}, "plain:latest", "", "tpl-plain", ""},
		{Templates{Map: m, Rule: "swe-{instance_id}"}, "other:1", "django__django-1", "swe-django__django-1", ""},
		{Templates{Rule: "{image}"}, "img:2", "", "img:2", ""},
		{Templates{Rule: "x-{instance_id}"}, "img:2", "", "", "needs the task's instance_id"},
		{Templates{Map: m, Source: "m.yaml"}, "other:1", "t-1", "", "task t-1: no template for image other:1: add it to m.yaml"},
		{Templates{}, "other:1", "", "", "give --e2b_template_map FILE or --e2b_template RULE"},
	} {
		got, err := tc.tpl.Resolve(tc.image, tc.task)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("Resolve(%s, %s): %v, want error with %q", tc.image, tc.task, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("Resolve(%s, %s) = %q, %v; want %q", tc.image, tc.task, got, err, tc.want)
		}
	}
}

func TestMissingKey(t *testing.T) {
	_, err := New(context.Background(), Config{})
	if err == nil || !strings.Contains(err.Error(), "E2B_API_KEY is not set") {
		t.Fatalf("got %v", err)
	}
	if _, err := parseTimeout("soon"); err == nil || !strings.Contains(err.Error(), "--e2b_timeout") {
		t.Errorf("bad timeout: %v", err)
	}
}

func TestMetadataQuery(t *testing.T) {
	m := map[string]string{"swerve.run": "a b&c", "k": "v=1"}
	got, err := DecodeMetadataQuery(EncodeMetadataQuery(m))
	if err != nil || len(got) != 2 || got["swerve.run"] != "a b&c" || got["k"] != "v=1" {
		t.Fatalf("round trip: %v, %v", got, err)
	}
}

// fakeE2B is an httptest stand-in for the control plane and envd of one
// sandbox. Its envd runs swerve's helper protocol in process (a
// shim.Server over pipes) instead of starting a program.
type fakeE2B struct {
	t        *testing.T
	mu       sync.Mutex
	killed   bool
	timeouts int
	meta     map[string]string
	stdin    *io.PipeWriter
	cut      chan struct{} // closed: the sandbox vanishes mid-stream
}

func (f *fakeE2B) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("E2b-Sandbox-Id") != "" {
		if r.Header.Get("X-Access-Token") != "tok" {
			http.Error(w, `{"code":401,"message":"bad token"}`, 401)
			return
		}
		f.envd(w, r)
		return
	}
	if r.Header.Get("X-API-Key") != "key" {
		w.WriteHeader(401)
		_, _ = w.Write([]byte(`{"code":401,"message":"Invalid API key"}`))
		return
	}
	switch {
	case r.Method == "POST" && r.URL.Path == "/sandboxes":
		var req CreateRequest
		_ = json.NewDecoder(r.Body).Decode(&req)
		if req.TemplateID != "tpl" {
			w.WriteHeader(404)
			_, _ = w.Write([]byte(`{"code":404,"message":"template '` + req.TemplateID + `' not found"}`))
			return
		}
		f.mu.Lock()
		f.meta = req.Metadata
		f.mu.Unlock()
		w.WriteHeader(201)
		_, _ = w.Write([]byte(`{"sandboxID":"sb1","templateID":"tpl","clientID":"c","envdVersion":"0.6.13","envdAccessToken":"tok"}`))
	case r.Method == "POST" && r.URL.Path == "/sandboxes/sb1/timeout":
		f.mu.Lock()
		f.timeouts++
		f.mu.Unlock()
		w.WriteHeader(204)
	case r.Method == "DELETE" && r.URL.Path == "/sandboxes/sb1":
		f.mu.Lock()
		f.killed = true
		f.mu.Unlock()
		w.WriteHeader(204)
	case r.Method == "GET" && r.URL.Path == "/v2/sandboxes":
		f.mu.Lock()
		meta, killed := f.meta, f.killed
		f.mu.Unlock()
		if killed {
			_, _ = w.Write([]byte(`[]`))
			return
		}
		b, _ := json.Marshal([]Listed{{SandboxID: "sb1", TemplateID: "tpl", Metadata: meta, State: "running"}})
		_, _ = w.Write(b)
	default:
		w.WriteHeader(404)
	}
}

func (f *fakeE2B) envd(w http.ResponseWriter, r *http.Request) {
	switch r.URL.Path {
	case "/health":
		w.WriteHeader(204)
	case "/files":
		_, _, err := r.FormFile("file")
		if err != nil || r.URL.Query().Get("path") != shim.InBoxPath {
			w.WriteHeader(400)
			return
		}
		_, _ = w.Write([]byte(`[{"name":"swerve","path":"/.swerve/swerve","type":"file"}]`))
	case "/process.Process/Start":
		_, msg, err := readEnvelope(r.Body)
		if err != nil || !bytes.Contains(msg, []byte(`"stdin":true`)) {
			w.WriteHeader(400)
			return
		}
		w.Header().Set("Content-Type", "application/connect+json")
		fl := w.(http.Flusher)
		var wmu sync.Mutex
		dead := false
		send := func(ev string) {
			wmu.Lock()
			defer wmu.Unlock()
			if dead {
				return
			}
			_, _ = w.Write(envelope(0, []byte(`{"event":`+ev+`}`)))
			fl.Flush()
		}
		inR, inW := io.Pipe()
		f.mu.Lock()
		f.stdin = inW
		f.mu.Unlock()
		send(`{"start":{"pid":42}}`)
		out := writerFunc(func(p []byte) (int, error) {
			b, _ := json.Marshal(map[string]any{"data": map[string][]byte{"stdout": p}})
			send(string(b))
			return len(p), nil
		})
		ctx, cancel := context.WithCancel(context.Background())
		defer func() {
			wmu.Lock()
			dead = true
			wmu.Unlock()
			inW.Close()
			cancel()
		}()
		done := make(chan struct{})
		go func() {
			defer close(done)
			s := &shim.Server{Software: "fake"}
			_ = s.Serve(ctx, inR, out)
		}()
		select {
		case <-f.cut:
			// The sandbox is gone: the stream ends without an end event.
			panic(http.ErrAbortHandler)
		case <-done:
		case <-r.Context().Done():
		}
	case "/process.Process/SendInput":
		var req struct {
			Process selector `json:"process"`
			Input   struct {
				Stdin []byte `json:"stdin"`
			} `json:"input"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil || req.Process.PID != 42 {
			w.WriteHeader(404)
			_, _ = w.Write([]byte(`{"code":"not_found","message":"process not found"}`))
			return
		}
		f.mu.Lock()
		in := f.stdin
		f.mu.Unlock()
		if _, err := in.Write(req.Input.Stdin); err != nil {
			w.WriteHeader(404)
			_, _ = w.Write([]byte(`{"code":"not_found","message":"process not found"}`))
			return
		}
		_, _ = w.Write([]byte(`{}`))
	default:
		w.WriteHeader(404)
	}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

// fakeBackend points a backend at a fake; the helper binary only needs to
// exist (the fake does not run it).
func fakeBackend(t *testing.T, f *fakeE2B, key string) *Backend {
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	bin := filepath.Join(t.TempDir(), "swerve")
	exe, _ := os.Executable()
	data, _ := os.ReadFile(exe)
	_ = os.WriteFile(bin, data, 0o755)
	b, err := New(context.Background(), Config{APIKey: key, APIURL: srv.URL, SandboxURL: srv.URL, Templates: Templates{Rule: "{image}"}, Timeout: 3 * time.Second, RunID: "run1"})
	if err != nil {
		t.Fatal(err)
	}
	b.cfg.ShimPath = bin
	b.skipStaticCheck = true
	return b
}

func TestOpenExecCloseAgainstFake(t *testing.T) {
	f := &fakeE2B{t: t, cut: make(chan struct{})}
	b := fakeBackend(t, f, "key")
	ctx := context.Background()
	box, err := b.Open(ctx, sandbox.Spec{Image: "tpl", Task: "task-1"})
	if err != nil {
		t.Fatal(err)
	}
	res, err := box.Exec(ctx, sandbox.ExecRequest{Cmd: []string{"sh", "-c", "echo hi; exit 3"}})
	if err != nil || string(res.Output) != "hi\n" || res.ExitCode != 3 {
		t.Fatalf("exec: %+v, %v", res, err)
	}
	if f.meta[MetaRun] != "run1" || f.meta[MetaTask] != "task-1" || f.meta[MetaManaged] != "true" {
		t.Errorf("metadata %v", f.meta)
	}
	left, err := b.Leftovers(ctx, sandbox.LeftoverOptions{All: true, RunID: "run1"})
	if err != nil || len(left) != 1 || left[0].ID != "sb1" || left[0].Task != "task-1" {
		t.Errorf("leftovers %+v, %v", left, err)
	}
	time.Sleep(1200 * time.Millisecond) // a renewal is due every timeout/3 = 1s
	if err := box.Close(ctx); err != nil {
		t.Fatal(err)
	}
	f.mu.Lock()
	killed, renewals := f.killed, f.timeouts
	f.mu.Unlock()
	if !killed || renewals == 0 {
		t.Errorf("killed %v, %d renewals", killed, renewals)
	}
	if _, err := box.Exec(ctx, sandbox.ExecRequest{Cmd: []string{"true"}}); !errors.Is(err, sandbox.ErrClosed) {
		t.Errorf("exec after close: %v", err)
	}
}

func TestSandboxGoneMidCommand(t *testing.T) {
	f := &fakeE2B{t: t, cut: make(chan struct{})}
	b := fakeBackend(t, f, "key")
	ctx := context.Background()
	box, err := b.Open(ctx, sandbox.Spec{Image: "tpl"})
	if err != nil {
		t.Fatal(err)
	}
	defer box.Close(ctx)
	time.AfterFunc(300*time.Millisecond, func() { close(f.cut) })
	start := time.Now()
	_, err = box.Exec(ctx, sandbox.ExecRequest{Cmd: []string{"sleep", "30"}})
	if !errors.Is(err, sandbox.ErrClosed) || time.Since(start) > 10*time.Second {
		t.Fatalf("exec in a vanished sandbox: %v after %v, want ErrClosed at once", err, time.Since(start))
	}
}

func TestOpenErrors(t *testing.T) {
	f := &fakeE2B{t: t, cut: make(chan struct{})}
	ctx := context.Background()
	_, err := fakeBackend(t, f, "wrong").Open(ctx, sandbox.Spec{Image: "tpl"})
	if !errors.Is(err, ErrUnauthorized) || !strings.Contains(err.Error(), "check E2B_API_KEY") {
		t.Errorf("bad key: %v", err)
	}
	_, err = fakeBackend(t, f, "key").Open(ctx, sandbox.Spec{Image: "nope"})
	if !errors.Is(err, sandbox.ErrNotFound) || !strings.Contains(err.Error(), "template 'nope' not found") || !strings.Contains(err.Error(), "for image nope") {
		t.Errorf("unknown template: %v", err)
	}
}
