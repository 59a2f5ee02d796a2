package serve

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// fake is a Rollouts whose behaviour each test sets.
type fake struct {
	calls atomic.Int64
	fn    func(ctx context.Context, req *RolloutRequest) (*RolloutResult, error)
}

func (f *fake) Rollout(ctx context.Context, req *RolloutRequest) (*RolloutResult, error) {
	f.calls.Add(1)
	return f.fn(ctx, req)
}

func resolved(_ context.Context, req *RolloutRequest) (*RolloutResult, error) {
	return &RolloutResult{Reward: 1, Resolved: true, Patch: "diff --git a/x b/x\n", ExitReason: "submitted", Steps: 1,
		EvalReport: json.RawMessage(`{"` + req.InstanceID + `":{"resolved":true}}`),
		Output:     []OutputItem{{Type: "message", Role: "assistant", Content: []ContentPart{{Type: "output_text", Text: "done", Annotations: []any{}}}}},
		Timings:    Timings{BoxOpen: 0.2, Grade: 1.5, Total: 3},
		Scaffold:   "r2egym", Dataset: "tasks.jsonl", Started: time.Date(2026, 11, 29, 8, 0, 0, 0, time.UTC)}, nil
}

func newTest(t *testing.T, opts Options) (*Server, *httptest.Server) {
	t.Helper()
	if opts.Log == nil {
		opts.Log = quiet
	}
	s, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(s.Handler())
	t.Cleanup(ts.Close)
	return s, ts
}

const smallRow = `{"responses_create_params":{"input":[{"role":"user","content":"fix it"}],"temperature":1.0,"top_p":1.0,"max_output_tokens":8192},
 "agent_ref":{"name":"swerve_agent"},"_ng_task_index":3,"_ng_rollout_index":1,"instance_id":"astropy__astropy-12907",
 "repo":"astropy/astropy","base_commit":"d16bfe05","FAIL_TO_PASS":"[\"t1\"]","PASS_TO_PASS":"[]",
 "policy_base_url":"http://127.0.0.1:1/v1","policy_api_key":"dummy_key","extra":{"keep":[1,2]}}`

func post(t *testing.T, url, body string, hdr ...string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, b
}

func TestHealth(t *testing.T) {
	_, ts := newTest(t, Options{Rollouts: &fake{fn: resolved}, Token: "secret"})
	resp, err := http.Get(ts.URL + "/")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || strings.TrimSpace(string(b)) != `{"status":"ok"}` {
		t.Fatalf("GET / = %d %s", resp.StatusCode, b)
	}
}

func TestCheckListen(t *testing.T) {
	for _, tc := range []struct {
		addr, token string
		ok          bool
	}{
		{"127.0.0.1:8000", "", true},
		{"localhost:8000", "", true},
		{"[::1]:8000", "", true},
		{"127.3.2.1:0", "", true},
		{"0.0.0.0:8000", "", false},
		{":8000", "", false},
		{"10.0.0.5:8000", "", false},
		{"0.0.0.0:8000", "tok", true},
		{"nonsense", "", false},
	} {
		err := CheckListen(tc.addr, tc.token)
		if (err == nil) != tc.ok {
			t.Errorf("CheckListen(%q, %q) = %v, want ok=%v", tc.addr, tc.token, err, tc.ok)
		}
	}
}

