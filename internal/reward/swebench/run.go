package swebench

import (
	"context"
	"fmt"
	"strings"

	"github.com/swerve-dev/swerve/internal/reward"
	"github.com/swerve-dev/swerve/internal/sandbox"
	"github.com/swerve-dev/swerve/internal/task"
)

// DefaultEvalTimeout is --eval_timeout's default.
const DefaultEvalTimeout = reward.DefaultEvalTimeout

// RunOptions configure Run. An empty Patch runs the tests on the
// unpatched repository (the harness's --no-patch mode); EvalTimeout, when
// reached, kills the eval script's whole process group.
type RunOptions struct {
	reward.RunOptions
	// SinglePhase runs the eval script as one sealed run, as root, instead
	// of in phases (reward.RunPhased), which is the default where the
	// script's shape and the box allow it.
	SinglePhase bool
}

// RunResult is a graded run.
type RunResult = reward.RunResult[Result]

var _ reward.RunFunc[RunOptions, *RunResult] = Run

// TestExitCodeVar is the variable the 5.x harness keeps the test command's
// exit status in.
const TestExitCodeVar = "SWEBENCH_TEST_EXIT_CODE"

// RecordTestExitCode makes the eval script record its test command's exit
// status as the 5.x harness does before it runs the script
// (record_test_exit_code): `SWEBENCH_TEST_EXIT_CODE=$?` just before the end
// marker line and an echo of ">>>>> Test Exit Code: N" just after it. It
// reports whether it changed the script: a script without the end marker
// line, or one that records the code already, is returned as it is. Unlike
// the harness, which takes the first line that contains the marker text,
// only a line that is the marker command (`: '…'` or `echo '…'`) counts,
// so a test patch that mentions the marker in its here-document is left
// alone.
func RecordTestExitCode(script string) (string, bool) {
	if strings.Contains(script, TestExitCodeVar) {
		return script, false
	}
	lines := strings.Split(script, "\n")
	for i, line := range lines {
		if !isMarkerCommand(line, EndTestOutput) {
			continue
		}
		out := make([]string, 0, len(lines)+2)
		out = append(out, lines[:i]...)
		out = append(out, TestExitCodeVar+"=$?", line, `echo "`+TestExitCode+`: $`+TestExitCodeVar+`"`)
		out = append(out, lines[i+1:]...)
		return strings.Join(out, "\n"), true
	}
	return script, false
}

// Run applies the patch in box (which must be fresh, from the task's
// image), runs the task's eval script sealed (in phases, the patch's code
// as an unprivileged user, where reward.RunPhased can), with the test exit code
// recorded as the 5.x harness records it (RecordTestExitCode), and grades
// its output on what bash itself traced (Options.Trace). A
// patch that does not apply or tests that time out give an unresolved
// result with the reason, not an error; errors mean the box failed.
func Run(ctx context.Context, box sandbox.Sandbox, t *task.Task, opts RunOptions) (*RunResult, error) {
	if t.EvalScript == "" {
		return nil, fmt.Errorf("task %s: eval_script: empty; swebench grading runs the dataset's eval script", t.InstanceID)
	}
	script, recorded := RecordTestExitCode(t.EvalScript)
	a, err := reward.Try(ctx, box, reward.AttemptOptions{Patch: opts.Patch, Script: script, EvalTimeout: opts.EvalTimeout, Workdir: opts.Workdir, Phased: !opts.SinglePhase})
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
		rr.Result.InfraFailureReason, rr.Result.InfraFailure = ClassifyInfra(a.Log)
	default:
		if rr.Result, err = Evaluate(t, a.Log, Options{Trace: a.Trace, ExitCodeRecorded: recorded}); err != nil {
			return nil, err
		}
	}
	return rr, nil
}
