package cli

import (
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/swerve-dev/swerve/internal/task"
)

// datasetFlags are the flags of every command that reads a dataset.
type datasetFlags struct {
	Dataset     string
	Split       string
	StartIdx    int
	K           int
	InstanceIDs []string
	SkipInvalid bool
}

func (f *datasetFlags) register(fs *pflag.FlagSet) {
	fs.StringVar(&f.Dataset, "dataset", "", "dataset: a parquet, JSON or JSONL file, or a Harbor task directory (or a directory of them)")
	fs.StringVar(&f.Split, "split", "", "label stored as each task's split (does not filter)")
	fs.IntVar(&f.StartIdx, "start_idx", 0, "skip the first N tasks (counted after --instance_ids)")
	fs.IntVar(&f.K, "k", 0, "keep at most K tasks (0: all)")
	ids := (*idList)(&f.InstanceIDs)
	fs.Var(ids, "instance_ids", "only these tasks (comma- or space-separated, repeatable)")
	fs.Var(ids, "instance_id", "same as --instance_ids")
	fs.BoolVar(&f.SkipInvalid, "skip-invalid", false, "leave out invalid rows (listed on stderr) instead of failing")
}

// load reads the dataset, applies the selection flags, and reports skipped
// rows on the command's stderr.
func (f *datasetFlags) load(cmd *cobra.Command) ([]task.Task, error) {
	_, tasks, err := f.loadResult(cmd)
	return tasks, err
}

// loadResult is load that also returns what the loader said about the file.
func (f *datasetFlags) loadResult(cmd *cobra.Command) (*task.LoadResult, []task.Task, error) {
	if f.Dataset == "" {
		return nil, nil, errors.New("--dataset is required (a parquet, JSON or JSONL file, or a Harbor task directory)")
	}
	res, err := task.Load(cmd.Context(), f.Dataset, task.LoadOptions{SkipInvalid: f.SkipInvalid, InstanceIDs: f.InstanceIDs})
	if err != nil {
		if _, ok := errors.AsType[*task.InvalidError](err); ok {
			return nil, nil, fmt.Errorf("%w; pass --skip-invalid to load the other rows", err)
		}
		return nil, nil, err
	}
	if n := len(res.Skipped); n > 0 {
		w := cmd.ErrOrStderr()
		rows := "rows"
		if n == 1 {
			rows = "row"
		}
		fmt.Fprintf(w, "swerve: skipped %d invalid %s of %s:\n", n, rows, f.Dataset)
		for _, s := range res.Skipped {
			fmt.Fprintf(w, "  %s\n", strings.TrimPrefix(s.Error(), s.File+": "))
		}
	}
	tasks, err := task.Select(res.Tasks, task.Selection{
		Split: f.Split, StartIdx: f.StartIdx, K: f.K, InstanceIDs: f.InstanceIDs,
	})
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", f.Dataset, err)
	}
	return res, tasks, nil
}

// idList is a string-list flag that appends on every use and splits values
// on commas and spaces, so --instance_ids a,b, --instance_ids "a b" and
// repeated flags all work. --instance_id and --instance_ids share one.
type idList []string

func (l *idList) String() string { return strings.Join(*l, ",") }
func (l *idList) Type() string   { return "ids" }

func (l *idList) Set(v string) error {
	for _, id := range strings.FieldsFunc(v, func(r rune) bool { return r == ',' || r == ' ' || r == '\t' || r == '\n' }) {
		*l = append(*l, id)
	}
	return nil
}