func TestBearerToken(t *testing.T) {
	f := &fake{fn: resolved}
	_, ts := newTest(t, Options{Rollouts: f, Token: "s3cret"})
	for _, tc := range []struct {
		name string
		hdr  []string
		want int
	}{
		{"none", nil, 401},
		{"wrong", []string{"Authorization", "Bearer nope"}, 401},
		{"prefix", []string{"Authorization", "Bearer s3cre"}, 401},
		{"basic", []string{"Authorization", "Basic s3cret"}, 401},
		{"right", []string{"Authorization", "Bearer s3cret"}, 200},
	} {
		resp, b := post(t, ts.URL+"/run", smallRow, tc.hdr...)
		if resp.StatusCode != tc.want {
			t.Errorf("%s: status %d, want %d (%s)", tc.name, resp.StatusCode, tc.want, b)
		}
	}
	if n := f.calls.Load(); n != 1 {
		t.Errorf("rollouts run: %d, want 1 (only the authorized one)", n)
	}
	req, _ := http.NewRequest(http.MethodGet, ts.URL+"/metrics", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 401 {
		t.Errorf("/metrics without token: %d, want 401", resp.StatusCode)
	}
}

func TestRunAnswerRow(t *testing.T) {
	var got *RolloutRequest
	f := &fake{fn: func(ctx context.Context, req *RolloutRequest) (*RolloutResult, error) {
		got = req
		return resolved(ctx, req)
	}}
	_, ts := newTest(t, Options{Rollouts: f})
	resp, b := post(t, ts.URL+"/run", smallRow)
	if resp.StatusCode != 200 {
		t.Fatalf("status %d: %s", resp.StatusCode, b)
	}
	if got.InstanceID != "astropy__astropy-12907" || got.PolicyBaseURL != "http://127.0.0.1:1/v1" ||
		got.PolicyAPIKey != "dummy_key" || got.RolloutID != "3-1" {
		t.Errorf("request: %+v", got)
	}
	if got.Params.Temperature == nil || *got.Params.Temperature != 1 || got.Params.MaxOutputTokens == nil || *got.Params.MaxOutputTokens != 8192 {
		t.Errorf("sampling not passed: %+v", got.Params)
	}
	row, err := ParseRow(b)
	if err != nil {
		t.Fatal(err)
	}
	in, _ := ParseRow([]byte(smallRow))
	for k, v := range in {
		if !jsonEqual(t, row[k], v) {
			t.Errorf("field %s changed: %s -> %s", k, v, row[k])
		}
	}
	if r, _ := row.Number("reward"); r != 1 {
		t.Errorf("reward %s", row["reward"])
	}
	if string(row["resolved"]) != "true" {
		t.Errorf("resolved %s", row["resolved"])
	}
	var resp2 Response
	if err := json.Unmarshal(row["response"], &resp2); err != nil {
		t.Fatal(err)
	}
	if resp2.Object != "response" || len(resp2.Output) != 1 || resp2.Output[0].Type != "message" || string(resp2.Tools) != "[]" {
		t.Errorf("response: %s", row["response"])
	}
	var meta struct {
		Patch      string          `json:"model_patch"`
		Report     json.RawMessage `json:"eval_report"`
		ExitReason string          `json:"exit_reason"`
		Timings    Timings         `json:"timings"`
		Scaffold   string          `json:"scaffold"`
		Dataset    string          `json:"dataset"`
		Started    string          `json:"started"`
	}
	if err := json.Unmarshal(row["metadata"], &meta); err != nil {
		t.Fatal(err)
	}
	if meta.Patch == "" || meta.ExitReason != "submitted" || len(meta.Report) == 0 || meta.Timings.Grade != 1.5 ||
		meta.Scaffold != "r2egym" || meta.Dataset != "tasks.jsonl" || meta.Started != "2026-11-29T08:00:00Z" {
		t.Errorf("metadata: %s", row["metadata"])
	}
	if _, ok := row["infra_error"]; ok {
		t.Errorf("infra_error on a good rollout")
	}
}

func TestRunBadRows(t *testing.T) {
	f := &fake{fn: resolved}
	_, ts := newTest(t, Options{Rollouts: f})
	for _, body := range []string{`not json`, `[1]`, `{"instance_id":"x"}`, `{"responses_create_params":{}}`, `{"responses_create_params":{"input":null}}`} {
		resp, b := post(t, ts.URL+"/run", body)
		if resp.StatusCode != 400 {
			t.Errorf("%s: status %d (%s), want 400", body, resp.StatusCode, b)
		}
	}
	if f.calls.Load() != 0 {
		t.Errorf("a bad row ran")
	}
}

func TestFailedRolloutIsARow(t *testing.T) {
	for name, fn := range map[string]func(context.Context, *RolloutRequest) (*RolloutResult, error){
		"error": func(context.Context, *RolloutRequest) (*RolloutResult, error) { return nil, errors.New("engine down") },
		"panic": func(context.Context, *RolloutRequest) (*RolloutResult, error) { panic("boom") },
		"nil":   func(context.Context, *RolloutRequest) (*RolloutResult, error) { return nil, nil },
		"infra": func(context.Context, *RolloutRequest) (*RolloutResult, error) {
			return &RolloutResult{InfraError: "image", InfraDetail: "no such image", Reward: 1, Resolved: true}, nil
		},
	} {
		t.Run(name, func(t *testing.T) {
			_, ts := newTest(t, Options{Rollouts: &fake{fn: fn}})
			resp, b := post(t, ts.URL+"/run", smallRow)
			if resp.StatusCode != 200 {
				t.Fatalf("status %d: %s", resp.StatusCode, b)
			}
			row, err := ParseRow(b)
			if err != nil {
				t.Fatal(err)
			}
			if r, _ := row.Number("reward"); r != 0 || string(row["resolved"]) != "false" {
				t.Errorf("reward %s resolved %s, want 0 false", row["reward"], row["resolved"])
			}
			var infra map[string]string
			if err := json.Unmarshal(row["infra_error"], &infra); err != nil || infra["kind"] == "" || infra["detail"] == "" {
				t.Errorf("infra_error: %s", row["infra_error"])
			}
			if row.String("_ng_failure_class") != "transient" {
				t.Errorf("_ng_failure_class %s, want transient", row["_ng_failure_class"])
			}
		})
	}
	// A model failure is not an infrastructure error.
	_, ts := newTest(t, Options{Rollouts: &fake{fn: func(context.Context, *RolloutRequest) (*RolloutResult, error) {
		return &RolloutResult{ExitReason: "step_limit"}, nil
	}}})
	_, b := post(t, ts.URL+"/run", smallRow)
	row, _ := ParseRow(b)
	if _, ok := row["_ng_failure_class"]; ok {
		t.Errorf("a model failure carries _ng_failure_class: %s", b)
	}
	if _, ok := row["infra_error"]; ok {
		t.Errorf("a model failure carries infra_error: %s", b)
	}
}

// TestQueueFull fills one slot and one queue place; the third request gets
// 429 with Retry-After, and both held ones finish once released.
func TestQueueFull(t *testing.T) {
	release := make(chan struct{})
	started := make(chan struct{}, 4)
	f := &fake{fn: func(ctx context.Context, req *RolloutRequest) (*RolloutResult, error) {
		started <- struct{}{}
		select {
		case <-release:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		return resolved(ctx, req)
	}}
	s, ts := newTest(t, Options{Rollouts: f, Concurrency: 1, Queue: 1, RetryAfter: 7 * time.Second})
	var wg sync.WaitGroup
	codes := make(chan int, 2)
	for range 2 {
		wg.Go(func() {
			resp, _ := post(t, ts.URL+"/run", smallRow)
			codes <- resp.StatusCode
		})
	}
	<-started
	waitFor(t, func() bool { return s.admit.Load() == 2 })
	resp, b := post(t, ts.URL+"/run", smallRow)
	if resp.StatusCode != 429 || resp.Header.Get("Retry-After") != "7" {
		t.Fatalf("third request: %d Retry-After %q (%s), want 429 7", resp.StatusCode, resp.Header.Get("Retry-After"), b)
	}
	close(release)
	wg.Wait()
	close(codes)
	for c := range codes {
		if c != 200 {
			t.Errorf("held request: %d", c)
		}
	}
	if f.calls.Load() != 2 {
		t.Errorf("calls %d, want 2", f.calls.Load())
	}
	m := scrape(t, ts.URL)
	for _, want := range []string{`swerve_rollouts_rejected_total{reason="queue_full"} 1`, `swerve_rollouts_finished_total{outcome="resolved"} 2`,
		`swerve_rollouts_running 0`, `swerve_rollouts_queued 0`, `swerve_grade_seconds_count 2`, `swerve_box_open_seconds_count 2`,
		`swerve_exit_reasons_total{exit_reason="submitted"} 2`, `swerve_reward_sum_total 2`} {
		if !strings.Contains(m, want) {
			t.Errorf("metrics lack %q", want)
		}
	}
}

// TestDisconnectCancels: a client that goes away cancels its rollout, both
// running and queued, and the slot is free again.
func TestDisconnectCancels(t *testing.T) {
	started := make(chan struct{}, 1)
	cancelled := make(chan struct{}, 1)
	f := &fake{fn: func(ctx context.Context, req *RolloutRequest) (*RolloutResult, error) {
		started <- struct{}{}
		select {
		case <-ctx.Done():
			cancelled <- struct{}{}
			return nil, ctx.Err()
		case <-time.After(20 * time.Second):
			return nil, errors.New("not cancelled")
		}
	}}
	s, ts := newTest(t, Options{Rollouts: f, Concurrency: 1, Queue: 4})
	ctx, cancel := context.WithCancel(t.Context())
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, ts.URL+"/run", strings.NewReader(smallRow))
	errc := make(chan error, 1)
	go func() {
		_, err := http.DefaultClient.Do(req)
		errc <- err
	}()
	<-started
	// A second request waits in the queue; its client leaves too.
	ctx2, cancel2 := context.WithCancel(t.Context())
	req2, _ := http.NewRequestWithContext(ctx2, http.MethodPost, ts.URL+"/run", strings.NewReader(smallRow))
	go func() {
		_, err := http.DefaultClient.Do(req2)
		errc <- err
	}()
	waitFor(t, func() bool { return s.admit.Load() == 2 })
	// The queued client leaves first, and the server must have seen it go
	// before the running one is cancelled: a server cannot know of a
	// disconnect it has not yet read, and once the slot frees it would
	// rightly start a request whose client is, as far as it can tell, still
	// there.
	cancel2()
	waitFor(t, func() bool {
		return strings.Contains(scrape(t, ts.URL), `swerve_rollouts_finished_total{outcome="cancelled"} 1`)
	})
	cancel()
	select {
	case <-cancelled:
	case <-time.After(10 * time.Second):
		t.Fatal("the rollout did not see its context end")
	}
	<-errc
	<-errc
	waitFor(t, func() bool { return s.admit.Load() == 0 })
	if f.calls.Load() != 1 {
		t.Errorf("the queued request ran after its client left")
	}
	m := scrape(t, ts.URL)
	if !strings.Contains(m, `swerve_rollouts_finished_total{outcome="cancelled"} 2`) {
		t.Errorf("cancelled count:\n%s", grep(m, "finished"))
	}
}

// TestDrain: after drain begins, new and queued rollouts get 503, the
// running one finishes with its answer, then Serve returns and runs
// OnShutdown.
func TestDrain(t *testing.T) {
	release := make(chan struct{})
	started := make(chan struct{}, 1)
	f := &fake{fn: func(ctx context.Context, req *RolloutRequest) (*RolloutResult, error) {
		started <- struct{}{}
		<-release
		return resolved(ctx, req)
	}}
	s, err := New(Options{Rollouts: f, RetryAfter: time.Second, Log: quiet, Concurrency: 1, Queue: 4})
	if err != nil {
		t.Fatal(err)
	}
	var shutdownRan atomic.Bool
	s.OnShutdown(func(context.Context) { shutdownRan.Store(true) })
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	url := "http://" + ln.Addr().String()
	drain := make(chan struct{})
	served := make(chan error, 1)
	go func() { served <- s.Serve(t.Context(), ln, drain) }()
	first := make(chan int, 1)
	go func() {
		resp, _ := post(t, url+"/run", smallRow)
		first <- resp.StatusCode
	}()
	<-started
	queued := make(chan *http.Response, 1)
	go func() {
		resp, _ := post(t, url+"/run", smallRow)
		queued <- resp
	}()
	waitFor(t, func() bool { return s.admit.Load() == 2 })
	close(drain)
	waitFor(t, s.Draining)
	if resp := <-queued; resp.StatusCode != 503 || resp.Header.Get("Retry-After") != "1" {
		t.Errorf("queued during drain: %d Retry-After %q, want 503 1", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	resp, _ := post(t, url+"/run", smallRow)
	if resp.StatusCode != 503 || resp.Header.Get("Retry-After") == "" {
		t.Errorf("during drain: %d, want 503 with Retry-After", resp.StatusCode)
	}
	select {
	case <-served:
		t.Fatal("Serve returned with a rollout running")
	case <-time.After(100 * time.Millisecond):
	}
	close(release)
	if c := <-first; c != 200 {
		t.Errorf("running rollout's answer: %d", c)
	}
	select {
	case err := <-served:
		if err != nil {
			t.Errorf("Serve: %v", err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("Serve did not return after the drain")
	}
	if !shutdownRan.Load() {
		t.Error("OnShutdown did not run")
	}
}

// TestHardStop: cancelling Serve's context cancels running rollouts.
func TestHardStop(t *testing.T) {
	started := make(chan struct{}, 1)
	f := &fake{fn: func(ctx context.Context, req *RolloutRequest) (*RolloutResult, error) {
		started <- struct{}{}
		<-ctx.Done()
		return nil, ctx.Err()
	}}
	s, _ := New(Options{Rollouts: f, Log: quiet})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	served := make(chan error, 1)
	go func() { served <- s.Serve(ctx, ln, nil) }()
	go func() {
		req, _ := http.NewRequest(http.MethodPost, "http://"+ln.Addr().String()+"/run", strings.NewReader(smallRow))
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
		}
	}()
	<-started
	cancel()
	select {
	case <-served:
	case <-time.After(15 * time.Second):
		t.Fatal("Serve did not return after a hard stop")
	}
}

func TestRunTokenFields(t *testing.T) {
	items := []OutputItem{
		{Type: "function_call", CallID: "c1", Name: "bash", Arguments: `{"command":"ls"}`,
			PromptTokenIDs: []int{1, 2, 3}, GenerationTokenIDs: []int{4, 5}, GenerationLogProbs: []float64{-0.1, -0.2}},
		{Type: "function_call_output", CallID: "c1", Output: ""},
		{Type: "message", Role: "assistant", Content: []ContentPart{{Type: "output_text", Text: "ok", Annotations: []any{}}},
			PromptTokenIDs: []int{1, 2, 3, 4, 5, 6, 7}, GenerationTokenIDs: []int{8}, GenerationLogProbs: []float64{-0.3}},
	}
	_, ts := newTest(t, Options{Rollouts: &fake{fn: func(context.Context, *RolloutRequest) (*RolloutResult, error) {
		return &RolloutResult{Output: items}, nil
	}}})
	_, b := post(t, ts.URL+"/run", smallRow)
	row, _ := ParseRow(b)
	var raw struct {
		Output []map[string]json.RawMessage `json:"output"`
	}
	if err := json.Unmarshal(row["response"], &raw); err != nil {
		t.Fatal(err)
	}
	if string(raw.Output[0]["generation_token_ids"]) != "[4,5]" || string(raw.Output[2]["prompt_token_ids"]) != "[1,2,3,4,5,6,7]" {
		t.Errorf("token fields: %s", row["response"])
	}
	if _, ok := raw.Output[1]["prompt_token_ids"]; ok {
		t.Errorf("a tool output carries token fields")
	}
	if string(raw.Output[1]["output"]) != `""` {
		t.Errorf("an empty function_call_output lost its output field: %v", raw.Output[1])
	}
	var resp Response
	_ = json.Unmarshal(row["response"], &resp)
	if err := CheckTokens(resp.Output); err != nil {
		t.Error(err)
	}
}

func TestCheckTokens(t *testing.T) {
	tok := func(p, g []int, lp []float64) OutputItem {
		return OutputItem{Type: "message", PromptTokenIDs: p, GenerationTokenIDs: g, GenerationLogProbs: lp}
	}
	nan := 0.0
	nan = nan / nan
	for _, tc := range []struct {
		name  string
		items []OutputItem
		ok    bool
	}{
		{"none", []OutputItem{{Type: "message"}}, true},
		{"contiguous", []OutputItem{tok([]int{1}, []int{2}, []float64{-1}), {Type: "function_call_output"}, tok([]int{1, 2, 9}, []int{3}, []float64{-1})}, true},
		{"gap", []OutputItem{tok([]int{1}, []int{2}, []float64{-1}), tok([]int{1, 9}, []int{3}, []float64{-1})}, false},
		{"short", []OutputItem{tok([]int{1, 2}, []int{3}, []float64{-1}), tok([]int{1, 2}, []int{4}, []float64{-1})}, false},
		{"logprobs", []OutputItem{tok([]int{1}, []int{2, 3}, []float64{-1})}, false},
		{"nan", []OutputItem{tok([]int{1}, []int{2}, []float64{nan})}, false},
		{"partial", []OutputItem{tok([]int{1}, nil, nil)}, false},
	} {
		if err := CheckTokens(tc.items); (err == nil) != tc.ok {
			t.Errorf("%s: %v, want ok=%v", tc.name, err, tc.ok)
		}
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not reached in 10s")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func scrape(t *testing.T, base string) string {
	t.Helper()
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

func grep(s, word string) string {
	var out []string
	for l := range strings.SplitSeq(s, "\n") {
		if strings.Contains(l, word) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

func jsonEqual(t *testing.T, a, b []byte) bool {
	t.Helper()
	var x, y any
	if err := json.Unmarshal(a, &x); err != nil {
		return false
	}
	if err := json.Unmarshal(b, &y); err != nil {
		return false
	}
	xa, _ := json.Marshal(x)
	ya, _ := json.Marshal(y)
	return bytes.Equal(xa, ya)
}

// TestProgressLine: every rollout that ends prints one line naming the
// task, the rollout, the reward and the time, also at the default log
// level (Options.Progress is not a slog logger).
func TestProgressLine(t *testing.T) {
	var mu sync.Mutex
	var buf bytes.Buffer
	f := &fake{fn: resolved}
	_, ts := newTest(t, Options{Rollouts: f, Progress: writerFunc(func(p []byte) (int, error) {
		mu.Lock()
		defer mu.Unlock()
		return buf.Write(p)
	})})
	if resp, b := post(t, ts.URL+"/run", smallRow); resp.StatusCode != 200 {
		t.Fatalf("status %d: %s", resp.StatusCode, b)
	}
	mu.Lock()
	got := buf.String()
	mu.Unlock()
	if want := "rollout astropy__astropy-12907 [3-1]: reward 1 (submitted) in 3.0s\n"; got != want {
		t.Errorf("progress:\n got %q\nwant %q", got, want)
	}
	for _, tc := range []struct {
		name string
		req  RolloutRequest
		res  *RolloutResult
		secs float64
		want string
	}{
		{"infra", RolloutRequest{InstanceID: "a__b-1", RolloutID: "a__b-1"}, &RolloutResult{InfraError: "image"}, 0.25, "rollout a__b-1: reward 0, infra_error image in 0.2s\n"},
		{"cancelled", RolloutRequest{InstanceID: "a__b-1", RolloutID: "0-2"}, nil, 4, "rollout a__b-1 [0-2]: cancelled in 4.0s\n"},
		{"no id", RolloutRequest{}, &RolloutResult{Reward: 0.5, ExitReason: "step_limit"}, 1, "rollout (row without instance_id): reward 0.5 (step_limit) in 1.0s\n"},
	} {
		if got := RolloutLine(&tc.req, tc.res, tc.secs); got != tc.want {
			t.Errorf("%s: got %q, want %q", tc.name, got, tc.want)
		}
	}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }
