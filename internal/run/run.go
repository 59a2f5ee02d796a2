// Package run is swerve's Stage 2: run an agent scaffold on many tasks in
// parallel, grade each patch in a fresh box, and write the files the
// SWE-Factory / R2E-Gym runners write, resumably.
//
// # Layout under TrajDir
//
//	<exp_name>.jsonl                          one upstream Trajectory row per graded task
//	trajectories.jsonl                        messages only (or {"messages","tools"})
//	trajectories_rejection_sampling.jsonl     the same, reward 1 only
//	reward_summary.json                       counts, ids, accuracy, turns, tokens; errors apart
//	preds.json                                SWE-bench predictions of the graded tasks
//	<instance_id>/agent.log, output_patch.diff, test_output.log, metadata.json
//	<instance_id>/result.json                 the task's record: the journal
//	.swerve-aggregates.json                   what swerve wrote of the files above
//
// The run-level files are R2E-Gym's and SWE-Factory's (see Line, Metadata,
// RewardSummary); swerve never rewrites one it did not write (see
// CheckAggregates).
//
// A task is finished exactly when its result.json exists: it is written
// last, to a temporary name, and renamed. A rerun with the same arguments
// skips finished tasks and runs the rest; the aggregate files are rebuilt
// from the records, so none is lost or counted twice whatever killed the
// previous run.
//
// # Errors are not rewards
//
// A task that failed for a reason outside the model (a box that would not
// open, a missing image, the engine, the model's provider, a grader that
// could not grade, a full disk; see Classify) gets a record with status
// "error", its ErrorKind and the error, and no reward: it is left out of
// accuracy, <exp_name>.jsonl, both trajectory files and preds.json, and
// counted apart in reward_summary.json. The next run with the same
// arguments runs it again, up to Options.MaxAttempts attempts counted
// across runs; then it is given up and stays an error. A task whose episode
// finished but whose grading failed keeps its trajectory, and its retry
// grades the same patch again without rerunning the model. A full disk or
// an engine that cannot be reached stops the run (nothing new starts), as
// every other task would fail alike. Failures of the model (format errors,
// limits, a context overflow, a patch that does not apply, failing tests)
// stay reward 0 with their reason.
package run

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/swerve-dev/swerve/internal/agent"
	"github.com/swerve-dev/swerve/internal/agent/signals"
	"github.com/swerve-dev/swerve/internal/episode"
	"github.com/swerve-dev/swerve/internal/fsutil"
	"github.com/swerve-dev/swerve/internal/llm"
	"github.com/swerve-dev/swerve/internal/reward/history"
	"github.com/swerve-dev/swerve/internal/sandbox"
	"github.com/swerve-dev/swerve/internal/stop"
	"github.com/swerve-dev/swerve/internal/task"
)

// Opener opens a box for a task and says where its repository is.
type Opener = episode.Opener

// ModelFactory builds the model for one task.
type ModelFactory = episode.ModelFactory

// Options configure a run.
type Options struct {
	Tasks   []task.Task
	TrajDir string
	ExpName string
	Workers int

	Scaffold string
	// Override, when set, changes the scaffold of every episode
	// (--args_path); OverrideHash names its content in the settings a
	// rerun must match.
	Override     *agent.Override
	OverrideHash string
	Mode         agent.Mode
	ModelName    string
	NewModel     ModelFactory
	Open         Opener
	// AgentOpen opens the agents' boxes when set (Open then opens the
	// grading boxes only).
	AgentOpen Opener
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
	// MaxAttempts bounds the attempts at a task that keeps ending in an
	// infrastructure error, counted across runs (default
	// DefaultMaxAttempts); a task at the bound is given up.
	MaxAttempts int
	// MaxConsecutiveErrors stops the run when this many tasks in a row
	// (in the order they end) end in an infrastructure error of the same
	// kind — an engine or a model endpoint gone — so that the rest do not
	// spend their attempts on it; 0: no limit. A graded task, whatever
	// its reward, breaks the row.
	MaxConsecutiveErrors int
	// MaxIterations runs a task's episode up to this many times, each in a
	// fresh box, until the model submits (upstream's --max_iterations): at
	// temperature 0 the retries sample at 0.1, then 0.2 (capped there);
	// any other temperature stays. When no episode submits, the one with
	// the fewest steps is graded. 0 or 1: one episode.
	MaxIterations int
	// Box names the settings of the boxes that change a result (backend,
	// network, image, limits), flag name to value; they enter the
	// fingerprint with the rest.
	Box map[string]string
	// Config is recorded with every trajectory.
	Config map[string]any
	// Events, if set, is told about progress (from several goroutines,
	// one call at a time).
	Events func(Event)
	// Stop, when closed, starts a graceful shutdown: nothing new starts,
	// running episodes end after their current step and are not recorded.
	Stop <-chan struct{}
	// Upcoming, if set, is told once, before the first task starts, the
	// tasks this run will run (finished ones left out), in the order they
	// start; the function it returns is called as each of them ends. A warm
	// pool opens their boxes ahead with it, and closes those not used.
	Upcoming func(pending []*task.Task) (ended func(*task.Task))
}

// DefaultMaxAttempts is Options.MaxAttempts' default.
const DefaultMaxAttempts = 3

// Event kinds.
const (
	EventStart   = "start"   // a task began
	EventDone    = "done"    // a task finished and was recorded with its reward
	EventError   = "error"   // a task failed outside the model and was recorded as an error
	EventSkipped = "skipped" // a task was finished in an earlier run, or given up there
	EventAborted = "aborted" // a task was interrupted and will run again next time
)

// Event is one progress report.
type Event struct {
	Kind       string  `json:"event"`
	InstanceID string  `json:"instance_id"`
	Reward     float64 `json:"reward"`
	Reason     string  `json:"reason,omitempty"`
	// ExitReason is in upstream's names, SwerveExitReason in swerve's.
	ExitReason       string  `json:"exit_reason,omitempty"`
	SwerveExitReason string  `json:"swerve_exit_reason,omitempty"`
	Steps            int     `json:"steps"`
	Seconds          float64 `json:"seconds"`
	// For errors (and skipped errors): the kind, the attempts made so far
	// and whether the task is given up (it will not run again).
	ErrorKind ErrorKind `json:"error_kind,omitempty"`
	Attempts  int       `json:"attempts,omitempty"`
	GivenUp   bool      `json:"given_up,omitempty"`
	// Counters after this event.
	Done     int `json:"done"`
	Running  int `json:"running"`
	Resolved int `json:"resolved"`
	Errors   int `json:"errors"`
	Total    int `json:"total"`
}

// Record statuses.
const (
	StatusGraded = "graded" // the task has its reward
	StatusError  = "error"  // the task failed outside the model: no reward
)

// Error stages: where in a task an error struck.
const (
	StageAgent = episode.StageAgent // opening the agent's box, or the episode
	StageGrade = episode.StageGrade // grading, after a whole episode
)

// Record is one finished task: result.json, and the source of every
// aggregate file.
type Record struct {
	InstanceID  string `json:"instance_id"`
	DockerImage string `json:"docker_image"`
	Repo        string `json:"repo"`
	// ProblemStatement is the task's issue text, as the dataset has it.
	ProblemStatement string `json:"problem_statement,omitempty"`
	ExpName          string `json:"exp_name"`
	Scaffold         string `json:"scaffold"`
	Mode             string `json:"mode"`
	Model            string `json:"model"`
	// Offline is set for replay/..., oracle/gold and --run_golden runs.
	Offline bool `json:"offline,omitempty"`

	Standing

	// Reward is 0 for status error, and counts nowhere.
	Reward       float64         `json:"reward"`
	RewardReason string          `json:"reward_reason"`
	Grader       string          `json:"grader,omitempty"`
	Report       json.RawMessage `json:"report,omitempty"`
	// Tampered lists the tamper defences' findings (the reward is then 0
	// and RewardReason says "tampered: ..."); see package tamper.
	Tampered       []string `json:"tampered,omitempty"`
	RewardCalcTime float64  `json:"reward_calc_time"`
	// History is the proof that the agent's box held nothing past the
	// base commit (package history).
	History     *history.Proof `json:"history,omitempty"`
	TestTimeout bool           `json:"test_timeout"`
	// Signals counts the trajectory's audit flags by kind (package
	// signals; each step lists its own); recorded whatever the outcome.
	Signals map[string]int `json:"signals,omitempty"`

	// ExitReason is why the episode ended, in swerve's closed set
	// (agent.ExitReasons); UpstreamExitReason the same in upstream's names
	// (agent.UpstreamExitReason), set when the record is written.
	ExitReason         string `json:"swerve_exit_reason"`
	UpstreamExitReason string `json:"exit_reason"`
	ExitDetail         string `json:"exit_detail,omitempty"`

	Patch      string            `json:"output_patch"`
	Trajectory *agent.Trajectory `json:"trajectory,omitempty"`
	TestOutput string            `json:"-"`

	// DS is the task's dataset row (see dsOf).
	DS          json.RawMessage `json:"ds,omitempty"`
	Config      map[string]any  `json:"config,omitempty"`
	Fingerprint string          `json:"fingerprint"`
	// Settings and TaskHash are what Fingerprint hashes: the settings that
	// change a result, by flag name, and the task's content. Records of
	// older versions have neither.
	Settings map[string]string `json:"settings,omitempty"`
	TaskHash string            `json:"task_hash,omitempty"`
	Started  time.Time         `json:"started"`
	Finished time.Time         `json:"finished"`

	// cause is the error behind Error, in the run that met it.
	cause error
}

