package r2e

import (
	"context"
	"fmt"
	"path"
	"sort"
	"strings"
	"time"

	"github.com/swerve-dev/swerve/internal/lazyre"
	"github.com/swerve-dev/swerve/internal/reward"
	"github.com/swerve-dev/swerve/internal/reward/swebench"
	"github.com/swerve-dev/swerve/internal/reward/tamper"
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
	reward.RunOptions
	// SinglePhase runs the tests as root, as before user runs (the
	// hidden tests and canaries are put in place all the same).
	SinglePhase bool
	// Canaries adds mutant canaries to the hidden tests (see
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

// Run applies the patch in a fresh box, runs the tests (the row's
// eval_script, else DefaultScript) and grades their output. A patch that
// does not apply or tests that time out give reward 0 with the reason;
// errors mean the box failed or the task cannot be graded this way.
//
// With the default script on a container box, the grader puts the hidden
// tests in place itself, as root, after the patch is applied: a copy of
// the image's tests, root's and read-only, linked in as RepoTests (or the
// repository's committed copy, locked), the canaries added to it; then
// run_tests.sh (a copy the grading user can read) runs as
// reward.GradingUser (reward.RunAsGradingUser), or as root when the box
// cannot run a command as another user (Attempt.Phases says why). A row's
// own eval script, and a local box, run as before: one run as root, no
// canaries.
func Run(ctx context.Context, box sandbox.Sandbox, t *task.Task, opts RunOptions) (*RunResult, error) {
	if err := check(t); err != nil {
		return nil, err
	}
	_, scratch := box.(sandbox.Scratch)
	if t.EvalScript != "" || scratch {
		why := "the row has its own eval script"
		if scratch {
			why = "a local box"
		}
		return runOnce(ctx, box, t, opts, scratch, why)
	}
	dir := opts.Workdir
	if dir == "" {
		dir = reward.Workdir
	}
	if err := keepRunTests(ctx, box, dir); err != nil {
		return nil, fmt.Errorf("task %s: %w", t.InstanceID, err)
	}
	a, err := reward.ApplyOnly(ctx, box, dir, opts.Patch)
	if err != nil {
		return nil, fmt.Errorf("task %s: %w", t.InstanceID, err)
	}
	rr := &RunResult{RunResult: reward.RunResult[Result]{Attempt: *a}}
	if a.ApplyFailed {
		rr.Result = &Result{InstanceID: t.InstanceID, Parsed: map[string]string{}, Expected: len(t.ExpectedOutput), Reason: "patch did not apply: " + reward.LastLine(a.ApplyLog)}
		return rr, nil
	}
	_, evalFile := reward.Paths(box)
	gd, err := reward.GradingDir(ctx, box, path.Dir(evalFile))
	if err != nil {
		return nil, fmt.Errorf("task %s: %w", t.InstanceID, err)
	}
	tests := path.Join(gd, RepoTests)
	res, err := box.Exec(ctx, sandbox.ExecRequest{Cmd: []string{"/bin/bash", "-c", placeScript(gd)}, Cwd: dir, Env: reward.GitHardening(), Timeout: 5 * time.Minute})
	if err != nil {
		return nil, fmt.Errorf("task %s: put the hidden tests in place: %w", t.InstanceID, err)
	}
	if res.ExitCode != 0 {
		return nil, fmt.Errorf("task %s: put the hidden tests in place: exit %d: %s", t.InstanceID, res.ExitCode, reward.LastLine(string(res.Output)))
	}
	hidden := strings.TrimSpace(string(res.Output)) // where the tests are: the copy, else the committed RepoTests
	if hidden != tests {
		hidden = path.Join(dir, RepoTests)
	}
	if opts.Canaries {
		rr.Canaries = addCanaries(ctx, box, t, hidden, gd)
	}
	lock := []string{RepoTests, hidden}
	script := "set -x\nbash " + path.Join(gd, "run_tests.sh") + "\n"
	start := time.Now()
	var run *reward.ScriptRun
	why := "asked for"
	if !opts.SinglePhase {
		if run, why, err = reward.RunAsGradingUser(ctx, box, reward.UserRun{Dir: dir, Grading: gd, Script: script, File: evalFile, Lock: lock, Timeout: opts.EvalTimeout, Probe: probeScript(ctx, box, gd)}); err != nil {
			return nil, fmt.Errorf("task %s: run the tests as the grading user: %w", t.InstanceID, err)
		}
	}
	rr.Phases = "phased"
	if run == nil {
		rr.Phases = "single phase: " + why
		if run, err = reward.RunScript(ctx, box, dir, evalFile, script, opts.EvalTimeout); err != nil {
			return nil, fmt.Errorf("task %s: run eval script: %w", t.InstanceID, err)
		}
	}
	rr.Log, rr.TimedOut, rr.Duration = run.Log, run.TimedOut, a.Duration+time.Since(start)
	rr.ScriptExit, rr.Trace, rr.Findings = run.ExitCode, run.Trace, run.Findings
	if run.TimedOut {
		rr.Result = &Result{InstanceID: t.InstanceID, Parsed: map[string]string{}, Expected: len(t.ExpectedOutput), Reason: "eval timed out: " + reward.LastLine(run.Log)}
		return rr, nil
	}
	rr.Result, rr.CanaryStatus = evaluateRun(t, run.Log, run.Trace, rr.Canaries)
	return rr, nil
}

// placeScript puts the hidden tests and run_tests.sh where a user run
// reads them (in gd) and prints where the tests are: a copy of the
// image's (SetUpTests, else ImageTests) at gd/RepoTests, linked in as
// RepoTests over whatever the patch left there; else the repository's
// committed RepoTests, checked out again; else none. The image's own
// copies become unreadable to other users.
func placeScript(gd string) string {
	tests := path.Join(gd, RepoTests)
	return strings.Join([]string{
		"set -e",
		"src=",
		"for d in " + SetUpTests + " " + ImageTests + "; do if [ -d \"$d\" ]; then src=$d; break; fi; done",
		"rm -rf " + RepoTests,
		"if [ -n \"$src\" ]; then cp -a \"$src\" " + tests + " && ln -s " + tests + " " + RepoTests + " && echo " + tests + "",
		"elif git cat-file -e HEAD:" + RepoTests + " 2>/dev/null; then git checkout -q HEAD -- " + RepoTests + " && echo " + RepoTests,
		"fi",
		// The originals are root's alone: code under test that could read
		// them would find the canaries by comparing.
		"for d in " + SetUpTests + " " + ImageTests + "; do if [ -d \"$d\" ] && [ ! -L \"$d\" ]; then chmod go-rwx \"$d\"; fi; done",
		"for f in " + RunTests + " run_tests.sh; do if [ -f \"$f\" ]; then cp \"$f\" " + path.Join(gd, "run_tests.sh") + "; chmod 0644 " + path.Join(gd, "run_tests.sh") + "; break; fi; done",
	}, "\n") + "\n"
}

// Words of a run_tests.sh that name Python anywhere, or pytest as a
// command.
var (
	pythonWord = lazyre.New(`(?:^|[\s;&|(])((?:\S*/)?python[0-9.]*)(?:$|[\s;&|)])`)
	pytestCmd  = lazyre.New(`^\s*(?:\w+=\S*\s+)*((?:\S*/)?pytest)(?:$|\s)`)
)

// probeScript checks that the grading user can run every Python or pytest
// that the copied run_tests.sh names ("" when it names none).
func probeScript(ctx context.Context, box sandbox.Sandbox, gd string) string {
	b, err := box.ReadFile(ctx, path.Join(gd, "run_tests.sh"))
	if err != nil {
		return ""
	}
	var lines []string
	for _, w := range probeWords(string(b)) {
		lines = append(lines, reward.CanRun(w))
	}
	return strings.Join(lines, "\n")
}

// probeWords are the distinct Python and pytest commands script names,
// comment lines aside.
func probeWords(script string) []string {
	var out []string
	seen := map[string]bool{}
	for _, l := range strings.Split(script, "\n") {
		if strings.HasPrefix(strings.TrimSpace(l), "#") {
			continue
		}
		for _, m := range append(pythonWord.FindAllStringSubmatch(l, -1), pytestCmd.FindAllStringSubmatch(l, -1)...) {
			if !seen[m[1]] {
				seen[m[1]] = true
				out = append(out, m[1])
			}
		}
	}
	return out
}

// addCanaries plans canaries from the expected-to-pass tests of the row
// found in the hidden tests at hidden, and adds them to the test file.
func addCanaries(ctx context.Context, box sandbox.Sandbox, t *task.Task, hidden, gd string) *tamper.Canaries {
	res, err := box.Exec(ctx, sandbox.ExecRequest{Cmd: []string{"find", "-L", hidden, "-name", "*.py", "-type", "f"}, Timeout: time.Minute, MaxOutput: -1})
	if err != nil || res.ExitCode != 0 {
		return &tamper.Canaries{Unavailable: "not available: the hidden tests cannot be listed"}
	}
	files := map[string]string{}
	read := func(f string) (string, bool) {
		if s, ok := files[f]; ok {
			return s, true
		}
		rel, ok := strings.CutPrefix(f, RepoTests+"/")
		if !ok {
			return "", false
		}
		r, err := box.Exec(ctx, sandbox.ExecRequest{Cmd: []string{"cat", "--", path.Join(hidden, rel)}, Timeout: time.Minute, MaxOutput: -1})
		if err != nil || r.ExitCode != 0 {
			return "", false
		}
		files[f] = string(r.Output)
		return files[f], true
	}
	var paths []string
	for _, l := range strings.Split(strings.TrimSpace(string(res.Output)), "\n") {
		if rel, ok := strings.CutPrefix(l, hidden+"/"); ok && strings.HasPrefix(path.Base(rel), "test") {
			paths = append(paths, RepoTests+"/"+rel)
		}
	}
	sort.Strings(paths)
	var ids []string
	want := normalise(t.ExpectedOutput, true)
	for _, name := range sortedKeys(want) {
		if want[name] != Passed {
			continue
		}
		parts := strings.Split(name, ".")
		if len(parts) > 2 {
			continue
		}
		class, fn := "", parts[len(parts)-1]
		if len(parts) == 2 {
			class = parts[0]
		}
		bare, _, _ := strings.Cut(fn, "[")
		for _, f := range paths {
			if src, ok := read(f); ok && tamper.DefinesTest(src, class, bare) {
				ids = append(ids, strings.Join(append([]string{f}, parts...), "::"))
				break
			}
		}
	}
	if len(ids) == 0 {
		return &tamper.Canaries{Unavailable: "not available: no expected test found in the hidden tests"}
	}
	c := tamper.PlanPytest(ids, nil, read)
	if !c.Available() {
		return c
	}
	rel, _ := strings.CutPrefix(c.File, RepoTests+"/")
	if why := tamper.Inject(ctx, box, c, path.Join(hidden, rel), gd); why != "" {
		return &tamper.Canaries{Unavailable: "not available: " + why}
	}
	return c
}

func sortedKeys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// runOnce is Run as it was before user runs: the restore script and the
// test script in one sealed run as root, no canaries.
func runOnce(ctx context.Context, box sandbox.Sandbox, t *task.Task, opts RunOptions, scratch bool, why string) (*RunResult, error) {
	script := t.EvalScript
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
	rr := &RunResult{RunResult: reward.RunResult[Result]{Attempt: *a}}
	rr.Phases = "single phase: " + why
	if opts.Canaries {
		rr.Canaries = &tamper.Canaries{Unavailable: "not available: " + why}
	}
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
