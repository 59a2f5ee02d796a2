package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/swerve-dev/swerve/internal/reward/swebench"
	"github.com/swerve-dev/swerve/internal/task"
)

func init() { register(newGradeCmd) }

// checkGrader refuses tasks whose grader swerve cannot run yet.
func checkGrader(t *task.Task, force string) error {
	g := task.Grader(force)
	if g == "" {
		g = t.Grader
	}
	if g != "" && g != task.GraderSWEBench {
		return fmt.Errorf("task %s: grader %s: not available yet (swerve grades swebench tasks so far)", t.InstanceID, g)
	}
	return nil
}

// gradeInBox opens a fresh box for t and runs the eval with patch.
func gradeInBox(ctx context.Context, bf *boxFlags, t *task.Task, patch string, timeout time.Duration, stderr io.Writer) (*swebench.RunResult, error) {
	box, _, err := bf.open(ctx, *t, stderr)
	if err != nil {
		return nil, err
	}
	defer box.Close(context.WithoutCancel(ctx))
	return swebench.Run(ctx, box, t, swebench.RunOptions{Patch: patch, EvalTimeout: timeout})
}

func newGradeCmd() *cobra.Command {
	var (
		df                 datasetFlags
		bf                 boxFlags
		logPath, patchPath string
		gold               bool
		timeout            time.Duration
		force, saveLog     string
	)
	cmd := &cobra.Command{
		Use:   "grade --dataset D --instance_id ID (--log FILE | --patch FILE | --gold)",
		Short: "Grade a test log, or a patch in a fresh box, the way the official harness does",
		Long: `grade prints the SWE-bench harness's report.json object for one task.

With --log it grades an existing eval log (the harness's test_output.txt): no
container is needed. With --patch (or --gold for the task's own fix) it opens
a fresh box from the task's image, applies the patch as the harness does
(git apply, then --3way, --reject, then patch --fuzz=5), runs the dataset's
eval_script unchanged under --eval_timeout, and grades the output. An empty
patch file runs the tests on the unpatched repository.

The verdict and its reason go to stderr; the exit code is 0 when resolved,
1 when not.`,
		Example: `  swerve grade --dataset verified-test.parquet --instance_id django__django-16901 --log test_output.txt
  swerve grade --dataset verified-test.parquet --instance_id django__django-16901 --gold
  swerve grade --dataset verified-test.parquet --instance_id django__django-16901 --patch fix.diff --save-log out.log`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			modes := 0
			for _, on := range []bool{logPath != "", patchPath != "", gold} {
				if on {
					modes++
				}
			}
			if modes != 1 {
				return fmt.Errorf("give exactly one of --log, --patch and --gold")
			}
			t, err := oneTask(&df, func() ([]task.Task, error) { return df.load(cmd) })
			if err != nil {
				return err
			}
			if err := checkGrader(&t, force); err != nil {
				return err
			}
			var res *swebench.Result
			switch {
			case logPath != "":
				log, err := os.ReadFile(logPath)
				if err != nil {
					return fmt.Errorf("--log: %w", err)
				}
				if res, err = swebench.Evaluate(&t, string(log), swebench.Options{}); err != nil {
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
				rr, err := gradeInBox(cmd.Context(), &bf, &t, patch, timeout, cmd.ErrOrStderr())
				if err != nil {
					return err
				}
				if saveLog != "" {
					if err := os.WriteFile(saveLog, []byte(rr.Log), 0o644); err != nil {
						return fmt.Errorf("--save-log: %w", err)
					}
				}
				res = rr.Result
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s\n", res.Report())
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
	f.BoolVar(&gold, "gold", false, "grade the task's own gold patch")
	f.DurationVar(&timeout, "eval_timeout", swebench.DefaultEvalTimeout, "kill the eval script (and all it started) after this long")
	f.StringVar(&force, "reward", "", "grader to use instead of the task's (swebench)")
	f.StringVar(&saveLog, "save-log", "", "write the eval log here")
	return cmd
}
