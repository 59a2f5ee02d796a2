package agent_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/swerve-dev/swerve/internal/agent"
	_ "github.com/swerve-dev/swerve/internal/agent/scaffold/all"
	"github.com/swerve-dev/swerve/internal/llm"
	"github.com/swerve-dev/swerve/internal/reward"
	"github.com/swerve-dev/swerve/internal/reward/swebench"
	"github.com/swerve-dev/swerve/internal/sandbox"
	"github.com/swerve-dev/swerve/internal/sandbox/local"
	"github.com/swerve-dev/swerve/internal/task"
	"github.com/swerve-dev/swerve/internal/testutil"
)

// sampleTasks loads the shipped sample tasks.
func sampleTasks(t testing.TB) map[string]*task.Task {
	t.Helper()
	res, err := task.Load(context.Background(), filepath.Join(testutil.RepoRoot(t), "examples/sample/tasks.jsonl"), task.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]*task.Task{}
	for i := range res.Tasks {
		out[res.Tasks[i].InstanceID] = &res.Tasks[i]
	}
	return out
}

var (
	backendOnce sync.Once
	backend     sandbox.Backend
	backendErr  error
)

// openLocal opens a local box over the task's repository and returns it
// with the repository's path.
func openLocal(t testing.TB, tk *task.Task) (sandbox.Sandbox, string) {
	t.Helper()
	backendOnce.Do(func() {
		backend, backendErr = local.New(sandbox.Options{ShimPath: testutil.SwerveBinary(t), RunID: "agent-test"})
	})
	if backendErr != nil {
		t.Fatal(backendErr)
	}
	box, err := backend.Open(context.Background(), sandbox.Spec{Image: tk.SourceDir})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { box.Close(context.Background()) })
	res, err := box.Exec(context.Background(), sandbox.ExecRequest{Cmd: []string{"pwd"}})
	if err != nil {
		t.Fatal(err)
	}
	return box, strings.TrimSpace(string(res.Output))
}

// fakeModel answers from a script; a nil reply with an error returns the
// error.
type fakeModel struct {
	mu      sync.Mutex
	replies []reply
	calls   []llm.Request
}

type reply struct {
	msg   llm.Message
	usage llm.Usage
	err   error
}

func (f *fakeModel) Name() string { return "fake/model" }
func (f *fakeModel) Complete(ctx context.Context, req llm.Request) (llm.Response, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, req)
	if len(f.replies) == 0 {
		return llm.Response{}, fmt.Errorf("fake model: %w", llm.ErrExhausted)
	}
	r := f.replies[0]
	if len(f.replies) > 1 || r.err == nil {
		f.replies = f.replies[1:]
	}
	if r.err != nil {
		return llm.Response{}, r.err
	}
	r.msg.Role = llm.RoleAssistant
	return llm.Response{Message: r.msg, Usage: r.usage, FinishReason: "stop"}, nil
}

func text(s string) reply { return reply{msg: llm.Message{Content: s}} }
func bash(cmd string) reply {
	return text("Running a command.\n\n```bash\n" + cmd + "\n```")
}

const submit = "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT && git add -A && git diff --cached"

func run(t *testing.T, scaffold string, mode agent.Mode, model llm.Client, lim agent.Limits, mutate ...func(*agent.Options)) *agent.Trajectory {
	t.Helper()
	tk := sampleTasks(t)["sample__calc-1"]
	box, wd := openLocal(t, tk)
	s, err := agent.Lookup(scaffold)
	if err != nil {
		t.Fatal(err)
	}
	opts := agent.Options{Scaffold: s, Mode: mode, Model: model, Box: box, Task: tk, Workdir: wd, Limits: lim}
	for _, m := range mutate {
		m(&opts)
	}
	traj, err := agent.Run(context.Background(), opts)
	if err != nil {
		t.Fatalf("agent.Run: %v", err)
	}
	return traj
}

func TestMiniSolvesWithCommands(t *testing.T) {
	m := &fakeModel{replies: []reply{
		bash("grep -n 'return ordered\\[middle\\]' calc.py"),
		bash(`sed -i 's/^    return ordered\[middle\]$/    if len(ordered) % 2 == 0:\n        return (ordered[middle - 1] + ordered[middle]) \/ 2\n    return ordered[middle]/' calc.py`),
		bash(submit),
	}}
	traj := run(t, "mini_swe_agent", agent.ModeText, m, agent.Limits{})
	if traj.ExitReason != agent.ExitSubmitted {
		t.Fatalf("exit %s (%s)", traj.ExitReason, traj.ExitDetail)
	}
	if len(traj.Steps) != 3 {
		t.Errorf("%d steps, want 3", len(traj.Steps))
	}
	if !strings.Contains(traj.Steps[0].Observation, "<returncode>0</returncode>") || !strings.Contains(traj.Steps[0].Observation, "return ordered[middle]") {
		t.Errorf("observation of step 1:\n%s", traj.Steps[0].Observation)
	}
	if !strings.Contains(traj.Patch, "+        return (ordered[middle - 1] + ordered[middle]) / 2") {
		t.Errorf("patch:\n%s", traj.Patch)
	}
	if !strings.HasPrefix(traj.Submission, "diff --git") {
		t.Errorf("submission %q", traj.Submission)
	}
	// The conversation: system, user, then assistant/user pairs, and the
	// final submit reply.
	if got := len(traj.Messages); got != 2+2+2+1 {
		t.Errorf("%d messages", got)
	}
}

