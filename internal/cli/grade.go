package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/swerve-dev/swerve/internal/reward/swebench"
	"github.com/swerve-dev/swerve/internal/reward/swefactory"
	"github.com/swerve-dev/swerve/internal/task"
)

func init() { register(newGradeCmd) }

// graderOf is the grader that grades t: --reward when given, else the
// task's own.
func graderOf(t *task.Task, force string) (task.Grader, error) {
	g := task.Grader(force)
	if g == "" {
		g = t.Grader
	}
	switch g {
	case "", task.GraderSWEBench:
		return task.GraderSWEBench, nil
	case task.GraderSWEFactory:
		return g, nil
	}
	return "", fmt.Errorf("task %s: grader %s: not available yet (swerve grades swebench and swefactory tasks so far)", t.InstanceID, g)
}

// checkGrader refuses tasks whose grader swerve cannot run yet.
func checkGrader(t *task.Task, force string) error {
	_, err := graderOf(t, force)
	return err
}

// graded is one grade, whichever grader gave it.
type graded struct {
	InstanceID string
	Reward     float64
	Reason     string
	// Report is what grade prints: the harness's report.json object for
	// swebench, the result object for swefactory.
	Report      []byte
	Log         string
	ApplyFailed bool
	TimedOut    bool
	Duration    time.Duration
}

func (g *graded) resolved() bool { return g.Reward == 1 }

func fromSWEBench(r *swebench.Result) *graded {
	return &graded{InstanceID: r.InstanceID, Reward: r.Reward(), Reason: r.Reason, Report: r.Report()}
}

func fromSWEFactory(r *swefactory.Result) *graded {
	b, _ := json.MarshalIndent(r, "", "    ")
	return &graded{InstanceID: r.InstanceID, Reward: r.Reward, Reason: r.Reason, Report: b}
}

// gradeLog grades an existing eval log.
func gradeLog(t *task.Task, force, log string) (*graded, error) {
	g, err := graderOf(t, force)
	if err != nil {
		return nil, err
	}
	if g == task.GraderSWEFactory {
		return fromSWEFactory(swefactory.Evaluate(t, log)), nil
	}
	r, err := swebench.Evaluate(t, log, swebench.Options{})
	if err != nil {
		return nil, err
	}
	return fromSWEBench(r), nil
}

