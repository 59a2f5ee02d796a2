package cli

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/swerve-dev/swerve/internal/convert/verl"
	"github.com/swerve-dev/swerve/internal/hub"
	"github.com/swerve-dev/swerve/internal/task"
)

func init() { registerConvert(newConvertVerlCmd) }

func newConvertVerlCmd() *cobra.Command {
	var (
		df                 datasetFlags
		output, valOutput  string
		valSize, dataSrc   string
		groundTruthPatches bool
	)
	cmd := &cobra.Command{
		Use:   "verl --dataset D --output train.parquet [--val_size N|fraction --val_output val.parquet]",
		Short: "Write verl RLHF parquet rows for its tool agent loop",
		Long: `verl writes the dataset as verl's RLHF parquet rows, one per task, for
verl's tool agent loop driving the sandbox tools of swerve serve:

  data_source     --data_source (default: the Hub dataset's owner/name, else
                  swerve/<dialect>)
  agent_name      tool_agent
  prompt          [system, user]: the system message gives the tool rules
                  and the repository at its base commit; the user message
                  is laid out like SWE-bench's style-3 prompt (<issue>,
                  <code>, a <patch> example, the instruction)
  ability         software_engineering
  reward_model    {style: tool, name: swebench_sandbox}
  extra_info      split (train, or test for the validation rows), index
                  (the task's position in the dataset), instance_id, repo,
                  base_commit, FAIL_TO_PASS, PASS_TO_PASS (lists),
                  need_tools_kwargs: true, tools_kwargs, and with
                  --ground_truth_patch the gold patch as ground_truth_patch

tools_kwargs is keyed by tool name, {"bash": {"create_kwargs": {...}},
"submit_solution": {"create_kwargs": {...}}}, each with the task's
instance_id, repo and base_commit: verl's ToolAgentLoop looks a call's
create_kwargs up under the called function's name.

--val_size N (a count) or a fraction in (0, 1) moves that many tasks to
--val_output. Which tasks is decided by a hash of their instance ids, so
the split does not change when the dataset is reordered; the index stays
the dataset position either way. Nested columns are parquet lists and
structs, which pandas and datasets read as Python lists and dicts.`,
		Example: `  swerve convert verl --dataset verified-test.parquet --output train.parquet
  swerve convert verl --dataset princeton-nlp/SWE-bench_Verified --output train.parquet \
      --val_size 0.1 --val_output val.parquet --ground_truth_patch`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if output == "" {
				return errors.New("--output: name the parquet file to write (e.g. train.parquet)")
			}
			size := 0.0
			if valSize != "" {
				v, err := strconv.ParseFloat(valSize, 64)
				if err != nil {
					return fmt.Errorf("--val_size %s: want a count or a fraction in (0, 1)", valSize)
				}
				size = v
			}
			if size > 0 && valOutput == "" {
				return errors.New("--val_output: name the parquet file for the --val_size validation rows")
			}
			if size == 0 && valOutput != "" {
				return errors.New("--val_output needs --val_size (how many tasks go there)")
			}
			tasks, err := df.load(cmd)
			if err != nil {
				return err
			}
			if len(tasks) == 0 {
				return fmt.Errorf("%s: no tasks to convert", df.Dataset)
			}
			src := dataSrc
			if src == "" {
				src = defaultDataSource(df.Dataset, tasks)
			}
			res, err := verl.Convert(tasks, verl.Options{DataSource: src, ValSize: size, GroundTruthPatch: groundTruthPatches})
			if err != nil {
				return err
			}
			if err := verl.Write(output, res.Train, groundTruthPatches); err != nil {
				return err
			}
			line := fmt.Sprintf("swerve convert verl: wrote %d rows to %s", len(res.Train), output)
			if valOutput != "" {
				if err := verl.Write(valOutput, res.Val, groundTruthPatches); err != nil {
					return err
				}
				line += fmt.Sprintf(", %d to %s", len(res.Val), valOutput)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s (data_source %s)\n", line, src)
			return nil
		},
	}
	fs := cmd.Flags()
	df.register(fs)
	fs.StringVar(&output, "output", "", "parquet file for the training rows")
	fs.StringVar(&valSize, "val_size", "", "tasks for validation: a count, or a fraction in (0, 1) (default: none)")
	fs.StringVar(&valOutput, "val_output", "", "parquet file for the validation rows (with --val_size)")
	fs.BoolVar(&groundTruthPatches, "ground_truth_patch", false, "add the gold patch as extra_info.ground_truth_patch")
	fs.StringVar(&dataSrc, "data_source", "", "every row's data_source (default: the Hub dataset's owner/name, else swerve/<dialect>)")
	return cmd
}

// defaultDataSource names a dataset for data_source: a Hub dataset by its
// owner/name, a file by the dialect its rows were read as.
func defaultDataSource(dataset string, tasks []task.Task) string {
	if _, err := os.Stat(dataset); err != nil {
		if ref, ok := hub.ParseRef(dataset); ok {
			return ref.Repo
		}
	}
	d := "swerve"
	if len(tasks) > 0 && tasks[0].Dialect != "" {
		d = string(tasks[0].Dialect)
	}
	return "swerve/" + strings.ToLower(d)
}
