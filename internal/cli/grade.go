package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/swerve-dev/swerve/internal/episode"
	"github.com/swerve-dev/swerve/internal/reward"
	"github.com/swerve-dev/swerve/internal/reward/grader"
	"github.com/swerve-dev/swerve/internal/reward/swebench"
	"github.com/swerve-dev/swerve/internal/reward/tamper"
	"github.com/swerve-dev/swerve/internal/sandbox"
	"github.com/swerve-dev/swerve/internal/task"
)

func init() { register(newGradeCmd) }

// checkGrader refuses tasks whose grader cannot be chosen (an unknown
// --reward or grader field).
func checkGrader(t *task.Task, force string) error {
	_, err := grader.Choose(t, force)
	return err
}

// gradeInBox opens a fresh box for t and grades it with opts (a patch, or
// the task's gold solution). A box the patch's code killed is settled as
// run and validate settle it (grader.Settle): reward 0, unless the task's
// reference run dies the same way.
func gradeInBox(ctx context.Context, bf *boxFlags, t *task.Task, opts grader.Options, stderr io.Writer) (*grader.Outcome, error) {
	if _, err := grader.Choose(t, opts.Force); err != nil {
		return nil, err
	}
	open := boxOpener(bf, stderr)
	box, workdir, err := open(ctx, t)
	if err != nil {
		return nil, err
	}
	defer box.Close(context.WithoutCancel(ctx))
	o := opts
	o.Workdir = workdir
	out, err := grader.Grade(ctx, box, t, o)
	if err != nil && ctx.Err() == nil {
		box.Close(context.WithoutCancel(ctx)) // a dead box: free it before the next opens
		out, err = grader.Settle(ctx, err, t, opts, grader.SettleOptions{Open: open, Again: true})
	}
	return out, err
}

// boxOpener opens fresh boxes for a task as the box flags say, and says
// where the repository is in them.
func boxOpener(bf *boxFlags, stderr io.Writer) grader.Opener {
	return func(ctx context.Context, t *task.Task) (sandbox.Sandbox, string, error) {
		reward.Phase(ctx, "opening a box")
		opened := time.Now()
		box, backend, err := bf.open(ctx, *t, stderr)
		if err != nil {
			return nil, "", &openError{err}
		}
		reward.Phase(ctx, fmt.Sprintf("box open (%.1fs)", time.Since(opened).Seconds()))
		workdir := bf.Workdir
		if backend == "local" && workdir == "" {
			workdir = "." // the copy of the repository is the box's directory
		}
		return box, workdir, nil
	}
}

// withGradePhases makes the phases of a grade (opening the box, applying
// the patch, running the tests, grading) visible while it works: a line
// each on stderr when stderr is a terminal, and at --log-level info in the
// log. Stdout (the verdict's JSON) never gets them.
func withGradePhases(ctx context.Context, stderr io.Writer, id string) context.Context {
	tty := isTerminal(stderr)
	start := time.Now()
	return reward.WithPhases(ctx, func(phase string) {
		if tty {
			fmt.Fprintf(stderr, "swerve: %s: %s\n", id, phase)
			return
		}
		slog.Info("grade", "instance_id", id, "phase", phase, "elapsed", time.Since(start).Round(time.Millisecond))
	})
}

// openError marks an error of gradeInBox as the box's that would not open.
type openError struct{ err error }

func (e *openError) Error() string { return e.err.Error() }
func (e *openError) Unwrap() error { return e.err }

// gradeErrorKind names what failed when gradeInBox returned an error: the
// task could not be graded, which is no verdict (see episode.Classify).
func gradeErrorKind(err error) episode.ErrorKind {
	phase := episode.PhaseGrade
	if _, ok := errors.AsType[*openError](err); ok {
		phase = episode.PhaseOpen
	}
	kind, _ := episode.Classify(phase, err)
	return kind
}

