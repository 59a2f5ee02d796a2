package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/sync/errgroup"

	"github.com/swerve-dev/swerve/internal/reward/grader"
	"github.com/swerve-dev/swerve/internal/reward/tamper"
	"github.com/swerve-dev/swerve/internal/task"
)

func init() { register(newValidateCmd) }

// validation is one task's pair of checks.
type validation struct {
	InstanceID  string  `json:"instance_id"`
	Gold        float64 `json:"gold_reward"`
	GoldReason  string  `json:"gold_reason"`
	Empty       float64 `json:"empty_reward"`
	EmptyReason string  `json:"empty_reason"`
	OK          bool    `json:"ok"`
	Error       string  `json:"error,omitempty"`
	Seconds     float64 `json:"seconds"`

	// GoldTampered and EmptyTampered are the tamper findings of each run
	// (see swerve grade --help).
	GoldTampered  []string `json:"gold_tampered,omitempty"`
	EmptyTampered []string `json:"empty_tampered,omitempty"`
}

// validationSummary is validate's JSON summary.
type validationSummary struct {
	Dataset string       `json:"dataset"`
	Total   int          `json:"total"`
	Passed  int          `json:"passed"`
	Failed  []string     `json:"failed_ids"`
	Tasks   []validation `json:"tasks"`
}

func newValidateCmd() *cobra.Command {
	var (
		df      datasetFlags
		bf      boxFlags
		workers int
		timeout time.Duration
		asJSON  bool
	)
	var tamperMode string
	cmd := &cobra.Command{
		Use:   "validate --dataset D [--instance_ids ...] [--max_workers N]",
		Short: "Check every task grades right: gold patch gives 1, no patch gives 0",
		Long: `validate runs, for each task, its gold patch (a Harbor task's
solution/solve.sh), which must be resolved (reward 1), and no patch at all,
which must not (reward 0), each in a fresh box from the task's image, graded
by the task's own grader (see swerve grade --help). It prints a table
and a summary, lists the tasks that fail either check with the reason, and
exits non-zero if any does. Run it before training on a dataset.

Both runs are checked for tampering as swerve grade does (static check of
the gold patch, canary tests in the hidden tests). --tamper flag (the
default) prints findings beside the verdicts; zero makes a finding reward 0,
so a gold patch the check flags fails validation; ignore skips the checks.`,
		Example: `  swerve validate --dataset verified-test.parquet --instance_ids django__django-16901,django__django-17087
  swerve validate --dataset tasks.jsonl --max_workers 4 --json > validation.json
  swerve validate --dataset verified-test.parquet --instance_ids django__django-16901 --tamper zero`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			mode, err := tamper.ParseMode(tamperMode)
			if err != nil {
				return err
			}
			tasks, err := df.load(cmd)
			if err != nil {
				return err
			}
			for i := range tasks {
				if err := checkGrader(&tasks[i], ""); err != nil {
					return err
				}
			}
			ctx := cmd.Context()
			stderr := &lockedWriter{w: cmd.ErrOrStderr()}
			results := make([]validation, len(tasks))
			var mu sync.Mutex
			done := 0
			g := new(errgroup.Group)
			g.SetLimit(max(1, workers))
			for i := range tasks {
				g.Go(func() error {
					results[i] = validateOne(ctx, stderr, &bf, &tasks[i], timeout, mode)
					mu.Lock()
					done++
					if !asJSON {
						v := results[i]
						fmt.Fprintf(stderr, "[%d/%d] %s: gold %.0f, empty %.0f%s\n", done, len(tasks), v.InstanceID, v.Gold, v.Empty, okMark(v))
						for _, f := range v.GoldTampered {
							fmt.Fprintf(stderr, "  %s: gold: tampered: %s\n", v.InstanceID, f)
						}
						for _, f := range v.EmptyTampered {
							fmt.Fprintf(stderr, "  %s: empty: tampered: %s\n", v.InstanceID, f)
						}
					}
					mu.Unlock()
					return ctx.Err()
				})
			}
			if err := g.Wait(); err != nil {
				return err
			}
			sum := validationSummary{Dataset: df.Dataset, Total: len(results), Failed: []string{}, Tasks: results}
			for _, v := range results {
				if v.OK {
					sum.Passed++
				} else {
					sum.Failed = append(sum.Failed, v.InstanceID)
				}
			}
			out := cmd.OutOrStdout()
			if asJSON {
				enc := json.NewEncoder(out)
				enc.SetIndent("", "  ")
				if err := enc.Encode(sum); err != nil {
					return err
				}
			} else {
				tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "INSTANCE_ID\tGOLD\tEMPTY\tOK\tSECONDS\tREASON")
				for _, v := range results {
					reason := ""
					if !v.OK {
						reason = v.Error
						if reason == "" {
							reason = "gold: " + v.GoldReason + "; empty: " + v.EmptyReason
						}
					}
					fmt.Fprintf(tw, "%s\t%.0f\t%.0f\t%v\t%.1f\t%s\n", v.InstanceID, v.Gold, v.Empty, v.OK, v.Seconds, reason)
				}
				tw.Flush()
				fmt.Fprintf(out, "\n%d of %d tasks valid\n", sum.Passed, sum.Total)
			}
			if len(sum.Failed) > 0 {
				return exitError{1}
			}
			return nil
		},
	}
	df.register(cmd.Flags())
	bf.register(cmd.Flags())
	cmd.Flags().IntVar(&workers, "max_workers", 2, "tasks validated at once")
	secondsVar(cmd.Flags(), &timeout, "eval_timeout", 300*time.Second, "kill an eval script (and all it started) after this long")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the summary as JSON on stdout")
	cmd.Flags().StringVar(&tamperMode, "tamper", string(tamper.ModeFlag), "tamper findings: flag (print beside the verdicts), zero (reward 0), ignore (no check)")
	return cmd
}

func okMark(v validation) string {
	if v.OK {
		return ""
	}
	if v.Error != "" {
		return " FAILED: " + v.Error
	}
	return " FAILED"
}

// validateOne runs the gold and the empty check for t.
func validateOne(ctx context.Context, stderr io.Writer, bf *boxFlags, t *task.Task, timeout time.Duration, mode tamper.Mode) (v validation) {
	start := time.Now()
	v.InstanceID = t.InstanceID
	defer func() { v.Seconds = time.Since(start).Seconds() }()
	gold, err := gradeInBox(ctx, bf, t, grader.Options{Gold: true, EvalTimeout: timeout, Tamper: mode}, stderr)
	if err != nil {
		v.Error = "gold run: " + err.Error()
		return v
	}
	v.Gold, v.GoldReason, v.GoldTampered = gold.Reward, gold.Reason, gold.Tampered
	empty, err := gradeInBox(ctx, bf, t, grader.Options{EvalTimeout: timeout, Tamper: mode}, stderr)
	if err != nil {
		v.Error = "empty run: " + err.Error()
		return v
	}
	v.Empty, v.EmptyReason, v.EmptyTampered = empty.Reward, empty.Reason, empty.Tampered
	v.OK = v.Gold == 1 && v.Empty == 0
	return v
}
