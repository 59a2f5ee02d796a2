// Package run is swerve's Stage 2: run an agent scaffold on many tasks in
// parallel, grade each patch in a fresh box, and write the files the
// SWE-Factory / R2E-Gym runners write, resumably.
//
// # Layout under TrajDir
//
//	<exp_name>.jsonl                          one trajectory per task
//	trajectories.jsonl                        messages only (or {"messages","tools"})
//	trajectories_rejection_sampling.jsonl     the same, reward 1 only
//	reward_summary.json                       counts, ids, accuracy, turns, tokens
//	preds.json                                SWE-bench predictions
//	<instance_id>/agent.log, output_patch.diff, test_output.log, metadata.json
//	<instance_id>/result.json                 the task's record: the journal
//
// A task is finished exactly when its result.json exists: it is written
// last, to a temporary name, and renamed. A rerun with the same arguments
// skips finished tasks and runs the rest; the aggregate files are rebuilt
// from the records, so none is lost or counted twice whatever killed the
// previous run.
package run

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"syscall"
	"time"

	"github.com/swerve-dev/swerve/internal/agent"
	"github.com/swerve-dev/swerve/internal/fsutil"
	"github.com/swerve-dev/swerve/internal/llm"
	"github.com/swerve-dev/swerve/internal/reward/grader"
	"github.com/swerve-dev/swerve/internal/sandbox"
	"github.com/swerve-dev/swerve/internal/task"
)

// Opener opens a box for a task and says where its repository is.
type Opener func(ctx context.Context, t *task.Task) (sandbox.Sandbox, string, error)

// ModelFactory builds the model for one task.
type ModelFactory func(s *agent.Scaffold, t *task.Task, workdir string, mode agent.Mode) (llm.Client, error)

// Options configure a run.
type Options struct {
	Tasks   []task.Task
	TrajDir string
	ExpName string
	Workers int

	Scaffold  string
	Mode      agent.Mode
	ModelName string
	NewModel  ModelFactory
	Open      Opener
	Limits    agent.Limits
	Sampling  agent.Sampling

	EvalTimeout time.Duration
	// Reward forces a grader (--reward); empty: the task's.
	Reward string
	// RunGolden grades the gold patch instead of running the model.
	RunGolden bool
	// SkipIfExists keeps finished tasks even when they were run with other
	// settings.
	SkipIfExists bool
	// GradeIn is "fresh" (default: a new box from the task's image) or
	// "same" (the agent's box, as upstream does).
	GradeIn string
	// Config is recorded with every trajectory.
	Config map[string]any
	// Events, if set, is told about progress (from several goroutines,
	// one call at a time).
	Events func(Event)
	// Stop, when closed, starts a graceful shutdown: nothing new starts,
	// running episodes end after their current step and are not recorded.
	Stop <-chan struct{}
}

// Event kinds.
const (
	EventStart   = "start"   // a task began
	EventDone    = "done"    // a task finished and was recorded
	EventSkipped = "skipped" // a task was finished in an earlier run
	EventAborted = "aborted" // a task was interrupted and will run again next time
)

// Event is one progress report.
type Event struct {
	Kind       string  `json:"event"`
	InstanceID string  `json:"instance_id"`
	Reward     float64 `json:"reward"`
	Reason     string  `json:"reason,omitempty"`
	ExitReason string  `json:"exit_reason,omitempty"`
	Steps      int     `json:"steps"`
	Seconds    float64 `json:"seconds"`
	// Counters after this event.
	Done     int `json:"done"`
	Running  int `json:"running"`
	Resolved int `json:"resolved"`
	Total    int `json:"total"`
}

// Record is one finished task: result.json, and the source of every
// aggregate file.
type Record struct {
	InstanceID  string `json:"instance_id"`
	DockerImage string `json:"docker_image"`
	Repo        string `json:"repo"`
	ExpName     string `json:"exp_name"`
	Scaffold    string `json:"scaffold"`
	Mode        string `json:"mode"`
	Model       string `json:"model"`
	// Offline is set for replay/..., oracle/gold and --run_golden runs.
	Offline bool `json:"offline,omitempty"`

	Reward         float64         `json:"reward"`
	RewardReason   string          `json:"reward_reason"`
	Grader         string          `json:"grader,omitempty"`
	Report         json.RawMessage `json:"report,omitempty"`
	RewardCalcTime float64         `json:"reward_calc_time"`
	TestTimeout    bool            `json:"test_timeout"`

	ExitReason string `json:"exit_reason"`
	ExitDetail string `json:"exit_detail,omitempty"`
	// Error is set when the task failed outside the agent (no image, a box
	// that would not start); the reward is then 0.
	Error string `json:"error,omitempty"`

	Patch      string            `json:"output_patch"`
	Trajectory *agent.Trajectory `json:"trajectory,omitempty"`
	TestOutput string            `json:"-"`

	Config      map[string]any `json:"config,omitempty"`
	Fingerprint string         `json:"fingerprint"`
	Started     time.Time      `json:"started"`
	Finished    time.Time      `json:"finished"`
}

