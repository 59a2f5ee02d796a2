package run_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/swerve-dev/swerve/internal/agent"
	"github.com/swerve-dev/swerve/internal/llm"
	"github.com/swerve-dev/swerve/internal/run"
	"github.com/swerve-dev/swerve/internal/sandbox"
	"github.com/swerve-dev/swerve/internal/task"
)

// flakyOpener opens boxes with open, except that before the n-th open
// (from 1, counted over the opener's life) of a task, fail may return an
// error to give instead, or wrap may replace the box.
type flakyOpener struct {
	open run.Opener
	fail func(id string, n int) error
	wrap func(id string, n int, box sandbox.Sandbox) sandbox.Sandbox

	mu    sync.Mutex
	opens map[string]int
}

func (f *flakyOpener) Open(ctx context.Context, tk *task.Task) (sandbox.Sandbox, string, error) {
	f.mu.Lock()
	if f.opens == nil {
		f.opens = map[string]int{}
	}
	f.opens[tk.InstanceID]++
	n := f.opens[tk.InstanceID]
	f.mu.Unlock()
	if f.fail != nil {
		if err := f.fail(tk.InstanceID, n); err != nil {
			return nil, "", err
		}
	}
	box, wd, err := f.open(ctx, tk)
	if err == nil && f.wrap != nil {
		box = f.wrap(tk.InstanceID, n, box)
	}
	return box, wd, err
}

func (f *flakyOpener) count(id string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.opens[id]
}

// dyingBox is a box whose commands fail as a killed container's do once it
// has run `after` of them.
type dyingBox struct {
	sandbox.Sandbox
	after int32
	n     atomic.Int32
}

func (b *dyingBox) Exec(ctx context.Context, req sandbox.ExecRequest) (sandbox.ExecResult, error) {
	// The history proof's commands (sh, git) run before the episode's own
	// and are not counted.
	if len(req.Cmd) > 0 && (req.Cmd[0] == "sh" || req.Cmd[0] == "git") {
		return b.Sandbox.Exec(ctx, req)
	}
	if b.n.Add(1) > b.after {
		return sandbox.ExecResult{}, fmt.Errorf("%w: the helper closed its stream", sandbox.ErrClosed)
	}
	return b.Sandbox.Exec(ctx, req)
}

// failingModel is a model whose every call fails with err.
type failingModel struct{ err error }

func (m failingModel) Name() string { return "openai/failing" }
func (m failingModel) Complete(context.Context, llm.Request) (llm.Response, error) {
	return llm.Response{}, m.err
}

// eventLog collects a run's events.
type eventLog struct {
	mu     sync.Mutex
	events []run.Event
}

func (l *eventLog) add(e run.Event) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.events = append(l.events, e)
}

func (l *eventLog) of(id string) []run.Event {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []run.Event
	for _, e := range l.events {
		if e.InstanceID == id {
			out = append(out, e)
		}
	}
	return out
}

