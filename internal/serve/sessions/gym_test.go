package sessions

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/swerve-dev/swerve/internal/testutil"
)

// gymClient posts as Gym's simple agent does: it forwards the last
// response's cookie to the next request, and checks every response set it.
type gymClient struct {
	t      *testing.T
	url    string
	cookie string
}

func (c *gymClient) post(path string, body any) (int, []byte, http.Header) {
	c.t.Helper()
	b, _ := json.Marshal(body)
	req, _ := http.NewRequest("POST", c.url+path, bytes.NewReader(b))
	if c.cookie != "" {
		req.Header.Set("Cookie", c.cookie)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	sc := resp.Header.Get("Set-Cookie")
	if !strings.HasPrefix(sc, DefaultCookieName+"=") {
		c.t.Errorf("POST %s (%d): no session cookie: %q", path, resp.StatusCode, sc)
	} else {
		c.cookie = strings.SplitN(sc, ";", 2)[0]
	}
	return resp.StatusCode, out, resp.Header
}

// recordedRows reads the real NeMo Gym SWE-bench rows.
func recordedRows(t *testing.T) []map[string]any {
	return recordedFile(t, "swebench")
}

// recordedFile reads the real NeMo Gym rows of a resources server.
func recordedFile(t *testing.T, server string) []map[string]any {
	t.Helper()
	path := filepath.Join(testutil.SharedDir(t), "data", "nemo-gym", server, "example.jsonl")
	f, err := os.Open(path)
	if err != nil {
		t.Skipf("no recorded Gym rows: %v", err)
	}
	defer f.Close()
	var rows []map[string]any
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<24)
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatal(err)
		}
		rows = append(rows, m)
	}
	return rows
}

// TestGymRecordedRow drives the resources surface with a real recorded Gym
// row: seed (the row as the body), bash, the editor, verify (row plus a
// response), as Gym's simple agent calls them.
func TestGymRecordedRow(t *testing.T) {
	rows := recordedRows(t)
	fv := &fakeVerifier{want: "+fixed = True"}
	ts := startServer(t, Options{Verifier: fv})
	row := rows[0]
	c := &gymClient{t: t, url: ts.URL}

	status, body, _ := c.post("/seed_session", row)
	var seeded struct {
		Handle string `json:"sandbox_handle"`
	}
	if status != 200 || json.Unmarshal(body, &seeded) != nil || seeded.Handle == "" {
		t.Fatalf("seed: %d %s", status, body)
	}
	s, err := ts.m.Get(seeded.Handle)
	if err != nil {
		t.Fatal(err)
	}
	if s.Task.InstanceID != row["instance_id"] || s.Task.Repo != "astropy/astropy" || s.Task.TestPatch == "" {
		t.Errorf("task from the row: %s %s test patch %d bytes", s.Task.InstanceID, s.Task.Repo, len(s.Task.TestPatch))
	}

	status, body, hdr := c.post("/bash", map[string]any{"command": "echo 'fixed = True' >> calc.py && git status --short && (exit 3)"})
	var out string
	if status != 200 || json.Unmarshal(body, &out) != nil || out != " M calc.py\n" || hdr.Get("X-Exit-Code") != "3" {
		t.Errorf("bash: %d %s exit %q", status, body, hdr.Get("X-Exit-Code"))
	}
	status, body, _ = c.post("/str_replace_editor", map[string]any{"command": "view", "path": "calc.py", "view_range": []int{1, 3}})
	if status != 200 || json.Unmarshal(body, &out) != nil || !strings.Contains(out, "1\t") {
		t.Errorf("editor: %d %s", status, body)
	}
	if status, body, _ = c.post("/bash", map[string]any{"command": "cat /eval.sh 2>/dev/null; true"}); status != 200 {
		t.Errorf("bash: %d %s", status, body)
	}

	resp := map[string]any{"id": "r1", "object": "response", "created_at": 1767225600, "model": "policy", "output": []any{}, "parallel_tool_calls": true, "tool_choice": "auto", "tools": []any{}}
	vbody := map[string]any{}
	for k, v := range row {
		vbody[k] = v
	}
	vbody["response"] = resp
	status, body, _ = c.post("/verify", vbody)
	var v map[string]any
	if status != 200 || json.Unmarshal(body, &v) != nil {
		t.Fatalf("verify: %d %s", status, body)
	}
	if v["reward"] != 1.0 || v["resolved"] != true || v["evaluation_completed"] != true || v["instance_id"] != row["instance_id"] || v["response"] == nil {
		t.Errorf("verify answer: reward %v resolved %v completed %v id %v", v["reward"], v["resolved"], v["evaluation_completed"], v["instance_id"])
	}
	if p, _ := v["model_patch"].(string); !strings.Contains(p, "diff --git a/calc.py b/calc.py") || !strings.Contains(p, "+fixed = True") {
		t.Errorf("model_patch: %q", p)
	}
	if _, ok := v["timings"].(map[string]any); !ok {
		t.Errorf("no timings: %v", v)
	}
	if sig, _ := v["signals"].(map[string]any); len(sig) != 1 || sig["grading_path"] != 1.0 {
		t.Errorf("verify signals: %v, want the read of /eval.sh", v["signals"])
	}
	// The box is closed after verify; the session's tools say so, cookie
	// still set.
	if status, body, _ = c.post("/bash", map[string]any{"command": "true"}); status != 404 {
		t.Errorf("bash after verify: %d %s", status, body)
	}
	if ts.o.open.Load() != 0 {
		t.Errorf("%d boxes open after verify", ts.o.open.Load())
	}
}

