package run_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/swerve-dev/swerve/internal/agent"
	"github.com/swerve-dev/swerve/internal/llm"
	"github.com/swerve-dev/swerve/internal/run"
	"github.com/swerve-dev/swerve/internal/sandbox"
	"github.com/swerve-dev/swerve/internal/task"
	"github.com/swerve-dev/swerve/internal/testutil"
)

// lockHolderEnv makes the test binary a process that holds a --traj_dir's
// lock until it is killed (see init).
const lockHolderEnv = "SWERVE_TEST_HOLD_LOCK"

func init() {
	dir := os.Getenv(lockHolderEnv)
	if dir == "" {
		return
	}
	if _, err := run.LockDir(dir); err != nil {
		fmt.Println("error:", err)
		os.Exit(1)
	}
	fmt.Println("locked")
	time.Sleep(time.Hour)
	os.Exit(0)
}

// TestRunRefusesChangedSettings: a rerun on a --traj_dir with any setting
// that changes a result, or another version of a task, is refused with the
// setting named; the same settings resume.
func TestRunRefusesChangedSettings(t *testing.T) {
	testutil.HostPytest(t) // the sample tasks are graded
	tasks := loadTasks(t, "examples/sample/tasks.jsonl")[:1]
	base := options(t, tasks, "mini_swe_agent", agent.ModeText)
	base.EvalTimeout = 300 * time.Second
	zero := 0.0
	base.Sampling.Temperature = &zero
	base.Box = map[string]string{"backend": "auto", "network": "none", "cpus": "2"}
	if _, err := run.Run(context.Background(), base); err != nil {
		t.Fatal(err)
	}
	half := 0.5
	tests := []struct {
		name   string
		change func(o *run.Options)
		says   string
	}{
		{"eval timeout", func(o *run.Options) { o.EvalTimeout = 600 * time.Second }, "--eval_timeout 5m0s, this run has --eval_timeout 10m0s"},
		{"backend", func(o *run.Options) { o.Box = map[string]string{"backend": "docker", "network": "none", "cpus": "2"} }, "--backend auto, this run has --backend docker"},
		{"network", func(o *run.Options) { o.Box = map[string]string{"backend": "auto", "network": "bridge", "cpus": "2"} }, "--network none, this run has --network bridge"},
		{"a box setting dropped", func(o *run.Options) { o.Box = map[string]string{"backend": "auto", "network": "none"} }, `--cpus 2, this run has --cpus ""`},
		{"model", func(o *run.Options) { o.ModelName = "openai/gpt-4o" }, "--llm_name oracle/gold, this run has --llm_name openai/gpt-4o"},
		{"temperature", func(o *run.Options) { o.Sampling.Temperature = &half }, "--temperature 0, this run has --temperature 0.5"},
		{"iterations", func(o *run.Options) { o.MaxIterations = 3 }, "--max_iterations 1, this run has --max_iterations 3"},
		{"steps", func(o *run.Options) { o.Limits.MaxSteps = 7 }, "--max_steps 0, this run has --max_steps 7"},
		{"mode", func(o *run.Options) { o.Mode = agent.ModeFn }, "--use_fn_calling false, this run has --use_fn_calling true"},
		{"grader", func(o *run.Options) { o.Reward = "swebench" }, `--reward "", this run has --reward swebench`},
		{"dataset row", func(o *run.Options) {
			o.Tasks = slices.Clone(o.Tasks)
			o.Tasks[0].ProblemStatement += " (edited)"
		}, "another version of this task"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := base
			tt.change(&o)
			_, err := run.Run(context.Background(), o)
			if err == nil || !strings.Contains(err.Error(), tt.says) || !strings.Contains(err.Error(), "another --traj_dir") {
				t.Fatalf("err %v; want it to say %q", err, tt.says)
			}
		})
	}
	// Unchanged: resumes, nothing runs again.
	sum, err := run.Run(context.Background(), base)
	if err != nil || sum.Skipped != 1 || sum.Ran != 0 {
		t.Fatalf("same settings: %v, skipped %d, ran %d", err, sum.Skipped, sum.Ran)
	}
	// --skip_if_exists keeps results made otherwise.
	o := base
	o.EvalTimeout, o.SkipIfExists = time.Minute, true
	if sum, err := run.Run(context.Background(), o); err != nil || sum.Skipped != 1 {
		t.Fatalf("--skip_if_exists: %v", err)
	}
}