// checkErrors checks that reward_summary.json counts exactly errIDs as
// errors, givenUp of them given up, and that no file carrying rewards or
// trajectories names them.
func checkErrors(t *testing.T, dir string, errIDs, givenUp []string, kinds map[string]int) {
	t.Helper()
	var sum run.RewardSummary
	readJSON(t, filepath.Join(dir, "reward_summary.json"), &sum)
	if sum.Errors != len(errIDs) || !slices.Equal(sum.ErrorIDs, errIDs) || len(sum.ErrorReasons) != len(errIDs) {
		t.Errorf("reward_summary.json: %d errors %v (%v), want %v", sum.Errors, sum.ErrorIDs, sum.ErrorReasons, errIDs)
	}
	if sum.GivenUp.Count != len(givenUp) || !slices.Equal(sum.GivenUp.InstanceIDs, givenUp) {
		t.Errorf("reward_summary.json: given up %v, want %v", sum.GivenUp.InstanceIDs, givenUp)
	}
	if len(sum.ErrorKinds) != len(kinds) {
		t.Errorf("reward_summary.json: error kinds %v, want %v", sum.ErrorKinds, kinds)
	}
	for k, n := range kinds {
		if sum.ErrorKinds[k] != n {
			t.Errorf("reward_summary.json: error kinds %v, want %v", sum.ErrorKinds, kinds)
		}
	}
	for _, id := range errIDs {
		if slices.Contains(sum.Reward0.InstanceIDs, id) || slices.Contains(sum.Reward1.InstanceIDs, id) {
			t.Errorf("reward_summary.json: error %s is listed with a reward", id)
		}
		for _, f := range []string{"exp.jsonl", "preds.json"} {
			b, err := os.ReadFile(filepath.Join(dir, f))
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(string(b), `"`+id+`"`) {
				t.Errorf("%s names the error %s", f, id)
			}
		}
	}
	if graded := sum.Reward0.Count + sum.Reward1.Count; sum.Total != graded || (graded > 0 && sum.Accuracy != float64(sum.Reward1.Count)/float64(graded)) {
		t.Errorf("reward_summary.json: total %d, accuracy %g over %d graded", sum.Total, sum.Accuracy, graded)
	}
}

