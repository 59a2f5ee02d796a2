package cli

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/swerve-dev/swerve/internal/convert/preds"
	"github.com/swerve-dev/swerve/internal/fsutil"
)

func init() { registerConvert(newConvertPredsCmd) }

func newConvertPredsCmd() *cobra.Command {
	var (
		df      datasetFlags
		trajDir string
		from    string
		output  string
		asJSONL bool
		verbose bool
	)
	cmd := &cobra.Command{
		Use:   "preds (--traj_dir RUN [--output preds.json|preds.jsonl] | --from preds.json --dataset D --output tasks.jsonl)",
		Short: "Turn a run's records into SWE-bench predictions, or predictions into a dataset of patches",
		Long: `preds converts between swerve run's task records and SWE-bench predictions
files (instance_id, model_name_or_path, model_patch).

With --traj_dir it reads the run's task records (<traj_dir>/<id>/result.json)
and writes one prediction per graded task, in instance-id order, with the
record's model and patch. Tasks that failed outside the model (status
error: an infrastructure error of the box, the grader or the model's
provider) are left out, and counted on stderr (listed with -v): their patch
says nothing of the model. --output ending in .jsonl (or --jsonl) writes
JSONL, any other name a JSON list; without --output the predictions go to
stdout.

With --from and --dataset it goes back: every task of the dataset that
has a prediction is written, in dataset order, as swerve's normalised
task row (what swerve tasks ls --json prints) with model_name_or_path
and model_patch added. The file loads as a dataset with any swerve command
and reads as a predictions file too, so it grades with
  swerve grade --dataset tasks.jsonl --predictions tasks.jsonl
The predictions file may be JSONL, a JSON list or an object keyed by
instance id, as swerve grade --predictions reads; a prediction for a task
that is not in the dataset is an error.`,
		Example: `  swerve convert preds --traj_dir runs/try1 --output preds.jsonl
  swerve grade --dataset verified-test.parquet --predictions preds.jsonl --run_id try1
  swerve convert preds --from preds.json --dataset verified-test.parquet --output tasks.jsonl
  swerve grade --dataset tasks.jsonl --predictions tasks.jsonl --run_id try1`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			switch {
			case trajDir != "" && from != "":
				return errors.New("give either --traj_dir (records to predictions) or --from (predictions to a dataset), not both")
			case trajDir == "" && from == "":
				return errors.New("give --traj_dir RUN (a run's records to predictions) or --from preds.json --dataset D (predictions to a dataset of patches)")
			case trajDir != "" && df.Dataset != "":
				return errors.New("--dataset goes with --from; --traj_dir needs no dataset")
			}
			if trajDir != "" {
				return predsFromRun(cmd, trajDir, output, asJSONL || strings.HasSuffix(output, ".jsonl"), verbose)
			}
			if output == "" {
				return errors.New("--output: name the JSONL dataset to write (e.g. tasks.jsonl)")
			}
			ps, err := loadPredictions(from)
			if err != nil {
				return err
			}
			tasks, err := df.load(cmd)
			if err != nil {
				return err
			}
			m := make(map[string]preds.Prediction, len(ps))
			for id, p := range ps {
				patch := ""
				if p.Patch != nil {
					patch = *p.Patch
				}
				m[id] = preds.Prediction{InstanceID: id, Model: p.Model, Patch: patch}
			}
			rows, err := preds.PatchRows(tasks, m)
			if err != nil {
				return fmt.Errorf("%s: %w", from, err)
			}
			if err := fsutil.WriteFileAtomic(output, bytes.Join(rows, nil), false); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "swerve convert preds: wrote %d tasks with their predictions to %s (%d tasks of %s had none)\n",
				len(rows), output, len(tasks)-len(rows), df.Dataset)
			return nil
		},
	}
	fs := cmd.Flags()
	df.register(fs)
	fs.StringVar(&trajDir, "traj_dir", "", "a swerve run's output directory: write its records as predictions")
	fs.StringVar(&from, "from", "", "a SWE-bench predictions file (.json or .jsonl) to turn, with --dataset, into a dataset of patches")
	fs.StringVar(&output, "output", "", "file to write (--traj_dir: default stdout)")
	fs.BoolVar(&asJSONL, "jsonl", false, "--traj_dir: write JSONL whatever --output is called")
	fs.BoolVarP(&verbose, "verbose", "v", false, "--traj_dir: list the left-out records and why")
	return cmd
}

func predsFromRun(cmd *cobra.Command, trajDir, output string, jsonl, verbose bool) error {
	if st, err := os.Stat(trajDir); err != nil || !st.IsDir() {
		return fmt.Errorf("--traj_dir %s: not a directory", trajDir)
	}
	ps, skipped, err := preds.FromRun(trajDir)
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	if err := preds.Write(&buf, ps, jsonl); err != nil {
		return err
	}
	errw := cmd.ErrOrStderr()
	if n := len(skipped); n > 0 {
		fmt.Fprintf(errw, "swerve: left out %d %s with an infrastructure error (no verdict on the model)\n", n, plural(n, "task", "tasks"))
		if verbose {
			for _, s := range skipped {
				fmt.Fprintf(errw, "  %s: %s\n", s.InstanceID, s.Reason)
			}
		}
	}
	if output == "" || output == "-" {
		_, err := cmd.OutOrStdout().Write(buf.Bytes())
		return err
	}
	if err := fsutil.WriteFileAtomic(output, buf.Bytes(), false); err != nil {
		return err
	}
	fmt.Fprintf(errw, "swerve convert preds: wrote %d predictions to %s\n", len(ps), output)
	return nil
}