// Failed reports whether the record is an error, not a reward.
func (r *Record) Failed() bool { return r.Status == StatusError }

// Standing is where a task stands after its attempts: graded, or an error
// outside the model. Records and metadata.json carry it alike.
type Standing struct {
	// Status is StatusGraded or StatusError; records of older versions
	// have none and are graded.
	Status string `json:"status"`
	// Attempts counts the recorded attempts at the task, across runs.
	Attempts int `json:"attempts"`
	// ErrorKind, ErrorStage and Error say what failed, for status error.
	ErrorKind  ErrorKind `json:"error_kind,omitempty"`
	ErrorStage string    `json:"error_stage,omitempty"`
	Error      string    `json:"error,omitempty"`
	// GivenUp is set on an error record at the attempt bound of the run that
	// wrote it: the task does not run again.
	GivenUp bool `json:"given_up,omitempty"`
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
	Recorded    int // tasks with a record, from this run or before: graded or error
	Ran         int // tasks recorded by this run
	Skipped     int // tasks finished, or given up, before this run
	Retried     int // tasks recorded by this run that had ended in an error before
	Resolved    int
	Errors      int // tasks whose record is an error (no reward)
	GivenUp     int // of those, the ones at the attempt bound: they do not run again
	Interrupted bool
	Wall        time.Duration
	File        *RewardSummary
}

// ErrInterrupted is returned when Stop ended the run early.
var ErrInterrupted = errors.New("run interrupted")

