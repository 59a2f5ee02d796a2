package collect_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/swerve-dev/swerve/internal/collect"
	"github.com/swerve-dev/swerve/internal/testutil"
)

// fakeServer is a /run server: answer makes the row for a request (nil:
// the default, reward 1 for even tasks). It counts requests.
type fakeServer struct {
	*httptest.Server
	mu      sync.Mutex
	got     []map[string]any
	answer  func(n int, row map[string]any) (status int, header map[string]string, body any)
	metrics bool // serve /aggregate_metrics
	aggBody []byte
}

func newFake(t *testing.T, answer func(n int, row map[string]any) (int, map[string]string, any)) *fakeServer {
	f := &fakeServer{answer: answer}
	f.Server = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.Close)
	return f
}

func (f *fakeServer) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	if r.URL.Path == "/aggregate_metrics" {
		f.mu.Lock()
		on := f.metrics
		f.mu.Unlock()
		if !on {
			http.NotFound(w, r)
			return
		}
		f.mu.Lock()
		f.aggBody = body
		f.mu.Unlock()
		_, _ = w.Write([]byte(`{"agent_metrics":{"mean/reward":0.5},"key_metrics":{"mean/reward":0.5},"group_level_metrics":[]}`))
		return
	}
	if r.URL.Path != "/run" || r.Method != http.MethodPost {
		http.NotFound(w, r)
		return
	}
	var row map[string]any
	if err := json.Unmarshal(body, &row); err != nil {
		http.Error(w, err.Error(), 422)
		return
	}
	f.mu.Lock()
	f.got = append(f.got, row)
	n := len(f.got)
	answer := f.answer
	f.mu.Unlock()
	status, header, ans := 200, map[string]string(nil), any(nil)
	if answer != nil {
		status, header, ans = answer(n, row)
	}
	if ans == nil && status == 200 {
		task := row["_ng_task_index"].(float64)
		reward := 0.0
		if int(task)%2 == 0 {
			reward = 1
		}
		ans = map[string]any{"responses_create_params": row["responses_create_params"], "reward": reward, "resolved": reward == 1, "instance_id": row["instance_id"],
			"response": map[string]any{"object": "response", "output": []any{
				map[string]any{"type": "function_call", "name": "bash", "arguments": "{}", "call_id": "c1"},
				map[string]any{"type": "function_call_output", "call_id": "c1", "output": "ok"},
				map[string]any{"type": "message", "role": "assistant", "content": []any{}},
			}, "usage": map[string]any{"total_tokens": 10}},
			"metadata": map[string]any{"exit_reason": "submitted"}}
	}
	for k, v := range header {
		w.Header().Set(k, v)
	}
	w.WriteHeader(status)
	if ans != nil {
		_ = json.NewEncoder(w).Encode(ans)
	}
}

func (f *fakeServer) setAnswer(a func(n int, row map[string]any) (int, map[string]string, any)) {
	f.mu.Lock()
	f.answer = a
	f.mu.Unlock()
}

func (f *fakeServer) requests() []map[string]any {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]map[string]any(nil), f.got...)
}

func writeInput(t *testing.T, lines ...string) string {
	p := filepath.Join(t.TempDir(), "in.jsonl")
	if err := os.WriteFile(p, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func readJSONL(t *testing.T, path string) []map[string]any {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var rows []map[string]any
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<26)
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		rows = append(rows, m)
	}
	return rows
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	t.Cleanup(cancel)
	return c
}

const (
	rowA = `{"instance_id":"a","responses_create_params":{"input":[]}}`
	rowB = `{"instance_id":"b","responses_create_params":{"input":[]},"agent_ref":{"name":"other"}}`
	// rowNoID is a row of a dataset without instance ids.
	rowNoID = `{"question":"q","responses_create_params":{"input":[]}}`
)