// TestRunErrorRetriedThenGraded: an engine call that times out when a
// task's box opens makes that task an error, kept out of accuracy and of
// every file with rewards or trajectories; the next run with the same
// arguments runs only that task again, and it is graded.
func TestRunErrorRetriedThenGraded(t *testing.T) {
	tasks := allTasks(t)[:3]
	victim := tasks[0].InstanceID
	fo := &flakyOpener{open: opener(t), fail: func(id string, n int) error {
		if id == victim && n == 1 {
			return fmt.Errorf("task %s: create container: %w", id, sandbox.ErrTimeout)
		}
		return nil
	}}
	o := options(t, tasks, "mini_swe_agent", agent.ModeText)
	o.Open = fo.Open
	var log eventLog
	o.Events = log.add
	sum, err := run.Run(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if sum.Errors != 1 || sum.Resolved != 2 || sum.Recorded != 3 || sum.File.Total != 2 || sum.File.Accuracy != 1 {
		t.Fatalf("first run: %d errors, resolved %d of %d graded, %d recorded, accuracy %g", sum.Errors, sum.Resolved, sum.File.Total, sum.Recorded, sum.File.Accuracy)
	}
	checkOutputs(t, o.TrajDir, ids(tasks[1:]), 2, false)
	checkErrors(t, o.TrajDir, []string{victim}, nil, map[string]int{"engine": 1})
	recs, _ := run.LoadRecords(o.TrajDir)
	r := recs[victim]
	if !r.Failed() || r.ErrorKind != run.KindEngine || r.ErrorStage != run.StageAgent || r.Attempts != 1 || r.GivenUp || !strings.Contains(r.Error, "create container: timed out") {
		t.Errorf("error record: %+v", r)
	}
	var meta run.Metadata
	readJSON(t, filepath.Join(run.TaskDir(o.TrajDir, victim), "metadata.json"), &meta)
	if meta.Status != run.StatusError || meta.ErrorKind != run.KindEngine || meta.Attempts != 1 {
		t.Errorf("metadata.json of the error: %+v", meta)
	}
	if ev := log.of(victim); len(ev) != 2 || ev[1].Kind != run.EventError || ev[1].ErrorKind != run.KindEngine || ev[1].Attempts != 1 || ev[1].GivenUp || ev[1].Errors != 1 {
		t.Errorf("events of the error: %+v", ev)
	}

	log = eventLog{}
	sum, err = run.Run(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if sum.Ran != 1 || sum.Retried != 1 || sum.Skipped != 2 || sum.Errors != 0 || sum.Resolved != 3 {
		t.Fatalf("second run: ran %d, retried %d, skipped %d, %d errors, resolved %d", sum.Ran, sum.Retried, sum.Skipped, sum.Errors, sum.Resolved)
	}
	recs, _ = run.LoadRecords(o.TrajDir)
	if r := recs[victim]; r.Failed() || r.Reward != 1 || r.Attempts != 2 || r.Error != "" || r.ErrorKind != "" {
		t.Errorf("retried record: %+v", r)
	}
	if r := recs[tasks[1].InstanceID]; r.Attempts != 1 {
		t.Errorf("a graded task ran again: %d attempts", r.Attempts)
	}
	if n := fo.count(tasks[1].InstanceID); n != 2 {
		t.Errorf("a graded task's boxes opened %d times over two runs, want 2 (agent and grading, once)", n)
	}
	checkOutputs(t, o.TrajDir, ids(tasks), 3, false)
	checkErrors(t, o.TrajDir, nil, nil, nil)
}

// TestRunErrorGivenUp: a task whose box never opens is tried up to
// MaxAttempts times across runs, then given up and no longer run; a larger
// bound runs it again.
func TestRunErrorGivenUp(t *testing.T) {
	tasks := allTasks(t)[:2]
	victim := tasks[0].InstanceID
	fo := &flakyOpener{open: opener(t), fail: func(id string, n int) error {
		if id == victim {
			return fmt.Errorf("docker: image %s is not present and --pull is never: %w", id, sandbox.ErrNotFound)
		}
		return nil
	}}
	o := options(t, tasks, "r2egym", agent.ModeFn)
	o.Open = fo.Open
	var log eventLog
	o.Events = log.add
	step := func(max, wantAttempts, wantOpens int, wantGivenUp bool) {
		t.Helper()
		o.MaxAttempts = max
		sum, err := run.Run(context.Background(), o)
		if err != nil {
			t.Fatal(err)
		}
		recs, _ := run.LoadRecords(o.TrajDir)
		r := recs[victim]
		if !r.Failed() || r.ErrorKind != run.KindImage || r.Attempts != wantAttempts || r.GivenUp != wantGivenUp {
			t.Errorf("max %d: record %s, kind %s, attempts %d, given up %v; want attempts %d, given up %v", max, r.Status, r.ErrorKind, r.Attempts, r.GivenUp, wantAttempts, wantGivenUp)
		}
		var meta run.Metadata
		readJSON(t, filepath.Join(run.TaskDir(o.TrajDir, victim), "metadata.json"), &meta)
		if meta.Status != run.StatusError || meta.Attempts != wantAttempts || meta.GivenUp != wantGivenUp {
			t.Errorf("max %d: metadata.json: %+v", max, meta)
		}
		if n := fo.count(victim); n != wantOpens {
			t.Errorf("max %d: %d opens in all, want %d", max, n, wantOpens)
		}
		var givenUp []string
		if wantGivenUp {
			givenUp = []string{victim}
		}
		if sum.Errors != 1 || sum.GivenUp != len(givenUp) || sum.Resolved != 1 {
			t.Errorf("max %d: %d errors, %d given up, %d resolved", max, sum.Errors, sum.GivenUp, sum.Resolved)
		}
		checkErrors(t, o.TrajDir, []string{victim}, givenUp, map[string]int{"image": 1})
		checkOutputs(t, o.TrajDir, ids(tasks[1:]), 1, true)
	}
	step(2, 1, 1, false) // the first attempt
	step(1, 1, 1, true)  // a lower bound gives it up without running it
	step(2, 2, 2, true)  // a higher one runs it again, and this was the last
	step(2, 2, 2, true)  // given up: not run
	ev := log.of(victim)
	if last := ev[len(ev)-1]; last.Kind != run.EventSkipped || !last.GivenUp || last.ErrorKind != run.KindImage {
		t.Errorf("last event of the given-up task: %+v", last)
	}
	step(3, 3, 3, true)
}

// TestRunGradingErrorKeepsTrajectory: a grading box that will not open
// after a whole episode keeps the trajectory in the task's record, with no
// reward; the next run grades the same patch again without running the
// model again.
func TestRunGradingErrorKeepsTrajectory(t *testing.T) {
	tasks := allTasks(t)[:2]
	victim := tasks[0].InstanceID
	fo := &flakyOpener{open: opener(t), fail: func(id string, n int) error {
		if id == victim && n == 2 {
			return errors.New("container create: Conflict. The container name is already in use")
		}
		return nil
	}}
	var calls sync.Map
	o := options(t, tasks, "mini_swe_agent", agent.ModeText)
	o.Open = fo.Open
	o.NewModel = func(s *agent.Scaffold, tk *task.Task, wd string, mode agent.Mode) (llm.Client, error) {
		n, _ := calls.LoadOrStore(tk.InstanceID, new(atomic.Int32))
		n.(*atomic.Int32).Add(1)
		return oracleModel(s, tk, wd, mode)
	}
	if _, err := run.Run(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	recs, _ := run.LoadRecords(o.TrajDir)
	first := recs[victim]
	if !first.Failed() || first.ErrorStage != run.StageGrade || first.ErrorKind != run.KindBox || !strings.Contains(first.Error, "grading box") {
		t.Fatalf("grading failure: status %s, stage %s, kind %s, error %q", first.Status, first.ErrorStage, first.ErrorKind, first.Error)
	}
	if first.Trajectory == nil || first.Steps() == 0 || first.Patch == "" || first.ExitReason != string(agent.ExitSubmitted) {
		t.Fatalf("the trajectory was not kept: exit %s, %d steps, patch %d bytes", first.ExitReason, first.Steps(), len(first.Patch))
	}
	b, _ := os.ReadFile(filepath.Join(run.TaskDir(o.TrajDir, victim), "agent.log"))
	if !strings.Contains(string(b), "=== step 1") || !strings.Contains(string(b), "no reward: box error") {
		t.Errorf("agent.log of the error:\n%s", b)
	}
	checkOutputs(t, o.TrajDir, ids(tasks[1:]), 1, false)
	checkErrors(t, o.TrajDir, []string{victim}, nil, map[string]int{"box": 1})

	sum, err := run.Run(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if sum.Retried != 1 || sum.Resolved != 2 || sum.Errors != 0 {
		t.Fatalf("second run: retried %d, resolved %d, %d errors", sum.Retried, sum.Resolved, sum.Errors)
	}
	n, _ := calls.Load(victim)
	if got := n.(*atomic.Int32).Load(); got != 1 {
		t.Errorf("the model ran %d times for the task, want once: a retry of grading regrades the kept patch", got)
	}
	recs, _ = run.LoadRecords(o.TrajDir)
	r := recs[victim]
	if r.Failed() || r.Reward != 1 || r.Attempts != 2 || r.Patch != first.Patch || !r.Trajectory.Started.Equal(first.Trajectory.Started) {
		t.Errorf("regraded record: status %s, reward %g, attempts %d, same patch %v", r.Status, r.Reward, r.Attempts, r.Patch == first.Patch)
	}
	checkOutputs(t, o.TrajDir, ids(tasks), 2, false)
}

// TestRunBoxDiesMidEpisode: the agent's box dying under a command is an
// error that keeps the partial trajectory; the retry runs the episode again.
func TestRunBoxDiesMidEpisode(t *testing.T) {
	tasks := allTasks(t)[:2]
	victim := tasks[0].InstanceID
	fo := &flakyOpener{open: opener(t), wrap: func(id string, n int, box sandbox.Sandbox) sandbox.Sandbox {
		if id == victim && n == 1 {
			return &dyingBox{Sandbox: box, after: 1} // preparing the repository runs; the model's first command does not
		}
		return box
	}}
	o := options(t, tasks, "mini_swe_agent", agent.ModeText)
	o.Open = fo.Open
	if _, err := run.Run(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	recs, _ := run.LoadRecords(o.TrajDir)
	r := recs[victim]
	if !r.Failed() || r.ErrorKind != run.KindBox || r.ErrorStage != run.StageAgent || r.ExitReason != string(agent.ExitSandboxError) || r.Steps() != 1 {
		t.Fatalf("box death: status %s, kind %s, stage %s, exit %s, %d steps", r.Status, r.ErrorKind, r.ErrorStage, r.ExitReason, r.Steps())
	}
	checkErrors(t, o.TrajDir, []string{victim}, nil, map[string]int{"box": 1})
	if _, err := run.Run(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	recs, _ = run.LoadRecords(o.TrajDir)
	if r := recs[victim]; r.Failed() || r.Reward != 1 || r.Attempts != 2 {
		t.Errorf("retry: status %s, reward %g, attempts %d", r.Status, r.Reward, r.Attempts)
	}
	checkOutputs(t, o.TrajDir, ids(tasks), 2, false)
}

// TestRunModelFailuresStayRewardZero: what the model caused is reward 0
// with its reason, what its provider caused is an error.
func TestRunModelFailuresStayRewardZero(t *testing.T) {
	tasks := allTasks(t)
	if len(tasks) < 5 {
		t.Fatalf("%d tasks", len(tasks))
	}
	bash := func(cmd string) llm.Message { return llm.Message{Content: "```bash\n" + cmd + "\n```"} }
	type want struct {
		exit   agent.ExitReason
		err    run.ErrorKind // "" for reward 0
		reason string
	}
	cases := map[string]struct {
		model llm.Client
		want  want
	}{
		tasks[0].InstanceID: {llm.NewScripted("replay/empty", nil), want{agent.ExitLLMError, "", "failed"}},
		tasks[1].InstanceID: {failingModel{fmt.Errorf("openai: %w", llm.ErrContextWindow)}, want{agent.ExitContextLimit, "", ""}},
		tasks[2].InstanceID: {llm.NewScripted("replay/vandal", []llm.Message{bash("rm -rf .git"), bash("echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT")}), want{agent.ExitSandboxError, "", "not graded: the sandbox failed"}},
		tasks[3].InstanceID: {failingModel{fmt.Errorf("openai: giving up after 4 attempts: %w", &llm.APIError{Provider: "openai", StatusCode: 503, Message: "overloaded"})}, want{agent.ExitLLMError, run.KindLLM, ""}},
		tasks[4].InstanceID: {failingModel{&llm.APIError{Provider: "openai", StatusCode: 400, Message: "invalid tool call"}}, want{agent.ExitLLMError, "", ""}},
	}
	o := options(t, tasks, "mini_swe_agent", agent.ModeText)
	o.NewModel = func(s *agent.Scaffold, tk *task.Task, wd string, mode agent.Mode) (llm.Client, error) {
		return cases[tk.InstanceID].model, nil
	}
	sum, err := run.Run(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	recs, _ := run.LoadRecords(o.TrajDir)
	var graded []string
	for id, c := range cases {
		r := recs[id]
		if r.ExitReason != string(c.want.exit) || r.ErrorKind != c.want.err || r.Failed() != (c.want.err != "") || r.Reward != 0 {
			t.Errorf("%s: exit %s, status %s, kind %q, reward %g (%s); want exit %s, kind %q", id, r.ExitReason, r.Status, r.ErrorKind, r.Reward, r.RewardReason, c.want.exit, c.want.err)
		}
		if c.want.reason != "" && !strings.Contains(r.RewardReason, c.want.reason) {
			t.Errorf("%s: reason %q, want it to say %q", id, r.RewardReason, c.want.reason)
		}
		if c.want.err == "" {
			graded = append(graded, id)
		}
	}
	if sum.Errors != 1 || sum.File.Total != 4 || sum.Resolved != 0 {
		t.Errorf("summary: %d errors, %d graded, %d resolved", sum.Errors, sum.File.Total, sum.Resolved)
	}
	checkErrors(t, o.TrajDir, []string{tasks[3].InstanceID}, nil, map[string]int{"llm": 1})
	checkOutputs(t, o.TrajDir, graded, 0, false)
}

// TestRunStopsOnRunWideErrors: a full disk or an engine that cannot be
// reached would fail every task alike, so the run records the task that met
// it, starts nothing more and says what to fix; the rerun finishes.
func TestRunStopsOnRunWideErrors(t *testing.T) {
	for _, tc := range []struct {
		name, says string
		err        error
		kind       run.ErrorKind
	}{
		{"disk", "a disk is full", fmt.Errorf("local: copy: %w", &os.PathError{Op: "write", Path: "/tmp/x", Err: syscall.ENOSPC}), run.KindDisk},
		{"engine", "the container engine cannot be reached", fmt.Errorf("no Docker or Podman engine answers at unix:///var/run/docker.sock: %w", sandbox.ErrUnavailable), run.KindEngine},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tasks := allTasks(t)[:3]
			broken := true
			fo := &flakyOpener{open: opener(t), fail: func(id string, n int) error {
				if broken {
					return tc.err
				}
				return nil
			}}
			o := options(t, tasks, "mini_swe_agent", agent.ModeText)
			o.Open, o.Workers = fo.Open, 1
			sum, err := run.Run(context.Background(), o)
			if err == nil || !strings.Contains(err.Error(), tc.says) || !strings.Contains(err.Error(), "rerun the same command") {
				t.Fatalf("err %v, want it to say %q", err, tc.says)
			}
			if sum.Ran != 1 || sum.Errors != 1 {
				t.Fatalf("ran %d, %d errors; want the first task alone, an error", sum.Ran, sum.Errors)
			}
			recs, _ := run.LoadRecords(o.TrajDir)
			if r := recs[tasks[0].InstanceID]; len(recs) != 1 || r == nil || r.ErrorKind != tc.kind {
				t.Fatalf("records %v", recs)
			}
			broken = false
			sum, err = run.Run(context.Background(), o)
			if err != nil || sum.Resolved != 3 || sum.Retried != 1 || sum.Errors != 0 {
				t.Fatalf("rerun: %v, resolved %d, retried %d, %d errors", err, sum.Resolved, sum.Retried, sum.Errors)
			}
			checkOutputs(t, o.TrajDir, ids(tasks), 3, false)
		})
	}
}

// TestRunOlderRecords: records of an older swerve have no status; the ones
// that carry an error (a box that would not open was reward 0 then) run
// again, the others stay finished.
func TestRunOlderRecords(t *testing.T) {
	tasks := allTasks(t)[:2]
	o := options(t, tasks, "mini_swe_agent", agent.ModeText)
	if _, err := run.Run(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	for i, tk := range tasks {
		path := filepath.Join(run.TaskDir(o.TrajDir, tk.InstanceID), "result.json")
		var rec map[string]any
		readJSON(t, path, &rec)
		delete(rec, "status")
		delete(rec, "attempts")
		if i == 0 {
			rec["error"] = "local: copy /src: no such file or directory"
			rec["exit_reason"] = "sandbox_error"
			rec["reward"] = 0
			rec["reward_reason"] = "not graded: local: copy /src: no such file or directory"
			delete(rec, "trajectory")
		}
		b, _ := json.Marshal(rec)
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	recs, err := run.LoadRecords(o.TrajDir)
	if err != nil {
		t.Fatal(err)
	}
	if r := recs[tasks[0].InstanceID]; !r.Failed() || r.ErrorKind != run.KindBox {
		t.Errorf("an older error record reads as %s (%s)", r.Status, r.ErrorKind)
	}
	if r := recs[tasks[1].InstanceID]; r.Status != run.StatusGraded {
		t.Errorf("an older graded record reads as %s", r.Status)
	}
	sum, err := run.Run(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if sum.Ran != 1 || sum.Retried != 1 || sum.Skipped != 1 || sum.Resolved != 2 {
		t.Fatalf("ran %d, retried %d, skipped %d, resolved %d", sum.Ran, sum.Retried, sum.Skipped, sum.Resolved)
	}
	checkOutputs(t, o.TrajDir, ids(tasks), 2, false)
}

// TestRunStopsAfterConsecutiveErrors: MaxConsecutiveErrors infrastructure
// errors of one kind in a row (a model endpoint gone) stop the run with
// what finished kept, and the same run resumes; a reward of 0 the model
// caused breaks the row, and so never counts.
func TestRunStopsAfterConsecutiveErrors(t *testing.T) {
	tasks := allTasks(t)[:5]
	gone := failingModel{fmt.Errorf("openai/failing: giving up after 7 attempts: dial tcp 127.0.0.1:9: connect: connection refused")}
	t.Run("stops", func(t *testing.T) {
		down := true
		o := options(t, tasks, "mini_swe_agent", agent.ModeText)
		o.Workers, o.MaxConsecutiveErrors = 1, 3
		o.NewModel = func(s *agent.Scaffold, tk *task.Task, wd string, mode agent.Mode) (llm.Client, error) {
			if down {
				return gone, nil
			}
			return agent.NewOracle(s, tk, wd, mode)
		}
		sum, err := run.Run(context.Background(), o)
		if !errors.Is(err, run.ErrStopped) || !strings.Contains(err.Error(), "3 tasks in a row ended in a llm error") || !strings.Contains(err.Error(), "rerun the same command") {
			t.Fatalf("err %v; want the run stopped after 3 llm errors", err)
		}
		if sum.Ran != 3 || sum.Errors != 3 {
			t.Fatalf("ran %d, %d errors; want 3 of 5 tasks run, all errors", sum.Ran, sum.Errors)
		}
		down = false
		sum, err = run.Run(context.Background(), o)
		if err != nil || sum.Resolved != 5 || sum.Retried != 3 {
			t.Fatalf("rerun: %v, resolved %d, retried %d", err, sum.Resolved, sum.Retried)
		}
	})
	t.Run("a reward of 0 breaks the row", func(t *testing.T) {
		o := options(t, tasks, "mini_swe_agent", agent.ModeText)
		o.Workers, o.MaxConsecutiveErrors = 1, 3
		o.NewModel = func(s *agent.Scaffold, tk *task.Task, wd string, mode agent.Mode) (llm.Client, error) {
			if tk.InstanceID == tasks[2].InstanceID {
				// The model's own failure: reward 0, not an error.
				return failingModel{&llm.APIError{Provider: "openai", StatusCode: 400, Message: "invalid tool call"}}, nil
			}
			return gone, nil
		}
		sum, err := run.Run(context.Background(), o)
		if err != nil || sum.Ran != 5 || sum.Errors != 4 {
			t.Fatalf("run: %v, ran %d, %d errors; want all 5 run, 4 errors", err, sum.Ran, sum.Errors)
		}
	})
}

// cancellingBox cancels the run from inside the first history command
// (the box is being prepared) and then fails as that command would.
type cancellingBox struct {
	sandbox.Sandbox
	cancel context.CancelFunc
}

func (b *cancellingBox) Exec(ctx context.Context, req sandbox.ExecRequest) (sandbox.ExecResult, error) {
	b.cancel()
	<-ctx.Done()
	return sandbox.ExecResult{}, fmt.Errorf("exec %q: %w", req.Cmd, ctx.Err())
}

// TestRunCancelledWhilePreparing: a run cancelled while a task's box is
// being prepared records nothing for that task (the failure is the
// cancellation's, not the task's) and spends none of its attempts.
func TestRunCancelledWhilePreparing(t *testing.T) {
	tasks := allTasks(t)[:1]
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	fo := &flakyOpener{open: opener(t), wrap: func(id string, n int, box sandbox.Sandbox) sandbox.Sandbox {
		return &cancellingBox{Sandbox: box, cancel: cancel}
	}}
	o := options(t, tasks, "mini_swe_agent", agent.ModeText)
	o.Open = fo.Open
	run.Run(ctx, o)
	recs, err := run.LoadRecords(o.TrajDir)
	if err != nil {
		t.Fatal(err)
	}
	for id, r := range recs {
		t.Errorf("%s recorded after the run was cancelled: status %s, kind %s: %s", id, r.Status, r.ErrorKind, r.Error)
	}
}
