package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/swerve-dev/swerve/internal/llm/llmtest"
	"github.com/swerve-dev/swerve/internal/serve"
	"github.com/swerve-dev/swerve/internal/testutil"
)

// TestServeRefuses checks the settings serve refuses before it listens.
func TestServeRefuses(t *testing.T) {
	work := t.TempDir()
	env := append(e2eEnv(t, work), "SWERVE_TOKEN=")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--listen", "0.0.0.0:0"}, "not a loopback address"},
		{[]string{"--env", "singularity", "--apptainer_binary", "/nonexistent/apptainer"}, "--apptainer_binary /nonexistent/apptainer: no such program"},
		{[]string{"--env", "singularity", "--backend", "docker"}, "give one"},
		{[]string{"--env", "podman"}, "want docker or singularity"},
		{[]string{"--concurrency", "0"}, "at least 1"},
	} {
		_, stderr, code := runSwerve(t, env, work, time.Minute, append([]string{"serve", "--llm_name", "oracle/gold"}, tc.args...)...)
		if code == 0 || !strings.Contains(stderr, tc.want) {
			t.Errorf("serve %v: exit %d, stderr %q, want %q", tc.args, code, stderr, tc.want)
		}
	}
}

// TestServeRun starts swerve serve on loopback with the oracle policy and the
// local backend, posts the sample tasks as Gym rows (the task read from the
// row itself), checks every answer, and stops it with SIGTERM: it drains,
// exits 0, and leaves no box.
func TestServeRun(t *testing.T) {
	testutil.NeedPytest(t)
	work := t.TempDir()
	tmp := filepath.Join(work, "tmp")
	os.Mkdir(tmp, 0o755)
	env := e2eEnv(t, tmp)
	data, ids := e2eDataset(t, work, 1)
	p := startSwerve(t, env, work, nil, "serve", "--listen", "127.0.0.1:0", "--llm_name", "oracle/gold",
		"--scaffold", "r2egym", "--backend", "local", "--concurrency", "2")
	base := waitListening(t, p)
	if strings.Contains(p.stderr.String(), "keeping") {
		t.Errorf("serve without --results_dir says it keeps results:\n%s", p.stderr.String())
	}

	rows := readRows(t, data)
	answers := make(chan serve.Row, len(rows))
	for i, row := range rows {
		row["responses_create_params"] = map[string]any{"input": []any{}, "temperature": 0.0}
		row["_ng_task_index"], row["_ng_rollout_index"] = i, 0
		go func() {
			b, _ := json.Marshal(row)
			resp, err := http.Post(base+"/run", "application/json", strings.NewReader(string(b)))
			if err != nil {
				t.Error(err)
				answers <- nil
				return
			}
			defer resp.Body.Close()
			body, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != 200 {
				t.Errorf("POST /run: %d %s", resp.StatusCode, body)
			}
			r, _ := serve.ParseRow(body)
			answers <- r
		}()
	}
	var got []serve.Row
	for range rows {
		select {
		case r := <-answers:
			got = append(got, r)
		case <-time.After(4 * time.Minute):
			t.Fatalf("no answer in 4 minutes\nstderr:\n%s", p.stderr.String())
		}
	}
	seen := map[string]bool{}
	for _, r := range got {
		if r == nil {
			continue
		}
		id := r.String("instance_id")
		seen[id] = true
		if rew, _ := r.Number("reward"); rew != 1 || string(r["resolved"]) != "true" {
			t.Errorf("%s: reward %s resolved %s, infra %s", id, r["reward"], r["resolved"], r["infra_error"])
		}
		var resp serve.Response
		if err := json.Unmarshal(r["response"], &resp); err != nil || len(resp.Output) == 0 {
			t.Errorf("%s: response %v, %d items", id, err, len(resp.Output))
		}
		var meta struct {
			Patch   string        `json:"model_patch"`
			Timings serve.Timings `json:"timings"`
		}
		json.Unmarshal(r["metadata"], &meta)
		if !strings.HasPrefix(meta.Patch, "diff --git") {
			t.Errorf("%s: patch %q", id, meta.Patch)
		}
		if tm := meta.Timings; tm.BoxOpen <= 0 || tm.Grade <= 0 || tm.Total < tm.BoxOpen+tm.Grade {
			t.Errorf("%s: timings %+v", id, tm)
		}
	}
	if len(seen) != len(ids) {
		t.Errorf("answers for %d tasks, want %d", len(seen), len(ids))
	}

	// A row whose task cannot be loaded is an infrastructure row, not a 5xx.
	resp, err := http.Post(base+"/run", "application/json", strings.NewReader(`{"instance_id":"nope","responses_create_params":{"input":[]}}`))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if r, _ := serve.ParseRow(body); resp.StatusCode != 200 || r["infra_error"] == nil || r.String("_ng_failure_class") != "task_invalid" {
		t.Errorf("unloadable task: %d %s", resp.StatusCode, body)
	}

	resp, err = http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if want := `swerve_rollouts_finished_total{outcome="resolved"} ` + itoa(len(ids)); !strings.Contains(string(body), want) {
		t.Errorf("metrics lack %q", want)
	}

	// A client that gives up mid-rollout cancels it; its box goes.
	row := rows[0]
	row["responses_create_params"] = map[string]any{"input": []any{}}
	b, _ := json.Marshal(row)
	quick := &http.Client{Timeout: 150 * time.Millisecond}
	if resp, err := quick.Post(base+"/run", "application/json", strings.NewReader(string(b))); err == nil {
		resp.Body.Close()
		t.Log("the rollout finished before the client gave up: nothing was cancelled")
	} else {
		deadline := time.Now().Add(time.Minute)
		for !strings.Contains(scrapeText(t, base), `swerve_rollouts_finished_total{outcome="cancelled"} 1`) {
			if time.Now().After(deadline) {
				t.Fatalf("the abandoned rollout was not cancelled:\n%s", scrapeText(t, base))
			}
			time.Sleep(50 * time.Millisecond)
		}
		noLocalBoxes(t, tmp, "after a client gave up")
	}

	p.cmd.Process.Signal(syscall.SIGTERM)
	if code := p.wait(t, time.Minute); code != 0 {
		t.Errorf("exit %d after SIGTERM\n%s", code, p.stderr.String())
	}
	noLocalBoxes(t, tmp, "after serve stopped")
	// One line per rollout, by instance id, with its reward; and no
	// results written anywhere unless asked.
	for i, row := range rows {
		if want := fmt.Sprintf("rollout %v [%d-0]: reward 1 ", row["instance_id"], i); !strings.Contains(p.stderr.String(), want) {
			t.Errorf("stderr lacks %q:\n%s", want, p.stderr.String())
		}
	}
	if _, err := os.Stat(filepath.Join(work, "results")); !os.IsNotExist(err) {
		t.Errorf("serve without --results_dir wrote results/ (%v)", err)
	}
}

