package run_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/swerve-dev/swerve/internal/agent"
	_ "github.com/swerve-dev/swerve/internal/agent/scaffold/all"
	"github.com/swerve-dev/swerve/internal/llm"
	"github.com/swerve-dev/swerve/internal/run"
	"github.com/swerve-dev/swerve/internal/sandbox"
	"github.com/swerve-dev/swerve/internal/sandbox/local"
	"github.com/swerve-dev/swerve/internal/task"
	"github.com/swerve-dev/swerve/internal/testutil"
)

func TestMain(m *testing.M) {
	// The sample tasks' eval scripts need a python3 with pytest.
	if _, err := os.Stat("/usr/bin/python3"); err == nil {
		os.Setenv("PATH", "/usr/bin:"+os.Getenv("PATH"))
	}
	os.Exit(m.Run())
}

func loadTasks(t testing.TB, path string) []task.Task {
	t.Helper()
	// The tasks' tests run on the host: the sample tasks with pytest, the
	// demo tasks with python3's unittest.
	if strings.HasPrefix(path, "examples/sample/") {
		testutil.NeedPytest(t)
	} else {
		testutil.HostPython(t)
	}
	res, err := task.Load(context.Background(), filepath.Join(testutil.RepoRoot(t), path), task.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return res.Tasks
}

// allTasks are the sample tasks and the demo tasks: five tasks, two
// languages, two graders.
func allTasks(t testing.TB) []task.Task {
	return append(loadTasks(t, "examples/sample/tasks.jsonl"), loadTasks(t, "internal/demo/tasks/tasks.jsonl")...)
}

var (
	once    sync.Once
	backend *local.Backend
	bErr    error
)

func opener(t testing.TB) run.Opener {
	once.Do(func() {
		backend, bErr = local.New(sandbox.Options{ShimPath: testutil.SwerveBinary(t), RunID: "run-test"})
	})
	if bErr != nil {
		t.Fatal(bErr)
	}
	return func(ctx context.Context, tk *task.Task) (sandbox.Sandbox, string, error) {
		if tk.SourceDir == "" {
			return nil, "", errors.New("task " + tk.InstanceID + ": no source_dir")
		}
		box, err := backend.Open(ctx, sandbox.Spec{Image: tk.SourceDir})
		if err != nil {
			return nil, "", err
		}
		res, err := box.Exec(ctx, sandbox.ExecRequest{Cmd: []string{"pwd"}})
		if err != nil {
			box.Close(ctx)
			return nil, "", err
		}
		return box, strings.TrimSpace(string(res.Output)), nil
	}
}

func oracleModel(s *agent.Scaffold, tk *task.Task, wd string, mode agent.Mode) (llm.Client, error) {
	return agent.NewOracle(s, tk, wd, mode)
}

func options(t testing.TB, tasks []task.Task, scaffold string, mode agent.Mode) run.Options {
	return run.Options{
		Tasks: tasks, TrajDir: t.TempDir(), ExpName: "exp", Workers: 3,
		Scaffold: scaffold, Mode: mode, ModelName: agent.OracleName, NewModel: oracleModel, Open: opener(t),
	}
}

func readLines(t testing.TB, path string) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, v := range readAny(t, path) {
		m, ok := v.(map[string]any)
		if !ok {
			t.Fatalf("%s: a line is not an object", path)
		}
		out = append(out, m)
	}
	return out
}

func readAny(t testing.TB, path string) []any {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []any
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<26)
	for sc.Scan() {
		var m any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("%s: a line is not JSON: %v", path, err)
		}
		out = append(out, m)
	}
	return out
}

