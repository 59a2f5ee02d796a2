package swesmith

import (
	"context"
	"fmt"
	"path"
	"sort"
	"strings"
	"time"

	"github.com/swerve-dev/swerve/internal/reward"
	"github.com/swerve-dev/swerve/internal/reward/swebench"
	"github.com/swerve-dev/swerve/internal/reward/tamper"
	"github.com/swerve-dev/swerve/internal/sandbox"
	"github.com/swerve-dev/swerve/internal/task"
)

// bugCommitSubject starts the message of the commit Prepare makes when it
// has to rebuild the bug commit from the row's patch; the instance id
// follows.
const bugCommitSubject = "swerve: SWE-smith bug "

// gitEnv keeps a user's or image's git configuration from changing what the
// set-up commands do, and names an author for the commit Prepare may make.
var gitEnv = []string{
	"GIT_AUTHOR_NAME=swerve", "GIT_AUTHOR_EMAIL=swerve@localhost",
	"GIT_COMMITTER_NAME=swerve", "GIT_COMMITTER_EMAIL=swerve@localhost",
}

func git(ctx context.Context, box sandbox.Sandbox, dir, cmd string, timeout time.Duration) (sandbox.ExecResult, error) {
	return box.Exec(ctx, sandbox.ExecRequest{Cmd: []string{"/bin/bash", "-c", cmd}, Cwd: dir, Env: gitEnv, Timeout: timeout})
}

// quote makes s one single-quoted shell word.
func quote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// Prepare puts the repository in dir at the task's bug commit, as
// SWE-smith's harness does before it applies a patch (git fetch, git
// checkout base_commit), and returns the commit the test files are later
// reset to. The bug commit lives on a branch of SWE-smith's mirror, which
// an offline box cannot fetch; then the bug is rebuilt from the row's patch
// (which introduces it) on top of the image's commit, and committed so that
// resets between apply attempts keep it. A repository already at the bug
// (HEAD is base_commit, a commit Prepare made, or a tree that already holds
// the bug) is left as it is. Errors mean the bug commit cannot be had.
func Prepare(ctx context.Context, box sandbox.Sandbox, t *task.Task, dir string) (string, error) {
	res, err := git(ctx, box, dir, "git rev-parse HEAD && git log -1 --format=%s", time.Minute)
	if err != nil {
		return "", err
	}
	if res.ExitCode != 0 {
		return "", fmt.Errorf("task %s: %s is not a git repository: %s", t.InstanceID, dir, reward.LastLine(string(res.Output)))
	}
	head, subject, _ := strings.Cut(strings.TrimSpace(string(res.Output)), "\n")
	base := t.BaseCommit
	switch {
	case base == "" && t.BugPatch == "":
		return head, nil
	case base != "" && head == base, subject == bugCommitSubject+t.InstanceID:
		return head, nil
	}
	if base != "" {
		have := "git cat-file -e " + quote(base+"^{commit}")
		res, err := git(ctx, box, dir, have+" 2>/dev/null || git fetch -q 2>&1 || true", 2*time.Minute)
		if err != nil {
			return "", err
		}
		fetchLog := strings.TrimSpace(string(res.Output))
		res, err = git(ctx, box, dir, have+" && git checkout -q "+quote(base), time.Minute)
		if err != nil {
			return "", err
		}
		if res.ExitCode == 0 {
			return base, nil
		}
		if t.BugPatch == "" {
			why := reward.LastLine(strings.TrimSpace(string(res.Output)))
			if why == "" {
				why = "it is not in the repository"
				if fetchLog != "" {
					why += " and git fetch failed: " + reward.LastLine(fetchLog)
				}
			}
			return "", fmt.Errorf("task %s: base_commit %s: cannot check it out: %s", t.InstanceID, base, why)
		}
	}
	return rebuildBug(ctx, box, t, dir, head)
}

// rebuildBug commits the row's bug patch on top of HEAD (or finds the bug
// already in the tree) and returns the commit to reset test files to.
func rebuildBug(ctx context.Context, box sandbox.Sandbox, t *task.Task, dir, head string) (string, error) {
	patchFile, _ := reward.Paths(box)
	bugFile := path.Join(path.Dir(patchFile), "swesmith_bug.diff")
	if err := box.WriteFile(ctx, bugFile, []byte(t.BugPatch), 0o644); err != nil {
		return "", err
	}
	f := quote(bugFile)
	script := strings.Join([]string{
		// A copied tree (the local backend) leaves the index's file stats stale.
		"git update-index -q --refresh >/dev/null",
		"if git apply --check " + f + " 2>/dev/null; then",
		"  git apply --index " + f + " && git commit -q --no-verify -m " + quote(bugCommitSubject+t.InstanceID) + " || exit 3",
		"elif git apply --check --reverse " + f + " 2>/dev/null; then",
		// The tree holds the bug already: commit it if it is not.
		"  git apply --numstat -z " + f + " | tr '\\0' '\\n' | cut -f3- | grep -v '^$' | xargs -r -d '\\n' git add -- || exit 3",
		"  git diff --cached --quiet || git commit -q --no-verify -m " + quote(bugCommitSubject+t.InstanceID) + " || exit 3",
		"else",
		"  git apply --check " + f,
		"  exit 2",
		"fi",
		"git rev-parse HEAD",
	}, "\n")
	res, err := git(ctx, box, dir, script, 2*time.Minute)
	if err != nil {
		return "", err
	}
	out := strings.TrimSpace(string(res.Output))
	switch res.ExitCode {
	case 0:
		return reward.LastLine(out), nil
	case 2:
		return "", fmt.Errorf("task %s: base_commit %s is not in the repository and the bug patch does not apply to %s: %s", t.InstanceID, t.BaseCommit, head, reward.LastLine(out))
	}
	return "", fmt.Errorf("task %s: commit the bug patch: %s", t.InstanceID, reward.LastLine(out))
}

