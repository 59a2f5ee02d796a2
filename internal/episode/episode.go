// Package episode is one task's episode, the same on every surface that
// runs one (swerve run, swerve validate, and the server next): open a box,
// hide the hidden tests in it, run the agent (or take the gold patch), take
// its patch, and grade that patch in a fresh box from the task's image.
//
// The integrity rules live here so that no caller can skip them: the agent
// never sees the tests it is graded by (grader.HideTests), grading happens
// in a box the model never touched unless the caller asks for the agent's
// own (GradeOptions.In "same"), the graders' containment and tamper
// defences run on every grading (grader.Grade), a grader that panics is a
// grader error, and a failure outside the model (see Classify) is a Failure
// with its kind, never a reward.
package episode

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/swerve-dev/swerve/internal/agent"
	"github.com/swerve-dev/swerve/internal/llm"
	"github.com/swerve-dev/swerve/internal/reward/grader"
	"github.com/swerve-dev/swerve/internal/reward/history"
	"github.com/swerve-dev/swerve/internal/reward/tamper"
	"github.com/swerve-dev/swerve/internal/sandbox"
	"github.com/swerve-dev/swerve/internal/stop"
	"github.com/swerve-dev/swerve/internal/task"
)

// Opener opens a box for a task and says where its repository is.
type Opener func(ctx context.Context, t *task.Task) (sandbox.Sandbox, string, error)

// ModelFactory builds the model for one episode once its box is open (the
// oracle and replay models need the box's repository).
type ModelFactory func(s *agent.Scaffold, t *task.Task, workdir string, mode agent.Mode) (llm.Client, error)

// Where grading happens (GradeOptions.In).
const (
	GradeFresh = "fresh" // a new box from the task's image
	GradeSame  = "same"  // the agent's own box, as upstream does
)

// Error stages: where in an episode a failure outside the model struck.
const (
	StageAgent = "agent" // opening the agent's box, or the episode
	StageGrade = "grade" // grading, after a whole episode
)

// GradeOptions say how a patch is graded.
type GradeOptions struct {
	// Open opens the grading box. Run uses Spec.Open when it is nil.
	Open Opener
	// In is GradeFresh (default) or GradeSame.
	In string
	// Reward forces a grader (--reward); empty: the task's.
	Reward string
	// EvalTimeout bounds the tests; zero: the grader's default.
	EvalTimeout time.Duration
	// Tamper is what to do with the tamper defences' findings; empty:
	// tamper.ModeZero (a finding makes the reward 0).
	Tamper tamper.Mode
	// Gold grades the task's own reference solution (its gold patch, or a
	// Harbor task's solve.sh) instead of the patch given to Grade.
	Gold bool
	// Baseline keeps whether the task's reference run dies in its box,
	// for grades whose box died under the patch (see grader.Settle); nil:
	// grader.DefaultBaseline.
	Baseline *grader.Baseline
}

// Spec is one episode to run.
type Spec struct {
	Task     *task.Task
	Scaffold *agent.Scaffold
	Mode     agent.Mode
	// NewModel builds each iteration's model in its box; when nil, Model
	// serves every iteration.
	NewModel ModelFactory
	Model    llm.Client
	// Open opens the agent's boxes (one per iteration).
	Open     Opener
	Limits   agent.Limits
	Sampling agent.Sampling
	// Iterations runs the episode up to this many times, each in a fresh
	// box, until the model submits (upstream's --max_iterations; see
	// IterationTemperatures). 0 or 1: one episode.
	Iterations int
	// Gold grades the task's gold patch instead of running a model
	// (--run_golden).
	Gold  bool
	Grade GradeOptions
	// Stop, when closed, ends the episode after its current step; between
	// iterations it ends the episode with ErrStopped.
	Stop <-chan struct{}
}

// Failure is a failure outside the model: no reward, its kind and where it
// struck.
type Failure struct {
	Kind  ErrorKind
	Stage string
	Err   error
}

func (f *Failure) Error() string { return fmt.Sprintf("%s error: %v", f.Kind, f.Err) }
func (f *Failure) Unwrap() error { return f.Err }

// Timings are where an episode's time went.
type Timings struct {
	// Grade is the grading's time, opening its box included.
	Grade time.Duration
}