func newGradeCmd() *cobra.Command {
	var (
		df                 datasetFlags
		bf                 boxFlags
		logPath, patchPath string
		gold               bool
		timeout            time.Duration
		force, saveLog     string
		predsPath, runID   string
		logDir, reportDir  string
		workers            int
		strictMarkers      bool
		learnGold          bool
	)
	var tamperMode string
	cmd := &cobra.Command{
		Use:   "grade --dataset D (--instance_id ID (--log FILE | --patch FILE | --gold) | --predictions FILE)",
		Short: "Grade a test log, or a patch in a fresh box, the way the official harness does",
		Long: `grade grades one task the way its dataset's own tooling does and prints
swerve's verdict with the grader's own result under it. The grader comes
from --reward, else the task's grader field, else its image name, as
upstream runtimes decide it:

  swebench    the SWE-bench harness (5.x): the eval script's test section, the
              row's log parser, FAIL_TO_PASS / PASS_TO_PASS; its report.json
  swefactory  the OMNIGRIL_EXIT_CODE=<n> the eval script echoes; 0 resolves
              when (in a box) the test output shows the tests ran and passed
  r2e         R2E-Gym: run_tests.sh's pytest summary must equal the row's
              expected_output_json
  swesmith    SWE-smith's harness: its test command over the FAIL_TO_PASS files,
              no FAIL_TO_PASS failing and no PASS_TO_PASS regressing
  harbor      a Harbor task's tests/test.sh, then /logs/verifier/reward.json or
              reward.txt

With --log it grades an existing eval log (the harness's test_output.txt): no
container is needed (not for harbor tasks, whose reward is a file the tests
write). With --patch (or --gold for the task's own fix: its gold patch, or a
Harbor task's solution/solve.sh) it opens a fresh box from the task's image,
applies the patch as the harness does (git apply, then --3way, --reject, then
patch --fuzz=5), runs the tests under --eval_timeout, and grades the output.
An empty patch file runs the tests on the unpatched repository; a file that
is no diff at all (no file header git apply or patch reads) is refused at
once, before any box opens. While it works grade says what it is doing
(opening the box, applying the patch, running the tests, grading) on stderr
when that is a terminal, and in the log at --log-level info.

In a box the eval script runs sealed: bash's own trace of it carries a
random nonce the tests never see, and every verdict is read from those
trace lines (the test-section markers, the exit code, SWE-Factory's echo),
so markers the code under test prints count for nothing. A log given with
--log carries no such proof. When it holds bash's trace of the markers
("+ : '>>>>> Start Test Output'", as every 5.x harness log does) it is read
as the harness reads it, anchored on those trace lines. A log with no trace
line for either marker (an older layout: plain marker lines) is graded by
the 5.x harness's own rule (the section from the first place the marker text
appears), agreeing with it; the verdict is marked "anchored": false and
stderr says unanchored, since a marker the tests print moves that section.
--strict-markers refuses such a log instead: one line naming the task, exit
code 3 (no verdict).

For one task stdout is a JSON object, the verdict first:
  {"instance_id", "reward", "resolved", "reason", "tampered": [findings],
   "tamper": mode (not for --log), "grader", "sealed", "anchored",
   "canaries", "canary_kind", "phases", "exit_code" (when a script ran),
   "apply_failed", "timed_out", "tests", "tests_baseline",
   "report": the grader's own result, untouched (SWE-bench: report.json)}
reward, resolved and reason are swerve's: under --tamper zero a finding
makes them 0, false, "tampered: <what>", while "report" keeps the official
grader's verdict. The verdict and its reason also go to stderr; the exit
code is 0 when resolved, 1 when not, and 3 when the task could not be graded
(a box that would not open, a missing image, the engine, the grader
itself): that is no verdict. A box that dies while the patch's code runs (the
eval script, the tests) is not that: it is reward 0, "box died under the
patch: <how>", unless the task's gold patch dies the same way on that image
(asked once per image, in a fresh box).

"tests" is how many tests the run produced results for (swebench, r2e,
swesmith; for swefactory the results its evidence check read, for harbor
the tests that passed). A gold grade (--gold, validate) keeps its count per task and
image content id under $SWERVE_CACHE_DIR/baseline; every later grade of
the task on that image is held to it: a resolved run with fewer distinct
tests, or fewer results under one test name (parameters aside), gets the
finding "fewer tests ran than the gold patch's run: N < M", and reward 0
under --tamper zero.
"tests_baseline" says what the count was held to, or "unknown" when no
gold run is known; --baseline (with --patch or --predictions) runs the
gold patch first when it is not.

With --predictions it grades a SWE-bench predictions file (JSONL, a JSON
list, or a JSON object keyed by instance_id; fields instance_id,
model_name_or_path, model_patch), --max_workers at a time, and writes what
the harness writes: logs/run_evaluation/<run_id>/<model>/<instance_id>/
{patch.diff, test_output.txt, report.json} and <model>.<run_id>.json with the
resolved, unresolved, empty-patch and error ids. Instances whose report.json
exists are not run again, so an interrupted run resumes. An instance that
could not be graded for a reason outside the patch (box, image, engine,
grader) is among error_ids with its reason in failure_reasons, and makes the
exit code 3; rerunning grades it again.

A patch graded in a box is also checked for tampering: files and lines that
reach into the test run instead of the code (a module shadowing pytest, a
conftest.py, test configuration, edits to the runner or to test files the
hidden tests do not replace, code that monkeypatches unittest or pytest),
and, for SWE-bench tasks of django, the pytest family and sympy, two canary
tests under random names added to the hidden tests, one that must fail and
one that must pass. --tamper flag (the default) prints each finding as
"tampered: <what>" beside the official verdict and report; zero makes any
finding reward 0 (what swerve run does); ignore skips both defences. With
--predictions report.json keeps the harness's shape; swerve's verdict on an
instance with findings (the object above without "report") is kept in
tampered.json beside it, and the instance is listed in the summary's
tampered_ids (the reason in failure_reasons); under zero those instances
count as unresolved.`,
		Example: `  swerve grade --dataset verified-test.parquet --instance_id django__django-16901 --log test_output.txt
  swerve grade --dataset verified-test.parquet --instance_id django__django-16901 --gold
  swerve grade --dataset verified-test.parquet --instance_id django__django-16901 --patch fix.diff --save-log out.log
  swerve grade --dataset verified-test.parquet --predictions preds.jsonl --run_id try1 --max_workers 4
  swerve grade --dataset verified-test.parquet --instance_id django__django-16901 --patch model.diff --tamper zero`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := bf.check(cmd.Context(), predsPath != ""); err != nil {
				return err
			}
			mode, err := tamper.ParseMode(tamperMode)
			if err != nil {
				return err
			}
			if predsPath != "" {
				if logPath != "" || patchPath != "" || gold {
					return fmt.Errorf("--predictions grades many tasks; it does not go with --log, --patch or --gold")
				}
				preds, err := loadPredictions(predsPath)
				if err != nil {
					return err
				}
				tasks, err := df.load(cmd)
				if err != nil {
					return err
				}
				for i := range tasks {
					if err := checkGrader(&tasks[i], force); err != nil {
						return err
					}
				}
				if err := bf.checkTasks(cmd.Context(), tasks); err != nil {
					return err
				}
				return gradePredictions(cmd, tasks, preds, &bf, force, timeout, workers, runID, logDir, reportDir, mode, learnGold)
			}
			modes := 0
			for _, on := range []bool{logPath != "", patchPath != "", gold} {
				if on {
					modes++
				}
			}
			if modes != 1 {
				return fmt.Errorf("give exactly one of --log, --patch, --gold and --predictions")
			}
			var patch []byte
			if patchPath != "" {
				// Read and checked before any box opens: a file that is
				// no diff at all is refused at once.
				if patch, err = os.ReadFile(patchPath); err != nil {
					return fmt.Errorf("--patch: %w", err)
				}
				if err := reward.CheckDiff(string(patch)); err != nil {
					return fmt.Errorf("--patch %s: %w (no \"diff --git\", \"---\"/\"+++\" or \"***\"/\"---\" file header): patch did not apply; an empty file runs the tests on the unpatched repository", patchPath, err)
				}
			}
			t, err := oneTask(&df, func() ([]task.Task, error) { return df.load(cmd) })
			if err != nil {
				return err
			}
			if err := checkGrader(&t, force); err != nil {
				return err
			}
			if logPath == "" {
				// A box will open: its engine must answer first.
				if err := bf.checkTasks(cmd.Context(), []task.Task{t}); err != nil {
					return err
				}
			}
			var res *grader.Outcome
			switch {
			case logPath != "":
				log, err := os.ReadFile(logPath)
				if err != nil {
					return fmt.Errorf("--log: %w", err)
				}
				if res, err = grader.GradeLogOpts(&t, force, string(log), grader.LogOptions{StrictMarkers: strictMarkers}); err != nil {
					if errors.Is(err, swebench.ErrUnanchored) {
						// Refused, not graded: no verdict.
						cmd.PrintErrf("swerve: %v (--strict-markers)\n", err)
						return exitError{exitTaskErrors}
					}
					return err
				}
			default:
				opts := grader.Options{Force: force, Gold: gold, EvalTimeout: timeout, Tamper: mode, Patch: string(patch)}
				ctx := withGradePhases(cmd.Context(), cmd.ErrOrStderr(), t.InstanceID)
				if learnGold && !gold {
					// The gold run's test count, which every grade is
					// held to: one gold run per task and image, the first
					// time (validate and --gold keep it too).
					reward.Phase(ctx, "--baseline: the gold patch's run first, if its test count is not known yet")
					if err := grader.DefaultBaseline().LearnGold(ctx, &t, opts, boxOpener(&bf, cmd.ErrOrStderr())); err != nil {
						if ctx.Err() != nil {
							return err
						}
						cmd.PrintErrf("swerve: %s: --baseline: %v\n", t.InstanceID, err)
					}
				}
				started := time.Now()
				if res, err = gradeInBox(ctx, &bf, &t, opts, cmd.ErrOrStderr()); err != nil {
					if ctx.Err() != nil {
						return err
					}
					cmd.PrintErrf("swerve: %s: %s error, no verdict: %v\n", t.InstanceID, gradeErrorKind(err), err)
					return exitError{exitTaskErrors}
				}
				reward.Phase(ctx, fmt.Sprintf("graded in %.1fs", time.Since(started).Seconds()))
				if saveLog != "" {
					if err := os.WriteFile(saveLog, []byte(res.Log), 0o644); err != nil {
						return fmt.Errorf("--save-log: %w", err)
					}
				}
			}
			tmode := mode
			if logPath != "" {
				tmode = "" // no tamper check reads a log
			}
			if err := writeVerdict(cmd.OutOrStdout(), newVerdict(res, tmode)); err != nil {
				return err
			}
			printTampered(cmd.ErrOrStderr(), t.InstanceID, res)
			if logPath != "" && res.Grader == task.GraderSWEBench && !res.Anchored {
				cmd.PrintErrf("swerve: %s: unanchored: the log's test output markers are plain lines with no bash trace of them; graded by the harness's own rule, which a printed marker can move (--strict-markers refuses such logs)\n", t.InstanceID)
			}
			if res.Resolved {
				cmd.PrintErrf("swerve: %s: resolved\n", t.InstanceID)
			} else {
				cmd.PrintErrf("swerve: %s: not resolved: %s\n", t.InstanceID, res.Reason)
			}
			if !res.Resolved {
				return exitError{1}
			}
			return nil
		},
	}
	df.register(cmd.Flags())
	bf.register(cmd.Flags())
	f := cmd.Flags()
	f.StringVar(&logPath, "log", "", "grade this eval log (no box needed)")
	f.StringVar(&patchPath, "patch", "", "apply this diff in a fresh box and grade the run")
	f.BoolVar(&gold, "gold", false, "grade the task's own fix (gold patch; a Harbor task's solution/solve.sh)")
	f.BoolVar(&learnGold, "baseline", false, "before grading --patch or --predictions, run the gold patch once per task and image if its test count is not yet known")
	secondsVar(f, &timeout, "eval_timeout", reward.DefaultEvalTimeout, "kill the eval script (and all it started) after this long")
	f.StringVar(&force, "reward", "", "grader to use instead of the task's: swebench, swefactory, r2e, swesmith, harbor")
	f.StringVar(&saveLog, "save-log", "", "write the eval log here")
	f.StringVar(&predsPath, "predictions", "", "grade this SWE-bench predictions file (.jsonl or .json)")
	f.StringVar(&runID, "run_id", "swerve", "run id, as in the harness's log directory and summary name")
	f.StringVar(&logDir, "log_dir", filepath.Join("logs", "run_evaluation"), "where per-instance logs and reports go")
	f.StringVar(&reportDir, "report_dir", ".", "where the run summary goes")
	workersVar(f, &workers, "max_workers", 4, "predictions graded at once")
	f.BoolVar(&strictMarkers, "strict-markers", false, "with --log: refuse a SWE-bench log whose test output markers bash did not trace, instead of grading it unanchored by the harness's rule")
	f.StringVar(&tamperMode, "tamper", string(tamper.ModeFlag), "tamper findings: flag (print beside the verdict), zero (reward 0), ignore (no check)")
	return cmd
}