func TestFormatErrors(t *testing.T) {
	m := &fakeModel{replies: []reply{
		text("I think I should look around."),
		text("```bash\nls\n```\n```bash\npwd\n```"),
		bash("ls"),
		text("no block"), text("still none"), text("nothing"),
	}}
	traj := run(t, "mini_swe_agent", agent.ModeText, m, agent.Limits{})
	if traj.ExitReason != agent.ExitFormatErrors {
		t.Fatalf("exit %s", traj.ExitReason)
	}
	if len(traj.Steps) != 6 {
		t.Fatalf("%d steps, want 6 (format errors cost a step)", len(traj.Steps))
	}
	if !strings.Contains(traj.Steps[0].FormatError, "found 0") || !strings.Contains(traj.Steps[1].FormatError, "found 2") {
		t.Errorf("format errors: %q, %q", traj.Steps[0].FormatError, traj.Steps[1].FormatError)
	}
	// The model is told what was wrong.
	if last := m.calls[1].Messages[len(m.calls[1].Messages)-1]; last.Role != llm.RoleUser || !strings.Contains(last.Content, "exactly one ```bash block") {
		t.Errorf("format error message: %+v", last)
	}
}

func TestStepTimeoutKillsCommand(t *testing.T) {
	m := &fakeModel{replies: []reply{bash("sleep 30; echo late"), bash(submit)}}
	start := time.Now()
	traj := run(t, "mini_swe_agent", agent.ModeText, m, agent.Limits{StepTimeout: time.Second})
	if d := time.Since(start); d > 15*time.Second {
		t.Errorf("took %s: the timed-out command was not killed", d)
	}
	obs := traj.Steps[0].Observation
	if !strings.Contains(obs, "<returncode>124</returncode>") || !strings.Contains(obs, "killed") || strings.Contains(obs, "late") {
		t.Errorf("observation:\n%s", obs)
	}
	if traj.ExitReason != agent.ExitSubmitted {
		t.Errorf("exit %s", traj.ExitReason)
	}
}

func TestCollapseWarning(t *testing.T) {
	m := &fakeModel{replies: []reply{bash("ls"), bash("ls"), bash("ls"), bash(submit)}}
	traj := run(t, "mini_swe_agent", agent.ModeText, m, agent.Limits{CollapseLimit: 3})
	for i, want := range []bool{false, false, true} {
		if got := strings.Contains(traj.Steps[i].Observation, "same action 3 times"); got != want {
			t.Errorf("step %d warned=%v, want %v:\n%s", i+1, got, want, traj.Steps[i].Observation)
		}
	}
}

func TestStepLimits(t *testing.T) {
	many := func() *fakeModel {
		var r []reply
		for i := 0; i < 20; i++ {
			r = append(r, bash(fmt.Sprintf("echo %d", i)))
		}
		return &fakeModel{replies: r}
	}
	t.Run("soft then hard", func(t *testing.T) {
		traj := run(t, "mini_swe_agent", agent.ModeText, many(), agent.Limits{MaxSteps: 2, MaxStepsAbsolute: 4})
		if traj.ExitReason != agent.ExitMaxStepsAbsolute || len(traj.Steps) != 4 {
			t.Fatalf("exit %s after %d steps", traj.ExitReason, len(traj.Steps))
		}
		if !strings.Contains(traj.Steps[1].Observation, "step budget") || strings.Contains(traj.Steps[0].Observation, "step budget") {
			t.Errorf("the soft-limit notice belongs on step 2 only")
		}
	})
	t.Run("hard at soft", func(t *testing.T) {
		traj := run(t, "mini_swe_agent", agent.ModeText, many(), agent.Limits{MaxSteps: 3, MaxStepsAbsolute: -1})
		if traj.ExitReason != agent.ExitMaxSteps || len(traj.Steps) != 3 {
			t.Fatalf("exit %s after %d steps", traj.ExitReason, len(traj.Steps))
		}
	})
}