// Result is an episode's outcome. Failed says whether it is a reward or a
// failure outside the model.
type Result struct {
	// Model names the model that ran the graded episode, and Offline says
	// it was a replay or oracle; empty when no model ran.
	Model   string
	Offline bool

	Trajectory *agent.Trajectory
	// ExitReason is why the episode ended (for Gold: submitted).
	ExitReason agent.ExitReason
	ExitDetail string
	Patch      string

	// Reward is 0 for a failure, and counts nowhere. Resolved is the
	// grader's verdict (false when a tamper finding zeroed the reward).
	Reward       float64
	Resolved     bool
	RewardReason string
	Grader       string
	Report       json.RawMessage
	// Tampered lists the tamper defences' findings.
	Tampered []string
	// History is the proof that the agent's box held nothing past the
	// base commit (see package history); nil when no agent ran.
	History     *history.Proof
	TestOutput  string
	TestTimeout bool

	// Failure is set when the episode failed outside the model.
	Failure *Failure
	Timings Timings
}

// Failed reports whether the result is a failure outside the model.
func (r *Result) Failed() bool { return r.Failure != nil }

// fail makes r a failure: no reward, the kind and the error.
func (r *Result) fail(stage string, kind ErrorKind, err error) {
	r.Failure = &Failure{Kind: kind, Stage: stage, Err: err}
	r.Reward, r.RewardReason = 0, fmt.Sprintf("not graded: %s error: %s", kind, err.Error())
	r.Grader, r.Report, r.TestOutput, r.TestTimeout = "", nil, "", false
}

// ErrStopped is returned when Spec.Stop ended an episode between its
// iterations; nothing of it is kept.
var ErrStopped = errors.New("episode stopped")

// Run runs the episode and grades it. Failures of the model are a result
// with reward 0 and its reason, failures outside it a result with Failure
// set; the error is only for a cancelled ctx or ErrStopped.
func Run(ctx context.Context, s Spec) (*Result, error) {
	t := s.Task
	g := s.Grade
	if g.Open == nil {
		g.Open = s.Open
	}
	if g.Open == nil {
		return nil, fmt.Errorf("task %s: episode: no opener for its boxes", t.InstanceID)
	}
	if g.In == "" {
		g.In = GradeFresh
	}
	if g.In != GradeFresh && g.In != GradeSame {
		return nil, fmt.Errorf("task %s: grade_in: want fresh or same, got %q", t.InstanceID, g.In)
	}
	res := &Result{}
	if s.Gold {
		res.Offline, res.ExitReason, res.Patch = true, agent.ExitSubmitted, t.Patch
		if t.Patch == "" {
			res.ExitReason = agent.ExitSandboxError
			res.fail(StageAgent, KindTask, fmt.Errorf("task %s: patch: --run_golden needs the gold patch, and the task has none", t.InstanceID))
			return res, nil
		}
		g.In = GradeFresh
		return done(res, grade(ctx, t, res, g, nil, ""))
	}
	a, err := iterate(ctx, s, g, res)
	if err != nil {
		return nil, err
	}
	if a == nil { // a failure outside the model, set on res
		return res, nil
	}
	box, workdir, traj := a.box, a.workdir, a.traj
	closeBox := func() { box.Close(context.WithoutCancel(ctx)) }
	defer closeBox()
	res.keep(a)
	if traj.ExitReason == agent.ExitSandboxError && traj.Patch == "" {
		res.Reward, res.RewardReason = 0, "not graded: the sandbox failed: "+traj.ExitDetail
		return res, nil
	}
	if g.In == GradeSame {
		return done(res, grade(ctx, t, res, g, box, workdir))
	}
	closeBox() // free the agent's box before grading starts another
	return done(res, grade(ctx, t, res, g, nil, ""))
}

// done is res, or nothing with err.
func done(res *Result, err error) (*Result, error) {
	if err != nil {
		return nil, err
	}
	return res, nil
}

// Grade grades patch (or, with g.Gold, the task's reference solution) in a
// fresh box opened by g.Open: the grading half of Run, for a patch made
// elsewhere. The error is only for a cancelled ctx.
func Grade(ctx context.Context, t *task.Task, patch string, g GradeOptions) (*Result, error) {
	if g.Open == nil {
		return nil, fmt.Errorf("task %s: grade: no opener for the grading box", t.InstanceID)
	}
	res := &Result{Patch: patch}
	return done(res, grade(ctx, t, res, g, nil, ""))
}