// testFilesToReset are the Python test files FAIL_TO_PASS and PASS_TO_PASS
// name (test_*.py or *_test.py), sorted.
func testFilesToReset(t *task.Task) []string {
	seen := map[string]bool{}
	var out []string
	for _, name := range append(append([]string{}, t.FailToPass...), t.PassToPass...) {
		f, _, _ := strings.Cut(name, "::")
		base := path.Base(f)
		if !(strings.HasPrefix(base, "test_") && strings.HasSuffix(base, ".py")) && !strings.HasSuffix(base, "_test.py") {
			continue
		}
		if !seen[f] {
			seen[f] = true
			out = append(out, f)
		}
	}
	sort.Strings(out)
	return out
}

// ResetTests checks out, from commit ref, the test files the task's test
// lists name, undoing a patch's changes to them (files missing at ref are
// left alone), as R2E-Gym does for SWE-smith images before it runs them.
func ResetTests(ctx context.Context, box sandbox.Sandbox, t *task.Task, dir, ref string) error {
	files := testFilesToReset(t)
	if len(files) == 0 || ref == "" {
		return nil
	}
	var b strings.Builder
	for _, f := range files {
		fmt.Fprintf(&b, "git checkout %s -- %s 2>/dev/null\n", quote(ref), quote(f))
	}
	b.WriteString("true\n")
	// The patch is in the tree: git runs none of its hooks.
	_, err := box.Exec(ctx, sandbox.ExecRequest{Cmd: []string{"/bin/bash", "-c", b.String()}, Cwd: dir, Env: append(append([]string{}, gitEnv...), reward.GitHardening()...), Timeout: 2 * time.Minute})
	return err
}

// EvalScript is the script SWE-smith's harness runs: activate the testbed
// environment, then the test command between the markers, under set -x so
// that bash's trace of the markers frames the section. A row's own
// eval_script wins. dir is the repository (cd'd into when absolute);
// scratch boxes (the local backend) have no conda environment to activate.
func EvalScript(t *task.Task, dir string, scratch bool) string {
	if t.EvalScript != "" {
		return t.EvalScript
	}
	cmd, _ := TestCommand(t)
	lines := []string{"#!/bin/bash", "set -uxo pipefail"}
	if !scratch {
		lines = append(lines, "source /opt/miniconda3/bin/activate", "conda activate testbed")
	}
	if path.IsAbs(dir) {
		lines = append(lines, "cd "+quote(dir))
	}
	lines = append(lines, ": '"+StartTestOutput+"'", cmd, ": '"+EndTestOutput+"'")
	return strings.Join(lines, "\n") + "\n"
}

// RunOptions configure Run.
type RunOptions struct {
	reward.RunOptions
	// SinglePhase runs the tests as root, as before user runs (the
	// hidden tests and canaries are put in place all the same).
	SinglePhase bool
	// Canaries adds mutant canaries to the reset test files (see
	// tamper.PlanPytest); RunResult.Canaries says what they were.
	Canaries bool
}

// RunResult is a graded run.
type RunResult struct {
	reward.RunResult[Result]
	// Canaries are the canaries planned for the run (nil unless asked
	// for; Unavailable says why there are none), CanaryStatus what the
	// log says of them. The canaries' results are not part of Result.
	Canaries     *tamper.Canaries
	CanaryStatus swebench.StatusMap
}

var _ reward.RunFunc[RunOptions, *RunResult] = Run

