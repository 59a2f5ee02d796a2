// Package swesmith grades SWE-smith tasks the way SWE-smith's harness does
// (swesmith/harness/grading.py and eval.py): check out the task's bug
// commit, apply the patch, run the repository profile's test command over
// the FAIL_TO_PASS test files between the harness's markers, parse the
// section with the profile's log parser and check the tests.
//
// Its rules differ from SWE-bench's on purpose (the harness runs only part
// of a test suite):
//
//   - a PASS_TO_PASS test missing from the log counts as passed; only an
//     explicit FAILED or ERROR fails it, and a SKIPPED test is neither
//     passed nor failed;
//   - FAIL_TO_PASS and PASS_TO_PASS are first narrowed to the tests in the
//     files the command ran (the FAIL_TO_PASS files, for pytest profiles);
//   - the section is cut between bash's trace of the two markers
//     ("+ : '>>>>> Start Test Output'"), not the marker text itself.
//
// The task is resolved when no FAIL_TO_PASS test and no PASS_TO_PASS test
// failed. swerve is stricter than the harness in two places, both because
// a missing result is what a patch that breaks the tests produces:
//
//   - a FAIL_TO_PASS test missing from the log is a failure (the harness
//     counts it as passed, so a patch that stops the test from being
//     collected — deleting it, renaming it, crashing its module — would
//     be rewarded for a fix it did not make);
//   - a log in which the parser finds no test result at all (the tests did
//     not run, or could not be collected) is not resolved.
//
// In a sealed run (Options.Trace), the section is cut between bash's own
// trace of the two markers, which the tests cannot print.
//
// Before the tests run, the test files FAIL_TO_PASS and PASS_TO_PASS name
// are reset to the bug commit, as R2E-Gym's runtime does for SWE-smith
// images, so a patch cannot pass by editing the tests.
package swesmith

import (
	"fmt"
	"sort"
	"strings"

	"github.com/swerve-dev/swerve/internal/reward"
	"github.com/swerve-dev/swerve/internal/reward/swebench"
	"github.com/swerve-dev/swerve/internal/reward/tamper"
	"github.com/swerve-dev/swerve/internal/task"
)

// Markers SWE-smith's eval script prints, and the failure markers it
// writes into a test log.
const (
	StartTestOutput = ">>>>> Start Test Output"
	EndTestOutput   = ">>>>> End Test Output"
	ApplyPatchFail  = ">>>>> Patch Apply Failed"
	TestsTimeout    = ">>>>> Tests Timed Out"
)

// Result is one graded log. Its JSON form is SWE-smith's report.json.
type Result struct {
	PatchIsNone  bool `json:"patch_is_None"`
	PatchExists  bool `json:"patch_exists"`
	PatchApplied bool `json:"patch_successfully_applied"`
	Resolved     bool `json:"resolved"`
	// TestsStatus is present when the log held a test run.
	TestsStatus *swebench.TestsStatus `json:"tests_status,omitempty"`

	InstanceID string `json:"-"`
	// Found: the log held a test section and test results.
	Found bool `json:"-"`
	// Status is what the parser read from the section.
	Status swebench.StatusMap `json:"-"`
	Parser string             `json:"-"`
	// CanaryStatus is what the section says of the canaries
	// (Options.Canaries), which Status does not hold.
	CanaryStatus swebench.StatusMap `json:"-"`
	Reason       string             `json:"-"`
}

// Reward is 1 for a resolved task and 0 otherwise.
func (r *Result) Reward() float64 {
	if r.Resolved {
		return 1
	}
	return 0
}

// Options adjust Evaluate.
type Options struct {
	// NoPatch grades a run of the unpatched repository (patch_exists false).
	NoPatch bool
	// Trace is the trusted trace of a sealed run (reward.RunScript): when
	// set, the section is cut between bash's own trace of the markers.
	Trace *reward.Trace
	// Canaries, when set, are the canary tests the run carried: their
	// results are taken out of the status map (Result.CanaryStatus).
	Canaries *tamper.Canaries
}

