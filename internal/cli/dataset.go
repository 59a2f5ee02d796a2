package cli

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"golang.org/x/term"

	"github.com/swerve-dev/swerve/internal/hub"
	"github.com/swerve-dev/swerve/internal/pyrand"
	"github.com/swerve-dev/swerve/internal/task"
	"github.com/swerve-dev/swerve/internal/version"
)

// datasetFlags are the flags of every command that reads a dataset.
type datasetFlags struct {
	Dataset     string
	Split       string
	Revision    string
	StartIdx    int
	K           int
	InstanceIDs []string
	SkipInvalid bool
	// Shuffle (run only) orders the dataset as R2E-Gym's runner does
	// before --start_idx and --k pick tasks; unset: for R2E-Gym/ datasets.
	Shuffle pyBool
}

// registerShuffle adds --shuffle. Every command that reads a dataset has
// it, so that --start_idx and --k pick the same tasks in all of them.
func (f *datasetFlags) registerShuffle(fs *pflag.FlagSet) {
	fs.Var(&f.Shuffle, "shuffle", "order the dataset as R2E-Gym's runner does (datasets' shuffle(seed=42)) before --start_idx and --k pick tasks (default: True for R2E-Gym/... Hub datasets, else False)")
}

// shuffles says whether the dataset is put in R2E-Gym's seed-42 order:
// --shuffle when given, else for a Hub dataset of R2E-Gym's own.
func (f *datasetFlags) shuffles() bool {
	if p := f.Shuffle.ptr(); p != nil {
		return *p
	}
	if _, err := os.Stat(f.Dataset); err == nil {
		return false // a local file, whatever its path
	}
	ref, ok := hub.ParseRef(f.Dataset)
	return ok && strings.HasPrefix(strings.ToLower(ref.Repo), "r2e-gym/")
}

// ShuffleSeed is the seed of R2E-Gym's runner: ds.shuffle(seed=42).
const ShuffleSeed = 42

func (f *datasetFlags) register(fs *pflag.FlagSet) {
	f.registerShuffle(fs)
	fs.StringVar(&f.Dataset, "dataset", "", "dataset: a parquet, JSON or JSONL file, a Harbor task directory (or a directory of them), or a Hugging Face Hub dataset owner/name[@revision]")
	fs.StringVar(&f.Split, "split", "", "Hub datasets: the split to load (default test); files: a label stored as each task's split (does not filter)")
	fs.StringVar(&f.Revision, "revision", "", "Hub datasets: branch, tag or commit to load (default main; same as owner/name@revision)")
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
		return nil, nil, errors.New("--dataset is required (a parquet, JSON or JSONL file, a Harbor task directory, or a Hub dataset owner/name)")
	}
	opts := task.LoadOptions{SkipInvalid: f.SkipInvalid, InstanceIDs: f.InstanceIDs}
	if f.shuffles() {
		opts.InstanceIDs = nil // the seed-42 order is of the whole dataset
	}
	res, split, err := loadDataset(cmd, f.Dataset, f.Split, f.Revision, opts)
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
	all := res.Tasks
	if f.shuffles() {
		all = make([]task.Task, len(res.Tasks))
		for i, j := range pyrand.Permutation(ShuffleSeed, len(res.Tasks)) {
			all[i] = res.Tasks[j]
		}
	}
	tasks, err := task.Select(all, task.Selection{
		Split: split, StartIdx: f.StartIdx, K: f.K, InstanceIDs: f.InstanceIDs,
	})
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", f.Dataset, err)
	}
	return res, tasks, nil
}

// loadDataset loads a local dataset path, or one split of a Hugging Face
// Hub dataset when path is not a local path and reads as
// owner/name[@revision]. It returns the split label for the tasks: the
// split loaded from the Hub, else split as given.
func loadDataset(cmd *cobra.Command, path, split, revision string, opts task.LoadOptions) (*task.LoadResult, string, error) {
	_, statErr := os.Stat(path)
	ref, ok := hub.ParseRef(path)
	if statErr == nil || !ok {
		if revision != "" {
			return nil, "", fmt.Errorf("--revision %s: only Hub datasets (owner/name) have revisions; %s is a local path", revision, path)
		}
		res, err := task.Load(cmd.Context(), path, opts)
		return res, split, err
	}
	if revision != "" {
		if ref.Revision != "" && ref.Revision != revision {
			return nil, "", fmt.Errorf("--revision %s: %s already names revision %s", revision, path, ref.Revision)
		}
		ref.Revision = revision
	}
	return loadHub(cmd, ref, split, opts)
}

// loadHub fetches one split of a Hub dataset into the Hugging Face cache
// and loads its files as one dataset. It returns the split loaded.
func loadHub(cmd *cobra.Command, ref hub.Ref, split string, opts task.LoadOptions) (*task.LoadResult, string, error) {
	c := &hub.Client{Config: hub.ConfigFromEnv(), UserAgent: "swerve/" + version.String()}
	stderr := cmd.ErrOrStderr()
	if isTerminal(stderr) {
		c.Progress = stderr
	}
	got, err := c.Fetch(cmd.Context(), ref, hub.Options{Split: split})
	if err != nil {
		if he, ok := errors.AsType[*hub.Error](err); ok && (he.Kind == hub.ErrNotFound || he.Kind == hub.ErrOffline || he.Kind == hub.ErrNetwork) && ref.Revision == "" {
			return nil, "", fmt.Errorf("%w (read as a Hub dataset: there is no local file or directory %s)", err, ref.Repo)
		}
		return nil, "", err
	}
	if got.Warning != "" {
		fmt.Fprintf(stderr, "swerve: %s: %s\n", ref, got.Warning)
	}
	var res *task.LoadResult
	for i, file := range got.Files {
		r, err := task.Load(cmd.Context(), file, opts)
		if err != nil {
			if _, ok := errors.AsType[*task.InvalidError](err); ok {
				return nil, "", err
			}
			return nil, "", fmt.Errorf("dataset %s split %s: cannot read %s (%w); if the cached file is damaged, delete it and load again", got.Ref, got.Split, got.RepoFiles[i], err)
		}
		if res == nil {
			res = r
			res.Path = got.Ref.String()
			continue
		}
		res.Tasks = append(res.Tasks, r.Tasks...)
		res.Skipped = append(res.Skipped, r.Skipped...)
	}
	return res, got.Split, nil
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
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
