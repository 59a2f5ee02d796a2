// Package gym writes task datasets as NeMo Gym input rows: the task's
// fields as Gym's swebench and mini-swe resources servers read them, and
// responses_create_params holding the prompt a swerve agent would start
// from.
package gym

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"unicode/utf16"

	"github.com/swerve-dev/swerve/internal/agent"
	"github.com/swerve-dev/swerve/internal/llm"
	"github.com/swerve-dev/swerve/internal/task"
)

// Options say how rows are written.
type Options struct {
	// Scaffold and Mode give the prompt (the scaffold's system and
	// instance messages) and, in function-calling mode, the tools.
	Scaffold *agent.Scaffold
	Mode     agent.Mode
	// MaxSteps is the step limit the prompt quotes (0: the default).
	MaxSteps int
	// Workdir is where the prompt says the repository is ("": /testbed).
	Workdir string
	// Subset, when set, is every row's subset; else the row's own, else
	// the dialect the task was read as.
	Subset string
	// Split is the split of rows that have none of their own ("": test).
	Split string
	// AgentRef, when set, is written as agent_ref {"name": AgentRef}.
	AgentRef string
}

// taskFields are the SWE-bench fields Gym's swebench resources server
// requires, in the order its recorded rows have them.
var taskFields = []string{
	"repo", "instance_id", "base_commit", "patch", "test_patch", "problem_statement", "hints_text",
	"created_at", "version", "FAIL_TO_PASS", "PASS_TO_PASS", "environment_setup_commit", "difficulty",
}

// swebenchOnly are the fields Gym's swebench server requires that SWE-Gym
// rows (Gym's mini-swe resources server's) do not have.
var swebenchOnly = map[string]bool{"created_at": true, "environment_setup_commit": true, "difficulty": true}

// PyJSONList encodes names the way Python's json.dumps does with its
// defaults (", " between items, non-ASCII as \u escapes): the form of
// SWE-bench's FAIL_TO_PASS and PASS_TO_PASS strings.
func PyJSONList(names []string) string {
	var b strings.Builder
	b.WriteByte('[')
	for i, n := range names {
		if i > 0 {
			b.WriteString(", ")
		}
		for _, r := range string(mustJSON(n)) {
			switch {
			case r < 0x80:
				b.WriteRune(r)
			case r > 0xffff:
				r1, r2 := utf16.EncodeRune(r)
				fmt.Fprintf(&b, "\\u%04x\\u%04x", r1, r2)
			default:
				fmt.Fprintf(&b, "\\u%04x", r)
			}
		}
	}
	b.WriteByte(']')
	return b.String()
}

// dropped are the original row's fields a Gym row does not carry over:
// Gym's own (rewritten here) and swerve's nested copy of a row.
func dropped(key string) bool {
	switch key {
	case "responses_create_params", "agent_ref", "subset", "split", "raw", "response", "reward":
		return true
	}
	return strings.HasPrefix(key, "_ng_")
}

// field is one key and its JSON value, keeping the order they are written in.
type field struct {
	key string
	val json.RawMessage
}

