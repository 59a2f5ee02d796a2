package cli

import (
	"context"
	"time"

	"github.com/spf13/cobra"

	"github.com/swerve-dev/swerve/internal/sandbox"
	"github.com/swerve-dev/swerve/internal/task"
)

func init() { register(newExecCmd) }

func newExecCmd() *cobra.Command {
	var (
		df      datasetFlags
		bf      boxFlags
		timeout time.Duration
	)
	cmd := &cobra.Command{
		Use:   "exec --dataset D --instance_id ID [flags] -- CMD [ARG...]",
		Short: "Run one command in a task's box and print its output",
		Long: `exec opens the task's box (its image, or a copy of its source directory on
the local backend), runs one command, prints the merged output, removes the
box and exits with the command's exit code (124 when it timed out).

A single argument is run as a bash -lc command line, so pipes and
redirections work; several arguments are run as an argv.`,
		Example: `  swerve exec --dataset verified-test.parquet --instance_id django__django-16901 -- git status
  swerve exec --dataset examples/sample/tasks.jsonl --instance_id sample__calc-1 -- 'python3 -m pytest -q'
  swerve exec --dataset tasks.jsonl --instance_id x --timeout 30s --network bridge -- pip list`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := bf.check(cmd.Context(), false); err != nil {
				return err
			}
			t, err := oneTask(&df, func() ([]task.Task, error) { return df.load(cmd) })
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			box, _, err := bf.open(ctx, t, cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			defer box.Close(context.WithoutCancel(ctx))
			argv := args
			if len(args) == 1 {
				argv = sandbox.Bash(args[0])
			}
			res, err := box.Exec(ctx, sandbox.ExecRequest{Cmd: argv, Timeout: timeout, MaxOutput: -1})
			if err != nil {
				return err
			}
			cmd.OutOrStdout().Write(res.Output)
			if res.TimedOut {
				cmd.PrintErrf("swerve: command timed out after %s\n", timeout)
			}
			if res.ExitCode != 0 {
				return exitError{res.ExitCode}
			}
			return nil
		},
	}
	df.register(cmd.Flags())
	bf.register(cmd.Flags())
	secondsVar(cmd.Flags(), &timeout, "timeout", 0, "kill the command (and all it started) after this long; 0 means no limit")
	return cmd
}