// ErrStopped is wrapped by the error of a run that stopped on an
// infrastructure failure every task would meet (a full disk, an engine
// that cannot be reached, Options.MaxConsecutiveErrors errors in a row):
// what finished is kept, and the same command resumes.
var ErrStopped = errors.New("run stopped")

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
	if opts.MaxAttempts <= 0 {
		opts.MaxAttempts = DefaultMaxAttempts
	}
	if opts.MaxIterations <= 0 {
		opts.MaxIterations = 1
	}
	if err := os.MkdirAll(opts.TrajDir, 0o755); err != nil {
		return nil, fmt.Errorf("--traj_dir: %w", err)
	}
	unlock, err := lockDir(opts.TrajDir)
	if err != nil {
		return nil, err
	}
	defer unlock()
	if err := CheckAggregates(opts.TrajDir, opts.ExpName); err != nil {
		return nil, err
	}
	r := &runner{opts: opts, start: time.Now(), settings: Settings(opts), legacy: legacyFingerprint(opts)}
	existing, err := LoadRecords(opts.TrajDir)
	if err != nil {
		return nil, err
	}
	var (
		pending []*task.Task
		skipped []*Record
	)
	r.prev = map[string]*Record{}
	sum := &Summary{TrajDir: opts.TrajDir, Total: len(opts.Tasks)}
	for i := range opts.Tasks {
		t := &opts.Tasks[i]
		rec, ok := existing[t.InstanceID]
		if !ok {
			pending = append(pending, t)
			continue
		}
		if !opts.SkipIfExists {
			if err := r.sameSettings(rec, t); err != nil {
				return nil, err
			}
		}
		if rec.Failed() {
			if attempts(rec) < opts.MaxAttempts {
				// An error is not a result: the task runs again.
				r.prev[t.InstanceID] = rec
				pending = append(pending, t)
				continue
			}
			if !rec.GivenUp {
				// A lower bound than the last run's: say so in its files. An
				// error record has no test output to lose.
				rec.GivenUp = true
				if err := writeTask(opts.TrajDir, rec); err != nil {
					return nil, fmt.Errorf("task %s: write results: %w", t.InstanceID, err)
				}
			}
		}
		sum.Skipped++
		switch {
		case rec.Failed():
			r.errors++
		case rec.Reward == 1:
			r.resolved++
		}
		r.done++
		skipped = append(skipped, rec)
	}
	r.total = len(opts.Tasks)
	for _, rec := range skipped {
		e := Event{Kind: EventSkipped, InstanceID: rec.InstanceID, Reward: rec.Reward}
		if rec.Failed() {
			e.Reason, e.ErrorKind, e.Attempts, e.GivenUp = rec.Error, rec.ErrorKind, attempts(rec), true
		}
		r.emit(e)
	}

	runErr := r.runAll(ctx, pending)
	sum.Ran, sum.Retried = r.ran, r.retried
	sum.Interrupted = r.interrupted || ctx.Err() != nil
	// The aggregates are rebuilt from the records whatever happened.
	file, werr := WriteAggregates(opts.TrajDir, opts.ExpName)
	sum.File = file
	if file != nil {
		sum.Recorded = file.Total + file.Errors
		sum.Resolved = file.Reward1.Count
		sum.Errors, sum.GivenUp = file.Errors, file.GivenUp.Count
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
	opts  Options
	start time.Time
	// settings are this run's settings (see Settings); legacy is the
	// fingerprint an older swerve gave them.
	settings map[string]string
	legacy   string
	// prev holds the error records of the tasks that run again; read-only
	// once the tasks start.
	prev map[string]*Record

	mu          sync.Mutex
	done        int
	running     int
	resolved    int
	errors      int
	total       int
	ran         int
	retried     int
	interrupted bool
	fatal       error
	// streak counts the tasks in a row that ended in an error of kind
	// streakKind.
	streak     int
	streakKind ErrorKind
}

// attempts is the number of attempts a record counts (0 for none; records
// of older versions count one).
func attempts(rec *Record) int {
	if rec == nil {
		return 0
	}
	return max(rec.Attempts, 1)
}

func (r *runner) emit(e Event) {
	if r.opts.Events == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	e.Done, e.Running, e.Resolved, e.Errors, e.Total = r.done, r.running, r.resolved, r.errors, r.total
	r.opts.Events(e)
}

func (r *runner) stopping() bool { return stop.Chan(r.opts.Stop).Requested() }

