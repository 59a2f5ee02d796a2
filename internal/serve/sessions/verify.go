package sessions

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/swerve-dev/swerve/internal/episode"
	"github.com/swerve-dev/swerve/internal/task"
)

// Verifier grades a patch for a task. An infrastructure failure (no box
// for grading, a grader that could not run) is an *InfraError, kept apart
// from rewards; a patch that merely fails is a Verdict with reward 0.
type Verifier interface {
	Verify(ctx context.Context, t *task.Task, patch string) (*Verdict, error)
}

// Verdict is a graded patch.
type Verdict struct {
	Reward   float64
	Resolved bool
	// Reason says why in one line ("resolved", "tests failed: ...",
	// "tampered: ...").
	Reason string
	Grader string
	// Report is the grader's own report (report.json for swebench).
	Report     json.RawMessage
	TestOutput string
	Tampered   []string
}

// GraderVerifier grades with swerve's graders (package grader) in a fresh
// box from the task's image: the patch applied, the hidden tests put back,
// the eval script run sealed, the tamper checks on.
type GraderVerifier struct {
	Open Opener
	// Reward forces a grader (--reward); empty: the task's.
	Reward string
	// EvalTimeout bounds the eval script (Gym's eval_timeout, 1800 s, when 0).
	EvalTimeout time.Duration
}

// DefaultEvalTimeout is GraderVerifier.EvalTimeout's default.
const DefaultEvalTimeout = 1800 * time.Second

// Verify implements Verifier, through episode.Grade: the grading half of
// the episode run and serve's /run share, with its error classes.
func (g GraderVerifier) Verify(ctx context.Context, t *task.Task, patch string) (*Verdict, error) {
	timeout := g.EvalTimeout
	if timeout <= 0 {
		timeout = DefaultEvalTimeout
	}
	res, err := episode.Grade(ctx, t, patch, episode.GradeOptions{Open: episode.Opener(g.Open), Reward: g.Reward, EvalTimeout: timeout})
	if err != nil {
		return nil, err
	}
	if f := res.Failure; f != nil {
		return nil, &InfraError{Err: fmt.Errorf("task %s: %w", t.InstanceID, f)}
	}
	return &Verdict{
		Reward: res.Reward, Resolved: res.Resolved, Reason: res.RewardReason, Grader: res.Grader,
		Report: res.Report, TestOutput: res.TestOutput, Tampered: res.Tampered,
	}, nil
}