// TestGymErrorsKeepCookie: a tool call before any seed, a bad body and a
// verify whose grading fails outside the policy all answer with the
// cookie, and the grading failure is a row with reward 0 and the error
// apart, not a 5xx.
func TestGymErrorsKeepCookie(t *testing.T) {
	fv := &fakeVerifier{err: &InfraError{Err: errString("grading box: engine gone")}}
	ts := startServer(t, Options{Verifier: fv})
	c := &gymClient{t: t, url: ts.URL}
	if status, body, _ := c.post("/bash", map[string]any{"command": "true"}); status != 404 || !strings.Contains(string(body), "seed_session") {
		t.Errorf("bash before seed: %d %s", status, body)
	}
	first := c.cookie
	if status, _, _ := c.post("/seed_session", map[string]any{"instance_id": "sample__calc-1"}); status != 200 {
		t.Fatalf("seed by id: %d", status)
	}
	if c.cookie != first {
		t.Errorf("the session cookie changed: %q then %q", first, c.cookie)
	}
	if status, body, _ := c.post("/bash", map[string]any{}); status != 400 {
		t.Errorf("bash without command: %d %s", status, body)
	}
	status, body, _ := c.post("/verify", map[string]any{"instance_id": "sample__calc-1"})
	var v map[string]any
	if status != 200 || json.Unmarshal(body, &v) != nil || v["reward"] != 0.0 || v["evaluation_completed"] != false || !strings.Contains(v["infrastructure_error"].(string), "engine gone") {
		t.Errorf("verify with a broken grader: %d %s", status, body)
	}
	req, _ := http.NewRequest("GET", ts.URL+"/reverify_mode", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(bytes.TrimSpace(b)) != `"unsupported"` || resp.Header.Get("Set-Cookie") == "" {
		t.Errorf("reverify_mode: %s", b)
	}
}

type errString string

func (e errString) Error() string { return string(e) }

// TestGymSessionsApart: two clients with their own cookies get their own
// boxes.
func TestGymSessionsApart(t *testing.T) {
	ts := startServer(t, Options{Verifier: &fakeVerifier{}})
	a, b := &gymClient{t: t, url: ts.URL}, &gymClient{t: t, url: ts.URL}
	for _, c := range []*gymClient{a, b} {
		if status, body, _ := c.post("/seed_session", map[string]any{"instance_id": "sample__calc-1"}); status != 200 {
			t.Fatalf("seed: %d %s", status, body)
		}
	}
	a.post("/bash", map[string]any{"command": "touch only-a"})
	_, body, _ := b.post("/bash", map[string]any{"command": "ls only-a 2>&1 || echo missing"})
	if !strings.Contains(string(body), "missing") {
		t.Errorf("b sees a's file: %s", body)
	}
	if n := ts.m.Len(); n != 2 {
		t.Errorf("%d sessions, want 2", n)
	}
}

// TestAggregateRecorded checks /aggregate_metrics on the example of
// rl-serving.md §3.
func TestAggregate(t *testing.T) {
	rows := []map[string]any{
		{"_ng_task_index": 0.0, "_ng_rollout_index": 0.0, "agent_ref": map[string]any{"name": "swerve_agent"}, "reward": 1.0, "resolved": true, "response": map[string]any{"usage": map[string]any{"total_tokens": 14.0}}},
		{"_ng_task_index": 0.0, "_ng_rollout_index": 1.0, "reward": 0.0, "resolved": false, "response": map[string]any{"usage": map[string]any{"total_tokens": 10.0}}},
		{"_ng_task_index": 1.0, "_ng_rollout_index": 0.0, "reward": 1.0, "resolved": true},
	}
	got := Aggregate(rows)
	am := got["agent_metrics"].(map[string]any)
	for k, want := range map[string]float64{"mean/reward": 2.0 / 3, "max/reward": 1, "min/reward": 0, "median/reward": 1, "std/reward": 0.5773502691896258, "mean/total_tokens": 12, "mean/resolved": 2.0 / 3} {
		if g, _ := am[k].(float64); g-want > 1e-12 || want-g > 1e-12 {
			t.Errorf("%s = %v, want %v", k, am[k], want)
		}
	}
	glm := got["group_level_metrics"].([]map[string]any)
	if len(glm) != 2 || glm[0]["num_rollouts"] != 2 || glm[1]["std/reward"] != 0.0 || glm[0]["mean/reward"] != 0.5 {
		t.Errorf("groups: %v", glm)
	}
	if _, ok := got["key_metrics"].(map[string]any)["mean/reward"]; !ok {
		t.Errorf("key_metrics: %v", got["key_metrics"])
	}
}

// TestRecordedRowsAreTasks: every recorded Gym row reads as its SWE-bench
// task (the image by the harness's name, the hidden tests kept), and a row
// naming a host directory is refused.
func TestRecordedRowsAreTasks(t *testing.T) {
	c := NewCatalog(nil, true)
	for _, row := range recordedRows(t) {
		b, _ := json.Marshal(row)
		tk, err := c.Task(context.Background(), "", b)
		if err != nil {
			t.Fatal(err)
		}
		id := row["instance_id"].(string)
		if tk.InstanceID != id || !strings.Contains(tk.Image, "sweb.eval.x86_64.") || tk.TestPatch != row["test_patch"] || len(tk.FailToPass) == 0 {
			t.Errorf("%s: got %s image %q, %d F2P", id, tk.InstanceID, tk.Image, len(tk.FailToPass))
		}
	}
	// mini_swe_resource's rows are SWE-Gym's, with the test lists as arrays.
	for _, row := range recordedFile(t, "mini_swe_resource") {
		b, _ := json.Marshal(row)
		tk, err := c.Task(context.Background(), "", b)
		if err != nil {
			t.Fatal(err)
		}
		if tk.InstanceID != row["instance_id"] || tk.Image == "" || len(tk.FailToPass) == 0 || tk.TestPatch == "" {
			t.Errorf("%s: got %s image %q, %d F2P", row["instance_id"], tk.InstanceID, tk.Image, len(tk.FailToPass))
		}
	}
	if _, err := c.Task(context.Background(), "x", json.RawMessage(`{"instance_id":"x","repo":"a/b","source_dir":"/"}`)); err == nil || !strings.Contains(err.Error(), "source_dir") {
		t.Errorf("row naming a host directory: %v", err)
	}
	if _, err := c.Task(context.Background(), "", json.RawMessage(`{"instance_id":"nope"}`)); err == nil || !strings.Contains(err.Error(), "task nope: instance_id") {
		t.Errorf("unknown id: %v", err)
	}
}

// TestGymBashShell: /bash calls of one session share a shell (cd and
// exports carry over); a call that ends the shell or times out says so,
// and the next call runs in a fresh shell in the repository.
func TestGymBashShell(t *testing.T) {
	ts := startServer(t, Options{Verifier: &fakeVerifier{}, StepTimeout: 30 * time.Second})
	c := &gymClient{t: t, url: ts.URL}
	if status, body, _ := c.post("/seed_session", map[string]any{"instance_id": "sample__calc-1"}); status != 200 {
		t.Fatalf("seed: %d %s", status, body)
	}
	steps := []struct {
		cmd      string
		timeout  float64
		code     string
		out      string // the whole output, unless contains is set
		contains string
	}{
		{cmd: "mkdir -p sub && cd sub && export SWERVE_T=1", code: "0", out: ""},
		{cmd: `echo "${PWD##*/} $SWERVE_T"`, code: "0", out: "sub 1\n"},
		{cmd: "exit 4", code: "4", contains: "[the shell exited with status 4"},
		{cmd: `echo "${SWERVE_T:-unset}"; test -f calc.py`, code: "0", out: "unset\n"},
		{cmd: "export SWERVE_T=2; sleep 100", timeout: 0.5, code: "124", contains: "timed out after 500ms"},
		{cmd: `echo "${SWERVE_T:-unset}"`, code: "0", out: "unset\n"},
	}
	for _, st := range steps {
		status, body, hdr := c.post("/bash", map[string]any{"command": st.cmd, "timeout": st.timeout})
		var out string
		if status != 200 || json.Unmarshal(body, &out) != nil || hdr.Get("X-Exit-Code") != st.code ||
			(st.contains == "" && out != st.out) || (st.contains != "" && !strings.Contains(out, st.contains)) {
			t.Errorf("/bash %q: %d %s exit %q; want exit %s, output %q %q", st.cmd, status, body, hdr.Get("X-Exit-Code"), st.code, st.out, st.contains)
		}
	}
}