// keep records a's episode on res.
func (r *Result) keep(a *attempt) {
	r.Model, r.Offline = a.model.Name(), llm.IsOffline(a.model)
	r.Trajectory = a.traj
	r.ExitReason, r.ExitDetail, r.Patch = a.traj.ExitReason, a.traj.ExitDetail, a.traj.Patch
	r.History = a.history
}

// attempt is one episode and the box it ran in.
type attempt struct {
	box     sandbox.Sandbox
	workdir string
	model   llm.Client
	traj    *agent.Trajectory
	history *history.Proof
}

// iterate runs the task's episode up to s.Iterations times, each in a
// fresh box, and returns the one to grade (its box open): the first that
// submits, else the one with the fewest steps (the earliest of equals), as
// upstream's iterative protocol does. A failure outside the model is set on
// res and a nil attempt returned; the error is only for interrupts.
func iterate(ctx context.Context, s Spec, g GradeOptions, res *Result) (*attempt, error) {
	iterations := max(s.Iterations, 1)
	temps := IterationTemperatures(s.Sampling.Temperature, iterations)
	var best *attempt
	drop := func(a *attempt) {
		if a != nil {
			a.box.Close(context.WithoutCancel(ctx))
		}
	}
	for i := range iterations {
		if i > 0 && stop.Chan(s.Stop).Requested() {
			// An episode stopped between its iterations is dropped whole.
			drop(best)
			return nil, ErrStopped
		}
		sampling := s.Sampling
		if temps != nil {
			temp := temps[i]
			sampling.Temperature = &temp
		}
		a, err := once(ctx, s, g, res, sampling)
		if err != nil || a == nil {
			drop(best)
			return nil, err
		}
		if kind, infra := EpisodeError(a.traj); infra {
			// The episode was cut short from outside: its patch says nothing
			// about the model. The trajectory is kept.
			drop(best)
			res.keep(a)
			err := a.traj.Err
			if err == nil {
				err = errors.New(a.traj.ExitDetail)
			}
			res.fail(StageAgent, kind, err)
			drop(a)
			return nil, nil
		}
		if a.traj.ExitReason == agent.ExitSubmitted {
			drop(best)
			return a, nil
		}
		if best == nil || len(a.traj.Steps) < len(best.traj.Steps) {
			drop(best)
			best = a
		} else {
			drop(a)
		}
	}
	return best, nil
}

// once opens a box and runs one episode in it. A failure outside the model
// is set on res and a nil attempt returned; the error is only for
// interrupts.
func once(ctx context.Context, s Spec, g GradeOptions, res *Result, sampling agent.Sampling) (*attempt, error) {
	t := s.Task
	box, workdir, err := s.Open(ctx, t)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		res.ExitReason = agent.ExitSandboxError
		kind, _ := Classify(PhaseOpen, err)
		res.fail(StageAgent, kind, err)
		return nil, nil
	}
	closeBox := func() { box.Close(context.WithoutCancel(ctx)) }
	// Grading in a fresh box: hide the tests here. In every case, prove
	// the repository holds nothing past its base commit (stripping it when
	// it does) before the agent starts.
	proof, err := grader.PrepareBox(ctx, box, t, g.Reward, workdir, g.In != GradeSame)
	if proof != nil {
		res.History = proof
	}
	if err != nil {
		closeBox()
		res.ExitReason = agent.ExitSandboxError
		kind, _ := Classify(PhaseSetup, err)
		res.fail(StageAgent, kind, err)
		return nil, nil
	}
	model := s.Model
	if s.NewModel != nil {
		model, err = s.NewModel(s.Scaffold, t, workdir, s.Mode)
	} else if model == nil {
		err = fmt.Errorf("task %s: model: none given", t.InstanceID)
	}
	if err != nil {
		closeBox()
		res.ExitReason = agent.ExitLLMError
		res.fail(StageAgent, KindLLM, err)
		return nil, nil
	}
	traj, err := agent.Run(ctx, agent.Options{
		Scaffold: s.Scaffold, Mode: s.Mode, Model: model, Box: box, Task: t, Workdir: workdir,
		Limits: s.Limits, Sampling: sampling, Stop: s.Stop,
	})
	if err != nil {
		closeBox()
		return nil, err
	}
	return &attempt{box: box, workdir: workdir, model: model, traj: traj, history: proof}, nil
}

