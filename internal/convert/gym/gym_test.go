package gym

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/swerve-dev/swerve/internal/agent"
	_ "github.com/swerve-dev/swerve/internal/agent/scaffold/all"
	"github.com/swerve-dev/swerve/internal/task"
	"github.com/swerve-dev/swerve/internal/testutil"
)

func readRows(t *testing.T, path string) []map[string]any {
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
			t.Fatal(err)
		}
		rows = append(rows, m)
	}
	return rows
}

func load(t *testing.T, path string, ids ...string) []task.Task {
	t.Helper()
	res, err := task.Load(context.Background(), path, task.LoadOptions{InstanceIDs: ids})
	if err != nil {
		t.Fatal(err)
	}
	return res.Tasks
}

func convert(t *testing.T, tasks []task.Task, opts Options) []map[string]any {
	t.Helper()
	var buf bytes.Buffer
	for i := range tasks {
		b, err := Row(&tasks[i], opts)
		if err != nil {
			t.Fatal(err)
		}
		buf.Write(b)
	}
	path := filepath.Join(t.TempDir(), "rows.jsonl")
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return readRows(t, path)
}

func options(t *testing.T, scaffold string, fn bool) Options {
	s, err := agent.Lookup(scaffold)
	if err != nil {
		t.Fatal(err)
	}
	mode := agent.ModeText
	if fn {
		mode = agent.ModeFn
	}
	return Options{Scaffold: s, Mode: mode, AgentRef: "swerve_agent"}
}

// sameAsRecorded checks that got has every key of the recorded Gym row
// with a value of the same JSON type, and the same value except for the
// prompt; extra lists the keys got may have besides.
func sameAsRecorded(t *testing.T, want, got map[string]any, extra ...string) {
	t.Helper()
	id := want["instance_id"]
	for k, w := range want {
		g, ok := got[k]
		if !ok {
			t.Errorf("%s: key %s missing", id, k)
			continue
		}
		if reflect.TypeOf(g) != reflect.TypeOf(w) {
			t.Errorf("%s: %s is a %T, the recorded row has a %T", id, k, g, w)
			continue
		}
		if k != "responses_create_params" && !reflect.DeepEqual(g, w) {
			t.Errorf("%s: %s = %.200v, recorded %.200v", id, k, g, w)
		}
	}
	for k := range got {
		if _, ok := want[k]; !ok && !strings.Contains(" "+strings.Join(extra, " ")+" ", " "+k+" ") {
			t.Errorf("%s: key %s not in the recorded row", id, k)
		}
	}
	if got["agent_ref"] != nil && !reflect.DeepEqual(got["agent_ref"], map[string]any{"name": "swerve_agent"}) {
		t.Errorf("%s: agent_ref = %v", id, got["agent_ref"])
	}
}

// TestRecordedRows converts NeMo Gym's own recorded input rows (its
// swebench server's, SWE-bench Verified; its mini-swe server's, SWE-Gym)
// and compares with them.
func TestRecordedRows(t *testing.T) {
	shared := testutil.SharedDir(t)
	for _, c := range []struct {
		file     string
		scaffold string
		fn       bool
	}{
		{"swebench/example.jsonl", "mini_swe_agent", false},
		{"mini_swe_resource/example.jsonl", "r2egym", true},
	} {
		path := filepath.Join(shared, "data", "nemo-gym", c.file)
		want := readRows(t, path)
		got := convert(t, load(t, path), options(t, c.scaffold, c.fn))
		if len(got) != len(want) {
			t.Fatalf("%s: %d rows, want %d", c.file, len(got), len(want))
		}
		for i := range want {
			sameAsRecorded(t, want[i], got[i], "agent_ref")
		}
	}
}

// TestVerifiedParquetMatchesGymRows converts SWE-bench Verified itself:
// the instances Gym ships rows for come out with the same keys, types and
// values (the parquet's 5.x harness columns come along besides).
func TestVerifiedParquetMatchesGymRows(t *testing.T) {
	shared := testutil.SharedDir(t)
	want := readRows(t, filepath.Join(shared, "data", "nemo-gym", "swebench", "example.jsonl"))
	var ids []string
	for _, w := range want {
		ids = append(ids, w["instance_id"].(string))
	}
	opts := options(t, "mini_swe_agent", false)
	opts.Subset = "verified"
	opts.Split = "test"
	got := convert(t, load(t, filepath.Join(shared, "data", "swebench", "verified-test.parquet"), ids...), opts)
	byID := map[string]map[string]any{}
	for _, g := range got {
		byID[g["instance_id"].(string)] = g
	}
	for _, w := range want {
		g := byID[w["instance_id"].(string)]
		if g == nil {
			t.Fatalf("%s: no row", w["instance_id"])
		}
		sameAsRecorded(t, w, g, "agent_ref", "image", "eval_script", "log_parser", "eval_type")
	}
}

