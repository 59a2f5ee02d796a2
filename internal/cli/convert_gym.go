package cli

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/swerve-dev/swerve/internal/agent"
	"github.com/swerve-dev/swerve/internal/convert/gym"
	"github.com/swerve-dev/swerve/internal/fsutil"
)

func init() { registerConvert(newConvertGymCmd) }

func newConvertGymCmd() *cobra.Command {
	var (
		df       datasetFlags
		output   string
		scaffold string
		fn       pyBool
		opts     gym.Options
	)
	cmd := &cobra.Command{
		Use:   "gym --dataset D --output rows.jsonl [--agent_ref NAME]",
		Short: "Write NeMo Gym input rows (JSONL) for swerve serve or Gym's SWE resources servers",
		Long: `gym writes one NeMo Gym input row per task, as JSONL:

  repo, instance_id, base_commit, patch (the gold fix), test_patch,
  problem_statement, hints_text, created_at, version, FAIL_TO_PASS,
  PASS_TO_PASS, environment_setup_commit, difficulty
      the fields Gym's swebench resources server requires. FAIL_TO_PASS and
      PASS_TO_PASS are JSON-encoded strings, as in SWE-bench, unless the
      dataset has them as lists (SWE-Gym rows), then lists; created_at and
      difficulty are "" and environment_setup_commit the base commit when
      the dataset has none.
  the dataset row's other fields, unchanged (image, eval_script, ...)
  responses_create_params
      input: the system and user messages the --scaffold starts an episode
      with; tools: its tools in the Responses API's shape when it runs in
      function-calling mode (--use_fn_calling, default: the scaffold's own).
      Sampling settings are left out: the trainer sets them.
  subset  --subset, else the row's own, else the dialect the dataset was
          read as (Gym's own servers want e.g. verified, lite or gym)
  split   the row's own, else --split, else test
  agent_ref {"name": --agent_ref} (--agent_ref '' leaves it out)

Rows of SWE-bench Verified come out with the same keys and types as the
rows NeMo Gym ships for its swebench resources server. SWE-Factory rows
also get grader and image, so that swerve reads them back with the same
grader; R2E-Gym rows and Harbor tasks cannot be graded from a Gym row
(their expected outputs and task directories are not in it).`,
		Example: `  swerve convert gym --dataset verified-test.parquet --output rows.jsonl --subset verified
  swerve convert gym --dataset tasks.jsonl --output rows.jsonl --scaffold r2egym --use_fn_calling True --agent_ref swerve_agent`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if output == "" {
				return errors.New("--output: name the JSONL file to write (e.g. rows.jsonl)")
			}
			s, err := agent.Lookup(scaffold)
			if err != nil {
				return fmt.Errorf("--scaffold: %w", err)
			}
			mode, err := agent.ModeFor(s, fn.ptr())
			if err != nil {
				return fmt.Errorf("--use_fn_calling: %w", err)
			}
			opts.Scaffold, opts.Mode, opts.Split = s, mode, df.Split
			tasks, err := df.load(cmd)
			if err != nil {
				return err
			}
			tmp, err := fsutil.CreateTemp(filepath.Dir(output), "."+filepath.Base(output)+".tmp-*")
			if err != nil {
				return err
			}
			defer os.Remove(tmp.Name())
			w := bufio.NewWriterSize(tmp, 1<<20)
			for i := range tasks {
				row, err := gym.Row(&tasks[i], opts)
				if err != nil {
					tmp.Close()
					return err
				}
				w.Write(row)
			}
			if err := w.Flush(); err != nil {
				tmp.Close()
				return fmt.Errorf("write %s: %w", output, err)
			}
			if err := tmp.Close(); err != nil {
				return err
			}
			if err := os.Rename(tmp.Name(), output); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "swerve convert gym: wrote %d rows to %s (scaffold %s, %s mode)\n", len(tasks), output, s.Name, mode)
			return nil
		},
	}
	fs := cmd.Flags()
	df.register(fs)
	fs.StringVar(&output, "output", "", "JSONL file to write")
	fs.StringVar(&scaffold, "scaffold", "mini_swe_agent", "scaffold whose prompt and tools the rows carry: "+strings.Join(agent.Scaffolds(), ", "))
	fs.Var(&fn, "use_fn_calling", "True: function calling (rows carry tools); False: actions in text (default: the scaffold's own mode)")
	fs.IntVar(&opts.MaxSteps, "max_steps", agent.DefaultMaxSteps, "step limit the prompt quotes")
	fs.StringVar(&opts.Subset, "subset", "", "every row's subset (default: the row's own, else the dataset's dialect)")
	fs.StringVar(&opts.AgentRef, "agent_ref", "swerve_agent", "agent_ref name of every row ('' leaves agent_ref out)")
	return cmd
}