// TestProgressWithoutInstanceID: a row without instance_id is named by its
// task index in the progress lines.
func TestProgressWithoutInstanceID(t *testing.T) {
	srv := newFake(t, nil)
	var progress strings.Builder
	out := filepath.Join(t.TempDir(), "rollouts.jsonl")
	if _, err := collect.Run(ctx(t), collect.Options{Server: srv.URL, Input: writeInput(t, rowA, rowNoID), Output: out, Concurrency: 1,
		Progress: &progress}); err != nil {
		t.Fatal(err)
	}
	if want := "a rollout 0: reward 1\ntask 1 rollout 0: reward 0\n"; !strings.HasPrefix(progress.String(), want) {
		t.Errorf("progress %q, want %q", progress.String(), want)
	}
}

func TestRepeatsAndIndices(t *testing.T) {
	srv := newFake(t, nil)
	out := filepath.Join(t.TempDir(), "out", "rollouts.jsonl")
	var progress strings.Builder
	res, err := collect.Run(ctx(t), collect.Options{Server: srv.URL, Input: writeInput(t, rowA, rowB, rowA), Output: out, NumRepeats: 2, Concurrency: 1,
		Progress: &progress})
	if err != nil {
		t.Fatal(err)
	}
	if res.Pairs != 6 || res.Finished != 6 || res.Skipped != 0 {
		t.Fatalf("result %+v", res)
	}
	// Progress names each rollout by its row's instance_id.
	wantProgress := "a rollout 0: reward 1\na rollout 1: reward 1\nb rollout 0: reward 0\nb rollout 1: reward 0\n" +
		"a rollout 2: reward 1\na rollout 3: reward 1\n"
	if !strings.HasPrefix(progress.String(), wantProgress) {
		t.Errorf("progress:\n%s\nwant:\n%s", progress.String(), wantProgress)
	}
	// Materialized: repeats adjacent; identical lines share the task index
	// and continue its rollout numbering, as in Gym.
	type ix struct {
		task, rollout float64
		agent         string
	}
	var got []ix
	for _, r := range readJSONL(t, collect.MaterializedPath(out)) {
		got = append(got, ix{r["_ng_task_index"].(float64), r["_ng_rollout_index"].(float64), r["agent_ref"].(map[string]any)["name"].(string)})
	}
	want := []ix{{0, 0, "swerve_agent"}, {0, 1, "swerve_agent"}, {1, 0, "other"}, {1, 1, "other"}, {0, 2, "swerve_agent"}, {0, 3, "swerve_agent"}}
	if len(got) != len(want) {
		t.Fatalf("materialized %v", got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("materialized row %d: %v, want %v", i, got[i], want[i])
		}
	}
	// With one worker the server saw them in that order.
	reqs := srv.requests()
	for i, r := range reqs {
		if r["_ng_task_index"].(float64) != want[i].task || r["_ng_rollout_index"].(float64) != want[i].rollout {
			t.Errorf("request %d: task %v rollout %v", i, r["_ng_task_index"], r["_ng_rollout_index"])
		}
	}
	rows := readJSONL(t, out)
	if len(rows) != 6 {
		t.Fatalf("%d rows", len(rows))
	}
	for i, r := range rows {
		if _, ok := r["agent_ref"]; !ok {
			t.Errorf("row %d has no agent_ref", i)
		}
	}
	p := res.Profile
	if p.Total != 6 || p.Resolved != 4 || p.AverageTurns != 2 || p.ExitReasons["submitted"] != 6 {
		t.Errorf("profile %+v", p)
	}
	var b strings.Builder
	_, _ = p.WriteTo(&b)
	for _, s := range []string{"Accuracy: 0.67\n", "Resolved: 4\n", "Total Instances: 6\n", "Average Turns: 2.0\n", "Exit reasons: submitted 6\n"} {
		if !strings.Contains(b.String(), s) {
			t.Errorf("profile text lacks %q:\n%s", s, b.String())
		}
	}
	// No /aggregate_metrics on the server: computed here, one entry per agent.
	if res.Remote {
		t.Error("metrics claimed remote")
	}
	var agg []map[string]any
	data, err := os.ReadFile(collect.MetricsPath(out))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &agg); err != nil || len(agg) != 2 {
		t.Fatalf("metrics %s: %v", data, err)
	}
	am := agg[0]["agent_metrics"].(map[string]any)
	if am["mean/reward"].(float64) != 1 || am["std/reward"].(float64) != 0 || am["mean/total_tokens"].(float64) != 10 {
		t.Errorf("agent_metrics %v", am)
	}
	if agg[1]["key_metrics"].(map[string]any)["mean/reward"].(float64) != 0 {
		t.Errorf("other agent's key_metrics %v", agg[1]["key_metrics"])
	}
}

