package view

import (
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/swerve-dev/swerve/internal/run"
	"github.com/swerve-dev/swerve/internal/testutil"
)

// gymRows are two rollouts as swerve serve answers POST /run: one in
// function-calling form with reasoning, one that failed outside the model.
const gymRows = `{"instance_id":"sample__calc-2","_ng_task_index":0,"_ng_rollout_index":0,"responses_create_params":{"input":[{"role":"system","content":"be brief"},{"role":"user","content":"round_half_up rounds ties to even"}]},"response":{"id":"resp_1","model":"policy","usage":{"input_tokens":900,"output_tokens":120,"total_tokens":1020},"output":[{"type":"reasoning","summary":[{"type":"summary_text","text":"ties should go up"}]},{"type":"function_call","call_id":"c1","name":"execute_bash","arguments":"{\"cmd\":\"grep -n round calc.py\"}"},{"type":"function_call_output","call_id":"c1","output":"40:def round_half_up(x, digits=0):"},{"type":"message","role":"assistant","content":[{"type":"output_text","text":"I will fix it now."}]},{"type":"function_call","call_id":"c2","name":"finish","arguments":"{\"command\":\"submit\"}"},{"type":"function_call_output","call_id":"c2","output":"<<<Finished>>>"}]},"reward":1.0,"resolved":true,"metadata":{"model_patch":"diff --git a/calc.py b/calc.py\n--- a/calc.py\n+++ b/calc.py\n@@ -1 +1 @@\n-old\n+new\n","exit_reason":"submitted","steps":2,"timings":{"total_seconds":12.5}}}
{"instance_id":"sample__calc-2","_ng_task_index":0,"_ng_rollout_index":1,"responses_create_params":{"input":[]},"response":{"id":"resp_2","model":"policy","status":"failed","output":[],"error":{"code":"server_error","message":"box: container exited"}},"reward":0,"resolved":false,"infra_error":{"kind":"box","detail":"container exited"},"_ng_failure_class":"transient","metadata":{"model_patch":"","exit_reason":"","steps":0,"timings":{"total_seconds":1.0},"infra_error":{"kind":"box","detail":"container exited"}}}
`

