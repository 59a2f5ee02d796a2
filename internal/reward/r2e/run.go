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

// Where R2E-Gym keeps the hidden tests: a fresh image has them at
// ImageTests, its runtime's set-up moves them to SetUpTests and links them
// into the repository as RepoTests, which run_tests.sh expects.
const (
	ImageTests = "/r2e_tests"
	SetUpTests = "/root/r2e_tests"
	RepoTests  = "r2e_tests"
)

// Hide removes the hidden tests from an agent's box before the agent
// starts: ImageTests, SetUpTests and the repository's RepoTests. Grading
// happens in a fresh box from the image, which has them. A RepoTests that
// git tracks (a local source directory holding its tests) is marked
// skip-worktree first, so its removal is not part of the agent's patch. On
// a box whose absolute paths are the host's (sandbox.Scratch) only the
// repository's copy is removed.
func Hide(ctx context.Context, box sandbox.Sandbox, workdir string) error {
	_, scratch := box.(sandbox.Scratch)
	if workdir == "" && !scratch {
		workdir = reward.Workdir
	}
	cmd := "if git ls-files --error-unmatch -- " + RepoTests + " >/dev/null 2>&1; then " +
		"git ls-files -z -- " + RepoTests + " | xargs -0 git update-index --skip-worktree --; fi; rm -rf " + RepoTests
	if !scratch {
		cmd = "rm -rf " + ImageTests + " " + SetUpTests + "; " + cmd
	}
	cmd += "; ! ls -d " + RepoTests + " >/dev/null 2>&1"
	res, err := box.Exec(ctx, sandbox.ExecRequest{Cmd: []string{"/bin/bash", "-c", cmd}, Cwd: workdir, Timeout: time.Minute})
	if err != nil {
		return fmt.Errorf("hide the hidden tests: %w", err)
	}
	if res.ExitCode != 0 {
		return fmt.Errorf("hide the hidden tests: exit %d: %s", res.ExitCode, reward.LastLine(string(res.Output)))
	}
	return nil
}

// restoreScript puts the image's hidden tests in the repository before the
// tests run, over whatever the patch left at RepoTests (a patch that adds
// its own r2e_tests/ must not have its own tests graded): the image's
// SetUpTests or ImageTests linked in, else the repository's committed copy,
// else nothing. On a Scratch box only the committed copy (and run_tests.sh's)
// is used. It prints nothing.
func restoreScript(scratch bool) string {
	lines := []string{"# swerve: the hidden tests come from the image, never from the patch"}
	fromGit := "if git cat-file -e HEAD:" + RepoTests + " 2>/dev/null; then rm -rf " + RepoTests + " && git checkout -q HEAD -- " + RepoTests + "; else rm -rf " + RepoTests + "; fi"
	if scratch {
		lines = append(lines, fromGit,
			"if git cat-file -e HEAD:run_tests.sh 2>/dev/null; then git checkout -q HEAD -- run_tests.sh; fi")
	} else {
		lines = append(lines,
			"swerve_tests=",
			"for d in "+SetUpTests+" "+ImageTests+"; do if [ -d \"$d\" ]; then swerve_tests=$d; break; fi; done",
			"if [ -n \"$swerve_tests\" ]; then rm -rf "+RepoTests+" && ln -s \"$swerve_tests\" "+RepoTests+"; else "+fromGit+"; fi",
			"unset swerve_tests")
	}
	return strings.Join(lines, "\n") + "\n"
}

// DefaultScript is the eval script for a row that carries none: run R2E-Gym's
// run_tests.sh from the repository, the way its runtime does. A fresh image
// keeps run_tests.sh in the repository and the hidden tests in /r2e_tests;
// R2E-Gym's set-up moves both to /root and links the tests back as
// <repo>/r2e_tests, which run_tests.sh expects. Run makes the same link
// (see restoreScript) and the script runs whichever run_tests.sh is there,
// under set -x, so that bash's trace marks where run_tests.sh's output
// starts (see EvaluateRun).
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
	_, scratch := box.(sandbox.Scratch)
	if script == "" {
		script = DefaultScript(scratch)
		if !scratch {
			if err := keepRunTests(ctx, box, opts.Workdir); err != nil {
				return nil, fmt.Errorf("task %s: %w", t.InstanceID, err)
			}
		}
	}
	script = restoreScript(scratch) + script
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
