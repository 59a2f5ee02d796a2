package episode_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/swerve-dev/swerve/internal/agent"
	_ "github.com/swerve-dev/swerve/internal/agent/scaffold/all"
	"github.com/swerve-dev/swerve/internal/episode"
	"github.com/swerve-dev/swerve/internal/llm"
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

// sampleTask is the first sample task (Python, pytest), whose boxes the
// local backend opens as copies of its repository.
func sampleTask(t testing.TB) *task.Task {
	t.Helper()
	testutil.NeedPytest(t)
	res, err := task.Load(context.Background(), filepath.Join(testutil.RepoRoot(t), "examples/sample/tasks.jsonl"), task.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return &res.Tasks[0]
}

var (
	once    sync.Once
	backend *local.Backend
	bErr    error
)

// opener opens local boxes and counts the open ones in *open.
func opener(t testing.TB, open *openCount) episode.Opener {
	once.Do(func() {
		backend, bErr = local.New(sandbox.Options{ShimPath: testutil.SwerveBinary(t), RunID: "episode-test"})
	})
	if bErr != nil {
		t.Fatal(bErr)
	}
	return func(ctx context.Context, tk *task.Task) (sandbox.Sandbox, string, error) {
		box, err := backend.Open(ctx, sandbox.Spec{Image: tk.SourceDir})
		if err != nil {
			return nil, "", err
		}
		res, err := box.Exec(ctx, sandbox.ExecRequest{Cmd: []string{"pwd"}})
		if err != nil {
			box.Close(ctx)
			return nil, "", err
		}
		open.add(1)
		return &countedBox{Sandbox: box, open: open}, strings.TrimSpace(string(res.Output)), nil
	}
}

// openCount counts the boxes open.
type openCount struct {
	mu sync.Mutex
	n  int
}

func (c *openCount) add(d int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.n += d
}

func (c *openCount) get() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n
}

// countedBox tells its openCount when it closes (once).
type countedBox struct {
	sandbox.Sandbox
	open   *openCount
	closed sync.Once
}

func (b *countedBox) Close(ctx context.Context) error {
	b.closed.Do(func() { b.open.add(-1) })
	return b.Sandbox.Close(ctx)
}

// panickyBox is a box whose commands panic, as a grader with a bug would.
type panickyBox struct{ sandbox.Sandbox }

func (b panickyBox) Exec(context.Context, sandbox.ExecRequest) (sandbox.ExecResult, error) {
	panic("index out of range [3] with length 3")
}

// failingModel is a model whose every call fails with err.
type failingModel struct{ err error }

func (m failingModel) Name() string { return "openai/failing" }
func (m failingModel) Complete(context.Context, llm.Request) (llm.Response, error) {
	return llm.Response{}, m.err
}

// stoppingModel asks for a stop, then fails as a refused request does.
type stoppingModel struct{ stop chan struct{} }

func (m stoppingModel) Name() string { return "openai/stopping" }
func (m stoppingModel) Complete(context.Context, llm.Request) (llm.Response, error) {
	close(m.stop)
	return llm.Response{}, &llm.APIError{StatusCode: 400}
}

// conftest is a patch that adds a pytest plugin to the repository: the
// tamper check names it whatever else the patch does.
const conftest = `diff --git a/conftest.py b/conftest.py
new file mode 100644
--- /dev/null
+++ b/conftest.py
@@ -0,0 +1,2 @@
+def pytest_collection_modifyitems(items):
+    items.clear()
`