// IterationTemperatures are the sampling temperatures of upstream's
// iterative protocol, one per iteration: from temperature 0 they rise by
// 0.1 up to 0.2; any other temperature stays. Nil when temp is nil or
// there is one iteration (the sampling is then left alone).
func IterationTemperatures(temp *float64, iterations int) []float64 {
	if temp == nil || iterations <= 1 {
		return nil
	}
	out := make([]float64, iterations)
	for i := range out {
		out[i] = *temp
		if *temp == 0 {
			out[i] = min(0.1*float64(i), 0.2)
		}
	}
	return out
}

// EpisodeError says whether an episode ended by a failure outside the
// model, and of what kind.
func EpisodeError(traj *agent.Trajectory) (ErrorKind, bool) {
	if traj.Err == nil {
		return "", false
	}
	switch traj.ExitReason {
	case agent.ExitLLMError:
		return Classify(PhaseModel, traj.Err)
	case agent.ExitSandboxError:
		if len(traj.Steps) == 0 {
			// The box failed before the model did anything in it.
			return Classify(PhaseSetup, traj.Err)
		}
		return Classify(PhaseBox, traj.Err)
	}
	return "", false
}

// grade grades res.Patch in a fresh box (box nil) or in the given one,
// where the patch is already in the tree. The error is only for a
// cancelled ctx.
func grade(ctx context.Context, t *task.Task, res *Result, g GradeOptions, box sandbox.Sandbox, workdir string) error {
	start := time.Now()
	defer func() { res.Timings.Grade = time.Since(start) }()
	patch := res.Patch
	phase := PhaseGrade
	if box == nil {
		b, wd, err := g.Open(ctx, t)
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			kind, _ := Classify(PhaseOpen, err)
			res.fail(StageGrade, kind, fmt.Errorf("grading box: %w", err))
			return nil
		}
		defer b.Close(context.WithoutCancel(ctx))
		box, workdir = b, wd
	} else {
		patch = "" // already applied in the agent's box
		phase = PhaseGradeSame
	}
	opts := grader.Options{Force: g.Reward, Patch: patch, Gold: g.Gold, EvalTimeout: g.EvalTimeout, Workdir: workdir, Tamper: g.Tamper, Baseline: g.Baseline}
	out, err := gradeSafely(func() (*grader.Outcome, error) {
		out, err := grader.Grade(ctx, box, t, opts)
		if err != nil {
			// A box the patch's code killed is the patch's 0, unless the
			// task's reference run dies the same way (see grader.Settle).
			opts.Workdir = ""
			if phase == PhaseGrade {
				box.Close(context.WithoutCancel(ctx)) // free it before another opens
			}
			out, err = grader.Settle(ctx, err, t, opts, grader.SettleOptions{Open: grader.Opener(g.Open), Again: phase == PhaseGrade, Baseline: g.Baseline})
		}
		return out, err
	})
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		kind, infra := Classify(phase, err)
		if errors.Is(err, errGraderPanic) {
			kind, infra = KindGrader, true
		}
		if infra {
			res.fail(StageGrade, kind, err)
		} else {
			res.Reward, res.RewardReason = 0, "not graded: "+err.Error()
		}
		return nil
	}
	res.Reward, res.Resolved, res.RewardReason, res.Grader, res.Report, res.Tampered = out.Reward, out.Resolved, out.Reason, string(out.Grader), out.Report, out.Tampered
	res.TestOutput, res.TestTimeout = out.Log, out.TimedOut
	return nil
}

// errGraderPanic marks a grader that panicked: a bug of swerve's, that
// task's grader error rather than the end of the process.
var errGraderPanic = errors.New("the grader crashed")

// gradeSafely runs grade, turning a panic into an error.
func gradeSafely(grade func() (*grader.Outcome, error)) (out *grader.Outcome, err error) {
	defer func() {
		if p := recover(); p != nil {
			out, err = nil, fmt.Errorf("%w: %v", errGraderPanic, p)
		}
	}()
	return grade()
}
