package sessions

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/swerve-dev/swerve/internal/reward/grader"
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

// Verify implements Verifier.
func (g GraderVerifier) Verify(ctx context.Context, t *task.Task, patch string) (v *Verdict, err error) {
	timeout := g.EvalTimeout
	if timeout <= 0 {
		timeout = DefaultEvalTimeout
	}
	box, workdir, err := g.Open(ctx, t)
	if err != nil {
		return nil, &InfraError{Err: fmt.Errorf("task %s: grading box: %w", t.InstanceID, err)}
	}
	defer box.Close(context.WithoutCancel(ctx))
	defer func() {
		if p := recover(); p != nil {
			v, err = nil, &InfraError{Err: fmt.Errorf("task %s: the grader crashed: %v", t.InstanceID, p)}
		}
	}()
	out, err := grader.Grade(ctx, box, t, grader.Options{Force: g.Reward, Patch: patch, EvalTimeout: timeout, Workdir: workdir})
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		var ie *InfraError
		if errors.As(err, &ie) {
			return nil, err
		}
		return nil, &InfraError{Err: fmt.Errorf("task %s: grade: %w", t.InstanceID, err)}
	}
	return &Verdict{
		Reward: out.Reward, Resolved: out.Resolved, Reason: out.Reason, Grader: string(out.Grader),
		Report: out.Report, TestOutput: out.Log, Tampered: out.Tampered,
	}, nil
}