func (r *runner) runAll(ctx context.Context, pending []*task.Task) error {
	ended := func(*task.Task) {}
	if r.opts.Upcoming != nil && len(pending) > 0 {
		if f := r.opts.Upcoming(pending); f != nil {
			ended = f
		}
	}
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
			defer ended(t)
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
	case <-stop.Chan(r.opts.Stop).Done():
		return false
	}
	if ctx.Err() != nil || r.stopping() || r.fatalErr() != nil {
		<-sem
		return false
	}
	return true
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
	if err == nil && rec.Failed() && ctx.Err() != nil {
		// The run was cancelled while the task was under way: whatever
		// failed (a box being prepared, a command cut off) failed because
		// of it, so it is not the task's error to record or to count as
		// an attempt.
		err = fmt.Errorf("%w: %s", ErrInterrupted, rec.Error)
	}
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
	prev := r.prev[t.InstanceID]
	rec.Attempts = attempts(prev) + 1
	rec.GivenUp = rec.Failed() && rec.Attempts >= r.opts.MaxAttempts
	if err := writeTask(r.opts.TrajDir, rec); err != nil {
		if episode.IsDiskFull(err) {
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
	if prev != nil {
		r.retried++
	}
	streakErr := r.countStreak(rec)
	switch {
	case rec.Failed():
		r.errors++
	case rec.Reward == 1:
		r.resolved++
	}
	r.mu.Unlock()
	e := Event{Kind: EventDone, InstanceID: t.InstanceID, Reward: rec.Reward, Reason: rec.RewardReason, ExitReason: rec.UpstreamExitReason, SwerveExitReason: rec.ExitReason, Steps: rec.Steps(), Seconds: time.Since(start).Seconds()}
	if rec.Failed() {
		e.Kind, e.Reason, e.ErrorKind, e.Attempts, e.GivenUp = EventError, rec.Error, rec.ErrorKind, rec.Attempts, rec.GivenUp
	}
	r.emit(e)
	if err := runWide(rec); err != nil {
		r.setFatal(err)
	} else if streakErr != nil {
		r.setFatal(streakErr)
	}
}

// countStreak counts rec into the row of errors of one kind (r.mu held),
// and returns the error that stops the run when the row reaches
// MaxConsecutiveErrors. A graded record ends the row: a reward of 0 is
// the model's and never counts.
func (r *runner) countStreak(rec *Record) error {
	if !rec.Failed() {
		r.streak, r.streakKind = 0, ""
		return nil
	}
	if rec.ErrorKind != r.streakKind {
		r.streak, r.streakKind = 0, rec.ErrorKind
	}
	r.streak++
	if n := r.opts.MaxConsecutiveErrors; n > 0 && r.streak >= n {
		return fmt.Errorf("%d tasks in a row ended in a %s error (the last, %s: %s): %w; what finished is kept: fix the cause and rerun the same command to resume",
			r.streak, rec.ErrorKind, rec.InstanceID, rec.Error, ErrStopped)
	}
	return nil
}

// runWide returns the error that stops the run when rec's failure is one
// every other task would meet too — a full disk, an engine that cannot be
// reached — so that they do not spend their attempts on it; nil otherwise.
func runWide(rec *Record) error {
	if !rec.Failed() {
		return nil
	}
	switch {
	case rec.ErrorKind == KindDisk:
		return fmt.Errorf("task %s: a disk is full (%s): %w: free space and rerun the same command to resume", rec.InstanceID, rec.Error, ErrStopped)
	case rec.ErrorKind == KindEngine && errors.Is(rec.cause, sandbox.ErrUnavailable):
		return fmt.Errorf("task %s: the container engine cannot be reached (%s): %w: start it and rerun the same command to resume", rec.InstanceID, rec.Error, ErrStopped)
	}
	return nil
}

// episode runs the agent (or takes the gold patch) and grades, through
// package episode. Failures of the model are a record with reward 0,
// failures outside it an error record (see Classify); the error is only for
// interrupts.
func (r *runner) episode(ctx context.Context, t *task.Task) (*Record, error) {
	o := r.opts
	rec := &Record{
		InstanceID:       t.InstanceID,
		DockerImage:      t.Image,
		Repo:             t.Repo,
		ProblemStatement: t.ProblemStatement,
		DS:               dsOf(t),
		ExpName:          o.ExpName,
		Scaffold:         o.Scaffold,
		Mode:             o.Mode.String(),
		Model:            o.ModelName,
		Config:           o.Config,
		Settings:         r.settings,
		TaskHash:         taskHash(t),
		Standing:         Standing{Status: StatusGraded},
		Started:          time.Now(),
	}
	rec.Fingerprint = fingerprint(rec.Settings, rec.TaskHash)
	g := episode.GradeOptions{Open: o.Open, In: o.GradeIn, Reward: o.Reward, EvalTimeout: o.EvalTimeout}
	if prev := r.prev[t.InstanceID]; !o.RunGolden && prev != nil && prev.ErrorStage == StageGrade && prev.Trajectory != nil &&
		r.sameRunSettings(prev) && o.GradeIn == "fresh" {
		// The episode was whole and only its grading failed: grade the same
		// patch again rather than run the model again.
		rec.Model, rec.Offline, rec.Trajectory = prev.Model, prev.Offline, prev.Trajectory
		rec.ExitReason, rec.ExitDetail, rec.Patch = prev.ExitReason, prev.ExitDetail, prev.Patch
		res, err := episode.Grade(ctx, t, rec.Patch, g)
		if err != nil {
			return nil, err
		}
		rec.setGrade(res)
		return rec, nil
	}
	spec := episode.Spec{
		Task: t, Mode: o.Mode, NewModel: o.NewModel, Open: o.Open, Limits: o.Limits, Sampling: o.Sampling,
		Iterations: o.MaxIterations, Gold: o.RunGolden, Grade: g, Stop: o.Stop,
	}
	if o.AgentOpen != nil {
		spec.Open = o.AgentOpen
	}
	if !o.RunGolden {
		s, err := agent.Lookup(o.Scaffold)
		if err != nil {
			return nil, err
		}
		if o.Override != nil {
			if err := o.Override.Apply(s); err != nil {
				return nil, fmt.Errorf("--args_path: %w", err)
			}
		}
		spec.Scaffold = s
	}
	res, err := episode.Run(ctx, spec)
	if err != nil {
		if errors.Is(err, episode.ErrStopped) {
			err = ErrInterrupted
		}
		return nil, err
	}
	if res.Model != "" {
		rec.Model = res.Model
	}
	rec.Offline = res.Offline
	rec.Trajectory = res.Trajectory
	rec.Signals = signals.Counts(res.Trajectory.Signals())
	rec.History = res.History
	rec.ExitReason, rec.ExitDetail, rec.Patch = string(res.ExitReason), res.ExitDetail, res.Patch
	rec.setGrade(res)
	return rec, nil
}

// setGrade copies res's grading, or its failure, onto rec.
func (rec *Record) setGrade(res *episode.Result) {
	rec.RewardCalcTime = res.Timings.Grade.Seconds()
	rec.Reward, rec.RewardReason, rec.Grader, rec.Report, rec.Tampered = res.Reward, res.RewardReason, res.Grader, res.Report, res.Tampered
	rec.TestOutput, rec.TestTimeout = res.TestOutput, res.TestTimeout
	if f := res.Failure; f != nil {
		rec.Status, rec.ErrorStage, rec.ErrorKind, rec.Error, rec.cause = StatusError, f.Stage, f.Kind, f.Err.Error(), f.Err
	}
}

// IterationTemperatures are the sampling temperatures of upstream's
// iterative protocol (see episode.IterationTemperatures).
func IterationTemperatures(temp *float64, iterations int) []float64 {
	return episode.IterationTemperatures(temp, iterations)
}

// Settings are the settings that change a task's result, by flag name:
// the scaffold, its mode, the model, every limit and sampling setting, the
// grader, the eval timeout, the iterations and the boxes' settings
// (Options.Box). A rerun on a --traj_dir is checked against the settings
// its records were made with.
func Settings(o Options) map[string]string {
	l, sm := o.Limits, o.Sampling
	ptr := func(p *float64) string {
		if p == nil {
			return ""
		}
		return strconv.FormatFloat(*p, 'g', -1, 64)
	}
	m := map[string]string{
		"scaffold":           o.Scaffold,
		"use_fn_calling":     strconv.FormatBool(o.Mode == agent.ModeFn),
		"llm_name":           o.ModelName,
		"run_golden":         strconv.FormatBool(o.RunGolden),
		"max_steps":          strconv.Itoa(l.MaxSteps),
		"max_steps_absolute": strconv.Itoa(l.MaxStepsAbsolute),
		"max_token_limit":    strconv.Itoa(l.MaxTokens),
		"wall_time":          l.WallTime.String(),
		"cost_limit":         strconv.FormatFloat(l.CostLimit, 'g', -1, 64),
		"collapse_limit":     strconv.Itoa(l.CollapseLimit),
		"max_format_errors":  strconv.Itoa(l.MaxFormatErrors),
		"step_timeout":       l.StepTimeout.String(),
		"temperature":        ptr(sm.Temperature),
		"top_p":              ptr(sm.TopP),
		"max_output_tokens":  strconv.Itoa(sm.MaxTokens),
		"reward":             o.Reward,
		"grade_in":           o.GradeIn,
		"eval_timeout":       o.EvalTimeout.String(),
		"max_iterations":     strconv.Itoa(max(o.MaxIterations, 1)),
	}
	for k, v := range o.Box {
		m[k] = v
	}
	if o.OverrideHash != "" {
		m["args_path"] = o.OverrideHash // the file's content, not its name
	}
	return m
}

// fingerprint hashes a task's settings and content: two records with the
// same fingerprint are results of the same experiment.
func fingerprint(settings map[string]string, taskHash string) string {
	b, _ := json.Marshal(settings) // map keys sorted
	h := sha256.New()
	h.Write(b)
	h.Write([]byte{0})
	h.Write([]byte(taskHash))
	return hex.EncodeToString(h.Sum(nil)[:8])
}

// taskHash hashes the task as loaded: a dataset whose row changed (another
// image, tests, patch or statement) makes its old result another
// experiment's. Where the dataset lies on the host (source_dir, task_dir),
// the --split label and the raw row are left out: moving a dataset, or
// loading it another way, keeps its results.
func taskHash(t *task.Task) string {
	c := *t
	c.SourceDir, c.TaskDir, c.Split, c.Raw = "", "", "", nil
	b, _ := json.Marshal(&c)
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:8])
}