func readJSON(t testing.TB, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

// checkOutputs checks every file of a finished run of n tasks, resolved of
// them reward 1.
func checkOutputs(t *testing.T, dir string, ids []string, resolved int, fn bool) {
	t.Helper()
	checkUpstreamRows(t, filepath.Join(dir, "exp.jsonl"))
	lines := readLines(t, filepath.Join(dir, "exp.jsonl"))
	var got []string
	for _, l := range lines {
		got = append(got, l["instance_id"].(string))
	}
	sort.Strings(got)
	want := append([]string(nil), ids...)
	sort.Strings(want)
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("exp.jsonl holds %v, want each of %v once", got, want)
	}
	var sum run.RewardSummary
	readJSON(t, filepath.Join(dir, "reward_summary.json"), &sum)
	if sum.Total != len(ids) || sum.Reward1.Count != resolved || sum.Reward0.Count != len(ids)-resolved {
		t.Errorf("reward_summary: %+v", sum)
	}
	if n := len(readAny(t, filepath.Join(dir, "trajectories_rejection_sampling.jsonl"))); n != resolved {
		t.Errorf("rejection sampling file has %d lines, want %d", n, resolved)
	}
	trajs := readAny(t, filepath.Join(dir, "trajectories.jsonl"))
	if len(trajs) != len(ids) {
		t.Errorf("trajectories.jsonl has %d lines, want %d", len(trajs), len(ids))
	}
	for _, v := range trajs {
		tr, isObj := v.(map[string]any)
		if isObj != fn {
			t.Errorf("trajectories.jsonl: fn mode %v but the line is an object: %v", fn, isObj)
			continue
		}
		if fn {
			if tools, _ := tr["tools"].([]any); len(tools) == 0 {
				t.Error("trajectories.jsonl: fn-mode line without tools")
			}
		}
	}
	var preds []map[string]any
	readJSON(t, filepath.Join(dir, "preds.json"), &preds)
	var predIDs []string
	for _, p := range preds {
		predIDs = append(predIDs, p["instance_id"].(string))
	}
	sort.Strings(predIDs)
	if strings.Join(predIDs, ",") != strings.Join(want, ",") {
		t.Errorf("preds.json holds %v, want %v", predIDs, want)
	}
	for _, id := range ids {
		td := run.TaskDir(dir, id)
		for _, f := range []string{"agent.log", "output_patch.diff", "test_output.log", "metadata.json", "result.json"} {
			if _, err := os.Stat(filepath.Join(td, f)); err != nil {
				t.Errorf("%s: %v", id, err)
			}
		}
		var meta run.Metadata
		readJSON(t, filepath.Join(td, "metadata.json"), &meta)
		if meta.InstanceID != id || meta.ExpName != "exp" {
			t.Errorf("metadata.json: %+v", meta)
		}
	}
	// No temporary files are left behind.
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if strings.Contains(d.Name(), ".tmp") {
			t.Errorf("left over: %s", p)
		}
		return nil
	})
}

func ids(tasks []task.Task) []string {
	var out []string
	for _, t := range tasks {
		out = append(out, t.InstanceID)
	}
	return out
}

func TestRunOracleEveryScaffold(t *testing.T) {
	tasks := allTasks(t)
	for _, name := range agent.Scaffolds() {
		s, _ := agent.Lookup(name)
		for _, mode := range s.Modes {
			t.Run(name+"/"+mode.String(), func(t *testing.T) {
				o := options(t, tasks, name, mode)
				sum, err := run.Run(context.Background(), o)
				if err != nil {
					t.Fatal(err)
				}
				if sum.Resolved != len(tasks) {
					for _, id := range ids(tasks) {
						b, _ := os.ReadFile(filepath.Join(run.TaskDir(o.TrajDir, id), "metadata.json"))
						t.Logf("%s", b)
					}
					t.Fatalf("resolved %d of %d", sum.Resolved, len(tasks))
				}
				checkOutputs(t, o.TrajDir, ids(tasks), len(tasks), mode == agent.ModeFn)
			})
		}
	}
}