func TestRun(t *testing.T) {
	tk := sampleTask(t)
	mini, err := agent.Lookup("mini_swe_agent")
	if err != nil {
		t.Fatal(err)
	}
	oracle := func(s *agent.Scaffold, tk *task.Task, wd string, mode agent.Mode) (llm.Client, error) {
		return agent.NewOracle(s, tk, wd, mode)
	}
	refused := errors.New("container create: conflict")
	tests := []struct {
		name string
		// spec changes the base spec (oracle model, local boxes).
		spec func(s *episode.Spec)
		// want: reward and reason prefix, or the failure's kind and stage.
		reward     float64
		reason     string
		kind       episode.ErrorKind
		stage      string
		exit       agent.ExitReason
		trajectory bool
	}{
		{name: "oracle resolves", reward: 1, reason: "resolved", exit: agent.ExitSubmitted, trajectory: true},
		{name: "gold patch resolves", spec: func(s *episode.Spec) { s.Gold, s.NewModel = true, nil }, reward: 1, reason: "resolved", exit: agent.ExitSubmitted},
		{name: "gold patch with grade_in same is graded fresh", spec: func(s *episode.Spec) { s.Gold, s.Grade.In = true, episode.GradeSame }, reward: 1, reason: "resolved", exit: agent.ExitSubmitted},
		{name: "oracle graded in its own box", spec: func(s *episode.Spec) { s.Grade.In = episode.GradeSame }, reward: 1, reason: "resolved", exit: agent.ExitSubmitted, trajectory: true},
		{
			name: "no gold patch is the task's error",
			spec: func(s *episode.Spec) {
				c := *s.Task
				c.Patch = ""
				s.Task, s.Gold = &c, true
			},
			reason: "not graded: task error:", kind: episode.KindTask, stage: episode.StageAgent, exit: agent.ExitSandboxError,
		},
		{
			name: "a box that will not open is an error, not a reward",
			spec: func(s *episode.Spec) {
				s.Open = func(context.Context, *task.Task) (sandbox.Sandbox, string, error) { return nil, "", refused }
				s.Grade.Open = nil
			},
			reason: "not graded: box error: container create: conflict", kind: episode.KindBox, stage: episode.StageAgent, exit: agent.ExitSandboxError,
		},
		{
			name: "a missing image",
			spec: func(s *episode.Spec) {
				s.Open = func(context.Context, *task.Task) (sandbox.Sandbox, string, error) {
					return nil, "", fmt.Errorf("image x: %w", sandbox.ErrNotFound)
				}
				s.Grade.Open = nil
			},
			reason: "not graded: image error:", kind: episode.KindImage, stage: episode.StageAgent, exit: agent.ExitSandboxError,
		},
		{
			name: "a grading box that will not open keeps the trajectory",
			spec: func(s *episode.Spec) {
				s.Grade.Open = func(context.Context, *task.Task) (sandbox.Sandbox, string, error) { return nil, "", refused }
			},
			reason: "not graded: box error: grading box:", kind: episode.KindBox, stage: episode.StageGrade, exit: agent.ExitSubmitted, trajectory: true,
		},
		{
			name: "a grader crash is the grader's error",
			spec: func(s *episode.Spec) {
				open := s.Open
				s.Grade.Open = func(ctx context.Context, tk *task.Task) (sandbox.Sandbox, string, error) {
					box, wd, err := open(ctx, tk)
					if err != nil {
						return nil, "", err
					}
					return panickyBox{box}, wd, nil
				}
			},
			reason: "not graded: grader error: the grader crashed", kind: episode.KindGrader, stage: episode.StageGrade, exit: agent.ExitSubmitted, trajectory: true,
		},
		{
			name:   "a model that cannot be built is the provider's error",
			spec:   func(s *episode.Spec) { s.NewModel = nil },
			reason: "not graded: llm error:", kind: episode.KindLLM, stage: episode.StageAgent, exit: agent.ExitLLMError,
		},
		{
			name: "a provider outage ends the episode as an error",
			spec: func(s *episode.Spec) {
				s.NewModel, s.Model = nil, failingModel{&llm.APIError{StatusCode: 503}}
			},
			reason: "not graded: llm error:", kind: episode.KindLLM, stage: episode.StageAgent, exit: agent.ExitLLMError, trajectory: true,
		},
		{
			name: "a refused request is the model's: reward 0",
			spec: func(s *episode.Spec) {
				s.NewModel, s.Model = nil, failingModel{&llm.APIError{StatusCode: 400}}
			},
			reason: "", exit: agent.ExitLLMError, trajectory: true,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var open openCount
			s := episode.Spec{
				Task: tk, Scaffold: mini, Mode: agent.ModeText, NewModel: oracle, Open: opener(t, &open),
				Limits: agent.Limits{MaxSteps: 10},
			}
			if tc.spec != nil {
				tc.spec(&s)
			}
			res, err := episode.Run(context.Background(), s)
			if err != nil {
				t.Fatal(err)
			}
			if n := open.get(); n != 0 {
				t.Errorf("%d boxes left open", n)
			}
			if res.Reward != tc.reward || !strings.HasPrefix(res.RewardReason, tc.reason) {
				t.Errorf("reward %v (%s), want %v (%s...)", res.Reward, res.RewardReason, tc.reward, tc.reason)
			}
			if res.ExitReason != tc.exit {
				t.Errorf("exit %s, want %s", res.ExitReason, tc.exit)
			}
			if (res.Trajectory != nil) != tc.trajectory {
				t.Errorf("trajectory kept: %v, want %v", res.Trajectory != nil, tc.trajectory)
			}
			if tc.kind == "" {
				if res.Failed() {
					t.Fatalf("failed outside the model: %v", res.Failure)
				}
				return
			}
			if !res.Failed() || res.Failure.Kind != tc.kind || res.Failure.Stage != tc.stage {
				t.Fatalf("failure %+v, want kind %s at %s", res.Failure, tc.kind, tc.stage)
			}
			if res.Grader != "" || res.Report != nil || res.TestOutput != "" {
				t.Errorf("a failure carries a grading: %q %s", res.Grader, res.Report)
			}
		})
	}
}