func TestRemoteAggregateMetrics(t *testing.T) {
	srv := newFake(t, nil)
	srv.mu.Lock()
	srv.metrics = true
	srv.mu.Unlock()
	out := filepath.Join(t.TempDir(), "rollouts.jsonl")
	res, err := collect.Run(ctx(t), collect.Options{Server: srv.URL, Input: writeInput(t, rowA), Output: out})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Remote {
		t.Fatal("metrics not from the server")
	}
	var sent struct {
		Rows []map[string]any `json:"verify_responses"`
	}
	srv.mu.Lock()
	aggBody := srv.aggBody
	srv.mu.Unlock()
	if err := json.Unmarshal(aggBody, &sent); err != nil || len(sent.Rows) != 1 {
		t.Fatalf("aggregate body %s: %v", aggBody, err)
	}
	r := sent.Rows[0]
	if _, ok := r["responses_create_params"]; ok {
		t.Error("responses_create_params sent to /aggregate_metrics")
	}
	if resp := r["response"].(map[string]any); len(resp) != 1 || resp["usage"] == nil {
		t.Errorf("response sent as %v, want usage only", resp)
	}
}

func TestResumeAfterKill(t *testing.T) {
	var served atomic.Int32
	killAt := int32(3)
	srv := newFake(t, nil)
	block := make(chan struct{})
	srv.setAnswer(func(n int, row map[string]any) (int, map[string]string, any) {
		if served.Add(1) > killAt {
			<-block // the "kill" comes while these are in flight
		}
		return 200, nil, nil
	})
	defer close(block)
	in := writeInput(t, rowA, rowB, `{"instance_id":"c","responses_create_params":{"input":[]}}`)
	out := filepath.Join(t.TempDir(), "rollouts.jsonl")
	c, cancel := context.WithCancel(ctx(t))
	go func() {
		for len(readLines(out)) < int(killAt) {
			time.Sleep(5 * time.Millisecond)
		}
		cancel()
	}()
	_, err := collect.Run(c, collect.Options{Server: srv.URL, Input: in, Output: out, NumRepeats: 2, Concurrency: 2})
	if err == nil {
		t.Fatal("interrupted run returned no error")
	}
	first := readJSONL(t, out)
	if len(first) != int(killAt) {
		t.Fatalf("%d rows after the kill, want %d", len(first), killAt)
	}
	// A torn line, as a kill mid-write would leave.
	f, _ := os.OpenFile(out, os.O_APPEND|os.O_WRONLY, 0)
	_, _ = f.WriteString(`{"_ng_task_index":2,"_ng_rollout_`)
	f.Close()

	srv2 := newFake(t, nil)
	res, err := collect.Run(ctx(t), collect.Options{Server: srv2.URL, Input: in, Output: out, NumRepeats: 2, Concurrency: 2})
	if err != nil {
		t.Fatal(err)
	}
	if res.Skipped != int(killAt) || res.Finished != 6-int(killAt) {
		t.Errorf("result %+v", res)
	}
	if n := len(srv2.requests()); n != 6-int(killAt) {
		t.Errorf("rerun sent %d requests, want %d", n, 6-int(killAt))
	}
	seen := map[[2]float64]int{}
	for _, r := range readJSONL(t, out) {
		seen[[2]float64{r["_ng_task_index"].(float64), r["_ng_rollout_index"].(float64)}]++
	}
	if len(seen) != 6 {
		t.Errorf("pairs in output: %v", seen)
	}
	for k, n := range seen {
		if n != 1 {
			t.Errorf("pair %v written %d times", k, n)
		}
	}
}

