// Package swefactory grades tasks the way SWE-Factory's pipeline does: the
// task's eval script applies its tests, runs them, and prints
// OMNIGRIL_EXIT_CODE=<n> with the test command's exit status; n == 0 is a
// resolved task (reward 1), anything else is not.
//
// SWE-Factory reads the printed line, which the code under test can print
// too (from a child that outlives the tests, or before killing the
// script's shell). Run does not: it runs the script sealed
// (reward.RunScript) and takes the verdict from the last line bash itself
// traced for the script's `echo OMNIGRIL_EXIT_CODE=<n>`; a printed marker
// without that trace is no verdict (reward 0, with the reason). A script
// that never turns xtrace on gets `set -x` put first, so its own echo is
// traced; one that turns xtrace off before the echo gets no verdict.
// Evaluate, for logs made elsewhere (swerve grade --log), still reads the
// last printed line, as SWE-Factory does.
//
// In a sealed run a status of 0 is not enough: the test output must show
// the row's tests ran and passed (evidence.go), where a log parser reads
// the test command. The run is phased where the script allows
// (reward.RunPhased: the tests as the grading user, the test files
// root's), and the grader's mutant canaries run in a second run of the
// test command after the script's echo of the marker (CanaryScript), so
// that a must-fail test cannot change the verdict.
package swefactory

import (
	"context"
	"fmt"
	"strings"

	"github.com/swerve-dev/swerve/internal/lazyre"
	"github.com/swerve-dev/swerve/internal/reward"
	"github.com/swerve-dev/swerve/internal/reward/swebench"
	"github.com/swerve-dev/swerve/internal/sandbox"
	"github.com/swerve-dev/swerve/internal/task"
)

// Marker starts the line the eval script prints with the exit status.
const Marker = "OMNIGRIL_EXIT_CODE"

// markerLine matches the printed line itself, whatever the number of digits
// — not the `+ echo OMNIGRIL_EXIT_CODE=...` line bash's xtrace shows for it.
var markerLine = lazyre.New(`(?m)^` + Marker + `=(\d+)\r?$`)

// markerTrace matches bash's trace of the script's echo of the marker.
var markerTrace = lazyre.New(`^echo ` + Marker + `=(\d+)$`)

// xtraceOn matches a `set` line that turns xtrace on (set -x, set -uxo …).
var xtraceOn = lazyre.New(`(?m)^\s*set\s+-[a-zA-Z]*x`)

// Result is one graded log.
type Result struct {
	InstanceID string  `json:"instance_id"`
	Reward     float64 `json:"reward"`
	Resolved   bool    `json:"resolved"`
	// ExitCode is the number the last marker line printed; -1 without one.
	ExitCode int    `json:"exit_code"`
	Reason   string `json:"reason"`
	// Evidence says whether the test output was read for evidence that
	// the tests ran (sealed runs only; see evidence.go): "checked", or
	// "not applied: <why>". Empty for logs made elsewhere.
	Evidence string `json:"evidence,omitempty"`
	// TestResults is the number of test results the framework's parser
	// read in the test command's output; absent where none was read.
	TestResults *int `json:"test_results,omitempty"`
}

// Evaluate reads the exit status from log. When the marker is printed more
// than once (a test may print it too), the last line counts: the script
// prints its own after the tests.
func Evaluate(t *task.Task, log string) *Result {
	r := &Result{InstanceID: t.InstanceID, ExitCode: -1}
	all := markerLine.FindAllStringSubmatch(log, -1)
	if len(all) == 0 {
		r.Reason = "no " + Marker + "=<n> line in the log: the eval script did not finish its tests"
		return r
	}
	verdict(r, all[len(all)-1][1])
	return r
}

// EvaluateTrace reads the exit status from the trusted trace of a sealed
// run: the last `echo OMNIGRIL_EXIT_CODE=<n>` bash traced. log is only
// read to say why there is no verdict.
func EvaluateTrace(t *task.Task, log string, tr *reward.Trace) *Result {
	r := &Result{InstanceID: t.InstanceID, ExitCode: -1}
	digits := ""
	for _, l := range tr.Lines {
		if m := markerTrace.FindStringSubmatch(l.Text); m != nil {
			digits = m[1]
		}
	}
	if digits == "" {
		if markerLine.MatchString(log) {
			r.Reason = "no trusted " + Marker + ": the log prints the marker, but bash did not trace the eval script's echo of it (printed by the code under test, or the script's shell died first)"
		} else {
			r.Reason = "no " + Marker + "=<n> line in the log: the eval script did not finish its tests"
		}
		return r
	}
	verdict(r, digits)
	return r
}