func writeFile(t *testing.T, path, data string) string {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func mustOpen(t *testing.T, path string) *Run {
	t.Helper()
	r, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestReaders(t *testing.T) {
	genDir := t.TempDir()
	genRun(t, genDir, 14, fewSteps)
	gym := writeFile(t, filepath.Join(t.TempDir(), "rollouts.jsonl"), gymRows)
	miniDir := t.TempDir()
	raw, err := os.ReadFile("testdata/mini/sample__calc-1.traj.json")
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(miniDir, "sample__calc-1", "sample__calc-1.traj.json"), string(raw))

	tests := []struct {
		name, path         string
		tasks              int
		key                string
		outcome, exit      string
		turns, minTokens   int
		patchHas           string
		failF2P, stepKinds []string
		errors             int
	}{
		{name: "swerve run directory", path: genDir, tasks: 14, key: "demo__calc-0000", outcome: "resolved", exit: "agent", turns: 5, minTokens: 1000,
			patchHas: "+    if not xs:", stepKinds: []string{"action", "format-error", "message", "submit"}, errors: 2},
		{name: "swerve run directory, unresolved", path: genDir, tasks: 14, key: "demo__http-0001", outcome: "unresolved", exit: "agent", turns: 6, minTokens: 1000,
			patchHas: "return 0", failF2P: []string{"tests/test_mod.py::test_empty"}, stepKinds: []string{"action", "submit"}, errors: 2},
		{name: "exp_name.jsonl", path: "testdata/oracle.jsonl", tasks: 2, key: "sample__calc-2", outcome: "resolved", exit: "agent", turns: 3, minTokens: 100,
			patchHas: "diff --git", stepKinds: []string{"action", "submit"}},
		{name: "gym rollouts", path: gym, tasks: 2, key: "sample__calc-2", outcome: "resolved", exit: "submitted", turns: 2, minTokens: 1020,
			patchHas: "+new", stepKinds: []string{"action", "submit"}, errors: 1},
		{name: "mini-swe-agent traj.json", path: "testdata/mini/sample__calc-1.traj.json", tasks: 1, key: "sample__calc-1", outcome: "ungraded", exit: "Submitted", turns: 3, minTokens: 1730,
			patchHas: "ordered[middle - 1]", stepKinds: []string{"action", "submit"}},
		{name: "mini-swe-agent batch directory", path: miniDir, tasks: 1, key: "sample__calc-1", outcome: "ungraded", exit: "Submitted", turns: 3, minTokens: 1730,
			patchHas: "ordered[middle - 1]", stepKinds: []string{"action", "submit"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := mustOpen(t, tc.path)
			tasks, err := r.Tasks()
			if err != nil {
				t.Fatal(err)
			}
			if len(tasks) != tc.tasks {
				t.Fatalf("%d tasks, want %d", len(tasks), tc.tasks)
			}
			if st := Summarize(tasks); st.Errors != tc.errors {
				t.Errorf("%d errors, want %d", st.Errors, tc.errors)
			}
			d, err := r.Task(tc.key)
			if err != nil {
				t.Fatal(err)
			}
			if d.Outcome() != tc.outcome || d.ExitReason != tc.exit || d.Turns != tc.turns || d.Tokens < tc.minTokens {
				t.Errorf("outcome %s exit %s turns %d tokens %d; want %s %s %d >=%d", d.Outcome(), d.ExitReason, d.Turns, d.Tokens, tc.outcome, tc.exit, tc.turns, tc.minTokens)
			}
			if !strings.Contains(d.Patch, tc.patchHas) {
				t.Errorf("patch %q lacks %q", d.Patch, tc.patchHas)
			}
			if !slices.Equal(d.FailF2P, tc.failF2P) {
				t.Errorf("failing FAIL_TO_PASS %q, want %q", d.FailF2P, tc.failF2P)
			}
			kinds := map[string]bool{}
			for _, s := range d.Steps {
				kinds[s.Kind()] = true
			}
			for _, k := range tc.stepKinds {
				if !kinds[k] {
					t.Errorf("no %s step among %v", k, kinds)
				}
			}
			if len(d.Steps) != tc.turns {
				t.Errorf("%d steps, want %d", len(d.Steps), tc.turns)
			}
		})
	}
}

func TestGymStepsKeepReasoningAndCalls(t *testing.T) {
	r := mustOpen(t, writeFile(t, filepath.Join(t.TempDir(), "r.jsonl"), gymRows))
	d, err := r.Task("sample__calc-2")
	if err != nil {
		t.Fatal(err)
	}
	s := d.Steps[0]
	if s.Reasoning != "ties should go up" || !strings.Contains(s.Action, "execute_bash") || !strings.Contains(s.Observation, "def round_half_up") {
		t.Errorf("first step %+v", s)
	}
	if d.ProblemStatement != "round_half_up rounds ties to even" {
		t.Errorf("problem %q", d.ProblemStatement)
	}
	e, err := r.Task("sample__calc-2#1")
	if err != nil {
		t.Fatal(err)
	}
	if e.Outcome() != "error" || e.Error != "box: container exited" {
		t.Errorf("second rollout: %s %q", e.Outcome(), e.Error)
	}
}

func TestSharedGymRollouts(t *testing.T) {
	path := filepath.Join(testutil.SharedDir(t), "data", "nemo-gym", "mini_swe_resource", "example_rollouts.jsonl")
	if _, err := os.Stat(path); err != nil {
		testutil.SkipOrFail(t, "NeMo Gym example rollouts not found: %v", err)
	}
	r := mustOpen(t, path)
	tasks, err := r.Tasks()
	if err != nil {
		t.Fatal(err)
	}
	if len(tasks) == 0 {
		t.Fatal("no rollouts read")
	}
	d, err := r.Task(tasks[0].Key)
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Steps) < 2 || d.Steps[0].Action == "" || d.Steps[0].Observation == "" {
		t.Fatalf("upstream rollout read as %d steps, first %+v", len(d.Steps), d.Steps[0])
	}
}

