package cli

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/swerve-dev/swerve/internal/collect"
)

func init() { register(newCollectCmd) }

func newCollectCmd() *cobra.Command {
	var opts collect.Options
	var quiet bool
	resume := true
	cmd := &cobra.Command{
		Use:   "collect",
		Short: "Collect rollouts from a rollout server (NeMo Gym's ng_collect_rollouts)",
		Long: `collect posts each row of a NeMo Gym input JSONL to URL/run, --num_repeats
times (adjacent, for GRPO groups), at most --concurrency at a time, and
appends each rollout row to --output as it finishes. Rows get
_ng_task_index (shared by identical lines), _ng_rollout_index and
agent_ref, as Gym's collector sets them.

Next to --output it writes <stem>_materialized_inputs.jsonl (every request,
first), <stem>_failures.jsonl (rows that came back with _ng_failure_class,
or that got no answer) and <stem>_aggregate_metrics.json (from the server's
/aggregate_metrics, or computed here when it has none).

A rerun with the same files resumes (--resume=false starts over): finished (row, repeat) pairs are
skipped, failed ones are tried again up to 3 times unless the failure was
terminal. A busy server (429/503) is waited for, honouring Retry-After.
Ctrl-C stops at once; what finished is kept.

At the end it prints the reward profile (Accuracy, Resolved, Total
Instances, Average Turns) and the exit reasons over the whole output.`,
		Example: `  swerve serve &
  swerve collect --server http://127.0.0.1:8000 --input data.jsonl --output out/rollouts.jsonl
  swerve collect --server http://10.0.0.5:8000 --token "$SWERVE_TOKEN" -i data.jsonl -o out/rollouts.jsonl --num_repeats 8 --concurrency 64 --limit 100`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if opts.Token == "" {
				opts.Token = os.Getenv("SWERVE_TOKEN")
			}
			opts.Fresh = !resume
			if !quiet {
				opts.Progress = cmd.ErrOrStderr()
			}
			return runCollect(cmd.Context(), cmd, opts)
		},
	}
	f := cmd.Flags()
	f.StringVar(&opts.Server, "server", "http://127.0.0.1:8000", "rollout server base URL (swerve serve, or any NeMo Gym agent server)")
	f.StringVarP(&opts.Input, "input", "i", "", "input JSONL: one NeMo Gym row a line (needs responses_create_params)")
	f.StringVarP(&opts.Output, "output", "o", "", "output JSONL of rollout rows (appended to; a rerun resumes)")
	workersVar(f, &opts.Concurrency, "concurrency", collect.DefaultConcurrency, "requests in flight at most")
	f.IntVar(&opts.NumRepeats, "num_repeats", 1, "rollouts per row (GRPO group size)")
	f.IntVar(&opts.Limit, "limit", 0, "take only the first N rows (0: all)")
	f.StringVar(&opts.Token, "token", "", "bearer token for the server (default $SWERVE_TOKEN)")
	f.StringVarP(&opts.AgentName, "agent", "a", collect.DefaultAgentName, "agent_ref name for rows without one")
	f.BoolVar(&resume, "resume", true, "skip pairs finished by earlier runs; --resume=false starts over (empties the output and failures files)")
	f.BoolVarP(&quiet, "quiet", "q", false, "no line per finished rollout")
	_ = cmd.MarkFlagRequired("input")
	_ = cmd.MarkFlagRequired("output")
	return cmd
}

func runCollect(ctx context.Context, cmd *cobra.Command, opts collect.Options) error {
	res, err := collect.Run(ctx, opts)
	errw := cmd.ErrOrStderr()
	if err != nil {
		if errors.Is(err, context.Canceled) {
			fmt.Fprintf(errw, "collect: interrupted after %d rollouts (%d failed); rerun the same command to resume\n", res.Finished, res.Failed)
		}
		return err
	}
	out := cmd.OutOrStdout()
	fmt.Fprintf(out, "%d rollouts: %d finished now, %d failed now, %d done before\n", res.Pairs, res.Finished, res.Failed, res.Skipped)
	if _, err := res.Profile.WriteTo(out); err != nil {
		return err
	}
	src := "computed here: the server has no /aggregate_metrics"
	if res.Remote {
		src = "from the server"
	}
	fmt.Fprintf(out, "Aggregate metrics (%s): %s\n", src, collect.MetricsPath(opts.Output))
	return nil
}