// verdict fills r from the marker's digits.
func verdict(r *Result, digits string) {
	n := 0
	for _, d := range digits {
		if n > 1<<20 {
			n = 1 << 20 // a huge status is still non-zero
			break
		}
		n = n*10 + int(d-'0')
	}
	r.ExitCode = n
	if n == 0 {
		r.Reward, r.Resolved, r.Reason = 1, true, "resolved"
	} else {
		r.Reason = fmt.Sprintf("tests failed: %s=%s", Marker, digits)
	}
}

// Traced returns script with `set -x` put first (after a #! line) when no
// line of it turns xtrace on, so that bash traces its echo of the marker.
func Traced(script string) string {
	if xtraceOn.MatchString(script) {
		return script
	}
	if strings.HasPrefix(script, "#!") {
		first, rest, _ := strings.Cut(script, "\n")
		return first + "\nset -x\n" + rest
	}
	return "set -x\n" + script
}

// RunOptions configure Run.
type RunOptions struct {
	reward.RunOptions
	// Canary, when set, is the in-box path of a canary injector
	// (tamper.Canaries.Injector) already written there: the script runs
	// it after its echo of the marker and then the test command again
	// (see CanaryScript), so that the canaries cannot change the verdict.
	Canary string
	// SinglePhase runs the eval script as one run, as root; else it runs
	// in phases where it can (reward.RunPhased: the tests as the grading
	// user, the test files root's), the canary injector as root.
	SinglePhase bool
}

// RunResult is a graded run.
type RunResult struct {
	reward.RunResult[Result]
	// Canaries is the parsed output of the canary run (RunOptions.Canary),
	// nil when it was not asked for or bash did not trace it.
	Canaries swebench.StatusMap
}

var _ reward.RunFunc[RunOptions, *RunResult] = Run

// Run applies the patch in a fresh box, runs the eval script sealed and
// grades it on what bash traced (EvaluateTrace), then on the evidence in
// the test output (CheckEvidence).
// A patch that does not apply or a timed-out script give reward 0 with the
// reason; errors mean the box failed.
func Run(ctx context.Context, box sandbox.Sandbox, t *task.Task, opts RunOptions) (*RunResult, error) {
	if t.EvalScript == "" {
		return nil, fmt.Errorf("task %s: eval_script: empty; swefactory grading runs the dataset's eval script", t.InstanceID)
	}
	script := Traced(t.EvalScript)
	if opts.Canary != "" {
		var err error
		if script, err = CanaryScript(script, opts.Canary); err != nil {
			return nil, fmt.Errorf("task %s: eval_script: %w", t.InstanceID, err)
		}
	}
	ao := reward.AttemptOptions{Patch: opts.Patch, Script: script, EvalTimeout: opts.EvalTimeout, Workdir: opts.Workdir, Phased: !opts.SinglePhase}
	if opts.Canary != "" {
		// The canaries' run of the test command is the grader's, on top
		// of the script's: it gets a budget of its own, and the script's
		// part keeps the row's timeout.
		ao.RootLines = []string{injectLine(opts.Canary)}
		ao.AfterRoot = opts.EvalTimeout
		if ao.AfterRoot <= 0 {
			ao.AfterRoot = reward.DefaultEvalTimeout
		}
	}
	a, err := reward.Try(ctx, box, ao)
	if err != nil {
		return nil, fmt.Errorf("task %s: %w", t.InstanceID, err)
	}
	rr := &RunResult{RunResult: reward.RunResult[Result]{Attempt: *a}}
	switch {
	case a.ApplyFailed:
		rr.Result = &Result{InstanceID: t.InstanceID, ExitCode: -1, Reason: "patch did not apply: " + reward.LastLine(a.ApplyLog)}
	case a.TimedOut:
		rr.Result = &Result{InstanceID: t.InstanceID, ExitCode: -1, Reason: "eval timed out: " + reward.LastLine(a.Log)}
	default:
		rr.Result = EvaluateTrace(t, a.Log, a.Trace)
		if section, ok := Section(a.Log, a.Trace); ok {
			ev := CheckEvidence(t, t.EvalScript, section)
			withEvidence(rr.Result, ev)
			if opts.Canary != "" && ev.Applied {
				if cs, ok := CanarySection(a.Log, a.Trace, opts.Canary); ok {
					rr.Canaries = parse(t, cs)
				}
			}
		}
	}
	return rr, nil
}