// TestServeResultsDir: serve says once where it keeps results when asked,
// and refuses --skip_if_exists with nowhere to read from.
func TestServeResultsDir(t *testing.T) {
	work := t.TempDir()
	tmp := filepath.Join(work, "tmp")
	os.Mkdir(tmp, 0o755)
	env := e2eEnv(t, tmp)
	_, stderr, code := runSwerve(t, env, work, time.Minute, "serve", "--llm_name", "oracle/gold", "--backend", "local", "--skip_if_exists")
	if code == 0 || !strings.Contains(stderr, "--skip_if_exists") || !strings.Contains(stderr, "--results_dir") {
		t.Errorf("--skip_if_exists without --results_dir: exit %d, %q", code, stderr)
	}
	p := startSwerve(t, env, work, nil, "serve", "--listen", "127.0.0.1:0", "--llm_name", "oracle/gold",
		"--backend", "local", "--results_dir", "kept")
	waitListening(t, p)
	p.cmd.Process.Signal(syscall.SIGTERM)
	if code := p.wait(t, time.Minute); code != 0 {
		t.Errorf("exit %d after SIGTERM\n%s", code, p.stderr.String())
	}
	want := "swerve serve: keeping each rollout's answer under " + filepath.Join(work, "kept") + "\n"
	if n := strings.Count(p.stderr.String(), want); n != 1 {
		t.Errorf("stderr says %d times %q:\n%s", n, want, p.stderr.String())
	}
}

var listening = regexp.MustCompile(`listening on (http://\S+)`)

func waitListening(t *testing.T, p *swerveProc) string {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		if m := listening.FindStringSubmatch(p.stderr.String()); m != nil {
			return m[1]
		}
		select {
		case <-p.done:
			t.Fatalf("serve exited: %s", p.stderr.String())
		case <-time.After(20 * time.Millisecond):
		}
	}
	t.Fatalf("serve did not listen within a minute: %s", p.stderr.String())
	return ""
}