// Run grades a patch in a fresh box from the task's image: Prepare, apply
// the patch with the harness's commands, reset the test files, run
// EvalScript under the timeout and Evaluate its output. A patch that does
// not apply or tests that time out give an unresolved result with the
// reason; errors mean the box failed or the bug commit cannot be had.
func Run(ctx context.Context, box sandbox.Sandbox, t *task.Task, opts RunOptions) (*RunResult, error) {
	start := time.Now()
	dir := opts.Workdir
	if dir == "" {
		dir = reward.Workdir
	}
	timeout := opts.EvalTimeout
	if timeout <= 0 {
		timeout = reward.DefaultEvalTimeout
	}
	ref, err := Prepare(ctx, box, t, dir)
	if err != nil {
		return nil, err
	}
	rr := &RunResult{}
	patchFile, evalFile := reward.Paths(box)
	if opts.Patch != "" {
		before, err := reward.MarkTree(ctx, box, dir)
		if err != nil {
			return nil, fmt.Errorf("task %s: mark the work tree: %w", t.InstanceID, err)
		}
		applied, applyLog, err := reward.ApplyPatch(ctx, box, dir, patchFile, opts.Patch)
		if err != nil {
			return nil, fmt.Errorf("task %s: apply patch: %w", t.InstanceID, err)
		}
		rr.ApplyLog = applyLog
		if !applied {
			rr.ApplyFailed, rr.Duration = true, time.Since(start)
			rr.Log = ApplyPatchFail + ":\n" + applyLog
			rr.Result = &Result{InstanceID: t.InstanceID, PatchExists: true, Reason: "patch did not apply: " + reward.LastLine(applyLog)}
			return rr, nil
		}
		if rr.Tree, err = reward.AppliedTree(ctx, box, dir, before); err != nil {
			return nil, fmt.Errorf("task %s: read the applied tree: %w", t.InstanceID, err)
		}
	}
	if err := ResetTests(ctx, box, t, dir, ref); err != nil {
		return nil, fmt.Errorf("task %s: reset test files: %w", t.InstanceID, err)
	}
	_, scratch := box.(sandbox.Scratch)
	script := EvalScript(t, dir, scratch)
	var run *reward.ScriptRun
	why := "a local box"
	if t.EvalScript != "" {
		why = "the row has its own eval script"
	}
	if !scratch && t.EvalScript == "" {
		gd, err := reward.GradingDir(ctx, box, path.Dir(evalFile))
		if err != nil {
			return nil, fmt.Errorf("task %s: %w", t.InstanceID, err)
		}
		if opts.Canaries {
			rr.Canaries = addCanaries(ctx, box, t, dir, gd)
		}
		why = "asked for"
		if !opts.SinglePhase {
			if run, why, err = reward.RunAsGradingUser(ctx, box, reward.UserRun{Dir: dir, Grading: gd, Script: script, File: evalFile, Lock: testFilesToReset(t), Timeout: timeout, Probe: probeScript(t)}); err != nil {
				return nil, fmt.Errorf("task %s: run the tests as the grading user: %w", t.InstanceID, err)
			}
		}
	} else if opts.Canaries {
		rr.Canaries = &tamper.Canaries{Unavailable: "not available: " + why}
	}
	rr.Phases = "phased"
	if run == nil {
		rr.Phases = "single phase: " + why
		if run, err = reward.RunScript(ctx, box, dir, evalFile, script, timeout); err != nil {
			return nil, fmt.Errorf("task %s: run eval script: %w", t.InstanceID, err)
		}
	}
	rr.Log, rr.TimedOut, rr.Duration = run.Log, run.TimedOut, time.Since(start)
	if run.TimedOut {
		// What SWE-smith writes into the test log when it kills the tests.
		rr.Log += fmt.Sprintf("\n\n%s: %d seconds exceeded", TestsTimeout, int(timeout.Seconds()))
		rr.Result = &Result{InstanceID: t.InstanceID, PatchExists: opts.Patch != "", Reason: "eval timed out: " + reward.LastLine(run.Log)}
		return rr, nil
	}
	rr.ScriptExit, rr.Trace, rr.Findings = run.ExitCode, run.Trace, run.Findings
	if rr.Result, err = Evaluate(t, rr.Log, Options{NoPatch: opts.Patch == "", Trace: run.Trace, Canaries: rr.Canaries}); err != nil {
		return nil, err
	}
	rr.CanaryStatus = rr.Result.CanaryStatus
	return rr, nil
}

// probeScript checks that the grading user can run the test command's
// first word (after the environment's activation, as EvalScript does).
func probeScript(t *task.Task) string {
	cmd, _ := TestCommand(t)
	w, _, _ := strings.Cut(strings.TrimSpace(cmd), " ")
	return "{ source /opt/miniconda3/bin/activate && conda activate testbed; } >/dev/null 2>&1\n" + reward.CanRun(w) + "\n"
}

// addCanaries plans canaries from the FAIL_TO_PASS tests (then the
// PASS_TO_PASS ones) in the files the test command runs, as the reset
// test files hold them, and adds them to their file.
func addCanaries(ctx context.Context, box sandbox.Sandbox, t *task.Task, dir, gd string) *tamper.Canaries {
	files := testFiles(t, Repo(t))
	if len(files) == 0 {
		return &tamper.Canaries{Unavailable: "not available: the test command names no test file"}
	}
	read := func(f string) (string, bool) {
		r, err := box.Exec(ctx, sandbox.ExecRequest{Cmd: []string{"cat", "--", f}, Cwd: dir, Timeout: time.Minute, MaxOutput: -1})
		if err != nil || r.ExitCode != 0 {
			return "", false
		}
		return string(r.Output), true
	}
	c := tamper.PlanPytest(narrow(t.FailToPass, files), narrow(t.PassToPass, files), read)
	if !c.Available() {
		return c
	}
	if why := tamper.Inject(ctx, box, c, path.Join(dir, c.File), gd); why != "" {
		return &tamper.Canaries{Unavailable: "not available: " + why}
	}
	return c
}
