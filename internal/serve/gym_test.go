package serve

import (
	"bufio"
	"bytes"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/swerve-dev/swerve/internal/llm"
	"github.com/swerve-dev/swerve/internal/testutil"
)

// gymRows reads a JSONL file of the recorded NeMo Gym rows.
func gymRows(t *testing.T, rel string) [][]byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(testutil.SharedDir(t), "data", "nemo-gym", rel))
	if err != nil {
		t.Fatal(err)
	}
	var rows [][]byte
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, 64<<20)
	for sc.Scan() {
		if len(bytes.TrimSpace(sc.Bytes())) > 0 {
			rows = append(rows, bytes.Clone(sc.Bytes()))
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(rows) != 5 {
		t.Fatalf("%s: %d rows, want the 5 recorded ones", rel, len(rows))
	}
	return rows
}

// TestRecordedRollouts parses Gym's recorded rollout rows with swerve's
// types: the row survives a round trip whole, and the response reads as a
// Responses object.
func TestRecordedRollouts(t *testing.T) {
	rows := gymRows(t, "mini_swe_resource/example_rollouts.jsonl")
	var parsed []Row
	for i, line := range rows {
		row, err := ParseRow(line)
		if err != nil {
			t.Fatalf("row %d: %v", i, err)
		}
		again, err := json.Marshal(row)
		if err != nil {
			t.Fatal(err)
		}
		if !jsonEqual(t, again, line) {
			t.Errorf("row %d changed in a round trip", i)
		}
		var resp Response
		if err := json.Unmarshal(row["response"], &resp); err != nil {
			t.Fatalf("row %d: response: %v", i, err)
		}
		if resp.Object != "response" || len(resp.Output) < 20 || resp.Usage == nil {
			t.Errorf("row %d: response object %q, %d output items, usage %v", i, resp.Object, len(resp.Output), resp.Usage)
		}
		for j, it := range resp.Output {
			want := map[string]string{"assistant": "output_text", "user": "input_text"}[it.Role]
			if it.Type != "message" || len(it.Content) == 0 || want == "" || it.Content[0].Type != want {
				t.Errorf("row %d output %d: %+v", i, j, it)
				break
			}
		}
		var params CreateParams
		if err := json.Unmarshal(row["responses_create_params"], &params); err != nil || len(params.Input) == 0 {
			t.Errorf("row %d: responses_create_params: %v", i, err)
		}
		r := row.Clone()
		r.Set("_ng_task_index", i)
		r.Set("_ng_rollout_index", 0)
		parsed = append(parsed, r)
	}
	// Rewards recorded: 0, 1, 0, 0, 0; usage numbers all 0.
	agg := Aggregate(parsed)
	want := map[string]float64{
		"mean/reward": 0.2, "max/reward": 1, "min/reward": 0, "median/reward": 0, "std/reward": math.Sqrt(0.2),
		"mean/total_tokens": 0, "pass@k/accuracy": 20, "pass@1[avg-of-k]/accuracy": 20,
		"task_count": 5, "resolved_task_count": 1, "resolved_task_rate": 0.2, "eval_error_rate": 0,
	}
	checkMetrics(t, "agent_metrics", agg.AgentMetrics, want)
	if len(agg.GroupLevelMetrics) != 5 {
		t.Fatalf("%d groups, want 5", len(agg.GroupLevelMetrics))
	}
	if km := agg.KeyMetrics["mean/reward"]; km != 0.2 {
		t.Errorf("key_metrics mean/reward %v", km)
	}
	if _, ok := agg.KeyMetrics["max/reward"]; ok {
		t.Error("key_metrics holds more than the means")
	}
}

// TestRecordedInputsRun posts each recorded Gym input row (both dialects of
// FAIL_TO_PASS) to /run: every field comes back unchanged.
func TestRecordedInputsRun(t *testing.T) {
	f := &fake{fn: resolved}
	_, ts := newTest(t, Options{Rollouts: f})
	for _, rel := range []string{"swebench/example.jsonl", "mini_swe_resource/example.jsonl"} {
		for i, line := range gymRows(t, rel) {
			resp, b := post(t, ts.URL+"/run", string(line))
			if resp.StatusCode != 200 {
				t.Fatalf("%s row %d: %d %s", rel, i, resp.StatusCode, b)
			}
			in, _ := ParseRow(line)
			out, err := ParseRow(b)
			if err != nil {
				t.Fatal(err)
			}
			for k, v := range in {
				if !jsonEqual(t, out[k], v) {
					t.Errorf("%s row %d: field %s changed", rel, i, k)
				}
			}
			for _, k := range []string{"response", "reward", "resolved", "metadata"} {
				if _, ok := out[k]; !ok {
					t.Errorf("%s row %d: no %s", rel, i, k)
				}
			}
		}
	}
}

// TestAggregateExample checks rl-serving.md's /aggregate_metrics example
// (Gym's shape) and a GRPO group of two rollouts per task.
func TestAggregateExample(t *testing.T) {
	var req AggregateRequest
	if err := json.Unmarshal([]byte(`{"verify_responses":[{"_ng_task_index":0,"_ng_rollout_index":0,"agent_ref":{"name":"swerve_agent"},"reward":1.0,"instance_id":"astropy__astropy-12907","response":{"usage":{"total_tokens":14}}}]}`), &req); err != nil {
		t.Fatal(err)
	}
	agg := Aggregate(req.VerifyResponses)
	checkMetrics(t, "agent", agg.AgentMetrics, map[string]float64{"mean/reward": 1, "std/reward": 0, "mean/total_tokens": 14})
	checkMetrics(t, "key", agg.KeyMetrics, map[string]float64{"mean/reward": 1})
	g := agg.GroupLevelMetrics[0]
	checkMetrics(t, "group", g, map[string]float64{"_ng_task_index": 0, "mean/reward": 1, "std/reward": 0,
		"num_rollouts": 1, "expected_num_rollouts": 1, "missing_num_rollouts": 0, "reward_profile_completion_pct": 100})
	infos, _ := json.Marshal(g["rollout_infos"])
	if string(infos) != `[{"_ng_rollout_index":0,"_ng_task_index":0,"reward":1,"rollout_id":"0:0","total_tokens":14}]` {
		t.Errorf("rollout_infos %s", infos)
	}
	if _, ok := g["mean/_ng_task_index"]; ok {
		t.Error("Gym's bookkeeping fields are aggregated")
	}

	rows := []Row{}
	for _, s := range []string{
		`{"_ng_task_index":0,"_ng_rollout_index":0,"reward":1,"resolved":true}`,
		`{"_ng_task_index":0,"_ng_rollout_index":1,"reward":0,"resolved":false}`,
		`{"_ng_task_index":1,"_ng_rollout_index":0,"reward":0,"resolved":false,"infra_error":{"kind":"image"}}`,
	} {
		r, _ := ParseRow([]byte(s))
		rows = append(rows, r)
	}
	agg = Aggregate(rows)
	checkMetrics(t, "agent", agg.AgentMetrics, map[string]float64{"mean/reward": 1.0 / 3, "mean/resolved": 1.0 / 3,
		"pass@k/accuracy": 50, "pass@1[avg-of-k]/accuracy": 25, "eval_error_rate": 1.0 / 3, "median/reward": 0})
	checkMetrics(t, "task 0", agg.GroupLevelMetrics[0], map[string]float64{"std/reward": math.Sqrt(0.5), "median/reward": 0.5, "num_rollouts": 2})
	checkMetrics(t, "task 1", agg.GroupLevelMetrics[1], map[string]float64{"num_rollouts": 1, "expected_num_rollouts": 2,
		"missing_num_rollouts": 1, "reward_profile_completion_pct": 50})
}

func checkMetrics(t *testing.T, where string, got map[string]any, want map[string]float64) {
	t.Helper()
	for k, w := range want {
		v, ok := got[k]
		if !ok {
			t.Errorf("%s: no %s", where, k)
			continue
		}
		var f float64
		switch x := v.(type) {
		case float64:
			f = x
		case int:
			f = float64(x)
		default:
			t.Errorf("%s: %s is %T", where, k, v)
			continue
		}
		if math.Abs(f-w) > 1e-9 {
			t.Errorf("%s: %s = %v, want %v", where, k, f, w)
		}
	}
}

func TestFromChat(t *testing.T) {
	msgs := []llm.Message{
		{Role: "system", Content: "rules"},
		{Role: "user", Content: "task"},
		{Role: "assistant", Content: "look", ToolCalls: []llm.ToolCall{{ID: "c1", Type: "function", Function: llm.FunctionCall{Name: "bash", Arguments: `{"command":"ls"}`}}}},
		{Role: "tool", ToolCallID: "c1", Name: "bash", Content: "a.py"},
		{Role: "assistant", Content: "THOUGHT: done\n```bash\necho ok\n```"},
		{Role: "user", Content: "<returncode>0</returncode>"},
	}
	toks := []*Tokens{{PromptTokenIDs: []int{1}, GenerationTokenIDs: []int{2}, GenerationLogProbs: []float64{-1}}, nil}
	input, out := FromChat(msgs, toks)
	if string(input) != `[{"type":"message","role":"system","content":"rules"},{"type":"message","role":"user","content":"task"}]` {
		t.Errorf("input %s", input)
	}
	var types []string
	for _, it := range out {
		types = append(types, it.Type+":"+it.Role)
	}
	want := []string{"message:assistant", "function_call:", "function_call_output:", "message:assistant", "message:user"}
	if got, _ := json.Marshal(types); string(got) != mustJSON(want) {
		t.Fatalf("items %s, want %s", got, mustJSON(want))
	}
	if out[1].GenerationTokenIDs == nil || out[0].GenerationTokenIDs != nil || out[3].GenerationTokenIDs != nil {
		t.Errorf("tokens belong on the last item of the first call only: %+v", out)
	}
	if out[0].Content[0].Type != "output_text" || out[4].Content[0].Type != "input_text" {
		t.Errorf("content types: %+v %+v", out[0], out[4])
	}
	if out[1].CallID != "c1" || out[2].CallID != "c1" || out[2].Output != "a.py" {
		t.Errorf("call ids: %+v %+v", out[1], out[2])
	}
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func TestLoadConfig(t *testing.T) {
	dir := t.TempDir()
	nested := filepath.Join(dir, "gym.yaml")
	os.WriteFile(nested, []byte(`swerve_agent:
  responses_api_agents:
    mini_swe_agent:
      entrypoint: app.py
      model_server:
        type: responses_api_models
        name: policy_model
      concurrency: 8
      env: docker
      cache_dir_template: ???
      step_timeout: 600
      eval_timeout: 1800
      step_limit: 250
      collapse_limit: 3
      run_golden: false
      skip_if_exists: false
`), 0o644)
	m, err := LoadConfig(nested)
	if err != nil {
		t.Fatal(err)
	}
	if len(m) != 9 || m["concurrency"] != float64(8) || m["env"] != "docker" {
		t.Errorf("config %v", m)
	}
	if _, ok := m["entrypoint"]; ok {
		t.Error("Gym's wiring keys kept")
	}
	flat := filepath.Join(dir, "flat.yaml")
	os.WriteFile(flat, []byte("concurrency: 2\nlisten: 127.0.0.1:9000\n"), 0o644)
	if m, err = LoadConfig(flat); err != nil || m["listen"] != "127.0.0.1:9000" {
		t.Errorf("flat: %v %v", m, err)
	}
	two := filepath.Join(dir, "two.yaml")
	os.WriteFile(two, []byte("a:\n  responses_api_agents:\n    x: {}\n    y: {}\n"), 0o644)
	if _, err := LoadConfig(two); err == nil {
		t.Error("two agents in one config: no error")
	}
}