func TestIndexFollowsFileChanges(t *testing.T) {
	path := writeFile(t, filepath.Join(t.TempDir(), "r.jsonl"), strings.SplitAfter(gymRows, "\n")[0])
	r := mustOpen(t, path)
	now := time.Now()
	r.now = func() time.Time { return now }
	if tasks, _ := r.Tasks(); len(tasks) != 1 {
		t.Fatalf("%d tasks", len(tasks))
	}
	writeFile(t, path, gymRows)
	if tasks, _ := r.Tasks(); len(tasks) != 1 {
		t.Fatalf("index rebuilt before the recheck interval: %d tasks", len(tasks))
	}
	now = now.Add(2 * recheck)
	if tasks, _ := r.Tasks(); len(tasks) != 2 {
		t.Fatalf("index not rebuilt after the file changed: %d tasks", len(tasks))
	}
}

func TestSelect(t *testing.T) {
	dir := t.TempDir()
	genRun(t, dir, 30, fewSteps)
	tasks, err := mustOpen(t, dir).Tasks()
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		query   string
		matched int
		first   string
		rows    int
	}{
		{"", 30, "demo__calc-0000", 30},
		{"outcome=error", 4, "demo__calc-0020", 4},
		{"outcome=resolved&repo=demo/calc", 3, "demo__calc-0000", 3},
		{"q=http&sort=key&desc=1", 8, "demo__http-0029", 8},
		{"sort=turns&desc=1&limit=5", 30, "demo__cli-0003", 5},
		{"sort=key&limit=10&offset=25", 30, "demo__orm-0010", 5},
		{"exit=abs_step_limit", 3, "demo__calc-0004", 3},
	}
	for _, tc := range tests {
		v, _ := url.ParseQuery(tc.query)
		p := Select(tasks, ParseQuery(v))
		if p.Matched != tc.matched || len(p.Rows) != tc.rows || (len(p.Rows) > 0 && p.Rows[0].Key != tc.first) {
			first := ""
			if len(p.Rows) > 0 {
				first = p.Rows[0].Key
			}
			t.Errorf("%q: matched %d rows %d first %s; want %d %d %s", tc.query, p.Matched, len(p.Rows), first, tc.matched, tc.rows, tc.first)
		}
	}
}

func TestPairsChangedFirst(t *testing.T) {
	a := []Summary{{Key: "x", Reward: 1, Status: "graded"}, {Key: "y", Reward: 0, Status: "graded"}, {Key: "z", Reward: 1, Status: "graded"}}
	b := []Summary{{Key: "x", Reward: 1, Status: "graded"}, {Key: "y", Reward: 1, Status: "graded"}, {Key: "z", Reward: 0, Status: "graded"}, {Key: "w", Status: "error"}}
	var got []string
	for _, p := range Pairs(a, b) {
		got = append(got, p.Key)
	}
	if want := []string{"z", "y", "w", "x"}; !slices.Equal(got, want) {
		t.Errorf("order %v, want %v (worse, better, missing, unchanged)", got, want)
	}
}

func get(t *testing.T, h http.Handler, target string) (int, string) {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", target, nil))
	b, _ := io.ReadAll(rec.Body)
	return rec.Code, string(b)
}