func readLines(path string) []string {
	b, _ := os.ReadFile(path)
	return strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")[:strings.Count(string(b), "\n")]
}

func TestBusyServerRetryAfter(t *testing.T) {
	var busy atomic.Int32
	srv := newFake(t, func(n int, row map[string]any) (int, map[string]string, any) {
		if busy.Add(1) <= 2 {
			return http.StatusTooManyRequests, map[string]string{"Retry-After": "0.05"}, map[string]string{"error": "queue full"}
		}
		return 200, nil, nil
	})
	start := time.Now()
	out := filepath.Join(t.TempDir(), "rollouts.jsonl")
	res, err := collect.Run(ctx(t), collect.Options{Server: srv.URL, Input: writeInput(t, rowA), Output: out})
	if err != nil {
		t.Fatal(err)
	}
	if res.Finished != 1 || res.Failed != 0 {
		t.Errorf("result %+v", res)
	}
	if n := len(srv.requests()); n != 3 {
		t.Errorf("%d requests, want 3 (two 429s, then the rollout)", n)
	}
	if d := time.Since(start); d < 100*time.Millisecond {
		t.Errorf("took %v: Retry-After 0.05s twice was not waited", d)
	}
}

func TestFailureRows(t *testing.T) {
	for _, tc := range []struct {
		name     string
		answer   func(n int, row map[string]any) (int, map[string]string, any)
		class    string
		terminal bool
		requests int // over four runs
	}{
		{"server failure class", func(int, map[string]any) (int, map[string]string, any) {
			return 200, nil, map[string]any{"reward": 0, "_ng_failure_class": "sandbox_error"}
		}, "sandbox_error", false, 3},
		{"terminal", func(int, map[string]any) (int, map[string]string, any) {
			return 200, nil, map[string]any{"reward": 0, "_ng_failure_class": "bad_task", "_ng_failure_terminal": true}
		}, "bad_task", true, 1},
		{"5xx", func(int, map[string]any) (int, map[string]string, any) {
			return 500, nil, map[string]any{"detail": "boom"}
		}, "http_500", false, 3},
		{"422 is terminal", func(int, map[string]any) (int, map[string]string, any) {
			return 422, nil, map[string]any{"detail": "responses_create_params: field required"}
		}, "http_422", true, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := newFake(t, tc.answer)
			in := writeInput(t, rowA)
			out := filepath.Join(t.TempDir(), "rollouts.jsonl")
			for run := range 4 {
				res, err := collect.Run(ctx(t), collect.Options{Server: srv.URL, Input: in, Output: out})
				if err != nil {
					t.Fatalf("run %d: %v", run, err)
				}
				if res.Profile.Total != 0 {
					t.Errorf("run %d: failure counted in the profile: %+v", run, res.Profile)
				}
			}
			if n := len(srv.requests()); n != tc.requests {
				t.Errorf("%d requests over four runs, want %d", n, tc.requests)
			}
			fails := readJSONL(t, collect.FailuresPath(out))
			if len(fails) != tc.requests {
				t.Fatalf("%d failure rows", len(fails))
			}
			r := fails[0]
			if r["_ng_failure_class"] != tc.class || r["_ng_task_index"].(float64) != 0 || r["agent_ref"] == nil {
				t.Errorf("failure row %v", r)
			}
			if got, _ := r["_ng_failure_terminal"].(bool); got != tc.terminal {
				t.Errorf("terminal %v, want %v", got, tc.terminal)
			}
			if rows := readLines(out); len(rows) != 0 {
				t.Errorf("failures in the output: %v", rows)
			}
		})
	}
}