// sameSettings refuses a rerun whose settings, or task, differ from those
// rec was made with, naming what changed. Records of older versions carry
// only a fingerprint of fewer settings: they resume when that matches.
func (r *runner) sameSettings(rec *Record, t *task.Task) error {
	fresh := "rerun with the same settings, use another --traj_dir or --exp_name to start fresh, or pass --skip_if_exists to keep those results"
	if rec.Settings == nil {
		if rec.Fingerprint == r.legacy {
			return nil
		}
		return fmt.Errorf("task %s: %s holds a result an older swerve made with other settings (model %s, scaffold %s); %s", t.InstanceID, r.opts.TrajDir, rec.Model, rec.Scaffold, fresh)
	}
	keys := make([]string, 0, len(r.settings)+len(rec.Settings))
	for k := range r.settings {
		keys = append(keys, k)
	}
	for k := range rec.Settings {
		if _, ok := r.settings[k]; !ok {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	for _, k := range keys {
		was, now := rec.Settings[k], r.settings[k]
		if was != now {
			return fmt.Errorf("task %s: %s holds a result made with --%s %s, this run has --%s %s; %s", t.InstanceID, r.opts.TrajDir, k, orNone(was), k, orNone(now), fresh)
		}
	}
	// An error record runs again anyway, on the task as it is now: fixing
	// the dataset's row is how such an error is mended.
	if h := taskHash(t); rec.TaskHash != h && !rec.Failed() {
		return fmt.Errorf("task %s: %s holds a result of another version of this task (the dataset's row changed since); %s", t.InstanceID, r.opts.TrajDir, fresh)
	}
	return nil
}

// sameRunSettings says whether rec was made with this run's settings,
// whatever its task's version.
func (r *runner) sameRunSettings(rec *Record) bool {
	if rec.Settings == nil {
		return rec.Fingerprint == r.legacy
	}
	return maps.Equal(rec.Settings, r.settings)
}

func orNone(v string) string {
	if v == "" {
		return `""`
	}
	return v
}

// legacyFingerprint is the fingerprint swerve gave its records before they
// carried their settings; such a record resumes when it matches.
func legacyFingerprint(o Options) string {
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

// upgrade reads a record of an older swerve, which had no status and gave
// failures outside the model reward 0 with their error: those are errors
// now (of the box, or of the model's provider), and run again.
//
// Records written before exit_reason took upstream's names kept swerve's
// reason there; their steps counted from 1.
func upgrade(rec *Record) {
	if rec.ExitReason == "" {
		rec.ExitReason = rec.UpstreamExitReason
	}
	if rec.Trajectory != nil {
		rec.Trajectory.Upgrade()
	}
	rec.UpstreamExitReason = upstreamExit(rec)
	if rec.Status != "" {
		return
	}
	rec.Status = StatusGraded
	if rec.Error == "" {
		return
	}
	rec.Status, rec.ErrorStage, rec.ErrorKind = StatusError, StageAgent, KindBox
	if rec.ExitReason == string(agent.ExitLLMError) {
		rec.ErrorKind = KindLLM
	}
	if rec.Trajectory != nil && rec.ExitReason != string(agent.ExitSandboxError) && rec.ExitReason != string(agent.ExitLLMError) {
		rec.ErrorStage = StageGrade // the episode ended well; its grading failed
	}
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
		upgrade(rec)
		out[rec.InstanceID] = rec
	}
	return out, nil
}