// gradeInBox opens a fresh box for t, applies patch and grades the eval run.
func gradeInBox(ctx context.Context, bf *boxFlags, t *task.Task, force, patch string, timeout time.Duration, stderr io.Writer) (*graded, error) {
	g, err := graderOf(t, force)
	if err != nil {
		return nil, err
	}
	box, backend, err := bf.open(ctx, *t, stderr)
	if err != nil {
		return nil, err
	}
	defer box.Close(context.WithoutCancel(ctx))
	workdir := bf.Workdir
	if backend == "local" && workdir == "" {
		workdir = "." // the copy of the repository is the box's directory
	}
	if g == task.GraderSWEFactory {
		rr, err := swefactory.Run(ctx, box, t, swefactory.RunOptions{Patch: patch, EvalTimeout: timeout, Workdir: workdir})
		if err != nil {
			return nil, err
		}
		out := fromSWEFactory(rr.Result)
		out.Log, out.ApplyFailed, out.TimedOut, out.Duration = rr.Log, rr.ApplyFailed, rr.TimedOut, rr.Duration
		return out, nil
	}
	rr, err := swebench.Run(ctx, box, t, swebench.RunOptions{Patch: patch, EvalTimeout: timeout, Workdir: workdir})
	if err != nil {
		return nil, err
	}
	out := fromSWEBench(rr.Result)
	out.Log, out.ApplyFailed, out.TimedOut, out.Duration = rr.Log, rr.ApplyFailed, rr.TimedOut, rr.Duration
	return out, nil
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
	cmd := &cobra.Command{
		Use:   "grade --dataset D (--instance_id ID (--log FILE | --patch FILE | --gold) | --predictions FILE)",
		Short: "Grade a test log, or a patch in a fresh box, the way the official harness does",
		Long: `grade grades one task the way its dataset's own tooling does and prints the
result: for SWE-bench tasks the harness's report.json object, for SWE-Factory
tasks the OMNIGRIL_EXIT_CODE verdict. The grader comes from the task (its
field, else its image name), or from --reward.

With --log it grades an existing eval log (the harness's test_output.txt): no
container is needed. With --patch (or --gold for the task's own fix) it opens
a fresh box from the task's image, applies the patch as the harness does
(git apply, then --3way, --reject, then patch --fuzz=5), runs the dataset's
eval_script unchanged under --eval_timeout, and grades the output. An empty
patch file runs the tests on the unpatched repository.

The verdict and its reason go to stderr; the exit code is 0 when resolved,
1 when not.

With --predictions it grades a SWE-bench predictions file (JSONL, a JSON
list, or a JSON object keyed by instance_id; fields instance_id,
model_name_or_path, model_patch), --max_workers at a time, and writes what
the harness writes: logs/run_evaluation/<run_id>/<model>/<instance_id>/
{patch.diff, test_output.txt, report.json} and <model>.<run_id>.json with the
resolved, unresolved, empty-patch and error ids. Instances whose report.json
exists are not run again, so an interrupted run resumes.`,
		Example: `  swerve grade --dataset verified-test.parquet --instance_id django__django-16901 --log test_output.txt
  swerve grade --dataset verified-test.parquet --instance_id django__django-16901 --gold
  swerve grade --dataset verified-test.parquet --instance_id django__django-16901 --patch fix.diff --save-log out.log
  swerve grade --dataset verified-test.parquet --predictions preds.jsonl --run_id try1 --max_workers 4`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
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
				return gradePredictions(cmd, tasks, preds, &bf, force, timeout, workers, runID, logDir, reportDir)
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
			var res *graded
			switch {
			case logPath != "":
				log, err := os.ReadFile(logPath)
				if err != nil {
					return fmt.Errorf("--log: %w", err)
				}
				if res, err = gradeLog(&t, force, string(log)); err != nil {
					return err
				}
			default:
				patch := t.Patch
				if patchPath != "" {
					b, err := os.ReadFile(patchPath)
					if err != nil {
						return fmt.Errorf("--patch: %w", err)
					}
					patch = string(b)
				}
				if res, err = gradeInBox(cmd.Context(), &bf, &t, force, patch, timeout, cmd.ErrOrStderr()); err != nil {
					return err
				}
				if saveLog != "" {
					if err := os.WriteFile(saveLog, []byte(res.Log), 0o644); err != nil {
						return fmt.Errorf("--save-log: %w", err)
					}
				}
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s\n", res.Report)
			if res.resolved() {
				cmd.PrintErrf("swerve: %s: resolved\n", t.InstanceID)
			} else {
				cmd.PrintErrf("swerve: %s: not resolved: %s\n", t.InstanceID, res.Reason)
			}
			if !res.resolved() {
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
	f.BoolVar(&gold, "gold", false, "grade the task's own gold patch")
	secondsVar(f, &timeout, "eval_timeout", swebench.DefaultEvalTimeout, "kill the eval script (and all it started) after this long")
	f.StringVar(&force, "reward", "", "grader to use instead of the task's: swebench, swefactory")
	f.StringVar(&saveLog, "save-log", "", "write the eval log here")
	f.StringVar(&predsPath, "predictions", "", "grade this SWE-bench predictions file (.jsonl or .json)")
	f.StringVar(&runID, "run_id", "swerve", "run id, as in the harness's log directory and summary name")
	f.StringVar(&logDir, "log_dir", filepath.Join("logs", "run_evaluation"), "where per-instance logs and reports go")
	f.StringVar(&reportDir, "report_dir", ".", "where the run summary goes")
	f.IntVar(&workers, "max_workers", 4, "predictions graded at once")
	return cmd
}
