package run_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/swerve-dev/swerve/internal/agent"
	"github.com/swerve-dev/swerve/internal/run"
)

// schema is the subset of JSON Schema that
// testdata/upstream_trajectory.schema.json uses: type (a name or a list),
// required, properties, items and enum.
type schema struct {
	Type       any                `json:"type"`
	Required   []string           `json:"required"`
	Properties map[string]*schema `json:"properties"`
	Items      *schema            `json:"items"`
	Enum       []any              `json:"enum"`
}

func loadSchema(t testing.TB) *schema {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "upstream_trajectory.schema.json"))
	if err != nil {
		t.Fatal(err)
	}
	s := new(schema)
	if err := json.Unmarshal(b, s); err != nil {
		t.Fatal(err)
	}
	return s
}

// typeOf names v's JSON type; a number without a fraction is an integer
// (and a number).
func typeOf(v any) []string {
	switch v := v.(type) {
	case nil:
		return []string{"null"}
	case bool:
		return []string{"boolean"}
	case string:
		return []string{"string"}
	case json.Number:
		if _, err := v.Int64(); err == nil {
			return []string{"integer", "number"}
		}
		return []string{"number"}
	case []any:
		return []string{"array"}
	case map[string]any:
		return []string{"object"}
	}
	return []string{fmt.Sprintf("%T", v)}
}

// validate lists where v breaks s, one "path: problem" each.
func (s *schema) validate(v any, path string) []string {
	var errs []string
	if s.Type != nil {
		var want []string
		switch ty := s.Type.(type) {
		case string:
			want = []string{ty}
		case []any:
			for _, x := range ty {
				want = append(want, x.(string))
			}
		}
		got := typeOf(v)
		if !slices.ContainsFunc(want, func(w string) bool { return slices.Contains(got, w) }) {
			return []string{fmt.Sprintf("%s: is %s, want %s", path, got[0], strings.Join(want, " or "))}
		}
	}
	if len(s.Enum) > 0 && !slices.Contains(s.Enum, v) {
		errs = append(errs, fmt.Sprintf("%s: %v is not one of %v", path, v, s.Enum))
	}
	if obj, ok := v.(map[string]any); ok {
		for _, r := range s.Required {
			if _, ok := obj[r]; !ok {
				errs = append(errs, fmt.Sprintf("%s: required field %s is missing", path, r))
			}
		}
		keys := make([]string, 0, len(s.Properties))
		for k := range s.Properties {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			if x, ok := obj[k]; ok {
				errs = append(errs, s.Properties[k].validate(x, path+"."+k)...)
			}
		}
	}
	if arr, ok := v.([]any); ok && s.Items != nil {
		for i, x := range arr {
			errs = append(errs, s.Items.validate(x, fmt.Sprintf("%s[%d]", path, i))...)
		}
	}
	return errs
}

func decodeRow(t testing.TB, line []byte) any {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		t.Fatal(err)
	}
	return v
}