// Steps is the number of model turns.
func (r *Record) Steps() int {
	if r.Trajectory == nil {
		return 0
	}
	return len(r.Trajectory.Steps)
}

// Usage is the record's token usage.
func (r *Record) Usage() llm.Usage {
	if r.Trajectory == nil {
		return llm.Usage{}
	}
	return r.Trajectory.Usage
}

// Summary is what a run ends with.
type Summary struct {
	TrajDir     string
	Total       int // tasks selected
	Recorded    int // tasks with a record, from this run or before
	Ran         int // tasks recorded by this run
	Skipped     int // tasks already finished before this run
	Resolved    int
	Interrupted bool
	Wall        time.Duration
	File        *RewardSummary
}

// ErrInterrupted is returned when Stop ended the run early.
var ErrInterrupted = errors.New("run interrupted")

// Run runs every task not yet finished and writes the outputs.
func Run(ctx context.Context, opts Options) (*Summary, error) {
	if opts.TrajDir == "" || opts.ExpName == "" {
		return nil, errors.New("run: TrajDir and ExpName are required")
	}
	if opts.Workers <= 0 {
		opts.Workers = 1
	}
	if opts.GradeIn == "" {
		opts.GradeIn = "fresh"
	}
	if opts.GradeIn != "fresh" && opts.GradeIn != "same" {
		return nil, fmt.Errorf("--grade_in: want fresh or same, got %q", opts.GradeIn)
	}
	if opts.RunGolden {
		opts.ModelName = "gold-patch"
	}
	if err := os.MkdirAll(opts.TrajDir, 0o755); err != nil {
		return nil, fmt.Errorf("--traj_dir: %w", err)
	}
	r := &runner{opts: opts, start: time.Now(), fingerprint: fingerprint(opts)}
	existing, err := LoadRecords(opts.TrajDir)
	if err != nil {
		return nil, err
	}
	var pending []*task.Task
	done := map[string]bool{}
	for _, rec := range existing {
		done[rec.InstanceID] = true
	}
	sum := &Summary{TrajDir: opts.TrajDir, Total: len(opts.Tasks)}
	for i := range opts.Tasks {
		t := &opts.Tasks[i]
		rec, ok := existing[t.InstanceID]
		if !ok {
			pending = append(pending, t)
			continue
		}
		if rec.Fingerprint != r.fingerprint && !opts.SkipIfExists {
			return nil, fmt.Errorf("task %s: %s holds a result made with other settings (model %s, scaffold %s); use another --traj_dir or --exp_name, or --skip_if_exists to keep those results", t.InstanceID, opts.TrajDir, rec.Model, rec.Scaffold)
		}
		sum.Skipped++
		if rec.Reward == 1 {
			r.resolved++
		}
		r.done++
	}
	r.total = len(opts.Tasks)
	for i := range opts.Tasks {
		if done[opts.Tasks[i].InstanceID] {
			r.emit(Event{Kind: EventSkipped, InstanceID: opts.Tasks[i].InstanceID, Reward: existing[opts.Tasks[i].InstanceID].Reward})
		}
	}

	runErr := r.runAll(ctx, pending)
	sum.Ran = r.ran
	sum.Interrupted = r.interrupted || ctx.Err() != nil
	// The aggregates are rebuilt from the records whatever happened.
	file, werr := WriteAggregates(opts.TrajDir, opts.ExpName)
	sum.File = file
	if file != nil {
		sum.Recorded = file.Total
		sum.Resolved = file.Reward1.Count
	}
	sum.Wall = time.Since(r.start)
	if runErr != nil {
		return sum, runErr
	}
	if werr != nil {
		return sum, werr
	}
	if sum.Interrupted {
		return sum, ErrInterrupted
	}
	return sum, nil
}

type runner struct {
	opts        Options
	start       time.Time
	fingerprint string

	mu          sync.Mutex
	done        int
	running     int
	resolved    int
	total       int
	ran         int
	interrupted bool
	fatal       error
}

