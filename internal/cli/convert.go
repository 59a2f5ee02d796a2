package cli

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	harborconv "github.com/swerve-dev/swerve/internal/convert/harbor"
)

func init() { register(newConvertCmd) }

// convertSubcommands lists the constructors of convert's subcommands
// (harbor here; verl and preds join from their own files' init()).
var convertSubcommands = []func() *cobra.Command{newConvertHarborCmd}

// registerConvert adds a subcommand to swerve convert.
func registerConvert(fn func() *cobra.Command) { convertSubcommands = append(convertSubcommands, fn) }

func newConvertCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "convert <format>",
		Short: "Write a task dataset (or a run's patches) in another tool's format",
		Long: `convert reads a task dataset (any format swerve loads) and writes it in the
form another tool expects: Harbor task directories, verl RLHF parquet, NeMo
Gym input rows. convert preds turns a run's records into SWE-bench
predictions and back. Each format is a subcommand.`,
		Example: `  swerve convert harbor --input instances_transferred.json --out-dir ./harbor
  swerve convert verl --dataset verified-test.parquet --output train.parquet --val_size 50 --val_output val.parquet
  swerve convert gym --dataset verified-test.parquet --output rows.jsonl --subset verified
  swerve convert preds --traj_dir runs/try1 --output preds.jsonl`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return cmd.Help()
		},
	}
	for _, fn := range convertSubcommands {
		cmd.AddCommand(fn())
	}
	return cmd
}