// verdict is what grade prints for one task: the reward swerve gives at
// the top, then how it was read, then the grader's own report untouched.
// With --tamper zero a finding makes reward 0 and resolved false here
// while the report keeps the official grader's verdict.
type verdict struct {
	InstanceID string  `json:"instance_id"`
	Reward     float64 `json:"reward"`
	Resolved   bool    `json:"resolved"`
	Reason     string  `json:"reason"`
	// Tampered lists the tamper defences' findings; [] when none.
	Tampered []string `json:"tampered"`
	// Tamper is the --tamper mode the verdict was given under; absent for
	// a log (no tamper check reads one).
	Tamper     tamper.Mode `json:"tamper,omitempty"`
	Grader     task.Grader `json:"grader"`
	Sealed     bool        `json:"sealed"`
	Anchored   bool        `json:"anchored"`
	Canaries   string      `json:"canaries,omitempty"`
	CanaryKind string      `json:"canary_kind,omitempty"`
	// Phases says how the eval script ran (swebench, r2e, swesmith:
	// "phased", or "single phase: <why>").
	Phases string `json:"phases,omitempty"`
	// ExitCode is the eval script's own exit status; absent when no
	// script ran here (--log, a patch that did not apply).
	ExitCode    *int `json:"exit_code,omitempty"`
	ApplyFailed bool `json:"apply_failed,omitempty"`
	TimedOut    bool `json:"timed_out,omitempty"`
	// Tests is how many tests the run produced results for, and
	// TestsBaseline what that was held to (see grader.Outcome); absent
	// for graders that count none.
	Tests         *int   `json:"tests,omitempty"`
	TestsBaseline string `json:"tests_baseline,omitempty"`
	// Report is the grader's own result: the harness's report.json object
	// for swebench (its "resolved" is the official verdict, findings or
	// not), SWE-smith's report, the other graders' result objects.
	Report json.RawMessage `json:"report,omitempty"`
}

