package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/swerve-dev/swerve/internal/episode"
	"github.com/swerve-dev/swerve/internal/reward"
	"github.com/swerve-dev/swerve/internal/reward/grader"
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
	open := func(ctx context.Context, t *task.Task) (sandbox.Sandbox, string, error) {
		box, backend, err := bf.open(ctx, *t, stderr)
		if err != nil {
			return nil, "", &openError{err}
		}
		workdir := bf.Workdir
		if backend == "local" && workdir == "" {
			workdir = "." // the copy of the repository is the box's directory
		}
		return box, workdir, nil
	}
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
	)
	var tamperMode string
	cmd := &cobra.Command{
		Use:   "grade --dataset D (--instance_id ID (--log FILE | --patch FILE | --gold) | --predictions FILE)",
		Short: "Grade a test log, or a patch in a fresh box, the way the official harness does",
		Long: `grade grades one task the way its dataset's own tooling does and prints the
grader's result. The grader comes from --reward, else the task's grader field,
else its image name, as upstream runtimes decide it:

  swebench    the SWE-bench harness (5.x): the eval script's test section, the
              row's log parser, FAIL_TO_PASS / PASS_TO_PASS; prints report.json
  swefactory  the OMNIGRIL_EXIT_CODE=<n> the eval script echoes; 0 resolves
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
An empty patch file runs the tests on the unpatched repository.

In a box the eval script runs sealed: bash's own trace of it carries a
random nonce the tests never see, and every verdict is read from those
trace lines (the test-section markers, the exit code, SWE-Factory's echo),
so markers the code under test prints count for nothing. A log given with
--log carries no such proof: it is read as the harness reads it, anchored
on the markers' "+ : '>>>>> ...'" trace lines.

The verdict and its reason go to stderr; the exit code is 0 when resolved,
1 when not, and 3 when the task could not be graded (a box that would not
open, a missing image, the engine, the grader itself): that is no verdict. A
box that dies while the patch's code runs (the eval script, the tests) is not
that: it is reward 0, "box died under the patch: <how>", unless the task's gold
patch dies the same way on that image (asked once per image, in a fresh box).

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
--predictions the findings are kept in tampered.json beside report.json and
listed in the summary's tampered_ids (the reason in failure_reasons); under
zero those instances count as unresolved.`,
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
				return gradePredictions(cmd, tasks, preds, &bf, force, timeout, workers, runID, logDir, reportDir, mode)
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
			t, err := oneTask(&df, func() ([]task.Task, error) { return df.load(cmd) })
			if err != nil {
				return err
			}
			if err := checkGrader(&t, force); err != nil {
				return err
			}
			var res *grader.Outcome
			switch {
			case logPath != "":
				log, err := os.ReadFile(logPath)
				if err != nil {
					return fmt.Errorf("--log: %w", err)
				}
				if res, err = grader.GradeLog(&t, force, string(log)); err != nil {
					return err
				}
			default:
				opts := grader.Options{Force: force, Gold: gold, EvalTimeout: timeout, Tamper: mode}
				if patchPath != "" {
					b, err := os.ReadFile(patchPath)
					if err != nil {
						return fmt.Errorf("--patch: %w", err)
					}
					opts.Patch = string(b)
				}
				if res, err = gradeInBox(cmd.Context(), &bf, &t, opts, cmd.ErrOrStderr()); err != nil {
					if cmd.Context().Err() != nil {
						return err
					}
					cmd.PrintErrf("swerve: %s: %s error, no verdict: %v\n", t.InstanceID, gradeErrorKind(err), err)
					return exitError{exitTaskErrors}
				}
				if saveLog != "" {
					if err := os.WriteFile(saveLog, []byte(res.Log), 0o644); err != nil {
						return fmt.Errorf("--save-log: %w", err)
					}
				}
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s\n", res.Report)
			printTampered(cmd.ErrOrStderr(), t.InstanceID, res)
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
	secondsVar(f, &timeout, "eval_timeout", reward.DefaultEvalTimeout, "kill the eval script (and all it started) after this long")
	f.StringVar(&force, "reward", "", "grader to use instead of the task's: swebench, swefactory, r2e, swesmith, harbor")
	f.StringVar(&saveLog, "save-log", "", "write the eval log here")
	f.StringVar(&predsPath, "predictions", "", "grade this SWE-bench predictions file (.jsonl or .json)")
	f.StringVar(&runID, "run_id", "swerve", "run id, as in the harness's log directory and summary name")
	f.StringVar(&logDir, "log_dir", filepath.Join("logs", "run_evaluation"), "where per-instance logs and reports go")
	f.StringVar(&reportDir, "report_dir", ".", "where the run summary goes")
	f.IntVar(&workers, "max_workers", 4, "predictions graded at once")
	f.StringVar(&tamperMode, "tamper", string(tamper.ModeFlag), "tamper findings: flag (print beside the verdict), zero (reward 0), ignore (no check)")
	return cmd
}

// printTampered prints an outcome's tamper findings, one a line.
func printTampered(w io.Writer, id string, res *grader.Outcome) {
	for _, f := range res.Tampered {
		fmt.Fprintf(w, "swerve: %s: tampered: %s\n", id, f)
	}
}