// Evaluate grades log, the eval script's output.
//
// SWE-smith's own report leaves patch_successfully_applied false even for
// a log it grades; this Result sets it when the log held a test run, as
// SWE-bench's report does.
func Evaluate(t *task.Task, log string, opts Options) (*Result, error) {
	repo := Repo(t)
	parser, parserName, err := parserFor(t, repo)
	if err != nil {
		return nil, fmt.Errorf("task %s: log_parser: %w", t.InstanceID, err)
	}
	r := &Result{InstanceID: t.InstanceID, PatchExists: !opts.NoPatch, Parser: parserName}
	section, reason := testSection(log)
	if opts.Trace != nil {
		section, reason = sealedSection(log, opts.Trace)
	}
	if reason != "" {
		r.Reason = reason
		return r, nil
	}
	sm := parser(section, t)
	if opts.Canaries != nil && opts.Canaries.Available() {
		r.CanaryStatus = swebench.StatusMap{}
		for k, v := range sm {
			if opts.Canaries.IsCanary(k) {
				r.CanaryStatus[k] = v
				delete(sm, k)
			}
		}
	}
	if len(sm) == 0 {
		r.Reason = "no test results in the log's test section (" + parserName + ")"
		return r, nil
	}
	r.Found, r.PatchApplied, r.Status = true, true, sm
	files := testFiles(t, repo)
	ts := testsReport(sm, narrow(t.FailToPass, files), narrow(t.PassToPass, files))
	r.TestsStatus = &ts
	r.Resolved = len(ts.FailToPass.Failure) == 0 && len(ts.PassToPass.Failure) == 0
	switch {
	case r.Resolved:
		r.Reason = "resolved"
	case len(ts.FailToPass.Failure) > 0 && len(ts.PassToPass.Failure) > 0:
		r.Reason = fmt.Sprintf("tests failed: FAIL_TO_PASS %s; PASS_TO_PASS %s", names(ts.FailToPass.Failure), names(ts.PassToPass.Failure))
	case len(ts.FailToPass.Failure) > 0:
		r.Reason = "tests failed: FAIL_TO_PASS " + names(ts.FailToPass.Failure)
	default:
		r.Reason = "tests failed: PASS_TO_PASS " + names(ts.PassToPass.Failure)
	}
	return r, nil
}

// testSection cuts the test output out of log as SWE-smith's
// read_test_output does, or says why there is none.
func testSection(log string) (string, string) {
	switch {
	case strings.Contains(log, ApplyPatchFail):
		return "", "log says Patch Apply Failed"
	case strings.Contains(log, TestsTimeout):
		return "", "log says Tests Timed Out"
	case !strings.Contains(log, StartTestOutput) || !strings.Contains(log, EndTestOutput):
		return "", "test output markers missing: the eval script did not reach its tests"
	}
	startSep, endSep := "+ : '"+StartTestOutput+"'", "+ : '"+EndTestOutput+"'"
	start, end := strings.Index(log, startSep), strings.Index(log, endSep)
	switch {
	case start < 0 || end < 0:
		// The harness slices from -1 and parses nothing.
		return "", "test output markers missing: bash's trace of them (set -x) is not in the log"
	case start > end:
		return "", "test output markers out of order"
	}
	return log[start+len(startSep) : end], ""
}

// sealedSection cuts the test output out of a sealed run's log between
// bash's own trace of the markers.
func sealedSection(log string, tr *reward.Trace) (string, string) {
	switch {
	case strings.Contains(log, ApplyPatchFail):
		return "", "log says Patch Apply Failed"
	case strings.Contains(log, TestsTimeout):
		return "", "log says Tests Timed Out"
	}
	si := tr.Find(": '"+StartTestOutput+"'", 0)
	if si < 0 {
		return "", "test output markers missing: bash did not trace : '" + StartTestOutput + "' (sealed run)"
	}
	ei := tr.Find(": '"+EndTestOutput+"'", si+1)
	if ei < 0 {
		return "", "test output markers missing: bash did not trace : '" + EndTestOutput + "' after the start (sealed run)"
	}
	end := tr.Lines[ei].Start
	if strings.HasSuffix(log[:end], "+ ") {
		end -= len("+ ")
	}
	return log[tr.Lines[si].End:end], ""
}

// Repo is the task's upstream repository as SWE-smith derives it from the
// instance id: owner__name.<commit>.<bug> → owner/name.
func Repo(t *task.Task) string {
	id, _, _ := strings.Cut(t.InstanceID, ".")
	return strings.ReplaceAll(id, "__", "/")
}