func newVerdict(res *grader.Outcome, mode tamper.Mode) verdict {
	v := verdict{
		InstanceID: res.InstanceID, Reward: res.Reward, Resolved: res.Resolved, Reason: res.Reason,
		Tampered: res.Tampered, Tamper: mode, Grader: res.Grader, Sealed: res.Sealed, Anchored: res.Anchored,
		Canaries: res.Canaries, CanaryKind: res.CanaryKind, Phases: res.Phases,
		ApplyFailed: res.ApplyFailed, TimedOut: res.TimedOut, Report: res.Report,
	}
	if res.ExitCode >= 0 {
		code := res.ExitCode
		v.ExitCode = &code
	}
	if res.Tests > 0 || res.TestsBaseline != "" {
		n := res.Tests
		v.Tests, v.TestsBaseline = &n, res.TestsBaseline
	}
	if v.Tampered == nil {
		v.Tampered = []string{}
	}
	return v
}

// writeVerdict prints v as indented JSON, test names as they are.
func writeVerdict(w io.Writer, v verdict) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "    ")
	return enc.Encode(v)
}

// printTampered prints an outcome's tamper findings, one a line.
func printTampered(w io.Writer, id string, res *grader.Outcome) {
	for _, f := range res.Tampered {
		fmt.Fprintf(w, "swerve: %s: tampered: %s\n", id, f)
	}
}