// TestRunResumesOlderFingerprints: a record of a swerve that hashed fewer
// settings resumes when those match, and is refused when they do not.
func TestRunResumesOlderFingerprints(t *testing.T) {
	testutil.HostPytest(t) // the sample tasks are graded
	tasks := loadTasks(t, "examples/sample/tasks.jsonl")[:1]
	o := options(t, tasks, "mini_swe_agent", agent.ModeText)
	o.GradeIn = "fresh" // as Run fills it in before fingerprinting
	if _, err := run.Run(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(run.TaskDir(o.TrajDir, tasks[0].InstanceID), "result.json")
	var rec map[string]any
	readJSON(t, path, &rec)
	delete(rec, "settings")
	delete(rec, "task_hash")
	rec["fingerprint"] = run.LegacyFingerprint(o)
	b, _ := json.Marshal(rec)
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	if sum, err := run.Run(context.Background(), o); err != nil || sum.Skipped != 1 {
		t.Fatalf("older record, same settings: %v", err)
	}
	o.Scaffold = "r2egym"
	if _, err := run.Run(context.Background(), o); err == nil || !strings.Contains(err.Error(), "an older swerve made with other settings") {
		t.Fatalf("older record, other settings: %v", err)
	}
}

// TestRunLock: a second run on a --traj_dir in use is refused with the
// holder's pid, at once; when the first ends, the directory is free again.
func TestRunLock(t *testing.T) {
	testutil.HostPytest(t) // the sample tasks are graded
	tasks := loadTasks(t, "examples/sample/tasks.jsonl")[:1]
	o := options(t, tasks, "mini_swe_agent", agent.ModeText)
	inside, release := make(chan struct{}), make(chan struct{})
	first := o
	open := o.Open
	var once sync.Once
	first.Open = func(ctx context.Context, tk *task.Task) (sandbox.Sandbox, string, error) {
		once.Do(func() { close(inside); <-release })
		return open(ctx, tk)
	}
	done := make(chan error, 1)
	go func() {
		_, err := run.Run(context.Background(), first)
		done <- err
	}()
	<-inside
	start := time.Now()
	_, err := run.Run(context.Background(), o)
	if !errors.Is(err, run.ErrLocked) || !strings.Contains(err.Error(), "pid "+strconv.Itoa(os.Getpid())) {
		t.Errorf("second run at once: %v; want it refused naming pid %d", err, os.Getpid())
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("the refusal took %s", d)
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if sum, err := run.Run(context.Background(), o); err != nil || sum.Skipped != 1 {
		t.Fatalf("after the first ended: %v", err)
	}
}

// TestRunLockKilledHolder: a run killed with -9 leaves its lock file, but
// the kernel released the lock: the next run starts.
func TestRunLockKilledHolder(t *testing.T) {
	testutil.HostPytest(t) // the sample tasks are graded
	tasks := loadTasks(t, "examples/sample/tasks.jsonl")[:1]
	o := options(t, tasks, "mini_swe_agent", agent.ModeText)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), lockHolderEnv+"="+o.TrajDir)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, _ := bufio.NewReader(out).ReadString('\n')
	if strings.TrimSpace(line) != "locked" {
		cmd.Process.Kill()
		t.Fatalf("holder said %q", line)
	}
	_, err = run.Run(context.Background(), o)
	if !errors.Is(err, run.ErrLocked) || !strings.Contains(err.Error(), "pid "+strconv.Itoa(cmd.Process.Pid)) {
		t.Errorf("while another process holds it: %v; want pid %d named", err, cmd.Process.Pid)
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	if _, err := os.Stat(filepath.Join(o.TrajDir, run.LockName)); err != nil {
		t.Fatalf("the lock file: %v", err)
	}
	if sum, err := run.Run(context.Background(), o); err != nil || sum.Ran != 1 {
		t.Fatalf("after kill -9 of the holder: %v", err)
	}
}

func TestIterationTemperatures(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	tests := []struct {
		temp  *float64
		iters int
		want  []float64
	}{
		{f(0), 1, nil},
		{f(0), 2, []float64{0, 0.1}},
		{f(0), 5, []float64{0, 0.1, 0.2, 0.2, 0.2}},
		{f(0.7), 3, []float64{0.7, 0.7, 0.7}},
		{nil, 3, nil},
	}
	for _, tt := range tests {
		if got := run.IterationTemperatures(tt.temp, tt.iters); !slices.Equal(got, tt.want) {
			t.Errorf("IterationTemperatures(%v, %d) = %v, want %v", tt.temp, tt.iters, got, tt.want)
		}
	}
}

// recordingModel notes the temperature of its calls.
type recordingModel struct {
	llm.Client
	mu    *sync.Mutex
	temps *[]float64
}

func (m recordingModel) Complete(ctx context.Context, req llm.Request) (llm.Response, error) {
	m.mu.Lock()
	if req.Temperature != nil {
		*m.temps = append(*m.temps, *req.Temperature)
	}
	m.mu.Unlock()
	return m.Client.Complete(ctx, req)
}

// TestRunIterations: --max_iterations runs episodes in fresh boxes until
// one submits, at rising temperatures from 0; with none submitting, the
// one with the fewest steps is graded.
func TestRunIterations(t *testing.T) {
	testutil.HostPytest(t) // the sample tasks are graded
	bash := func(cmd string) llm.Message { return llm.Message{Content: "```bash\n" + cmd + "\n```"} }
	// idle never submits: it hits the step limit after n steps.
	idle := func(n int) llm.Client {
		var ms []llm.Message
		for range n + 5 {
			ms = append(ms, bash("echo thinking"))
		}
		return llm.NewScripted("replay/idle", ms)
	}
	tests := []struct {
		name     string
		models   func(i int, s *agent.Scaffold, tk *task.Task, wd string) (llm.Client, error)
		maxSteps int
		opens    int
		temps    []float64 // first call's temperature per episode
		reward   float64
		exit     agent.ExitReason
	}{
		{"second submits", func(i int, s *agent.Scaffold, tk *task.Task, wd string) (llm.Client, error) {
			if i == 0 {
				return idle(3), nil
			}
			return agent.NewOracle(s, tk, wd, agent.ModeText)
		}, 3, 2, []float64{0, 0.1}, 1, agent.ExitSubmitted},
		{"none submits: fewest steps", func(i int, s *agent.Scaffold, tk *task.Task, wd string) (llm.Client, error) {
			if i == 1 { // three unreadable replies end it before the step limit
				return llm.NewScripted("replay/mute", []llm.Message{{Content: "hm"}, {Content: "hm"}, {Content: "hm"}, {Content: "hm"}}), nil
			}
			return idle(8), nil
		}, 8, 3, []float64{0, 0.1, 0.2}, 0, agent.ExitFormatErrors},
		{"none submits: all at the step limit", func(i int, s *agent.Scaffold, tk *task.Task, wd string) (llm.Client, error) {
			return idle(3), nil
		}, 3, 3, []float64{0, 0.1, 0.2}, 0, agent.ExitMaxStepsAbsolute},
		{"first submits", func(i int, s *agent.Scaffold, tk *task.Task, wd string) (llm.Client, error) {
			return agent.NewOracle(s, tk, wd, agent.ModeText)
		}, 40, 1, []float64{0}, 1, agent.ExitSubmitted},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tasks := loadTasks(t, "examples/sample/tasks.jsonl")[:1]
			o := options(t, tasks, "mini_swe_agent", agent.ModeText)
			o.MaxIterations = 3
			zero := 0.0
			o.Sampling.Temperature = &zero
			o.Limits = agent.Limits{MaxSteps: tt.maxSteps, MaxStepsAbsolute: tt.maxSteps + 1}
			var (
				mu       sync.Mutex
				episodes int
				opens    int
				temps    []*[]float64
			)
			open := o.Open
			o.Open = func(ctx context.Context, tk *task.Task) (sandbox.Sandbox, string, error) {
				mu.Lock()
				opens++
				mu.Unlock()
				return open(ctx, tk)
			}
			o.NewModel = func(s *agent.Scaffold, tk *task.Task, wd string, mode agent.Mode) (llm.Client, error) {
				mu.Lock()
				i := episodes
				episodes++
				mu.Unlock()
				m, err := tt.models(i, s, tk, wd)
				if err != nil {
					return nil, err
				}
				calls := new([]float64)
				mu.Lock()
				temps = append(temps, calls)
				mu.Unlock()
				return recordingModel{Client: m, mu: &mu, temps: calls}, nil
			}
			if _, err := run.Run(context.Background(), o); err != nil {
				t.Fatal(err)
			}
			recs, err := run.LoadRecords(o.TrajDir)
			if err != nil {
				t.Fatal(err)
			}
			rec := recs[tasks[0].InstanceID]
			if episodes != len(tt.temps) || rec.Reward != tt.reward || rec.ExitReason != string(tt.exit) {
				t.Errorf("%d episodes, reward %g, exit %s; want %d, %g, %s", episodes, rec.Reward, rec.ExitReason, len(tt.temps), tt.reward, tt.exit)
			}
			// One box per episode, and one to grade in.
			if opens != tt.opens+1 {
				t.Errorf("%d boxes opened, want %d", opens, tt.opens+1)
			}
			var firsts []float64
			for _, calls := range temps {
				if len(*calls) == 0 {
					t.Fatal("an episode made no call")
				}
				firsts = append(firsts, (*calls)[0])
			}
			if !slices.Equal(firsts, tt.temps) {
				t.Errorf("temperatures %v, want %v", firsts, tt.temps)
			}
		})
	}
}