// narrow keeps the tests that start with one of files; no files keeps all.
func narrow(tests, files []string) []string {
	if len(files) == 0 {
		return tests
	}
	out := []string{}
	for _, name := range tests {
		for _, f := range files {
			if strings.HasPrefix(name, f) {
				out = append(out, name)
				break
			}
		}
	}
	return out
}

// testsReport applies SWE-smith's rules — passed when PASSED or XFAIL,
// failed when FAILED or ERROR, a SKIPPED test in neither list — except
// that a FAIL_TO_PASS test missing from the log fails (SWE-smith passes
// it); a missing PASS_TO_PASS test passes, as in SWE-smith.
func testsReport(sm swebench.StatusMap, f2p, p2p []string) swebench.TestsStatus {
	empty := func() swebench.Outcome { return swebench.Outcome{Success: []string{}, Failure: []string{}} }
	ts := swebench.TestsStatus{FailToPass: empty(), PassToPass: empty(), FailToFail: empty(), PassToFail: empty()}
	check := func(o *swebench.Outcome, names []string, missingFails bool) {
		for _, name := range names {
			s, ok := sm[name]
			switch {
			case !ok && missingFails:
				o.Failure = append(o.Failure, name)
			case !ok || s == swebench.Passed || s == swebench.XFail:
				o.Success = append(o.Success, name)
			case s == swebench.Failed || s == swebench.Error:
				o.Failure = append(o.Failure, name)
			}
		}
	}
	check(&ts.FailToPass, f2p, true)
	check(&ts.PassToPass, p2p, false)
	return ts
}

// names lists a few test names for a reason line.
func names(tests []string) string {
	const most = 3
	if len(tests) <= most {
		return strings.Join(tests, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(tests[:most], ", "), len(tests)-most)
}

// TestPytest is the test command of most SWE-smith repository profiles.
const TestPytest = "pytest --disable-warnings --color=no --tb=no --verbose"

// repoTestCmds are the profiles whose test command is not TestPytest
// (SWE-smith's MAP_REPO_TO_SPECS), by lower-cased repository.
var repoTestCmds = map[string]string{
	"gin-gonic/gin":        "go test -v ./...",
	"jax-ml/jax":           TestPytest + " -n auto",
	"mido/mido":            TestPytest + " -rs -c /dev/null",
	"paramiko/paramiko":    "pytest -rA --color=no --disable-warnings",
	"pydantic/pydantic":    "/root/.local/bin/uv run " + TestPytest,
	"python/mypy":          "pytest --color=no -rA -k",
	"tkrajina/gpxpy":       "pytest test.py --verbose --color=no --tb=no --disable-warnings",
	"tornadoweb/tornado":   "python -m tornado.test --verbose",
	"un33k/python-slugify": "python test.py --verbose",
}

// TestCommand returns the command SWE-smith runs for a task and the test
// files it narrows FAIL_TO_PASS / PASS_TO_PASS to: for pytest profiles the
// FAIL_TO_PASS files, appended to the command; for mypy a -k expression of
// the FAIL_TO_PASS case names; for others the command alone.
func TestCommand(t *task.Task) (string, []string) {
	repo := strings.ToLower(Repo(t))
	cmd, ok := repoTestCmds[repo]
	if !ok {
		cmd = TestPytest
	}
	if !strings.Contains(cmd, "pytest") {
		return cmd, nil
	}
	if repo == "python/mypy" {
		keys := make([]string, len(t.FailToPass))
		for i, name := range t.FailToPass {
			if j := strings.LastIndex(name, "::"); j >= 0 {
				name = name[j+len("::"):]
			}
			keys[i] = name
		}
		return cmd + ` "` + strings.Join(keys, " or ") + `"`, nil
	}
	files := f2pFiles(t)
	if len(files) == 0 {
		return cmd, nil
	}
	return cmd + " " + strings.Join(files, " "), files
}

// testFiles are the files TestCommand narrows the test lists to.
func testFiles(t *task.Task, _ string) []string {
	_, files := TestCommand(t)
	return files
}

// f2pFiles are the distinct files of the FAIL_TO_PASS tests, sorted.
func f2pFiles(t *task.Task) []string {
	seen := map[string]bool{}
	var out []string
	for _, name := range t.FailToPass {
		f, _, _ := strings.Cut(name, "::")
		if !seen[f] {
			seen[f] = true
			out = append(out, f)
		}
	}
	sort.Strings(out)
	return out
}