func TestGrade(t *testing.T) {
	tk := sampleTask(t)
	var open openCount
	g := episode.GradeOptions{Open: opener(t, &open)}
	tests := []struct {
		name     string
		patch    string
		gold     bool
		reward   float64
		reason   string
		tampered bool
	}{
		{name: "gold", gold: true, reward: 1, reason: "resolved"},
		{name: "gold as a patch", patch: tk.Patch, reward: 1, reason: "resolved"},
		{name: "empty", reward: 0, reason: ""},
		{name: "a patch that does not apply", patch: "diff --git a/nope.py b/nope.py\n--- a/nope.py\n+++ b/nope.py\n@@ -1 +1 @@\n-a\n+b\n", reward: 0},
		{name: "hostile: the fix plus a conftest", patch: tk.Patch + conftest, reward: 0, reason: "tampered: ", tampered: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g := g
			g.Gold = tc.gold
			res, err := episode.Grade(context.Background(), tk, tc.patch, g)
			if err != nil {
				t.Fatal(err)
			}
			if res.Failed() {
				t.Fatalf("failed outside the model: %v", res.Failure)
			}
			if res.Reward != tc.reward || !strings.HasPrefix(res.RewardReason, tc.reason) {
				t.Errorf("reward %v (%s), want %v (%s...)", res.Reward, res.RewardReason, tc.reward, tc.reason)
			}
			if (len(res.Tampered) > 0) != tc.tampered {
				t.Errorf("tampered %q, want some: %v", res.Tampered, tc.tampered)
			}
			if res.Timings.Grade <= 0 {
				t.Errorf("grading time %v", res.Timings.Grade)
			}
			if n := open.get(); n != 0 {
				t.Errorf("%d boxes left open", n)
			}
		})
	}
	if _, err := episode.Grade(context.Background(), tk, "", episode.GradeOptions{}); err == nil {
		t.Error("Grade without an opener: no error")
	}
}

// TestRunStopsBetweenIterations: a stop requested before the second
// iteration drops the episode whole, its box closed.
func TestRunStopsBetweenIterations(t *testing.T) {
	tk := sampleTask(t)
	mini, err := agent.Lookup("mini_swe_agent")
	if err != nil {
		t.Fatal(err)
	}
	var open openCount
	stopc := make(chan struct{})
	s := episode.Spec{
		Task: tk, Scaffold: mini, Mode: agent.ModeText, Open: opener(t, &open), Iterations: 3,
		// The model's refused request ends the first episode unsubmitted,
		// so the next iteration would start; the stop comes first.
		Model: stoppingModel{stopc},
		Stop:  stopc,
	}
	res, err := episode.Run(context.Background(), s)
	if !errors.Is(err, episode.ErrStopped) || res != nil {
		t.Fatalf("Run: %v, %v; want ErrStopped", res, err)
	}
	if n := open.get(); n != 0 {
		t.Errorf("%d boxes left open", n)
	}
}