func TestUnauthorizedStops(t *testing.T) {
	var auth atomic.Value
	srv := newFake(t, func(n int, row map[string]any) (int, map[string]string, any) {
		return http.StatusUnauthorized, nil, map[string]string{"error": "bad token"}
	})
	inner := srv.Config.Handler
	srv.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		auth.Store(r.Header.Get("Authorization"))
		inner.ServeHTTP(w, r)
	})
	out := filepath.Join(t.TempDir(), "rollouts.jsonl")
	_, err := collect.Run(ctx(t), collect.Options{Server: srv.URL, Token: "s3cret", Input: writeInput(t, rowA, rowB), Output: out, Concurrency: 1})
	if err == nil || !strings.Contains(err.Error(), "401") {
		t.Fatalf("err %v", err)
	}
	if got := auth.Load(); got != "Bearer s3cret" {
		t.Errorf("Authorization %q", got)
	}
	if b, _ := os.ReadFile(collect.FailuresPath(out)); len(b) != 0 {
		t.Errorf("401 written as a failure row: %s", b)
	}
}

// The recorded NeMo Gym rows: the mini_swe_resource inputs go out, the
// recorded rollouts come back (joined by line order, as the data README
// says), and the profile matches the recorded rewards.
func TestRecordedGymRows(t *testing.T) {
	dir := filepath.Join(testutil.SharedDir(t), "data", "nemo-gym")
	recorded := readJSONL(t, filepath.Join(dir, "mini_swe_resource", "example_rollouts.jsonl"))
	inputs := readJSONL(t, filepath.Join(dir, "mini_swe_resource", "example.jsonl"))
	byID := map[string]map[string]any{}
	for i, in := range inputs {
		byID[in["instance_id"].(string)] = recorded[i]
	}
	srv := newFake(t, func(n int, row map[string]any) (int, map[string]string, any) {
		return 200, nil, byID[row["instance_id"].(string)]
	})
	for _, in := range []string{"mini_swe_resource/example.jsonl", "swebench/example.jsonl"} {
		t.Run(in, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "rollouts.jsonl")
			if strings.HasPrefix(in, "swebench") {
				// The swebench rows are other tasks: answer each with a failure-free empty rollout.
				srv.setAnswer(func(int, map[string]any) (int, map[string]string, any) { return 200, nil, nil })
			}
			res, err := collect.Run(ctx(t), collect.Options{Server: srv.URL, Input: filepath.Join(dir, in), Output: out, NumRepeats: 2, Concurrency: 4})
			if err != nil {
				t.Fatal(err)
			}
			if res.Pairs != 10 || res.Finished != 10 {
				t.Fatalf("result %+v", res)
			}
			if in == "mini_swe_resource/example.jsonl" {
				p := res.Profile
				// One of the five recorded rollouts has reward 1; each is sent twice.
				if p.Total != 10 || p.Resolved != 2 || p.Accuracy != 0.2 {
					t.Errorf("profile %+v", p)
				}
				var want float64
				for _, r := range recorded {
					for _, it := range r["response"].(map[string]any)["output"].([]any) {
						if it.(map[string]any)["role"] == "assistant" {
							want++
						}
					}
				}
				if want /= 5; p.AverageTurns != want {
					t.Errorf("average turns %v, want %v", p.AverageTurns, want)
				}
			}
			// Every input field reaches the server unchanged.
			byInstance := map[string]map[string]any{}
			for _, r := range readJSONL(t, filepath.Join(dir, in)) {
				byInstance[r["instance_id"].(string)] = r
			}
			for _, req := range srv.requests() {
				orig, ok := byInstance[req["instance_id"].(string)]
				if !ok {
					continue // a request of the other subtest
				}
				for k, v := range orig {
					if !reflect.DeepEqual(req[k], v) {
						t.Errorf("%s: field %s changed on the way", orig["instance_id"], k)
					}
				}
			}
			for i, r := range readJSONL(t, out) {
				if r["_ng_task_index"] == nil || r["_ng_rollout_index"] == nil || r["agent_ref"] == nil {
					t.Errorf("row %d lacks the collector's fields", i)
				}
			}
		})
	}
}

