package reward

import (
	"context"
	"time"

	"github.com/swerve-dev/swerve/internal/sandbox"
	"github.com/swerve-dev/swerve/internal/task"
)

// The graders (swebench, swefactory, r2e, swesmith, harbor) each grade a
// patch in a box with a function of one shape, RunFunc: it takes
// RunOptions, with the grader's own settings added, and returns a
// RunResult, with the grader's own findings added. Each grader's package
// checks at compile time that its Run has that shape.

// RunFunc is the shape of every grader's Run: grade opts' patch in box (a
// fresh box from t's image, or the box the patch was made in) and say what
// the tests gave. A patch that does not apply or tests that time out are
// results with reward 0 and the reason, not errors; errors mean the box
// failed or t cannot be graded this way.
type RunFunc[O, R any] func(ctx context.Context, box sandbox.Sandbox, t *task.Task, opts O) (R, error)

// RunOptions are the options every grader's Run takes. A grader's own
// RunOptions embeds them and adds what only it has (canaries, a single
// phase, Harbor's solution and verifier directory).
type RunOptions struct {
	// Patch is the diff to grade; empty runs the tests on the repository
	// as the box has it.
	Patch string
	// EvalTimeout bounds the tests; zero means the grader's default
	// (DefaultEvalTimeout; Harbor's is the task's [verifier] timeout_sec
	// first).
	EvalTimeout time.Duration
	// Workdir is the repository in the box, where the patch is applied
	// and the tests start; empty means the grader's default (Workdir,
	// /testbed; Harbor's is the box's own working directory), "." the
	// box's own working directory (the local backend's copy).
	Workdir string
}

// RunResult is what every grader's Run returns: the grader's verdict V
// (its Result, in the shape of its upstream's report) on the Attempt that
// gave it. A grader's own RunResult embeds it and adds its findings
// (canaries); one with none is this type.
type RunResult[V any] struct {
	// Result is the grader's verdict: reward, resolved, reason and what
	// it read from the log.
	Result *V
	Attempt
}