// Row returns t as one NeMo Gym input row (a line of JSON, with newline).
//
// The task fields come first: instance_id, repo, base_commit, patch (the
// gold fix), test_patch, problem_statement, hints_text and version from the
// task as swerve read it; FAIL_TO_PASS and PASS_TO_PASS likewise, as JSON
// strings (SWE-bench's and Gym's swebench server's form) unless the
// original row had them as lists (SWE-Gym rows), then as lists;
// created_at, environment_setup_commit and difficulty from the original
// row, else "" (environment_setup_commit: the base commit). The original
// row's other fields follow unchanged (source_dir made absolute), and for
// SWE-Factory rows grader and image, so that swerve reads the row back with
// the same grader. Then responses_create_params
// (input: the scaffold's system and user messages; tools in
// function-calling mode), subset, split and agent_ref.
func Row(t *task.Task, opts Options) ([]byte, error) {
	if opts.Scaffold == nil {
		return nil, fmt.Errorf("gym: task %s: no scaffold", t.InstanceID)
	}
	var raw []field
	if t.Dialect != task.DialectHarbor { // a Harbor task's raw is its task.toml, not a row
		var err error
		if raw, err = orderedObject(t.Raw); err != nil {
			return nil, fmt.Errorf("task %s: raw: %w", t.InstanceID, err)
		}
	}
	rawVal := map[string]json.RawMessage{}
	for _, f := range raw {
		rawVal[f.key] = f.val
	}
	listTests := false
	if v, ok := rawVal["FAIL_TO_PASS"]; ok && bytes.HasPrefix(bytes.TrimSpace(v), []byte("[")) {
		listTests = true
	}
	tests := func(key string, names []string) any {
		if names == nil {
			names = []string{}
		}
		if listTests {
			return names
		}
		// The row's own string when it says the same (byte for byte
		// the same row), else the form Python's json.dumps gives.
		if v, ok := rawVal[key]; ok {
			var s string
			var list []string
			if json.Unmarshal(v, &s) == nil && json.Unmarshal([]byte(s), &list) == nil && slices.Equal(list, names) {
				return s
			}
		}
		return PyJSONList(names)
	}
	fromRaw := func(key, fallback string) any {
		if v, ok := rawVal[key]; ok && string(v) != "null" {
			return v
		}
		return fallback
	}
	own := map[string]any{
		"repo": t.Repo, "instance_id": t.InstanceID, "base_commit": t.BaseCommit, "patch": t.Patch,
		"test_patch": t.TestPatch, "problem_statement": t.ProblemStatement, "hints_text": t.Hints,
		"created_at": fromRaw("created_at", ""), "version": t.Version,
		"FAIL_TO_PASS": tests("FAIL_TO_PASS", t.FailToPass), "PASS_TO_PASS": tests("PASS_TO_PASS", t.PassToPass),
		"environment_setup_commit": fromRaw("environment_setup_commit", t.BaseCommit),
		"difficulty":               fromRaw("difficulty", ""),
	}
	var out []field
	for _, k := range taskFields {
		if _, had := rawVal[k]; listTests && !had && swebenchOnly[k] {
			continue // a SWE-Gym row keeps its own keys
		}
		out = append(out, field{k, mustJSON(own[k])})
	}
	for _, f := range raw {
		if _, ok := own[f.key]; ok || dropped(f.key) {
			continue
		}
		if f.key == "source_dir" && t.SourceDir != "" {
			// Relative to the dataset file in the original; the rows may
			// be written elsewhere.
			f.val = mustJSON(t.SourceDir)
		}
		out = append(out, f)
	}

	// SWE-Factory rows are graded by their eval script's exit marker, which
	// a Gym row (read back as a SWE-bench-like row) would not know: say so.
	if t.Dialect == task.DialectSWEFactory {
		if _, ok := rawVal["grader"]; !ok {
			out = append(out, field{"grader", mustJSON(string(t.Grader))})
		}
		if _, ok := rawVal["image"]; !ok { // "" too: a local task has no image
			out = append(out, field{"image", mustJSON(t.Image)})
		}
	}

	msgs, err := agent.Prompt(opts.Scaffold, t, opts.Mode, opts.Workdir, opts.MaxSteps)
	if err != nil {
		return nil, fmt.Errorf("task %s: prompt: %w", t.InstanceID, err)
	}
	rcp := responsesCreateParams{}
	for _, m := range msgs {
		rcp.Input = append(rcp.Input, inputMessage{Role: string(m.Role), Content: m.Content})
	}
	if opts.Mode == agent.ModeFn {
		for _, tool := range opts.Scaffold.ToolSchemas() {
			rcp.Tools = append(rcp.Tools, functionTool(tool))
		}
	}
	out = append(out, field{"responses_create_params", mustJSON(rcp)})

	subset := opts.Subset
	if subset == "" {
		if v, ok := rawVal["subset"]; ok {
			json.Unmarshal(v, &subset)
		}
	}
	if subset == "" {
		subset = string(t.Dialect)
	}
	split := ""
	if v, ok := rawVal["split"]; ok {
		json.Unmarshal(v, &split)
	}
	if split == "" {
		split = t.Split
	}
	if split == "" {
		split = opts.Split
	}
	if split == "" {
		split = "test"
	}
	out = append(out, field{"subset", mustJSON(subset)}, field{"split", mustJSON(split)})
	if opts.AgentRef != "" {
		out = append(out, field{"agent_ref", mustJSON(map[string]string{"name": opts.AgentRef})})
	}

	var b bytes.Buffer
	b.WriteByte('{')
	for i, f := range out {
		if i > 0 {
			b.WriteByte(',')
		}
		b.Write(mustJSON(f.key))
		b.WriteByte(':')
		if err := json.Compact(&b, f.val); err != nil {
			return nil, fmt.Errorf("task %s: %s: %w", t.InstanceID, f.key, err)
		}
	}
	b.WriteString("}\n")
	return b.Bytes(), nil
}

// responsesCreateParams is the part of an OpenAI Responses request a Gym
// row carries; sampling settings are left to the trainer.
type responsesCreateParams struct {
	Input []inputMessage `json:"input"`
	Tools []responseTool `json:"tools,omitempty"`
}

type inputMessage struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// responseTool is a function tool in the Responses API's flat shape.
type responseTool struct {
	Type        string          `json:"type"`
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters"`
	Strict      bool            `json:"strict"`
}

func functionTool(t llm.Tool) responseTool {
	params := t.Function.Parameters
	if len(params) == 0 {
		params = json.RawMessage(`{"type":"object","properties":{}}`)
	}
	return responseTool{Type: "function", Name: t.Function.Name, Description: t.Function.Description, Parameters: params}
}

// mustJSON encodes v without HTML escaping; v is always encodable here.
func mustJSON(v any) json.RawMessage {
	if r, ok := v.(json.RawMessage); ok {
		return r
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		panic(err)
	}
	return bytes.TrimRight(b.Bytes(), "\n")
}

// orderedObject splits a JSON object into its fields, in order. Empty
// input or a non-object (a Harbor task's raw is its task.toml) gives none.
func orderedObject(data json.RawMessage) ([]field, error) {
	data = bytes.TrimSpace(data)
	if len(data) == 0 || data[0] != '{' {
		return nil, nil
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	if _, err := dec.Token(); err != nil {
		return nil, err
	}
	var out []field
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		key, _ := tok.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, err
		}
		out = append(out, field{key, v})
	}
	return out, nil
}