func TestPromptAndTools(t *testing.T) {
	tasks := load(t, filepath.Join(testutil.RepoRoot(t), "examples", "sample", "tasks.jsonl"))
	for _, fn := range []bool{false, true} {
		opts := options(t, "r2egym", fn)
		rows := convert(t, tasks, opts)
		for i, r := range rows {
			rcp := r["responses_create_params"].(map[string]any)
			want, err := agent.Prompt(opts.Scaffold, &tasks[i], opts.Mode, "", 0)
			if err != nil {
				t.Fatal(err)
			}
			input := rcp["input"].([]any)
			if len(input) != 2 {
				t.Fatalf("input has %d messages", len(input))
			}
			for j, m := range input {
				mm := m.(map[string]any)
				if mm["role"] != string(want[j].Role) || mm["content"] != want[j].Content {
					t.Errorf("fn=%v row %d: input[%d] is not the scaffold's prompt", fn, i, j)
				}
			}
			tools, has := rcp["tools"].([]any)
			if has != fn {
				t.Fatalf("fn=%v: tools present=%v", fn, has)
			}
			for j, tool := range tools {
				tm := tool.(map[string]any)
				def := opts.Scaffold.Tools[j].Def
				if tm["type"] != "function" || tm["name"] != def.Name || tm["parameters"] == nil || tm["function"] != nil {
					t.Errorf("tool %d: %v, want the Responses API's flat function tool %s", j, tm, def.Name)
				}
			}
			if r["split"] != "test" || r["subset"] != "swebench" {
				t.Errorf("row %d: split %v subset %v", i, r["split"], r["subset"])
			}
			// The sample's tests are JSON strings: they stay strings.
			if _, ok := r["FAIL_TO_PASS"].(string); !ok {
				t.Errorf("row %d: FAIL_TO_PASS is a %T", i, r["FAIL_TO_PASS"])
			}
		}
	}
}

func TestRowsLoadBack(t *testing.T) {
	path := filepath.Join(testutil.RepoRoot(t), "examples", "sample", "tasks.jsonl")
	tasks := load(t, path)
	var buf bytes.Buffer
	for i := range tasks {
		b, err := Row(&tasks[i], options(t, "mini_swe_agent", false))
		if err != nil {
			t.Fatal(err)
		}
		buf.Write(b)
	}
	out := filepath.Join(t.TempDir(), "rows.jsonl")
	os.WriteFile(out, buf.Bytes(), 0o644)
	back := load(t, out)
	for i := range tasks {
		a, b := tasks[i], back[i]
		if a.InstanceID != b.InstanceID || a.Patch != b.Patch || a.TestPatch != b.TestPatch || a.EvalScript != b.EvalScript ||
			!reflect.DeepEqual(a.FailToPass, b.FailToPass) || !reflect.DeepEqual(a.PassToPass, b.PassToPass) {
			t.Errorf("%s: reloaded task differs", a.InstanceID)
		}
	}
}

func TestPyJSONList(t *testing.T) {
	// python3 -c 'import json; print(json.dumps(["é", "𝄞", "a\"b\\\\", "\t"]))'
	want := `["\u00e9", "\ud834\udd1e", "a\"b\\\\", "\t"]`
	if got := PyJSONList([]string{"é", "𝄞", `a"b\\`, "\t"}); got != want {
		t.Errorf("PyJSONList = %s, want %s", got, want)
	}
	if got := PyJSONList(nil); got != "[]" {
		t.Errorf("empty: %s", got)
	}
}

// Rows of the datasets whose grading a Gym row can say load back with the
// same grader, image and tests.
func TestRowsKeepGrader(t *testing.T) {
	root := testutil.RepoRoot(t)
	for _, path := range []string{
		filepath.Join(root, "examples", "sample", "sample_transferred.json"),
		filepath.Join(root, "internal", "task", "testdata", "swesmith_list.json"),
	} {
		tasks := load(t, path)
		var buf bytes.Buffer
		for i := range tasks {
			b, err := Row(&tasks[i], options(t, "mini_swe_agent", false))
			if err != nil {
				t.Fatal(err)
			}
			buf.Write(b)
		}
		out := filepath.Join(t.TempDir(), "rows.jsonl")
		os.WriteFile(out, buf.Bytes(), 0o644)
		back := load(t, out)
		for i := range tasks {
			a, b := tasks[i], back[i]
			if a.Grader != b.Grader || a.Image != b.Image || a.Patch != b.Patch || a.EvalScript != b.EvalScript ||
				!reflect.DeepEqual(a.FailToPass, b.FailToPass) {
				t.Errorf("%s: read back as grader %s image %q, was %s %q", a.InstanceID, b.Grader, b.Image, a.Grader, a.Image)
			}
		}
	}
}