// The example of rl-serving.md §3, from Gym's compute_aggregate_metrics.
func TestAggregateGymExample(t *testing.T) {
	var req struct {
		Rows []map[string]any `json:"verify_responses"`
	}
	d := json.NewDecoder(strings.NewReader(`{"verify_responses":[{"_ng_task_index":0,"_ng_rollout_index":0,"agent_ref":{"name":"swerve_agent"},"reward":1.0,"instance_id":"astropy__astropy-12907","response":{"usage":{"total_tokens":14}}}]}`))
	d.UseNumber()
	if err := d.Decode(&req); err != nil {
		t.Fatal(err)
	}
	got, err := json.Marshal(collect.Aggregate(req.Rows))
	if err != nil {
		t.Fatal(err)
	}
	var m struct {
		Groups []map[string]any `json:"group_level_metrics"`
		Agent  map[string]any   `json:"agent_metrics"`
		Key    map[string]any   `json:"key_metrics"`
	}
	if err := json.Unmarshal(got, &m); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"_ng_task_index": 0.0, "mean/reward": 1.0, "std/reward": 0.0, "num_rollouts": 1.0, "expected_num_rollouts": 1.0, "missing_num_rollouts": 0.0, "reward_profile_completion_pct": 100.0}
	if len(m.Groups) != 1 {
		t.Fatalf("groups %s", got)
	}
	for k, v := range want {
		if m.Groups[0][k] != v {
			t.Errorf("group %s = %v, want %v", k, m.Groups[0][k], v)
		}
	}
	if s, _ := json.Marshal(m.Groups[0]["sample"]); string(s) != `{"agent_ref":{"name":"agent"}}` {
		t.Errorf("sample %s", s)
	}
	if s, _ := json.Marshal(m.Groups[0]["rollout_infos"]); string(s) != `[{"_ng_rollout_index":0,"_ng_task_index":0,"reward":1,"rollout_id":"0:0","total_tokens":14}]` {
		t.Errorf("rollout_infos %s", s)
	}
	for k, v := range map[string]any{"mean/reward": 1.0, "std/reward": 0.0, "mean/total_tokens": 14.0} {
		if m.Agent[k] != v {
			t.Errorf("agent %s = %v, want %v", k, m.Agent[k], v)
		}
	}
	if m.Key["mean/reward"] != 1.0 {
		t.Errorf("key_metrics %v", m.Key)
	}
	for k := range m.Key {
		if !strings.HasPrefix(k, "mean/") {
			t.Errorf("key metric %s", k)
		}
	}
}

func TestRetryCarriesAttemptIndexAndKeepsGivenTaskIndex(t *testing.T) {
	srv := newFake(t, func(n int, row map[string]any) (int, map[string]string, any) {
		if n == 1 {
			return 200, nil, map[string]any{"reward": 0, "_ng_failure_class": "sandbox_error"}
		}
		return 200, nil, nil
	})
	in := writeInput(t, `{"instance_id":"a","_ng_task_index":40,"responses_create_params":{"input":[]}}`)
	out := filepath.Join(t.TempDir(), "rollouts.jsonl")
	for range 2 {
		if _, err := collect.Run(ctx(t), collect.Options{Server: srv.URL, Input: in, Output: out}); err != nil {
			t.Fatal(err)
		}
	}
	reqs := srv.requests()
	if len(reqs) != 2 {
		t.Fatalf("%d requests", len(reqs))
	}
	if _, ok := reqs[0]["_ng_attempt_index"]; ok {
		t.Error("first attempt carries _ng_attempt_index")
	}
	if reqs[1]["_ng_attempt_index"] != 1.0 || reqs[1]["_ng_task_index"] != 40.0 {
		t.Errorf("retry: attempt %v task %v", reqs[1]["_ng_attempt_index"], reqs[1]["_ng_task_index"])
	}
	rows := readJSONL(t, out)
	if len(rows) != 1 || rows[0]["_ng_attempt_index"] != 1.0 || rows[0]["_ng_task_index"] != 40.0 {
		t.Errorf("rows %v", rows)
	}
}