func TestModelErrors(t *testing.T) {
	t.Run("llm_error", func(t *testing.T) {
		m := &fakeModel{replies: []reply{bash("ls"), {err: errors.New("status 500 after 6 attempts")}}}
		traj := run(t, "mini_swe_agent", agent.ModeText, m, agent.Limits{})
		if traj.ExitReason != agent.ExitLLMError || !strings.Contains(traj.ExitDetail, "500") {
			t.Fatalf("exit %s (%s)", traj.ExitReason, traj.ExitDetail)
		}
	})
	t.Run("context_limit", func(t *testing.T) {
		m := &fakeModel{replies: []reply{{err: fmt.Errorf("prompt too long: %w", llm.ErrContextWindow)}}}
		traj := run(t, "mini_swe_agent", agent.ModeText, m, agent.Limits{})
		if traj.ExitReason != agent.ExitContextLimit {
			t.Fatalf("exit %s", traj.ExitReason)
		}
	})
	t.Run("token_limit", func(t *testing.T) {
		m := &fakeModel{replies: []reply{{msg: llm.Message{Content: "```bash\nls\n```"}, usage: llm.Usage{InputTokens: 900, OutputTokens: 200, TotalTokens: 1100}}, bash("ls")}}
		traj := run(t, "mini_swe_agent", agent.ModeText, m, agent.Limits{MaxTokens: 1000})
		if traj.ExitReason != agent.ExitTokenLimit || len(traj.Steps) != 1 {
			t.Fatalf("exit %s after %d steps", traj.ExitReason, len(traj.Steps))
		}
	})
}

func TestStopInterrupts(t *testing.T) {
	stop := make(chan struct{})
	m := &fakeModel{replies: []reply{bash("ls"), bash("ls"), bash(submit)}}
	tk := sampleTasks(t)["sample__calc-1"]
	box, wd := openLocal(t, tk)
	s, _ := agent.Lookup("mini_swe_agent")
	traj, err := agent.Run(context.Background(), agent.Options{Scaffold: s, Mode: agent.ModeText, Model: m, Box: box, Task: tk, Workdir: wd,
		OnStep: func(*agent.Step) { close(stop) }, Stop: stop})
	if !errors.Is(err, agent.ErrInterrupted) || len(traj.Steps) != 1 {
		t.Fatalf("err %v after %d steps", err, len(traj.Steps))
	}
}

func TestFnModeRequiresScaffoldSupport(t *testing.T) {
	s, _ := agent.Lookup("mini_swe_agent")
	yes := true
	if _, err := agent.ModeFor(s, &yes); err == nil || !strings.Contains(err.Error(), "no fn mode") {
		t.Fatalf("err %v", err)
	}
}

// TestOracleEveryScaffold runs oracle/gold with every scaffold in every
// mode on both sample tasks, and grades the patch in a fresh box: the
// hidden tests must pass.
func TestOracleEveryScaffold(t *testing.T) {
	testutil.NeedPytest(t) // the grading runs the sample tasks' pytest on the host
	usrBinFirst(t)
	tasks := sampleTasks(t)
	for _, name := range agent.Scaffolds() {
		s, _ := agent.Lookup(name)
		for _, mode := range s.Modes {
			for _, id := range []string{"sample__calc-1", "sample__calc-2"} {
				t.Run(fmt.Sprintf("%s/%s/%s", name, mode, id), func(t *testing.T) {
					tk := tasks[id]
					box, wd := openLocal(t, tk)
					s, _ := agent.Lookup(name)
					model, err := agent.NewOracle(s, tk, wd, mode)
					if err != nil {
						t.Fatal(err)
					}
					traj, err := agent.Run(context.Background(), agent.Options{Scaffold: s, Mode: mode, Model: model, Box: box, Task: tk, Workdir: wd})
					if err != nil {
						t.Fatal(err)
					}
					if traj.ExitReason != agent.ExitSubmitted || !traj.Offline {
						t.Fatalf("exit %s (%s), offline %v", traj.ExitReason, traj.ExitDetail, traj.Offline)
					}
					for _, st := range traj.Steps {
						if strings.HasPrefix(st.Observation, "Error") {
							t.Errorf("step %d: %s", st.Index, st.Observation)
						}
					}
					if mode == agent.ModeFn && len(traj.Tools) == 0 {
						t.Error("fn mode trajectory lacks its tool schemas")
					}
					if strip(traj.Patch) != strip(tk.Patch) {
						t.Errorf("patch differs from the gold patch:\n%s", traj.Patch)
					}
					grade, _ := openLocal(t, tk)
					rr, err := swebench.Run(context.Background(), grade, tk, swebench.RunOptions{RunOptions: reward.RunOptions{Patch: traj.Patch, Workdir: "."}})
					if err != nil {
						t.Fatal(err)
					}
					if !rr.Result.Resolved {
						t.Errorf("not resolved: %s\n%s", rr.Result.Reason, rr.Log)
					}
				})
			}
		}
	}
}

// strip drops the index lines, which name blob abbreviations.
func strip(p string) string {
	var out []string
	for _, l := range strings.Split(p, "\n") {
		if !strings.HasPrefix(l, "index ") {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// usrBinFirst puts the system Python (which has pytest) first on PATH for
// the eval scripts.
func usrBinFirst(t *testing.T) {
	if _, err := os.Stat("/usr/bin/python3"); err == nil {
		t.Setenv("PATH", "/usr/bin:"+os.Getenv("PATH"))
	}
}
