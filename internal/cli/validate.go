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

	"github.com/swerve-dev/swerve/internal/episode"
	"github.com/swerve-dev/swerve/internal/reward/tamper"
	"github.com/swerve-dev/swerve/internal/sandbox"
	"github.com/swerve-dev/swerve/internal/task"
)

func init() { register(newValidateCmd) }

// validation is one task's pair of checks.
type validation struct {
	InstanceID string `json:"instance_id"`
	// Status is "ok", "failed" (a verdict is wrong) or "error" (a check
	// could not be graded: no verdict, see ErrorKind and Error).
	Status string `json:"status"`
	// Gold and Empty are null for a check that was not graded.
	Gold        *float64          `json:"gold_reward"`
	GoldReason  string            `json:"gold_reason"`
	Empty       *float64          `json:"empty_reward"`
	EmptyReason string            `json:"empty_reason"`
	OK          bool              `json:"ok"`
	ErrorKind   episode.ErrorKind `json:"error_kind,omitempty"`
	Error       string            `json:"error,omitempty"`
	Seconds     float64           `json:"seconds"`

	// GoldTampered and EmptyTampered are the tamper findings of each run
	// (see swerve grade --help).
	GoldTampered  []string `json:"gold_tampered,omitempty"`
	EmptyTampered []string `json:"empty_tampered,omitempty"`
}

// Validation statuses.
const (
	validOK     = "ok"
	validFailed = "failed"
	validError  = "error"
)

// validationSummary is validate's JSON summary.
type validationSummary struct {
	Dataset string   `json:"dataset"`
	Total   int      `json:"total"`
	Passed  int      `json:"passed"`
	Failed  []string `json:"failed_ids"`
	// Errors are the tasks that could not be checked (box, image, engine,
	// grader): neither passed nor failed.
	Errors []string     `json:"error_ids"`
	Tasks  []validation `json:"tasks"`
}

