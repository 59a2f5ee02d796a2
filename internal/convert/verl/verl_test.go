package verl

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/format"

	"github.com/swerve-dev/swerve/internal/task"
)

func repoRoot(t *testing.T) string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "..")
}

func sampleTasks(t *testing.T) []task.Task {
	t.Helper()
	res, err := task.Load(context.Background(), filepath.Join(repoRoot(t), "examples", "sample", "tasks.jsonl"), task.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return res.Tasks
}

func fakeTasks(n int) []task.Task {
	out := make([]task.Task, n)
	for i := range out {
		id := "org__proj-" + strings.Repeat("1", i%3+1) + string(rune('a'+i%26)) + string(rune('a'+i/26))
		out[i] = task.Task{InstanceID: id, Repo: "org/proj", BaseCommit: "abc123", ProblemStatement: "bug " + id, Patch: "diff " + id}
	}
	return out
}

func TestRowsOfSampleTasks(t *testing.T) {
	tasks := sampleTasks(t)
	res, err := Convert(tasks, Options{DataSource: "swerve/sample"})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Train) != len(tasks) || len(res.Val) != 0 {
		t.Fatalf("got %d train, %d val rows for %d tasks", len(res.Train), len(res.Val), len(tasks))
	}
	for i, r := range res.Train {
		tk := tasks[i]
		e := r.ExtraInfo
		if r.DataSource != "swerve/sample" || r.AgentName != "tool_agent" || r.Ability != "software_engineering" {
			t.Errorf("row %d: data_source/agent_name/ability = %q/%q/%q", i, r.DataSource, r.AgentName, r.Ability)
		}
		if r.RewardModel != (RewardModel{Style: "tool", Name: "swebench_sandbox"}) {
			t.Errorf("row %d: reward_model = %+v", i, r.RewardModel)
		}
		if e.Index != int64(i) || e.Split != "train" || e.InstanceID != tk.InstanceID || e.Repo != tk.Repo || e.BaseCommit != tk.BaseCommit || !e.NeedToolsKwargs {
			t.Errorf("row %d: extra_info = %+v", i, e)
		}
		if !slices.Equal(e.FailToPass, tk.FailToPass) || !slices.Equal(e.PassToPass, nonNil(tk.PassToPass)) {
			t.Errorf("row %d: tests %v %v, want %v %v", i, e.FailToPass, e.PassToPass, tk.FailToPass, tk.PassToPass)
		}
		want := CreateKwargs{InstanceID: tk.InstanceID, Repo: tk.Repo, BaseCommit: tk.BaseCommit}
		if e.ToolsKwargs.Bash.CreateKwargs != want || e.ToolsKwargs.SubmitSolution.CreateKwargs != want {
			t.Errorf("row %d: tools_kwargs = %+v, want create_kwargs %+v for both tools", i, e.ToolsKwargs, want)
		}
		if len(r.Prompt) != 2 || r.Prompt[0].Role != "system" || r.Prompt[1].Role != "user" {
			t.Fatalf("row %d: prompt roles: %+v", i, r.Prompt)
		}
		sys, user := r.Prompt[0].Content, r.Prompt[1].Content
		for _, s := range []string{tk.Repo, "bash", "submit_solution", "/testbed"} {
			if !strings.Contains(sys, s) {
				t.Errorf("row %d: system message lacks %q", i, s)
			}
		}
		// Style-3's sections, in order.
		issue := "<issue>\n" + strings.TrimRight(tk.ProblemStatement, "\n") + "\n</issue>"
		last := -1
		for _, s := range []string{issue, "<code>", "</code>", "<patch>", "</patch>", "git apply", "Start below:"} {
			at := strings.Index(user, s)
			if at <= last {
				t.Errorf("row %d: user message: %q missing or out of order", i, s)
			}
			last = at
		}
		if e.GroundTruthPatch != "" {
			t.Errorf("row %d: ground_truth_patch without the option", i)
		}
	}
}