func TestHandlers(t *testing.T) {
	dir := t.TempDir()
	genRun(t, dir, 30, fewSteps)
	// A file beside the run directory that must never be served.
	writeFile(t, filepath.Join(filepath.Dir(dir), "secret.txt"), "TOP-SECRET-CONTENT")
	if err := os.Symlink(filepath.Join(filepath.Dir(dir), "secret.txt"), filepath.Join(dir, "link.txt")); err != nil {
		t.Fatal(err)
	}
	s, err := NewServer(nil, mustOpen(t, dir), mustOpen(t, "testdata/oracle.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		target string
		code   int
		has    []string
		hasNot []string
	}{
		{"/", 200, []string{`id="wall">59s<`, `id="resolved">8 / 26<`, `id="errors">4<`, `id="signaled">1<`, "<svg", "demo__calc-0000", "abs_step_limit"}, nil},
		{"/?signals=1", 200, []string{"demo__calc-0008", `class="badge signals"`, `id="f-signals" checked`}, []string{"demo__calc-0000<", "demo__orm-0006"}},
		{"/?outcome=error", 200, []string{"demo__orm-0006", "box: the box would not open"}, []string{"demo__calc-0000<"}},
		{"/?sort=tokens&desc=1&limit=2", 200, []string{`href="/?desc=1&amp;limit=2&amp;offset=2&amp;sort=tokens"`}, nil},
		{"/task?key=demo__calc-0000", 200, []string{`class="step format-error"`, `class="step submit"`, `class="step message"`, `<details class="thinking">`,
			`<details class="observation">`, `<span class="add">`, `raw/demo__calc-0000/agent.log`}, nil},
		{"/task?key=demo__http-0001", 200, []string{`<span class="f2p-fail">FAILED tests/test_mod.py::test_empty`, `<span class="p2p-fail">`, `id="failing"`}, nil},
		{"/task?key=demo__http-0005", 200, []string{`id="tamper"`, "conftest.py"}, []string{`id="signals"`}},
		{"/task?key=demo__calc-0008", 200, []string{`id="signals"`, `href="#step-1"`, "git_history", "git log --all --oneline"}, nil},
		{"/task?key=nope", 404, nil, nil},
		{"/task?key=sample__calc-1&run=1", 200, []string{"sample__calc-1", `class="step submit"`}, nil},
		{"/?run=1", 200, []string{`id="resolved">2 / 2<`}, nil},
		{"/?run=2", 400, nil, nil},
		{"/compare", 200, []string{`id="changed">32<`}, nil},
		{"/compare?changed=1&q=sample", 200, []string{"sample__calc-1"}, []string{"demo__calc-0000"}},
		{"/raw/demo__calc-0000/test_output.log", 200, []string{"collected 2 items"}, nil},
		{"/raw/demo__calc-0000/result.json", 200, []string{`"instance_id":"demo__calc-0000"`}, nil},
		{"/raw/../secret.txt", 307, nil, []string{"TOP-SECRET"}},
		{"/raw/link.txt", 404, nil, []string{"TOP-SECRET"}},
		{"/raw/%2e%2e/secret.txt", 404, nil, []string{"TOP-SECRET"}},
		{"/raw/x?run=1", 404, nil, nil},
		{"/row?key=sample__calc-2&run=1", 200, []string{`"instance_id":"sample__calc-2"`}, nil},
		{"/static/app.js", 200, []string{"DOMContentLoaded"}, nil},
	}
	for _, tc := range tests {
		code, body := get(t, s, tc.target)
		if code != tc.code {
			t.Errorf("%s: status %d, want %d: %.200s", tc.target, code, tc.code, body)
			continue
		}
		for _, h := range tc.has {
			if !strings.Contains(body, h) {
				t.Errorf("%s: body lacks %q", tc.target, h)
			}
		}
		for _, h := range tc.hasNot {
			if strings.Contains(body, h) {
				t.Errorf("%s: body has %q", tc.target, h)
			}
		}
	}
}

func TestCountOnly(t *testing.T) {
	for in, want := range map[string]int{`[]`: 0, ` [ ] `: 0, `null`: 0, `[1]`: 1, `[1,[2,3],{"a":[4,5]}]`: 3,
		`["a,b", "c]d", "e\"f,"]`: 3, `[{"x":"]\\"}, {}]`: 2, `{"a":1}`: 0} {
		var c countOnly
		if err := c.UnmarshalJSON([]byte(in)); err != nil || int(c) != want {
			t.Errorf("%s: %d (%v), want %d", in, c, err, want)
		}
	}
}

// TestFastSummaryMatchesDecoder checks the byte scanner of the index
// against encoding/json on every row of the fixtures.
func TestFastSummaryMatchesDecoder(t *testing.T) {
	dir := t.TempDir()
	genRun(t, dir, 30, fewSteps)
	if _, err := run.WriteAggregates(dir, "gen"); err != nil {
		t.Fatal(err)
	}
	var rows [][]byte
	recs, _ := filepath.Glob(filepath.Join(dir, "*", "result.json"))
	for _, p := range recs {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		rows = append(rows, b)
	}
	for _, p := range []string{filepath.Join(dir, "gen.jsonl"), "testdata/oracle.jsonl"} {
		if err := scanJSONL(p, func(_ int64, line []byte) error { rows = append(rows, slices.Clone(line)); return nil }); err != nil {
			t.Fatal(err)
		}
	}
	if len(rows) != 30+26+2 {
		t.Fatalf("%d rows", len(rows))
	}
	for _, row := range rows {
		format, err := sniff(row)
		if err != nil {
			t.Fatal(err)
		}
		fast, ok, err := fastSummary(format, row)
		if !ok || err != nil {
			t.Fatalf("%s row: fast path %v %v", format, ok, err)
		}
		slow, err := slowSummary(format, row)
		if err != nil {
			t.Fatal(err)
		}
		if fast != slow {
			t.Errorf("%s row %s:\nfast %+v\nslow %+v", format, slow.InstanceID, fast, slow)
		}
	}
	if _, _, err := pick([]byte(`{"a": [1, 2`), nil, "a", nil); err == nil {
		t.Error("a cut row read without error")
	}
}

// TestTaskStreamMatchesTask checks the streamed page data (two passes over
// the row) against decoding the row whole, for every task of the fixtures.
func TestTaskStreamMatchesTask(t *testing.T) {
	dir := t.TempDir()
	genRun(t, dir, 14, fewSteps)
	if _, err := run.WriteAggregates(dir, "gen"); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{dir, filepath.Join(dir, "gen.jsonl"), "testdata/oracle.jsonl"} {
		r := mustOpen(t, path)
		tasks, err := r.Tasks()
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range tasks {
			whole, err := r.Task(s.Key)
			if err != nil {
				t.Fatal(err)
			}
			d, each, err := r.TaskStream(s.Key)
			if err != nil {
				t.Fatal(err)
			}
			var steps []Step
			if err := each(func(st Step) error { steps = append(steps, st); return nil }); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(steps, whole.Steps) {
				t.Errorf("%s %s: streamed %d steps, whole %d, or they differ", path, s.Key, len(steps), len(whole.Steps))
			}
			whole.Steps = nil
			if d.Patch != whole.Patch || d.TestOutput != whole.TestOutput || d.RewardReason != whole.RewardReason || d.Summary != whole.Summary ||
				!slices.Equal(d.FailF2P, whole.FailF2P) || !slices.Equal(d.Tamper, whole.Tamper) || !slices.Equal(d.Flags, whole.Flags) || !slices.Equal(d.Raw, whole.Raw) || d.ProblemStatement != whole.ProblemStatement {
				t.Errorf("%s %s: streamed page data differs:\n%+v\n%+v", path, s.Key, d.Summary, whole.Summary)
			}
		}
	}
}

func TestEachStepEdges(t *testing.T) {
	tests := []struct {
		name, format, row string
		steps             int
		fails             bool
	}{
		{"cut row", FormatSwerve, `{"trajectory_steps":[{"step_idx":0,"thought":"a \"q\" ]"},{"step_idx":1`, 1, true},
		{"no steps", FormatSwerve, `{"trajectory_steps":[],"history":[]}`, 0, false},
		{"null steps", FormatSwerve, `{"x":null,"trajectory_steps":null}`, 0, false},
		{"record without trajectory", FormatRecord, `{"instance_id":"a","trajectory":null,"reward":0}`, 0, false},
		{"record", FormatRecord, `{"trajectory":{"messages":[{"content":"}"}],"trajectory_steps":[{"step_idx":0},{"step_idx":1}]},"reward":1.5e0}`, 2, false},
		{"not an object", FormatSwerve, `[1,2]`, 0, true},
	}
	for _, tc := range tests {
		n := 0
		err := eachStep(strings.NewReader(tc.row), tc.format, func(Step) error { n++; return nil })
		if n != tc.steps || (err != nil) != tc.fails {
			t.Errorf("%s: %d steps, err %v; want %d, failure %v", tc.name, n, err, tc.steps, tc.fails)
		}
	}
	// The conversation is kept only up to its first user message (the
	// prompts the page shows); the steps are left out.
	small, err := withoutSteps(strings.NewReader(`{"a":1, "trajectory":{"cost":2,"messages":[{"role":"system","content":"s"}, {"role":"user","content":"u ]"},{"role":"assistant","content":"x"},{"role":"user","content":"y"}],"trajectory_steps":[{}]}, "history":[{"x":"y"}], "b":"c"}`))
	if want := `{"a":1,"trajectory":{"cost":2,"messages":[{"role":"system","content":"s"},{"role":"user","content":"u ]"}]},"history":[{"x":"y"}],"b":"c"}`; err != nil || string(small) != want {
		t.Errorf("withoutSteps: %s %v, want %s", small, err, want)
	}
}

// TestGymRowSignals: a swerve serve row's metadata carries the audit's
// counts (the table's filter) and flags (the task page).
func TestGymRowSignals(t *testing.T) {
	row := []byte(`{"instance_id":"x__y-1","reward":0,"response":{"model":"policy","output":[]},"metadata":{"exit_reason":"submitted","steps":3,` +
		`"signals":{"network":1,"helper":1},"signal_flags":[{"step":0,"kind":"network","command":"curl http://x"},{"step":2,"kind":"helper","command":"kill -9 1"}]}}`)
	s, err := summarize(FormatGym, row)
	if err != nil {
		t.Fatal(err)
	}
	if s.Signals != 2 {
		t.Errorf("summary signals %d, want 2", s.Signals)
	}
	d, err := detail(FormatGym, row)
	if err != nil {
		t.Fatal(err)
	}
	if want := []Flag{{0, "network", "curl http://x"}, {2, "helper", "kill -9 1"}}; !reflect.DeepEqual(d.Flags, want) {
		t.Errorf("page flags %+v, want %+v", d.Flags, want)
	}
	q := Query{Signals: true}
	if !q.match(&s) || q.match(&Summary{}) {
		t.Errorf("the has-signals filter does not tell the row from a clean one")
	}
}

// TestRunHeaderAndGroups: the overview names the model (offline marked),
// dataset, scaffold, start and settings, or "unknown" where the rows
// record none; a run with several rollouts per task shows one row per
// task with its pass@k, mean and spread, and the run's pass@1 and pass@k.
func TestRunHeaderAndGroups(t *testing.T) {
	dir := t.TempDir()
	genRun(t, dir, 14, fewSteps)
	rollouts := filepath.Join(t.TempDir(), "rollouts.jsonl")
	genRollouts(t, rollouts, 6, 4)
	mini := mustOpen(t, "testdata/mini/sample__calc-1.traj.json")
	tests := []struct {
		run    *Run
		target string
		has    []string
		hasNot []string
	}{
		{mustOpen(t, dir), "/", []string{`id="info-model">replay/gen <span class="badge offline"`, `id="info-dataset">demo/tasks.jsonl<`,
			`id="info-scaffold">r2egym, mini_swe_agent<`, `id="info-started">2026-11-20 10:00:00 UTC<`, `max_steps <b>40</b>`, `temperature <b>0</b>`,
			`id="why-head"`, `<td class="why">FAIL_TO_PASS failed: 1</td>`, `<td class="why err">box: the box would not open: container exited</td>`,
			`title="the agent's episode`, `>agent time`}, []string{`id="groups"`, `id="pass1"`, `help`}},
		{mustOpen(t, "testdata/oracle.jsonl"), "/", []string{`id="info-model">oracle/gold <span class="badge offline"`, `id="info-dataset">examples/sample/tasks.jsonl<`,
			`id="info-scaffold">r2egym<`, `id="info-started"><span class="muted">unknown</span>`}, nil},
		{mini, "/", []string{`id="info-dataset"><span class="muted">unknown</span>`, `id="info-settings"><span class="muted">unknown</span>`}, []string{`badge offline`}},
		{mustOpen(t, rollouts), "/", []string{`id="pass1">34.7%<`, `id="passk">62.5%<`, `pass@3 (unbiased)`, `id="groups"`, `6 of 6 tasks, 24 rollouts`,
			`<td class="num g-mean">0.75</td>`, `<td class="num g-std">0.43</td>`, `<td class="num g-passk">0.75</td>`, `+1 error`,
			`href="/task?key=demo__calc-0002%232"`, `id="info-model">hosted_vllm/policy</dd>`, `id="info-scaffold"><span class="muted">unknown</span>`, `id="info-started"><span class="muted">unknown</span>`, `id="show-rollouts"`}, []string{`id="tasks"`}},
		{mustOpen(t, rollouts), "/?rollouts=1", []string{`id="tasks"`, `24 of 24 rollouts`, `demo__calc-0002#3`, `id="show-groups"`, `<td class="why">FAIL_TO_PASS failed: 1</td>`}, []string{`id="groups"`}},
		{mustOpen(t, rollouts), "/?outcome=error", []string{`1 of 6 tasks`, `demo__calc-0001`}, []string{`demo__calc-0002`}},
	}
	for _, tc := range tests {
		s, err := NewServer(nil, tc.run)
		if err != nil {
			t.Fatal(err)
		}
		code, body := get(t, s, tc.target)
		if code != 200 {
			t.Fatalf("%s %s: status %d: %.300s", tc.run.Name, tc.target, code, body)
		}
		for _, h := range tc.has {
			if !strings.Contains(body, h) {
				t.Errorf("%s %s: body lacks %q", tc.run.Name, tc.target, h)
			}
		}
		for _, h := range tc.hasNot {
			if strings.Contains(body, h) {
				t.Errorf("%s %s: body has %q", tc.run.Name, tc.target, h)
			}
		}
	}
}

// TestTaskPageLayout: the trajectory comes before the patch and the test
// log, the test log is folded, the prompts are shown, an action the reply
// already shows is not repeated, and observations lose their wrapper tags
// (the exit status is a badge).
func TestTaskPageLayout(t *testing.T) {
	dir := t.TempDir()
	genRun(t, dir, 14, fewSteps)
	rollouts := filepath.Join(t.TempDir(), "rollouts.jsonl")
	genRollouts(t, rollouts, 3, 2)
	tests := []struct {
		run    *Run
		key    string
		has    []string
		hasNot []string
	}{
		{mustOpen(t, dir), "demo__http-0001", []string{`system prompt (`, `You are a careful engineer.`, `first user prompt (`, `<details class="tests" id="test-log">`,
			`class="badge exit exit-ok"`, `>exit 0</span>`, `call <span class="fn">execute_bash</span>`, `<span class="pname">cmd</span>`},
			[]string{`<details class="tests" id="test-log" open`, `Exit code: 0`, `Execution output of`}},
		{mustOpen(t, "testdata/mini/sample__calc-1.traj.json"), "sample__calc-1", []string{`system prompt (`, `one shell command per reply`, `>exit 0</span>`},
			[]string{`&lt;returncode&gt;`, `&lt;output&gt;`, `class="action`}},
		{mustOpen(t, rollouts), "demo__calc-0001#1", []string{`system prompt (`, `first user prompt (`, `>exit 1</span>`, `class="badge exit exit-bad"`, `FAILED tests/test_mod.py::test_empty`},
			[]string{`&lt;returncode&gt;`, `class="action`}},
		{mustOpen(t, "testdata/oracle.jsonl"), "sample__calc-2", []string{`call <span class="fn">file_editor</span>`, `first user prompt (`}, nil},
	}
	for _, tc := range tests {
		s, err := NewServer(nil, tc.run)
		if err != nil {
			t.Fatal(err)
		}
		code, body := get(t, s, "/task?key="+url.QueryEscape(tc.key))
		if code != 200 {
			t.Fatalf("%s: status %d: %.300s", tc.key, code, body)
		}
		steps, patch, tests := strings.Index(body, `id="steps"`), strings.Index(body, `id="patch"`), strings.Index(body, `id="tests"`)
		if steps < 0 || patch < steps || tests < patch {
			t.Errorf("%s: steps at %d, patch at %d, tests at %d: want the trajectory first", tc.key, steps, patch, tests)
		}
		for _, h := range tc.has {
			if !strings.Contains(body, h) {
				t.Errorf("%s: body lacks %q", tc.key, h)
			}
		}
		for _, h := range tc.hasNot {
			if strings.Contains(body, h) {
				t.Errorf("%s: body has %q", tc.key, h)
			}
		}
	}
}