func TestConcurrencyBounded(t *testing.T) {
	var in, peak atomic.Int32
	srv := newFake(t, func(n int, row map[string]any) (int, map[string]string, any) {
		cur := in.Add(1)
		defer in.Add(-1)
		for {
			p := peak.Load()
			if cur <= p || peak.CompareAndSwap(p, cur) {
				break
			}
		}
		time.Sleep(5 * time.Millisecond)
		return 200, nil, nil
	})
	var lines []string
	for i := range 40 {
		lines = append(lines, `{"instance_id":"t`+string(rune('a'+i%26))+string(rune('a'+i/26))+`","responses_create_params":{"input":[]}}`)
	}
	out := filepath.Join(t.TempDir(), "rollouts.jsonl")
	res, err := collect.Run(ctx(t), collect.Options{Server: srv.URL, Input: writeInput(t, lines...), Output: out, NumRepeats: 2, Concurrency: 5})
	if err != nil {
		t.Fatal(err)
	}
	if res.Finished != 80 {
		t.Fatalf("result %+v", res)
	}
	if p := peak.Load(); p > 5 || p < 2 {
		t.Errorf("peak %d requests in flight, want 2..5", p)
	}
	if n := len(readJSONL(t, out)); n != 80 {
		t.Errorf("%d rows", n)
	}
}

// BenchmarkCollect: rollouts per second through collect against an
// instant loopback /run (the collector's own overhead: post, fsync'd write).
func BenchmarkCollect(b *testing.B) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var row map[string]any
		_ = json.NewDecoder(r.Body).Decode(&row)
		row["reward"] = 1.0
		_ = json.NewEncoder(w).Encode(row)
	}))
	defer srv.Close()
	dir := b.TempDir()
	in := filepath.Join(dir, "in.jsonl")
	var sb strings.Builder
	for i := range 1000 {
		sb.WriteString(`{"instance_id":"t` + strings.Repeat("x", i%7) + `","n":` + strconv.Itoa(i) + `,"responses_create_params":{"input":[]}}` + "\n")
	}
	os.WriteFile(in, []byte(sb.String()), 0o644)
	b.ResetTimer()
	for i := range b.N {
		out := filepath.Join(dir, "out"+strconv.Itoa(i)+".jsonl")
		res, err := collect.Run(context.Background(), collect.Options{Server: srv.URL, Input: in, Output: out, Concurrency: 64})
		if err != nil || res.Finished != 1000 {
			b.Fatalf("%+v %v", res, err)
		}
	}
	b.ReportMetric(float64(1000*b.N)/b.Elapsed().Seconds(), "rollouts/s")
}

func TestNullFailureClassAndNoPersist(t *testing.T) {
	srv := newFake(t, func(n int, row map[string]any) (int, map[string]string, any) {
		if row["instance_id"] == "a" {
			return 200, nil, map[string]any{"reward": 1, "_ng_failure_class": nil}
		}
		return 200, nil, map[string]any{"reward": 0, "_ng_no_persist": true}
	})
	in := writeInput(t, rowA, rowB)
	out := filepath.Join(t.TempDir(), "rollouts.jsonl")
	for range 2 {
		if _, err := collect.Run(ctx(t), collect.Options{Server: srv.URL, Input: in, Output: out}); err != nil {
			t.Fatal(err)
		}
	}
	rows := readJSONL(t, out)
	if len(rows) != 1 || rows[0]["_ng_task_index"] != 0.0 {
		t.Errorf("output %v", rows)
	}
	if b, _ := os.ReadFile(collect.FailuresPath(out)); len(b) != 0 {
		t.Errorf("failures %s", b)
	}
	// The row not persisted is sent again by the rerun; the finished one is not.
	var a, b int
	for _, r := range srv.requests() {
		if r["instance_id"] == "a" {
			a++
		} else {
			b++
		}
	}
	if a != 1 || b != 2 {
		t.Errorf("requests: a %d, b %d; want 1, 2", a, b)
	}
}
