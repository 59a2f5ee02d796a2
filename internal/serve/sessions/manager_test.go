package sessions

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

func openSample(t *testing.T, m *Manager, key string) *Session {
	t.Helper()
	s, _, err := m.Open(context.Background(), key, "sample__calc-1", nil)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestManagerLimitAndRelease: at most MaxSessions open (then ErrFull and a
// 429 with Retry-After), release is idempotent and frees a slot.
func TestManagerLimitAndRelease(t *testing.T) {
	ts := startServer(t, Options{MaxSessions: 2, Verifier: &fakeVerifier{}})
	m := ts.m
	a, _ := openSample(t, m, ""), openSample(t, m, "")
	if _, _, err := m.Open(context.Background(), "", "sample__calc-1", nil); !errors.Is(err, ErrFull) {
		t.Errorf("third open: %v", err)
	}
	resp, err := http.Post(ts.URL+"/sandboxes", "application/json", strings.NewReader(`{"instance_id":"sample__calc-1"}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 429 || resp.Header.Get("Retry-After") == "" {
		t.Errorf("create past the limit: %d Retry-After %q", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	for range 2 {
		if err := m.Release(context.Background(), a.ID); err != nil {
			t.Errorf("release: %v", err)
		}
	}
	if m.Len() != 1 || ts.o.open.Load() != 1 {
		t.Errorf("after release: %d sessions, %d boxes", m.Len(), ts.o.open.Load())
	}
	if _, err := m.Get(a.ID); !errors.Is(err, ErrNotFound) {
		t.Errorf("get released: %v", err)
	}
	if _, err := m.Bash(context.Background(), a, "true", 0); !errors.Is(err, ErrNotFound) {
		t.Errorf("bash on a released session: %v", err)
	}
	openSample(t, m, "")
}

// TestManagerTTL: a session unused past the TTL is closed by the reaper; a
// used one is kept.
func TestManagerTTL(t *testing.T) {
	ts := startServer(t, Options{TTL: 300 * time.Millisecond, Verifier: &fakeVerifier{}})
	m := ts.m
	idle, busy := openSample(t, m, ""), openSample(t, m, "")
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		if _, err := m.Bash(context.Background(), busy, "true", 0); err != nil {
			t.Fatalf("busy session: %v", err)
		}
		if m.Len() == 1 { // (Get would mark the idle one used)
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if _, err := m.Get(idle.ID); !errors.Is(err, ErrNotFound) {
		t.Fatalf("idle session still open after its TTL")
	}
	if _, err := m.Get(busy.ID); err != nil {
		t.Errorf("busy session reaped: %v", err)
	}
	if ts.o.open.Load() != 1 {
		t.Errorf("%d boxes open, want 1", ts.o.open.Load())
	}
}

// TestManagerSameKey: concurrent opens with one key share one box.
func TestManagerSameKey(t *testing.T) {
	ts := startServer(t, Options{Verifier: &fakeVerifier{}})
	var wg sync.WaitGroup
	ids := make([]string, 8)
	created := make([]bool, 8)
	for i := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s, c, err := ts.m.Open(context.Background(), "traj-1", "sample__calc-1", nil)
			if err != nil {
				t.Error(err)
				return
			}
			ids[i], created[i] = s.ID, c
		}()
	}
	wg.Wait()
	n := 0
	for i := range ids {
		if ids[i] != ids[0] {
			t.Errorf("open %d got %s, open 0 %s", i, ids[i], ids[0])
		}
		if created[i] {
			n++
		}
	}
	if n != 1 || ts.o.all.Load() != 1 {
		t.Errorf("%d opens said created, %d boxes opened; want 1 and 1", n, ts.o.all.Load())
	}
}

// TestManagerClose: Close closes every box, refuses new sessions, and is
// idempotent.
func TestManagerClose(t *testing.T) {
	o := newLocalOpener(t)
	m := New(Options{Open: o.Open, Tasks: NewCatalog(sampleTasks(t), false)})
	for range 3 {
		openSample(t, m, "")
	}
	if err := m.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if o.open.Load() != 0 || m.Len() != 0 {
		t.Errorf("after Close: %d boxes, %d sessions", o.open.Load(), m.Len())
	}
	if _, _, err := m.Open(context.Background(), "", "sample__calc-1", nil); !errors.Is(err, ErrClosed) {
		t.Errorf("open after Close: %v", err)
	}
	if err := m.Close(context.Background()); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

// TestManagerUnknownTask: a task outside the served datasets is a 400
// naming it, and leaves no session.
func TestManagerUnknownTask(t *testing.T) {
	ts := startServer(t, Options{Verifier: &fakeVerifier{}})
	resp, err := http.Post(ts.URL+"/sandboxes", "application/json", strings.NewReader(`{"instance_id":"nope__nope-1"}`))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 400 || !strings.Contains(string(b), "task nope__nope-1: instance_id") || ts.m.Len() != 0 {
		t.Errorf("unknown task: %d %s (%d sessions)", resp.StatusCode, b, ts.m.Len())
	}
}

func doJSON(t *testing.T, method, url string, body any, out any) int {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, url, rd)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if out != nil && len(b) > 0 {
		if err := json.Unmarshal(b, out); err != nil {
			t.Fatalf("%s %s: %d %s: %v", method, url, resp.StatusCode, b, err)
		}
	}
	return resp.StatusCode
}

// TestManagerCallsAndClosing: a call running past the TTL keeps its
// session; releasing a session ends its running call at once.
func TestManagerCallsAndClosing(t *testing.T) {
	ts := startServer(t, Options{TTL: 100 * time.Millisecond, Verifier: &fakeVerifier{}})
	m := ts.m
	s := openSample(t, m, "")
	if res, err := m.Bash(context.Background(), s, "sleep 0.6; echo done", 0); err != nil || res.Output != "done\n" {
		t.Fatalf("long call: %+v %v", res, err)
	}
	if _, err := m.Get(s.ID); err != nil {
		t.Fatalf("session reaped during its call: %v", err)
	}
	errc := make(chan error, 1)
	start := time.Now()
	go func() {
		_, err := m.Bash(context.Background(), s, "sleep 30", 0)
		errc <- err
	}()
	time.Sleep(200 * time.Millisecond)
	if err := m.Release(context.Background(), s.ID); err != nil {
		t.Fatal(err)
	}
	if err := <-errc; !errors.Is(err, ErrNotFound) || time.Since(start) > 10*time.Second {
		t.Errorf("call during release: %v after %s", err, time.Since(start))
	}
	if st := m.Stats(); st.Opened != 1 || st.Released != 1 || st.Open != 0 {
		t.Errorf("stats: %+v", st)
	}
}

// TestDisconnectCancelsCall: a client that goes away mid-call ends its
// command (it never finishes), and the session stays usable.
func TestDisconnectCancelsCall(t *testing.T) {
	ts := startServer(t, Options{Verifier: &fakeVerifier{}})
	var c CreateResponse
	if st := doJSON(t, "POST", ts.URL+"/sandboxes", CreateRequest{InstanceID: "sample__calc-1"}, &c); st != 201 {
		t.Fatal(st)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "POST", ts.URL+"/sandboxes/"+c.ID+"/execute", strings.NewReader(`{"tool":"bash","arguments":{"command":"sleep 1.5; touch late"}}`))
	if resp, err := http.DefaultClient.Do(req); err == nil {
		resp.Body.Close()
		t.Fatalf("the call finished: %d", resp.StatusCode)
	}
	time.Sleep(2500 * time.Millisecond)
	var out ExecuteResponse
	if st := doJSON(t, "POST", ts.URL+"/sandboxes/"+c.ID+"/execute", map[string]any{"tool": "bash", "arguments": map[string]any{"command": "ls late 2>/dev/null || echo gone"}}, &out); st != 200 || out.Output != "gone\n" {
		t.Errorf("after the disconnect: %d %+v", st, out)
	}
}