func TestValSplitIsStable(t *testing.T) {
	tasks := fakeTasks(40)
	a, err := Convert(tasks, Options{DataSource: "d", ValSize: 8})
	if err != nil {
		t.Fatal(err)
	}
	if len(a.Val) != 8 || len(a.Train) != 32 {
		t.Fatalf("split %d/%d, want 32/8", len(a.Train), len(a.Val))
	}
	// Reversed input: the same tasks go to val, indexes follow the new order.
	rev := slices.Clone(tasks)
	slices.Reverse(rev)
	b, err := Convert(rev, Options{DataSource: "d", ValSize: 0.2})
	if err != nil {
		t.Fatal(err)
	}
	ids := func(rows []Row) []string {
		var s []string
		for _, r := range rows {
			s = append(s, r.ExtraInfo.InstanceID)
		}
		slices.Sort(s)
		return s
	}
	if !slices.Equal(ids(a.Val), ids(b.Val)) {
		t.Errorf("val split depends on order: %v vs %v", ids(a.Val), ids(b.Val))
	}
	for _, r := range b.Val {
		if r.ExtraInfo.Split != SplitVal || rev[r.ExtraInfo.Index].InstanceID != r.ExtraInfo.InstanceID {
			t.Errorf("val row %+v: split or index wrong", r.ExtraInfo)
		}
	}
	for _, r := range a.Train {
		if r.ExtraInfo.Split != SplitTrain || tasks[r.ExtraInfo.Index].InstanceID != r.ExtraInfo.InstanceID {
			t.Errorf("train row %+v: split or index wrong", r.ExtraInfo)
		}
	}
}

func TestValCount(t *testing.T) {
	for _, c := range []struct {
		size float64
		n    int
		want int
		err  bool
	}{
		{0, 10, 0, false}, {3, 10, 3, false}, {0.25, 10, 3, false}, {0.01, 10, 1, false},
		{10, 10, 10, false}, {11, 10, 0, true}, {-1, 10, 0, true}, {1.5, 10, 0, true},
	} {
		got, err := ValCount(c.size, c.n)
		if (err != nil) != c.err || got != c.want {
			t.Errorf("ValCount(%v, %d) = %d, %v; want %d, error %v", c.size, c.n, got, err, c.want, c.err)
		}
	}
}

func TestConvertErrors(t *testing.T) {
	dup := fakeTasks(2)
	dup[1].InstanceID = dup[0].InstanceID
	noPatch := fakeTasks(1)
	noPatch[0].Patch = ""
	for name, c := range map[string]struct {
		tasks []task.Task
		opts  Options
		want  string
	}{
		"duplicate":    {dup, Options{DataSource: "d"}, "instance_id: given twice"},
		"no patch":     {noPatch, Options{DataSource: "d", GroundTruthPatch: true}, noPatch[0].InstanceID + ": patch: empty"},
		"no statement": {[]task.Task{{InstanceID: "x"}}, Options{DataSource: "d"}, "task x: problem_statement: empty"},
	} {
		_, err := Convert(c.tasks, c.opts)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want one containing %q", name, err, c.want)
		}
	}
}

// TestParquetLayout writes the sample rows and reads them back: the
// values survive, and the columns are the nested lists and structs verl's
// loader (pandas / datasets over pyarrow) reads as Python lists and dicts.
func TestParquetLayout(t *testing.T) {
	tasks := sampleTasks(t)
	for _, gt := range []bool{false, true} {
		res, err := Convert(tasks, Options{DataSource: "swerve/sample", GroundTruthPatch: gt})
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(t.TempDir(), "train.parquet")
		if err := Write(path, res.Train, gt); err != nil {
			t.Fatal(err)
		}
		back, err := Read(path)
		if err != nil {
			t.Fatal(err)
		}
		if len(back) != len(res.Train) {
			t.Fatalf("read %d rows, wrote %d", len(back), len(res.Train))
		}
		for i := range back {
			w, g := res.Train[i], back[i]
			if g.DataSource != w.DataSource || !slices.Equal(g.Prompt, w.Prompt) || g.ExtraInfo.ToolsKwargs != w.ExtraInfo.ToolsKwargs ||
				!slices.Equal(g.ExtraInfo.FailToPass, w.ExtraInfo.FailToPass) || g.ExtraInfo.GroundTruthPatch != w.ExtraInfo.GroundTruthPatch ||
				g.ExtraInfo.Index != w.ExtraInfo.Index || g.RewardModel != w.RewardModel || g.AgentName != w.AgentName {
				t.Errorf("gt=%v row %d: read back %+v, wrote %+v", gt, i, g, w)
			}
			if gt && g.ExtraInfo.GroundTruthPatch != tasks[i].Patch {
				t.Errorf("row %d: ground_truth_patch is not the gold patch", i)
			}
		}
		pf, err := parquet.OpenFile(mustOpen(t, path))
		if err != nil {
			t.Fatal(err)
		}
		schema := pf.Schema()
		top := map[string]bool{}
		for _, f := range schema.Fields() {
			top[f.Name()] = true
		}
		for _, name := range []string{"data_source", "agent_name", "prompt", "ability", "reward_model", "extra_info"} {
			if !top[name] {
				t.Errorf("no top-level column %s", name)
			}
		}
		for _, p := range []string{"prompt", "extra_info.FAIL_TO_PASS", "extra_info.PASS_TO_PASS"} {
			n := lookup(schema, strings.Split(p, "."))
			if n == nil || n.Type().LogicalType() == nil || !isList(n) {
				t.Errorf("%s: not a LIST column", p)
			}
		}
		for _, p := range []string{"reward_model", "extra_info", "extra_info.tools_kwargs.bash.create_kwargs", "extra_info.tools_kwargs.submit_solution.create_kwargs"} {
			n := lookup(schema, strings.Split(p, "."))
			if n == nil || n.Leaf() {
				t.Errorf("%s: not a group (struct) column", p)
			}
		}
		hasGT := lookup(schema, []string{"extra_info", "ground_truth_patch"}) != nil
		if hasGT != gt {
			t.Errorf("ground_truth_patch column present=%v, want %v", hasGT, gt)
		}
	}
}