func scrapeText(t *testing.T, base string) string {
	t.Helper()
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

// TestServePolicyURL: without --llm_name each rollout's model calls go to
// the row's policy_base_url with its policy_api_key and the row's sampling;
// a row without one is an infrastructure row.
func TestServePolicyURL(t *testing.T) {
	testutil.NeedPytest(t)
	type seen struct {
		auth  string
		model string
		temp  any
	}
	calls := make(chan seen, 16)
	policy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body map[string]any
		json.NewDecoder(r.Body).Decode(&body)
		model, _ := body["model"].(string)
		calls <- seen{r.Header.Get("Authorization"), model, body["temperature"]}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"id":"c1","object":"chat.completion","created":1,"model":"policy",
 "choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant",
  "content":"THOUGHT: nothing to do.\n\n`+"```bash\\necho COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT\\n```"+`"}}],
 "usage":{"prompt_tokens":10,"completion_tokens":5,"total_tokens":15}}`)
	}))
	defer policy.Close()

	work := t.TempDir()
	tmp := filepath.Join(work, "tmp")
	os.Mkdir(tmp, 0o755)
	data, _ := e2eDataset(t, work, 1)
	p := startSwerve(t, e2eEnv(t, tmp), work, nil, "serve", "--listen", "127.0.0.1:0", "--scaffold", "mini_swe_agent",
		"--backend", "local", "--results_dir", "")
	base := waitListening(t, p)
	var row map[string]any
	for _, r := range readRows(t, data) {
		if r["instance_id"] == "sample__calc-1" {
			row = r
		}
	}
	row["responses_create_params"] = map[string]any{"input": []any{}, "temperature": 0.7, "model": "policy-7b"}
	row["policy_base_url"], row["policy_api_key"] = policy.URL+"/v1", "dummy_key"
	b, _ := json.Marshal(row)
	resp, err := http.Post(base+"/run", "application/json", strings.NewReader(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	r, _ := serve.ParseRow(body)
	var meta struct {
		ExitReason string `json:"exit_reason"`
	}
	json.Unmarshal(r["metadata"], &meta)
	if resp.StatusCode != 200 || r["infra_error"] != nil || meta.ExitReason != "submitted" {
		t.Fatalf("answer %d: %s", resp.StatusCode, body)
	}
	if rew, _ := r.Number("reward"); rew != 0 {
		t.Errorf("reward %v for an empty patch", rew)
	}
	select {
	case c := <-calls:
		if c.auth != "Bearer dummy_key" || c.model != "policy-7b" || c.temp != 0.7 {
			t.Errorf("the policy server saw %+v", c)
		}
	default:
		t.Fatal("the policy server was never called")
	}

	delete(row, "policy_base_url")
	b, _ = json.Marshal(row)
	resp, err = http.Post(base+"/run", "application/json", strings.NewReader(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	body, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if r, _ := serve.ParseRow(body); resp.StatusCode != 200 || !strings.Contains(string(r["infra_error"]), "policy_base_url") {
		t.Errorf("a row with no policy: %d %s", resp.StatusCode, body)
	}
	p.cmd.Process.Signal(syscall.SIGTERM)
	if code := p.wait(t, time.Minute); code != 0 {
		t.Errorf("exit %d\n%s", code, p.stderr.String())
	}
	noLocalBoxes(t, tmp, "after serve stopped")
}

// TestServeRealTasks posts one real SWE-bench Verified django task as a Gym
// row to swerve serve on Docker (env docker, as a Gym config says it): the
// oracle resolves it, and once the server has stopped no container of it
// is left. A Gym SWE-bench row without the dataset's eval_script cannot be
// graded, and says so as an infrastructure row.
func TestServeRealTasks(t *testing.T) {
	if os.Getenv("SWERVE_REALTASKS") != "1" {
		t.Skip("SWERVE_REALTASKS=1 runs a real django task (images from ../shared/realtasks/build.sh)")
	}
	b := e2eDocker(t)
	data := filepath.Join(testutil.SharedDir(t), "realtasks", "instances.jsonl")
	var row map[string]any
	for _, r := range readRows(t, data) {
		if r["instance_id"] == "django__django-16901" {
			row = r
		}
	}
	if row == nil {
		t.Fatal("django__django-16901 is not in the real tasks")
	}
	work := t.TempDir()
	tmp := filepath.Join(work, "tmp")
	os.Mkdir(tmp, 0o755)
	p := startSwerve(t, e2eEnv(t, tmp), work, nil, "serve", "--listen", "127.0.0.1:0", "--env", "docker", "--pull", "never",
		"--llm_name", "oracle/gold", "--scaffold", "r2egym", "--results_dir", "")
	base := waitListening(t, p)
	post := func(row map[string]any) serve.Row {
		b, _ := json.Marshal(row)
		resp, err := http.Post(base+"/run", "application/json", strings.NewReader(string(b)))
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		r, err := serve.ParseRow(body)
		if resp.StatusCode != 200 || err != nil {
			t.Fatalf("POST /run: %d %s", resp.StatusCode, body)
		}
		return r
	}
	row["responses_create_params"] = map[string]any{"input": []any{map[string]any{"role": "user", "content": row["problem_statement"]}}}
	row["subset"], row["split"] = "verified", "test"
	r := post(row)
	if rew, _ := r.Number("reward"); rew != 1 || string(r["resolved"]) != "true" {
		t.Errorf("reward %s resolved %s infra %s", r["reward"], r["resolved"], r["infra_error"])
	}
	var meta struct {
		Report  map[string]json.RawMessage `json:"eval_report"`
		Timings serve.Timings              `json:"timings"`
	}
	json.Unmarshal(r["metadata"], &meta)
	if meta.Report["django__django-16901"] == nil || meta.Timings.BoxOpen <= 0 || meta.Timings.Grade <= 0 {
		t.Errorf("metadata %s", r["metadata"])
	}
	t.Logf("timings %+v", meta.Timings)

	for _, k := range []string{"eval_script", "image", "log_parser", "eval_type"} {
		delete(row, k) // a row as Gym's swebench example has it
	}
	r = post(row)
	if !strings.Contains(string(r["infra_error"]), "eval_script") {
		t.Errorf("a row without eval_script: %s", r["infra_error"])
	}

	p.cmd.Process.Signal(syscall.SIGTERM)
	if code := p.wait(t, 2*time.Minute); code != 0 {
		t.Errorf("exit %d\n%s", code, p.stderr.String())
	}
	if left := runContainers(t, b, p.cmd.Process.Pid); len(left) > 0 {
		t.Errorf("containers left: %v", left)
	}
}

// TestServeTokenIDs: with --token_ids, a rollout against a vLLM-style
// policy server (NeMo RL's way: the three fields on each reply) answers
// with the token fields on the last output item of every model call,
// contiguous across turns as NeMo RL asserts.
func TestServeTokenIDs(t *testing.T) {
	testutil.NeedPytest(t)
	call := func(name, args string) llmtest.Turn {
		return llmtest.Turn{Content: "Next step.", ToolCalls: []llmtest.ToolCall{{Name: name, Arguments: json.RawMessage(args)}}}
	}
	policy := llmtest.NewVLLMServer(t, llmtest.StyleNeMoRL,
		call("execute_bash", `{"cmd":"ls"}`),
		call("execute_bash", `{"cmd":"git status --short"}`),
		call("finish", `{"result":"No change."}`),
	)
	work := t.TempDir()
	tmp := filepath.Join(work, "tmp")
	os.Mkdir(tmp, 0o755)
	data, _ := e2eDataset(t, work, 1)
	p := startSwerve(t, e2eEnv(t, tmp), work, nil, "serve", "--listen", "127.0.0.1:0", "--scaffold", "r2egym",
		"--use_fn_calling", "True", "--token_ids", "--backend", "local", "--results_dir", "")
	base := waitListening(t, p)
	var row map[string]any
	for _, r := range readRows(t, data) {
		if r["instance_id"] == "sample__calc-1" {
			row = r
		}
	}
	row["responses_create_params"] = map[string]any{"input": []any{}, "temperature": 1.0, "model": "policy"}
	row["policy_base_url"], row["policy_api_key"] = policy.URL, "dummy_key"
	b, _ := json.Marshal(row)
	resp, err := http.Post(base+"/run", "application/json", strings.NewReader(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	r, _ := serve.ParseRow(body)
	if resp.StatusCode != 200 || r["infra_error"] != nil {
		t.Fatalf("answer %d: %.2000s\nstderr:\n%s", resp.StatusCode, body, p.stderr.String())
	}
	var out serve.Response
	if err := json.Unmarshal(r["response"], &out); err != nil {
		t.Fatal(err)
	}
	withTokens := 0
	for _, it := range out.Output {
		if len(it.GenerationTokenIDs) > 0 {
			withTokens++
		}
	}
	if withTokens != 3 {
		t.Errorf("%d output items carry token ids, want 3 (one per model call)\n%.3000s", withTokens, r["response"])
	}
	if err := serve.CheckTokens(out.Output); err != nil {
		t.Errorf("NeMo RL's contiguity rule: %v", err)
	}
}