func (r *runner) emit(e Event) {
	if r.opts.Events == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	e.Done, e.Running, e.Resolved, e.Total = r.done, r.running, r.resolved, r.total
	r.opts.Events(e)
}

func (r *runner) stopping() bool {
	if r.opts.Stop == nil {
		return false
	}
	select {
	case <-r.opts.Stop:
		return true
	default:
		return false
	}
}

func (r *runner) runAll(ctx context.Context, pending []*task.Task) error {
	sem := make(chan struct{}, r.opts.Workers)
	var wg sync.WaitGroup
	for _, t := range pending {
		if !r.acquire(ctx, sem) {
			break
		}
		wg.Add(1)
		go func(t *task.Task) {
			defer wg.Done()
			defer func() { <-sem }()
			r.one(ctx, t)
		}(t)
	}
	wg.Wait()
	if r.stopping() {
		r.interrupted = true
	}
	return r.fatalErr()
}

// acquire waits for a free worker; false means start nothing more.
func (r *runner) acquire(ctx context.Context, sem chan struct{}) bool {
	select {
	case sem <- struct{}{}:
	case <-ctx.Done():
		return false
	case <-r.stopC():
		return false
	}
	if ctx.Err() != nil || r.stopping() || r.fatalErr() != nil {
		<-sem
		return false
	}
	return true
}

func (r *runner) stopC() <-chan struct{} {
	if r.opts.Stop == nil {
		return nil
	}
	return r.opts.Stop
}

func (r *runner) fatalErr() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.fatal
}

func (r *runner) setFatal(err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.fatal == nil {
		r.fatal = err
	}
}

// one runs, grades and records one task.
func (r *runner) one(ctx context.Context, t *task.Task) {
	r.mu.Lock()
	r.running++
	r.mu.Unlock()
	r.emit(Event{Kind: EventStart, InstanceID: t.InstanceID})
	start := time.Now()
	rec, err := r.episode(ctx, t)
	r.mu.Lock()
	r.running--
	r.mu.Unlock()
	if err != nil {
		// Interrupted or cancelled: nothing is recorded, the task runs again
		// next time.
		r.emit(Event{Kind: EventAborted, InstanceID: t.InstanceID, Reason: err.Error(), Seconds: time.Since(start).Seconds()})
		return
	}
	rec.Finished = time.Now()
	if err := writeTask(r.opts.TrajDir, rec); err != nil {
		if isDiskFull(err) {
			err = fmt.Errorf("the disk is full writing %s's results under %s: freed space and rerun the same command to resume (%w)", t.InstanceID, r.opts.TrajDir, err)
		} else {
			err = fmt.Errorf("task %s: write results: %w", t.InstanceID, err)
		}
		r.setFatal(err)
		r.emit(Event{Kind: EventAborted, InstanceID: t.InstanceID, Reason: err.Error()})
		return
	}
	r.mu.Lock()
	r.done++
	r.ran++
	if rec.Reward == 1 {
		r.resolved++
	}
	r.mu.Unlock()
	r.emit(Event{Kind: EventDone, InstanceID: t.InstanceID, Reward: rec.Reward, Reason: rec.RewardReason, ExitReason: rec.ExitReason, Steps: rec.Steps(), Seconds: time.Since(start).Seconds()})
}

func isDiskFull(err error) bool {
	return errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT)
}