func lookup(n parquet.Node, path []string) parquet.Node {
	for _, name := range path {
		var next parquet.Node
		for _, f := range n.Fields() {
			if f.Name() == name {
				next = f
			}
		}
		if next == nil {
			return nil
		}
		n = next
	}
	return n
}

func mustOpen(t *testing.T, path string) (*os.File, int64) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	st, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	return f, st.Size()
}

func isList(n parquet.Node) bool {
	lt := n.Type().LogicalType()
	if lt == nil {
		return false
	}
	_, ok := lt.Value.(*format.ListType)
	return ok
}

// The row shape of the RL-serving contract (rl-serving.md §6), as verl's
// rl_dataset.py and ToolAgentLoop read it.
const contractRow = `{"data_source":"princeton-nlp/SWE-bench_Verified","agent_name":"tool_agent","ability":"software_engineering",
 "prompt":[{"role":"system","content":"s"},{"role":"user","content":"u"}],
 "reward_model":{"style":"tool","name":"swebench_sandbox"},
 "extra_info":{"split":"train","index":0,"instance_id":"astropy__astropy-12907","repo":"astropy/astropy","base_commit":"d16bfe05",
  "FAIL_TO_PASS":["t1"],"PASS_TO_PASS":["t2"],"need_tools_kwargs":true,
  "tools_kwargs":{"bash":{"create_kwargs":{"instance_id":"astropy__astropy-12907","repo":"astropy/astropy","base_commit":"d16bfe05"}},
                  "submit_solution":{"create_kwargs":{"instance_id":"astropy__astropy-12907","repo":"astropy/astropy","base_commit":"d16bfe05"}}},
  "ground_truth_patch":"diff --git ..."}}`

func TestRowShapeIsTheContract(t *testing.T) {
	var want any
	if err := json.Unmarshal([]byte(contractRow), &want); err != nil {
		t.Fatal(err)
	}
	tk := task.Task{InstanceID: "astropy__astropy-12907", Repo: "astropy/astropy", BaseCommit: "d16bfe05", ProblemStatement: "p",
		Patch: "diff --git ...", FailToPass: []string{"t1"}, PassToPass: []string{"t2"}}
	res, err := Convert([]task.Task{tk}, Options{DataSource: "princeton-nlp/SWE-bench_Verified", GroundTruthPatch: true})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(res.Train[0])
	var got any
	json.Unmarshal(b, &got)
	// Same keys and value types everywhere; same values but the prompt's text.
	var walk func(path string, w, g any)
	walk = func(path string, w, g any) {
		switch wv := w.(type) {
		case map[string]any:
			gv, ok := g.(map[string]any)
			if !ok || len(gv) != len(wv) {
				t.Errorf("%s: got %v, want the keys of %v", path, g, w)
				return
			}
			for k := range wv {
				walk(path+"."+k, wv[k], gv[k])
			}
		case []any:
			gv, ok := g.([]any)
			if !ok || len(gv) != len(wv) {
				t.Errorf("%s: got %v, want %v", path, g, w)
				return
			}
			for i := range wv {
				walk(fmt.Sprintf("%s[%d]", path, i), wv[i], gv[i])
			}
		default:
			if strings.HasSuffix(path, ".content") {
				if _, ok := g.(string); !ok {
					t.Errorf("%s: %T, want a string", path, g)
				}
				return
			}
			if w != g {
				t.Errorf("%s = %v, want %v", path, g, w)
			}
		}
	}
	walk("row", want, got)
}