// checkUpstreamRows validates every row of an <exp_name>.jsonl against the
// schema of upstream's trajectory rows.
func checkUpstreamRows(t testing.TB, path string) {
	t.Helper()
	s := loadSchema(t)
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<30)
	for n := 1; sc.Scan(); n++ {
		row := decodeRow(t, sc.Bytes())
		for _, e := range s.validate(row, "row") {
			t.Errorf("%s line %d: %s", path, n, e)
		}
		steps, _ := row.(map[string]any)["trajectory_steps"].([]any)
		for i, st := range steps {
			st := st.(map[string]any)
			if idx, cnt := st["step_idx"].(json.Number).String(), st["step_count"].(json.Number).String(); idx != fmt.Sprint(i) || cnt != fmt.Sprint(i+1) {
				t.Errorf("%s line %d: step %d has step_idx %s and step_count %s", path, n, i, idx, cnt)
			}
			if a := st["action"].(string); !strings.HasPrefix(a, "<function=") {
				t.Errorf("%s line %d: step %d's action is not in the <function=...> form: %q", path, n, i, a)
			}
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
}

// TestUpstreamSchemaCatches shows the schema check fails a row that lacks
// what upstream's model requires, or has it of the wrong type.
func TestUpstreamSchemaCatches(t *testing.T) {
	good := `{"trajectory_steps":[{"step_idx":0,"thought":"t","action":"<function=bash>\n</function>","observation":"o","done":true,"info":{},"token_usage_prompt":1,"token_usage_completion":2,"token_usage_total":3,"llm_exec_time":0.5,"env_exec_time":1,"total_step_time":1.5,"total_time_traj":1.5,"step_count":1}],` +
		`"problem_statement":"p","docker_image":"img","exp_name":"e","env_args":{},"agent_args":{"other_args":{}},"ds":{"instance_id":"i","docker_image":"img"},` +
		`"max_steps":40,"max_steps_absolute":50,"max_token_limit":65536,"max_llm_time":0,"max_exec_time":90,"max_total_time":0,"exit_reason":"agent","output_patch":"",` +
		`"reward":1,"reward_calc_time":2.5,"test_output":"","history":[{"role":"user","content":"x"}]}`
	s := loadSchema(t)
	for _, tc := range []struct {
		name string
		edit func(map[string]any)
		want string // "" for valid
	}{
		{"valid", func(map[string]any) {}, ""},
		{"no max_steps", func(r map[string]any) { delete(r, "max_steps") }, "required field max_steps is missing"},
		{"no max_total_time", func(r map[string]any) { delete(r, "max_total_time") }, "required field max_total_time is missing"},
		{"step without info", func(r map[string]any) { delete(r["trajectory_steps"].([]any)[0].(map[string]any), "info") }, "row.trajectory_steps[0]: required field info is missing"},
		{"step without step_count", func(r map[string]any) { delete(r["trajectory_steps"].([]any)[0].(map[string]any), "step_count") }, "required field step_count is missing"},
		{"ds without docker_image", func(r map[string]any) { delete(r["ds"].(map[string]any), "docker_image") }, "row.ds: required field docker_image is missing"},
		{"no ds", func(r map[string]any) { delete(r, "ds") }, "required field ds is missing"},
		{"swerve's exit reason", func(r map[string]any) { r["exit_reason"] = "submitted" }, "row.exit_reason: submitted is not one of"},
		{"fractional max_steps", func(r map[string]any) { r["max_steps"] = json.Number("40.5") }, "row.max_steps: is number, want integer"},
		{"history as a string", func(r map[string]any) { r["history"] = "x" }, "row.history: is string, want array"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			row := decodeRow(t, []byte(good)).(map[string]any)
			tc.edit(row)
			errs := s.validate(row, "row")
			if tc.want == "" {
				if len(errs) > 0 {
					t.Fatalf("valid row refused: %v", errs)
				}
				return
			}
			if !slices.ContainsFunc(errs, func(e string) bool { return strings.Contains(e, tc.want) }) {
				t.Fatalf("errors %v, want one saying %q", errs, tc.want)
			}
		})
	}
}

// TestUpstreamModelLoadsRows loads the rows of a real run with a pydantic
// model of upstream's trajectory rows (testdata/upstream_model.py, written
// for swerve from the field names and types), when python3 has pydantic 2.
func TestUpstreamModelLoadsRows(t *testing.T) {
	// The first python3 on PATH with pydantic 2 (TestMain puts the system's
	// first, which may lack it).
	py := ""
	for _, dir := range filepath.SplitList(os.Getenv("PATH")) {
		p := filepath.Join(dir, "python3")
		if _, err := os.Stat(p); err != nil {
			continue
		}
		if exec.Command(p, "-c", "import pydantic, sys; sys.exit(int(pydantic.VERSION.split('.')[0]) < 2)").Run() == nil {
			py = p
			break
		}
	}
	if py == "" {
		t.Skip("skipped: no python3 with pydantic 2 on PATH to load the rows with")
	}
	for _, tc := range []struct{ scaffold, mode string }{{"mini_swe_agent", "text"}, {"r2egym", "fn"}} {
		t.Run(tc.scaffold+"/"+tc.mode, func(t *testing.T) {
			dir := oracleRun(t, tc.scaffold, tc.mode)
			out, err := exec.Command(py, filepath.Join("testdata", "upstream_model.py"), filepath.Join(dir, "exp.jsonl")).CombinedOutput()
			if err != nil {
				t.Fatalf("the model refused the rows: %v\n%s", err, out)
			}
			if !strings.Contains(string(out), "rows loaded") {
				t.Fatalf("unexpected output:\n%s", out)
			}
		})
	}
}

// oracleRun runs the oracle on the sample and demo tasks and returns the
// run directory.
func oracleRun(t *testing.T, scaffold, mode string) string {
	t.Helper()
	m := agent.ModeText
	if mode == "fn" {
		m = agent.ModeFn
	}
	o := options(t, allTasks(t), scaffold, m)
	if _, err := run.Run(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	return o.TrajDir
}
