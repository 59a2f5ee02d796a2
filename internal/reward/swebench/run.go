package swebench

import (
	"context"
	"fmt"
	"time"

	"github.com/swerve-dev/swerve/internal/reward"
	"github.com/swerve-dev/swerve/internal/sandbox"
	"github.com/swerve-dev/swerve/internal/task"
)

// DefaultEvalTimeout is --eval_timeout's default.
const DefaultEvalTimeout = reward.DefaultEvalTimeout

// RunOptions configure Run.
type RunOptions struct {
	// Patch is the diff to grade; empty means run the tests on the
	// unpatched repository (the harness's --no-patch mode).
	Patch string
	// EvalTimeout bounds the eval script; the whole process group is
	// killed when it is reached. Zero means DefaultEvalTimeout.
	EvalTimeout time.Duration
	// Workdir is the repository in the box, where the patch is applied and
	// the eval script starts; empty means /testbed. "." is the box's own
	// working directory (the local backend's copy).
	Workdir string
}

// RunResult is a graded run.
type RunResult struct {
	*Result
	reward.Attempt
}

// Run applies the patch in box (which must be fresh, from the task's
// image), runs the task's eval script unchanged and grades its output. A
// patch that does not apply or tests that time out give an unresolved
// result with the reason, not an error; errors mean the box failed.
func Run(ctx context.Context, box sandbox.Sandbox, t *task.Task, opts RunOptions) (*RunResult, error) {
	if t.EvalScript == "" {
		return nil, fmt.Errorf("task %s: eval_script: empty; swebench grading runs the dataset's eval script", t.InstanceID)
	}
	a, err := reward.Try(ctx, box, reward.AttemptOptions{Patch: opts.Patch, Script: t.EvalScript, EvalTimeout: opts.EvalTimeout, Workdir: opts.Workdir})
	if err != nil {
		return nil, fmt.Errorf("task %s: %w", t.InstanceID, err)
	}
	rr := &RunResult{Attempt: *a}
	switch {
	case a.ApplyFailed:
		// What the harness logs when no apply command works.
		rr.Log = ApplyPatchFail + ":\n" + a.ApplyLog
		rr.Result = &Result{InstanceID: t.InstanceID, PatchExists: true, Reason: "patch did not apply: " + reward.LastLine(a.ApplyLog)}
	case a.TimedOut:
		rr.Result = &Result{InstanceID: t.InstanceID, PatchExists: true, Reason: "eval timed out: " + reward.LastLine(a.Log)}
		rr.InfraFailureReason, rr.InfraFailure = ClassifyInfra(a.Log)
	default:
		if rr.Result, err = Evaluate(t, a.Log, Options{}); err != nil {
			return nil, err
		}
	}
	return rr, nil
}