func newConvertHarborCmd() *cobra.Command {
	var (
		df           datasetFlags
		opts         = harborconv.Options{Config: harborconv.DefaultConfig()}
		asJSON       bool
		strictMarker = true
	)
	cmd := &cobra.Command{
		Use:   "harbor --input D [--out-dir DIR]",
		Short: "Write one Harbor task directory per task",
		Long: `harbor writes one Harbor task directory per task of the dataset, named after
its instance id (characters other than letters, digits, '.', '_' and '-'
become '_'):

  instruction.md          the issue text, then "Repository" (repository, base
                          commit, /testbed, task id) and "What to do" sections
  task.toml               version, [metadata], [verifier] / [agent] timeout_sec,
                          [environment] build_timeout_sec, cpus, memory_mb, storage_mb
  environment/Dockerfile  the row's Dockerfile; FROM <image> when the row has
                          only an image; with --base-image, a build of the
                          row's host repository (source_dir), copied to
                          environment/repo and put at /testbed
  tests/eval.sh           the row's eval script, unchanged
  tests/test.patch        the row's test patch, unchanged (rows with one)
  tests/test.sh           runs eval.sh and writes /logs/verifier/reward.txt:
                          1 when its last OMNIGRIL_EXIT_CODE=<n> line says 0
  solution/solve.sh       applies the gold patch with git apply (no gold
                          patch or --no-solution: no solution/)

Only rows graded by the OMNIGRIL_EXIT_CODE line (SWE-Factory rows, such as a
swerve build's *_transferred.json) convert: rows graded by parsing the test
log against FAIL_TO_PASS / PASS_TO_PASS (SWE-bench, SWE-smith, R2E-Gym) need
swerve's parsers, which a Harbor verifier does not have, and their eval
scripts' exit status does not say whether the tests passed. Such rows are
refused with the reason, or left out with --skip-unsupported.

The reward is always read the strict way: from the eval script's own echo of
OMNIGRIL_EXIT_CODE, never from its exit status or from printed lines, so
--strict-marker is accepted and --strict-marker=false is refused.

Task directories that exist already are refused unless --force replaces
them. Nothing is written until every task has been checked; then --jobs
directories are written at once. --out-dir defaults to ./harbor_tasks. One line per
written task goes to stdout (id, directory, where its environment came
from), then a summary line.

To check a converted task with swerve's own harbor grader (solve.sh must
give reward 1, nothing 0), build its environment and validate it, as in the
examples.`,
		Example: `  swerve convert harbor --input run_dir/instances_transferred.json --out-dir ./harbor
  swerve convert harbor --input run_dir/instances_transferred.json --limit 10 --no-solution -j 8
  swerve convert harbor --input examples/sample/sample_transferred.json --out-dir ./harbor \
      --base-image swerve-test-base:bookworm --force
  docker build -t calc-1 ./harbor/sample__calc-1/environment
  swerve validate --dataset ./harbor/sample__calc-1 --image calc-1
  swerve validate --dataset ./harbor/sample__calc-1 --backend local --source ./harbor/sample__calc-1/environment/repo`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if df.Dataset == "" {
				return errors.New("--input is required (a parquet, JSON or JSONL dataset, e.g. a *_transferred.json)")
			}
			if opts.OutDir == "" {
				return errors.New("--out-dir: name the directory that receives the tasks")
			}
			if !strictMarker {
				return errors.New("--strict-marker=false: swerve has no lenient mode; the reward comes only from the eval script's own OMNIGRIL_EXIT_CODE echo (an exit status or a printed line can lie)")
			}
			if df.K < 0 {
				return fmt.Errorf("--limit: want 0 (all) or more, got %d", df.K)
			}
			tasks, err := df.load(cmd)
			if err != nil {
				return err
			}
			res, err := harborconv.Convert(cmd.Context(), tasks, opts)
			if res != nil {
				reportHarbor(cmd, res, asJSON)
			}
			if err != nil {
				return err
			}
			if asJSON {
				return nil
			}
			noSolution := 0
			for _, w := range res.Written {
				if !w.Solution {
					noSolution++
				}
			}
			line := fmt.Sprintf("swerve convert harbor: wrote %d of %d tasks to %s", len(res.Written), len(tasks), opts.OutDir)
			if n := len(res.Skipped); n > 0 {
				line += fmt.Sprintf(", skipped %d", n)
			}
			switch {
			case opts.NoSolution:
				line += ", no solution/ (--no-solution)"
			case noSolution > 0:
				line += fmt.Sprintf(", %d without a gold patch (no solution/)", noSolution)
			}
			fmt.Fprintln(cmd.OutOrStdout(), line)
			return nil
		},
	}
	fs := cmd.Flags()
	df.register(fs)
	fs.StringVar(&df.Dataset, "input", "", "dataset to convert (same as --dataset), e.g. a swerve build's *_transferred.json")
	fs.StringVar(&opts.OutDir, "out-dir", "harbor_tasks", "directory that receives one task directory per task")
	fs.IntVar(&df.K, "limit", 0, "convert at most N tasks, the first ones (0: all; same as --k)")
	fs.BoolVar(&opts.NoSolution, "no-solution", false, "leave solution/ out, even for rows with a gold patch")
	fs.BoolVar(&strictMarker, "strict-marker", true, "read the reward only from the eval script's own OMNIGRIL_EXIT_CODE echo (always on; =false is refused)")
	workersVarP(fs, &opts.Jobs, "jobs", "j", 4, "task directories written at once")
	fs.BoolVar(&opts.Force, "force", false, "replace task directories that exist already")
	fs.StringVar(&opts.BaseImage, "base-image", "", "for rows with a host repository (source_dir) but no Dockerfile: build FROM this image with the repository copied to /testbed (needs bash and git)")
	fs.BoolVar(&opts.SkipUnsupported, "skip-unsupported", false, "leave out rows that cannot become Harbor tasks (listed on stderr) instead of failing")
	c := &opts.Config
	secondsVar(fs, &c.VerifierTimeout, "verifier-timeout", c.VerifierTimeout, "[verifier] timeout_sec: how long tests/test.sh may run")
	fs.Var((*seconds)(&c.VerifierTimeout), "eval-timeout", "same as --verifier-timeout")
	secondsVar(fs, &c.AgentTimeout, "agent-timeout", c.AgentTimeout, "[agent] timeout_sec")
	secondsVar(fs, &c.BuildTimeout, "build-timeout", c.BuildTimeout, "[environment] build_timeout_sec")
	fs.IntVar(&c.CPUs, "cpus", c.CPUs, "[environment] cpus")
	fs.IntVar(&c.MemoryMB, "memory-mb", c.MemoryMB, "[environment] memory_mb")
	fs.IntVar(&c.StorageMB, "storage-mb", c.StorageMB, "[environment] storage_mb")
	fs.StringVar(&c.AuthorName, "author-name", c.AuthorName, "[metadata] author_name")
	fs.StringVar(&c.AuthorEmail, "author-email", c.AuthorEmail, "[metadata] author_email")
	fs.StringVar(&c.Category, "category", c.Category, "[metadata] category")
	fs.BoolVar(&asJSON, "json", false, "print one JSON line per written task, then one with the summary")
	return cmd
}

// reportHarbor prints the written tasks (one per line) on stdout and the
// skipped ones on stderr.
func reportHarbor(cmd *cobra.Command, res *harborconv.Result, asJSON bool) {
	out, errw := cmd.OutOrStdout(), cmd.ErrOrStderr()
	if n := len(res.Skipped); n > 0 {
		fmt.Fprintf(errw, "swerve: left out %d %s that cannot become Harbor tasks:\n", n, plural(n, "task", "tasks"))
		for _, s := range res.Skipped {
			fmt.Fprintf(errw, "  %s: %s\n", s.InstanceID, s.Reason)
		}
	}
	if asJSON {
		enc := json.NewEncoder(out)
		enc.SetEscapeHTML(false)
		for _, w := range res.Written {
			enc.Encode(w)
		}
		skipped := make([]map[string]string, len(res.Skipped))
		for i, s := range res.Skipped {
			skipped[i] = map[string]string{"instance_id": s.InstanceID, "reason": s.Reason}
		}
		enc.Encode(map[string]any{"written": len(res.Written), "skipped": skipped})
		return
	}
	for _, w := range res.Written {
		note := ""
		if w.Replaced {
			note = " (replaced)"
		}
		fmt.Fprintf(out, "%s\t%s\t%s%s\n", w.InstanceID, w.Dir, w.Env, note)
	}
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
