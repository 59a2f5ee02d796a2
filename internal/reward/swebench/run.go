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
	// Log is the eval script's output (what the harness keeps as
	// test_output.txt), with a timeout note appended when it timed out.
	Log string
	// ApplyLog says which apply command worked, or why none did.
	ApplyLog string
	// ApplyFailed: no apply command took the patch; nothing was run.
	ApplyFailed bool
	TimedOut    bool
	Duration    time.Duration
}

// Run applies the patch in box (which must be fresh, from the task's
// image), runs the task's eval script unchanged and grades its output. A
// patch that does not apply or tests that time out give an unresolved
// result with the reason, not an error; errors mean the box failed.
func Run(ctx context.Context, box sandbox.Sandbox, t *task.Task, opts RunOptions) (*RunResult, error) {
	if t.EvalScript == "" {
		return nil, fmt.Errorf("task %s: eval_script: empty; swebench grading runs the dataset's eval script", t.InstanceID)
	}
	start := time.Now()
	rr := &RunResult{}
	dir := opts.Workdir
	if dir == "" {
		dir = reward.Workdir
	}
	patchFile, evalFile := reward.Paths(box)
	if opts.Patch != "" {
		applied, applyLog, err := reward.ApplyPatch(ctx, box, dir, patchFile, opts.Patch)
		if err != nil {
			return nil, fmt.Errorf("task %s: apply patch: %w", t.InstanceID, err)
		}
		rr.ApplyLog = applyLog
		if !applied {
			rr.ApplyFailed = true
			rr.Log = ApplyPatchFail + ":\n" + applyLog
			rr.Result = &Result{InstanceID: t.InstanceID, PatchExists: true, Reason: "patch did not apply: " + reward.LastLine(applyLog)}
			rr.Duration = time.Since(start)
			return rr, nil
		}
	}
	run, err := reward.RunScript(ctx, box, dir, evalFile, t.EvalScript, opts.EvalTimeout)
	if err != nil {
		return nil, fmt.Errorf("task %s: run eval script: %w", t.InstanceID, err)
	}
	rr.Log, rr.TimedOut, rr.Duration = run.Log, run.TimedOut, time.Since(start)
	if run.TimedOut {
		rr.Result = &Result{InstanceID: t.InstanceID, PatchExists: true, Reason: "eval timed out: " + reward.LastLine(run.Log)}
		rr.InfraFailureReason, rr.InfraFailure = ClassifyInfra(rr.Log)
		return rr, nil
	}
	r, err := Evaluate(t, rr.Log, Options{})
	if err != nil {
		return nil, err
	}
	rr.Result = r
	return rr, nil
}