func newValidateCmd() *cobra.Command {
	var (
		df      datasetFlags
		bf      boxFlags
		workers int
		prewarm int
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
exits 1 if any does. A check that could not be graded at all (a box that
would not open, a missing image, the engine, the grader) is an error, not a
reward: the task is listed among the errors with the reason, and the exit
code is 3 when there are errors but no failures. Run it before training on a
dataset.


Both runs are checked for tampering as swerve grade does (static check of
the gold patch, canary tests in the hidden tests). --tamper flag (the
default) prints findings beside the verdicts; zero makes a finding reward 0,
so a gold patch the check flags fails validation; ignore skips the checks.`,
		Example: `  swerve validate --dataset verified-test.parquet --instance_ids django__django-16901,django__django-17087
  swerve validate --dataset tasks.jsonl --max_workers 4 --json > validation.json
  swerve validate --dataset verified-test.parquet --instance_ids django__django-16901 --tamper zero`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := bf.check(cmd.Context(), true); err != nil {
				return err
			}
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
			if err := bf.checkTasks(ctx, tasks); err != nil {
				return err
			}
			closeWarm, err := bf.setPrewarm(prewarm)
			if err != nil {
				return err
			}
			defer closeWarm(context.WithoutCancel(ctx))
			ended := func(*task.Task) {}
			if up := bf.upcoming(ctx, 2, false); up != nil { // the gold and the empty check's boxes
				ptrs := make([]*task.Task, len(tasks))
				for i := range tasks {
					ptrs[i] = &tasks[i]
				}
				ended = up(ptrs)
			}
			stderr := &lockedWriter{w: cmd.ErrOrStderr()}
			results := make([]validation, len(tasks))
			var mu sync.Mutex
			done := 0
			g := new(errgroup.Group)
			g.SetLimit(max(1, workers))
			for i := range tasks {
				g.Go(func() error {
					results[i] = validateOne(ctx, stderr, &bf, &tasks[i], timeout, mode)
					ended(&tasks[i])
					mu.Lock()
					done++
					if !asJSON {
						v := results[i]
						fmt.Fprintf(stderr, "[%d/%d] %s: gold %s, empty %s%s\n", done, len(tasks), v.InstanceID, showReward(v.Gold), showReward(v.Empty), okMark(v))
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
			sum := validationSummary{Dataset: df.Dataset, Total: len(results), Failed: []string{}, Errors: []string{}, Tasks: results}
			for _, v := range results {
				switch v.Status {
				case validOK:
					sum.Passed++
				case validError:
					sum.Errors = append(sum.Errors, v.InstanceID)
				default:
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
				fmt.Fprintln(tw, "INSTANCE_ID\tGOLD\tEMPTY\tSTATUS\tSECONDS\tREASON")
				for _, v := range results {
					reason := ""
					switch v.Status {
					case validError:
						reason = fmt.Sprintf("%s error: %s", v.ErrorKind, v.Error)
					case validFailed:
						reason = "gold: " + v.GoldReason + "; empty: " + v.EmptyReason
					}
					fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%.1f\t%s\n", v.InstanceID, showReward(v.Gold), showReward(v.Empty), v.Status, v.Seconds, reason)
				}
				tw.Flush()
				fmt.Fprintf(out, "\n%d of %d tasks valid", sum.Passed, sum.Total)
				if len(sum.Errors) > 0 {
					fmt.Fprintf(out, ", %d could not be checked (errors, no verdict)", len(sum.Errors))
				}
				fmt.Fprintln(out)
			}
			switch {
			case len(sum.Failed) > 0:
				return exitError{1}
			case len(sum.Errors) > 0:
				return exitError{exitTaskErrors}
			}
			return nil
		},
	}
	df.register(cmd.Flags())
	bf.register(cmd.Flags())
	workersVar(cmd.Flags(), &workers, "max_workers", 2, "tasks validated at once")
	registerPrewarm(cmd.Flags(), &prewarm)
	secondsVar(cmd.Flags(), &timeout, "eval_timeout", 300*time.Second, "kill an eval script (and all it started) after this long")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the summary as JSON on stdout")
	cmd.Flags().StringVar(&tamperMode, "tamper", string(tamper.ModeFlag), "tamper findings: flag (print beside the verdicts), zero (reward 0), ignore (no check)")
	return cmd
}

func okMark(v validation) string {
	switch v.Status {
	case validOK:
		return ""
	case validError:
		return fmt.Sprintf(" ERROR (%s, no verdict): %s", v.ErrorKind, v.Error)
	}
	return " FAILED"
}

// showReward prints a reward, or "-" for none.
func showReward(r *float64) string {
	if r == nil {
		return "-"
	}
	return fmt.Sprintf("%.0f", *r)
}

// validateOne runs the gold and the empty check for t, each graded by
// package episode in a fresh box.
func validateOne(ctx context.Context, stderr io.Writer, bf *boxFlags, t *task.Task, timeout time.Duration, mode tamper.Mode) (v validation) {
	start := time.Now()
	v.InstanceID = t.InstanceID
	defer func() { v.Seconds = time.Since(start).Seconds() }()
	open := func(ctx context.Context, t *task.Task) (sandbox.Sandbox, string, error) {
		box, backend, err := bf.open(ctx, *t, stderr)
		if err != nil {
			return nil, "", err
		}
		wd := bf.Workdir
		if backend == "local" && wd == "" {
			wd = "." // the copy of the repository is the box's directory
		}
		return box, wd, nil
	}
	g := episode.GradeOptions{Open: open, EvalTimeout: timeout, Tamper: mode}
	check := func(name string, gold bool) (*episode.Result, bool) {
		g.Gold = gold
		res, err := episode.Grade(ctx, t, "", g)
		switch {
		case err != nil: // cancelled
			v.Status, v.Error = validError, name+" run: "+err.Error()
		case res.Failed():
			v.Status, v.ErrorKind, v.Error = validError, res.Failure.Kind, name+" run: "+res.Failure.Err.Error()
		default:
			return res, true
		}
		return nil, false
	}
	gold, ok := check("gold", true)
	if !ok {
		return v
	}
	v.Gold, v.GoldReason, v.GoldTampered = &gold.Reward, gold.RewardReason, gold.Tampered
	empty, ok := check("empty", false)
	if !ok {
		return v
	}
	v.Empty, v.EmptyReason, v.EmptyTampered = &empty.Reward, empty.RewardReason, empty.Tampered
	v.OK = gold.Reward == 1 && empty.Reward == 0
	v.Status = validFailed
	if v.OK {
		v.Status = validOK
	}
	return v
}