// episode runs the agent (or takes the gold patch) and grades. Failures of
// the task are a record with reward 0; the error is only for interrupts.
func (r *runner) episode(ctx context.Context, t *task.Task) (*Record, error) {
	o := r.opts
	rec := &Record{
		InstanceID:  t.InstanceID,
		DockerImage: t.Image,
		Repo:        t.Repo,
		ExpName:     o.ExpName,
		Scaffold:    o.Scaffold,
		Mode:        o.Mode.String(),
		Model:       o.ModelName,
		Config:      o.Config,
		Fingerprint: r.fingerprint,
		Started:     time.Now(),
	}
	fail := func(reason agent.ExitReason, err error) *Record {
		rec.ExitReason, rec.Error = string(reason), err.Error()
		rec.Reward, rec.RewardReason = 0, "not graded: "+err.Error()
		return rec
	}
	if o.RunGolden {
		rec.Offline = true
		rec.ExitReason = string(agent.ExitSubmitted)
		rec.Patch = t.Patch
		if t.Patch == "" {
			return fail(agent.ExitSandboxError, fmt.Errorf("task %s: patch: --run_golden needs the gold patch, and the task has none", t.InstanceID)), nil
		}
		if err := r.grade(ctx, t, rec, nil, ""); err != nil {
			return nil, err
		}
		return rec, nil
	}
	s, err := agent.Lookup(o.Scaffold)
	if err != nil {
		return nil, err
	}
	box, workdir, err := o.Open(ctx, t)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return fail(agent.ExitSandboxError, err), nil
	}
	closeBox := func() { box.Close(context.WithoutCancel(ctx)) }
	defer closeBox()
	if o.GradeIn != "same" { // grading in a fresh box: hide the tests here
		if err := grader.HideTests(ctx, box, t, o.Reward, workdir); err != nil {
			return fail(agent.ExitSandboxError, err), nil
		}
	}
	model, err := o.NewModel(s, t, workdir, o.Mode)
	if err != nil {
		return fail(agent.ExitLLMError, err), nil
	}
	rec.Model = model.Name()
	rec.Offline = llm.IsOffline(model)
	traj, err := agent.Run(ctx, agent.Options{
		Scaffold: s, Mode: o.Mode, Model: model, Box: box, Task: t, Workdir: workdir,
		Limits: o.Limits, Sampling: o.Sampling, Stop: o.Stop,
	})
	if err != nil {
		return nil, err
	}
	rec.Trajectory = traj
	rec.ExitReason, rec.ExitDetail = string(traj.ExitReason), traj.ExitDetail
	rec.Patch = traj.Patch
	if traj.ExitReason == agent.ExitSandboxError && traj.Patch == "" {
		rec.Reward, rec.RewardReason = 0, "not graded: the sandbox failed: "+traj.ExitDetail
		return rec, nil
	}
	if o.GradeIn == "same" {
		err = r.grade(ctx, t, rec, box, workdir)
	} else {
		closeBox() // free the agent's box before grading starts another
		err = r.grade(ctx, t, rec, nil, "")
	}
	if err != nil {
		return nil, err
	}
	return rec, nil
}

// grade grades rec.Patch in a fresh box (box nil) or in the given one,
// where the patch is already in the tree.
func (r *runner) grade(ctx context.Context, t *task.Task, rec *Record, box sandbox.Sandbox, workdir string) error {
	start := time.Now()
	defer func() { rec.RewardCalcTime = time.Since(start).Seconds() }()
	patch := rec.Patch
	if box == nil {
		b, wd, err := r.opts.Open(ctx, t)
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			rec.Reward, rec.RewardReason, rec.Error = 0, "not graded: "+err.Error(), err.Error()
			return nil
		}
		defer b.Close(context.WithoutCancel(ctx))
		box, workdir = b, wd
	} else {
		patch = "" // already applied in the agent's box
	}
	out, err := grader.Grade(ctx, box, t, grader.Options{Force: r.opts.Reward, Patch: patch, EvalTimeout: r.opts.EvalTimeout, Workdir: workdir})
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		rec.Reward, rec.RewardReason, rec.Error = 0, "not graded: "+err.Error(), err.Error()
		return nil
	}
	rec.Reward, rec.RewardReason, rec.Grader, rec.Report = out.Reward, out.Reason, string(out.Grader), out.Report
	rec.TestOutput, rec.TestTimeout = out.Log, out.TimedOut
	return nil
}

// fingerprint names the settings that make two runs' results comparable.
func fingerprint(o Options) string {
	b, _ := json.Marshal(map[string]any{
		"scaffold": o.Scaffold, "mode": o.Mode.String(), "model": o.ModelName, "golden": o.RunGolden,
		"limits": o.Limits, "sampling": o.Sampling, "reward": o.Reward, "grade_in": o.GradeIn,
	})
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:8])
}

// TaskDir is where a task's files go.
func TaskDir(trajDir, id string) string {
	return filepath.Join(trajDir, fsutil.SafeName(id))
}

// LoadRecords reads every task record under dir, by instance id. Broken
// records (a crash mid-write leaves only temporary files, so these come
// from elsewhere) are reported.
func LoadRecords(dir string) (map[string]*Record, error) {
	out := map[string]*Record{}
	matches, err := filepath.Glob(filepath.Join(dir, "*", "result.json"))
	if err != nil {
		return nil, err
	}
	sort.Strings(matches)
	for _, m := range matches {
		data, err := os.ReadFile(m)
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", m, err)
		}
		rec := new(Record)
		if err := json.Unmarshal(data, rec); err != nil {
			return nil, fmt.Errorf("%s: not a swerve task record (%v); move it away to rerun that task", m, err)
		}
		out[rec.InstanceID] = rec
	}
	return out, nil
}
