package r2e

import (
	"context"
	"fmt"
	"path"
	"strings"
	"time"

	"github.com/swerve-dev/swerve/internal/reward"
	"github.com/swerve-dev/swerve/internal/sandbox"
	"github.com/swerve-dev/swerve/internal/task"
)

// RunTests is where R2E-Gym's runtime keeps the test script once it has set
// a box up (hidden from the agent); a fresh image has it in the repository.
const RunTests = "/root/run_tests.sh"

// DefaultScript is the eval script for a row that carries none: run R2E-Gym's
// run_tests.sh from the repository, the way its runtime does. A fresh image
// keeps run_tests.sh in the repository and the hidden tests in /r2e_tests;
// R2E-Gym's set-up moves both to /root and links the tests back as
// <repo>/r2e_tests, which run_tests.sh expects. The script makes the same
// link when it is missing and runs whichever run_tests.sh is there, under
// set -x, so that bash's trace marks where run_tests.sh's output starts
// (see EvaluateRun).
//
// scratch is set for boxes whose absolute paths are the host's (the local
// backend): there only the repository's own run_tests.sh is used.
func DefaultScript(scratch bool) string {
	if scratch {
		return "set -x\nbash run_tests.sh\n"
	}
	return strings.Join([]string{
		"# R2E-Gym's test run (written by swerve: the row has no eval script)",
		"set -x",
		"if [ ! -e r2e_tests ]; then",
		"  for d in /root/r2e_tests /r2e_tests; do",
		`    if [ -d "$d" ]; then ln -s "$d" r2e_tests; break; fi`,
		"  done",
		"fi",
		"if [ -f " + RunTests + " ]; then",
		"  bash " + RunTests,
		"else",
		"  bash run_tests.sh",
		"fi",
		"",
	}, "\n")
}

// keepRunTests copies a fresh image's run_tests.sh to RunTests, where
// R2E-Gym's set-up puts it, before a patch is applied: it is not tracked by
// git, and the apply commands' clean-up between attempts would delete it.
func keepRunTests(ctx context.Context, box sandbox.Sandbox, dir string) error {
	if dir == "" {
		dir = reward.Workdir
	}
	cmd := "if [ -f run_tests.sh ] && [ ! -e " + RunTests + " ]; then mkdir -p " + path.Dir(RunTests) + " && cp -p run_tests.sh " + RunTests + "; fi"
	_, err := box.Exec(ctx, sandbox.ExecRequest{Cmd: []string{"/bin/bash", "-c", cmd}, Cwd: dir, Timeout: time.Minute})
	return err
}

// RunOptions configure Run.
type RunOptions struct {
	Patch       string        // empty: run the tests on the unpatched repository
	EvalTimeout time.Duration // zero: reward.DefaultEvalTimeout
	Workdir     string        // empty: /testbed; ".": the box's own directory
}

// RunResult is a graded run.
type RunResult struct {
	*Result
	reward.Attempt
}

// Run applies the patch in a fresh box, runs the tests (the row's
// eval_script, else DefaultScript) and grades their output. A patch that
// does not apply or tests that time out give reward 0 with the reason;
// errors mean the box failed or the task cannot be graded this way.
func Run(ctx context.Context, box sandbox.Sandbox, t *task.Task, opts RunOptions) (*RunResult, error) {
	if err := check(t); err != nil {
		return nil, err
	}
	script := t.EvalScript
	if script == "" {
		_, scratch := box.(sandbox.Scratch)
		script = DefaultScript(scratch)
		if !scratch {
			if err := keepRunTests(ctx, box, opts.Workdir); err != nil {
				return nil, fmt.Errorf("task %s: %w", t.InstanceID, err)
			}
		}
	}
	a, err := reward.Try(ctx, box, reward.AttemptOptions{Patch: opts.Patch, Script: script, EvalTimeout: opts.EvalTimeout, Workdir: opts.Workdir})
	if err != nil {
		return nil, fmt.Errorf("task %s: %w", t.InstanceID, err)
	}
	rr := &RunResult{Attempt: *a}
	switch {
	case a.ApplyFailed:
		rr.Result = &Result{InstanceID: t.InstanceID, Parsed: map[string]string{}, Expected: len(t.ExpectedOutput), Reason: "patch did not apply: " + reward.LastLine(a.ApplyLog)}
	case a.TimedOut:
		rr.Result = &Result{InstanceID: t.InstanceID, Parsed: map[string]string{}, Expected: len(t.ExpectedOutput), Reason: "eval timed out: " + reward.LastLine(a.Log)}
	default:
		if rr.Result, err = EvaluateRun(t, a.Log, a.Trace); err != nil {
			return nil, err
		}
	}
	return rr, nil
}