func TestRunGolden(t *testing.T) {
	tasks := allTasks(t)
	o := options(t, tasks, "mini_swe_agent", agent.ModeText)
	o.RunGolden = true
	sum, err := run.Run(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if sum.Resolved != len(tasks) || !sum.File.Offline {
		t.Fatalf("resolved %d of %d, offline %v", sum.Resolved, len(tasks), sum.File.Offline)
	}
}

// TestRunFailuresAreRecorded: a task whose box will not open is an error,
// not a reward, and a model that gives up is that task's reward 0 with a
// reason; the run goes on.
func TestRunFailuresAreRecorded(t *testing.T) {
	tasks := allTasks(t)[:3]
	tasks[0].SourceDir = ""
	o := options(t, tasks, "mini_swe_agent", agent.ModeText)
	o.NewModel = func(s *agent.Scaffold, tk *task.Task, wd string, mode agent.Mode) (llm.Client, error) {
		if tk.InstanceID == tasks[1].InstanceID {
			return llm.NewScripted("replay/empty", nil), nil
		}
		return oracleModel(s, tk, wd, mode)
	}
	sum, err := run.Run(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if sum.Resolved != 1 || sum.File.Total != 2 || sum.Errors != 1 || sum.Recorded != 3 {
		t.Fatalf("resolved %d of %d graded, %d errors, %d recorded", sum.Resolved, sum.File.Total, sum.Errors, sum.Recorded)
	}
	recs, _ := run.LoadRecords(o.TrajDir)
	if r := recs[tasks[0].InstanceID]; !r.Failed() || r.ErrorKind != run.KindBox || !strings.Contains(r.Error, "no source_dir") || r.ExitReason != string(agent.ExitSandboxError) || r.Attempts != 1 {
		t.Errorf("box failure: %+v", r)
	}
	if r := recs[tasks[1].InstanceID]; r.Failed() || r.Reward != 0 || r.ExitReason != string(agent.ExitLLMError) || r.Status != run.StatusGraded {
		t.Errorf("model failure: status %s, exit %s reward %g %s", r.Status, r.ExitReason, r.Reward, r.RewardReason)
	}
	checkOutputs(t, o.TrajDir, ids(tasks[1:]), 1, false)
}

// TestRunStopAndResume stops a run gracefully after its first task and
// reruns it: nothing is lost or recorded twice.
func TestRunStopAndResume(t *testing.T) {
	tasks := allTasks(t)
	o := options(t, tasks, "r2egym", agent.ModeFn)
	o.Workers = 1
	stop := make(chan struct{})
	var once sync.Once
	o.Stop = stop
	o.Events = func(e run.Event) {
		if e.Kind == run.EventDone {
			once.Do(func() { close(stop) })
		}
	}
	sum, err := run.Run(context.Background(), o)
	if !errors.Is(err, run.ErrInterrupted) {
		t.Fatalf("err %v", err)
	}
	if sum.Ran != 1 || sum.Recorded != 1 {
		t.Fatalf("first run: ran %d, recorded %d", sum.Ran, sum.Recorded)
	}
	o.Stop, o.Events = nil, nil
	sum, err = run.Run(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if sum.Skipped != 1 || sum.Ran != len(tasks)-1 || sum.Resolved != len(tasks) {
		t.Fatalf("second run: skipped %d, ran %d, resolved %d", sum.Skipped, sum.Ran, sum.Resolved)
	}
	checkOutputs(t, o.TrajDir, ids(tasks), len(tasks), true)
	// Other settings in the same directory are refused.
	o.Scaffold = "openhands"
	if _, err := run.Run(context.Background(), o); err == nil || !strings.Contains(err.Error(), "--scaffold r2egym, this run has --scaffold openhands") {
		t.Fatalf("err %v", err)
	}
}

// TestRunDiskFull runs into a full disk: a clear error, and a rerun with
// room resumes.
func TestRunDiskFull(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to mount a small tmpfs")
	}
	dir := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", dir).CombinedOutput(); err != nil {
		first, _, _ := strings.Cut(strings.TrimSpace(string(out)), "\n")
		t.Skipf("cannot mount a tmpfs: %v: %s", err, first)
	}
	t.Cleanup(func() { exec.Command("umount", "-l", dir).Run() })
	// Fill it but for a few KiB.
	big := make([]byte, 2<<20-16<<10)
	os.WriteFile(filepath.Join(dir, "filler"), big, 0o644)
	tasks := allTasks(t)
	o := options(t, tasks, "mini_swe_agent", agent.ModeText)
	o.TrajDir = filepath.Join(dir, "out")
	o.Workers = 1
	_, err := run.Run(context.Background(), o)
	if err == nil || !strings.Contains(err.Error(), "disk is full") {
		t.Fatalf("err %v", err)
	}
	os.Remove(filepath.Join(dir, "filler"))
	sum, err := run.Run(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if sum.Resolved != len(tasks) {
		t.Fatalf("resolved %d", sum.Resolved)
	}
	checkOutputs(t, o.TrajDir, ids(tasks), len(tasks), false)
}

// TestRunTamperedIsZero: a model whose patch makes the tests pass without a
// fix (a conftest.py that turns every report into a pass) gets reward 0 in
// swerve run, with the finding recorded, and is left out of the
// rejection-sampling trajectories.
func TestRunTamperedIsZero(t *testing.T) {
	var tasks []task.Task
	for _, tk := range loadTasks(t, "examples/sample/tasks.jsonl") {
		if tk.InstanceID == "sample__calc-1" {
			tasks = append(tasks, tk)
		}
	}
	if len(tasks) != 1 {
		t.Fatal("sample__calc-1 not found")
	}
	const conftest = "```bash\ncat > conftest.py <<'EOF'\nimport pytest\n\n\n@pytest.hookimpl(hookwrapper=True)\n" +
		"def pytest_runtest_makereport(item, call):\n    outcome = yield\n    outcome.get_result().outcome = \"passed\"\nEOF\n```"
	o := options(t, tasks, "mini_swe_agent", agent.ModeText)
	o.NewModel = func(*agent.Scaffold, *task.Task, string, agent.Mode) (llm.Client, error) {
		return llm.NewScripted("replay/tamper", []llm.Message{
			{Role: "assistant", Content: "Make every test report a pass.\n\n" + conftest},
			{Role: "assistant", Content: "Done.\n\n```bash\necho COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT\n```"},
		}), nil
	}
	sum, err := run.Run(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	recs, err := run.LoadRecords(o.TrajDir)
	if err != nil {
		t.Fatal(err)
	}
	r := recs["sample__calc-1"]
	if r == nil || r.Reward != 0 || !strings.HasPrefix(r.RewardReason, "tampered: ") || len(r.Tampered) == 0 || !strings.Contains(r.Patch, "conftest.py") {
		t.Fatalf("record: %+v", r)
	}
	if sum.Resolved != 0 {
		t.Errorf("resolved %d, want 0", sum.Resolved)
	}
	if lines := readLines(t, filepath.Join(o.TrajDir, "trajectories_rejection_sampling.jsonl")); len(lines) != 0 {
		t.Errorf("%d rejection-sampling trajectories, want 0", len(lines))
	}
}
