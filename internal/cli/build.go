package cli

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/swerve-dev/swerve/internal/build"
	"github.com/swerve-dev/swerve/internal/fsutil"
	"github.com/swerve-dev/swerve/internal/llm"
	"github.com/swerve-dev/swerve/internal/sandbox"
	"github.com/swerve-dev/swerve/internal/sandbox/docker"
	"github.com/swerve-dev/swerve/internal/task"
)

func init() { register(newBuildCmd) }

// buildFlags are swerve build's flags, named as SWE-Factory's builder names
// them.
type buildFlags struct {
	Input         string
	Output        string
	MaxIterations int
	EvalTimeout   time.Duration
	Workers       int
	SkipExisting  bool
	ModelName     string
	RepoCache     string
	BaseURL       string
	APIKey        string
	JSON          bool
	Backend       string
}

func newBuildCmd() *cobra.Command {
	var bf buildFlags
	cmd := &cobra.Command{
		Use:   "build",
		Short: "Build each task's image from its Dockerfile, prove it with the gold patch, repair it with a model (Stage 1)",
		Long: `build is Stage 1, as SWE-Factory's build_image does it. For every row of --input
(SWE-Factory results: instance_id, repo, base_commit, patch, test_patch,
dockerfile, eval_script, ...) it builds the image from the row's Dockerfile,
tagged <instance_id lower-cased, "/" and ":" as "-">_swefactory_root, and proves
it in a box:

  - the repository is a git work tree at /testbed (not below it)
  - commands run as root
  - a login shell (bash -lc) keeps the image's PATH and finds git
  - git status in /testbed is clean after the build (artefacts belong in
    .git/info/exclude)
  - the gold patch applies
  - with it, the eval script prints OMNIGRIL_EXIT_CODE=0 within --eval-timeout
  - without it, in a fresh box, the eval script does not print 0

When a check fails, the model named by --model_name gets the Dockerfile, the
eval script and the failure and answers with edited files; that repeats up to
--max-iterations attempts. An eval past --eval-timeout filters the task out.

--model_name is an OpenAI-compatible chat model: a bare name goes to OpenRouter
when OPENROUTER_API_KEY is set (OPENROUTER_API_BASE_URL), else to
OPENAI_API_KEY's endpoint (OPENAI_BASE_URL); provider prefixes (openai/,
openrouter/, anthropic/, hosted_vllm/) are kept. replay/<file> replays recorded
replies offline; replay/<dir> reads <dir>/<instance_id>.json per instance.

--repo-cache DIR holds git mirrors (<owner>__<name>.git or <owner>/<name>.git):
clones of those GitHub repositories in the Dockerfile then come from the copied
mirror, so the build needs no network for them.

Outputs in --output, with SWE-Factory's names and fields: per instance
<instance_id>/ (Dockerfile, Dockerfile_original, Dockerfile.resolved and
summary.json on success, run_tests.sh, run_tests_original.sh, eval_script.sh,
eval_script_original.sh, iteration_0/, iteration_1/, ..., instance.log,
status.json); summary.json (this run's instances), summary_main.json,
summary_history.jsonl (one line appended per run), <input stem>_transferred.json
(ready for swerve run) and <input stem>_failed.json (every row that did not
succeed, never-run ones too, with failure_reason and docker_image). A row's own
docker_image (else docker_name) is kept in both datasets, as SWE-Factory keeps
it; otherwise it names the image built.

With --skip-existing, instances that succeeded before are kept and the others
run again (failures are retried), so an interrupted build resumes.`,
		Example: `  swerve build --input results.json --output build_out --max-iterations 5 --eval-timeout 300 \
      --max-workers 2 --skip-existing --model_name openai/gpt-4.1-mini
  swerve build --input results.json --output build_out --max-iterations 1 --repo-cache /data/mirrors
  swerve run --dataset build_out/results_transferred.json --run_golden --traj_dir golden --exp_name golden`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runBuild(cmd, &bf) },
	}
	fs := cmd.Flags()
	fs.StringVar(&bf.Input, "input", "", "SWE-Factory results (JSON list of rows with dockerfile and eval_script), a file or a Hub dataset owner/name[@revision]")
	fs.StringVar(&bf.Output, "output", "", "run directory for every output")
	fs.IntVar(&bf.MaxIterations, "max-iterations", build.DefaultMaxIterations, "attempts per instance, the first included (1: no repair, no model)")
	secondsVar(fs, &bf.EvalTimeout, "eval-timeout", 300*time.Second, "time limit of each eval script run; a task past it is filtered out")
	workersVar(fs, &bf.Workers, "max-workers", 2, "instances built at once")
	fs.BoolVar(&bf.SkipExisting, "skip-existing", false, "keep instances that succeeded before; failed and unfinished ones run again")
	fs.StringVar(&bf.ModelName, "model_name", "", "repair model (OpenRouter or OpenAI-compatible chat model)")
	fs.StringVar(&bf.RepoCache, "repo-cache", "", "directory of local git mirrors to clone GitHub repositories from (offline builds)")
	fs.StringVar(&bf.BaseURL, "base-url", "", "API base URL of the repair model (default: from the environment)")
	fs.StringVar(&bf.APIKey, "api-key", "", "API key of the repair model (default: from the environment)")
	fs.BoolVar(&bf.JSON, "json", false, "print progress as JSON lines on stdout")
	fs.StringVar(&bf.Backend, "backend", "docker", "where the images will run: build makes docker images; other backends run images the user provides, and build says so")
	return cmd
}

func runBuild(cmd *cobra.Command, bf *buildFlags) error {
	ctx := cmd.Context()
	stdout, stderr := cmd.OutOrStdout(), cmd.ErrOrStderr()
	if b := sandbox.Canonical(bf.Backend); b != "docker" && b != "auto" && b != "" {
		return fmt.Errorf("--backend %s: swerve build makes docker images only; the images a %s box runs are the user's: push them to a registry its nodes pull from (or import them into its runtime), then swerve run --backend %s", bf.Backend, b, bf.Backend)
	}
	if bf.Input == "" {
		return errors.New("--input: name the SWE-Factory results file")
	}
	if bf.Output == "" {
		return errors.New("--output: name the run directory")
	}
	if bf.MaxIterations < 1 {
		return fmt.Errorf("--max-iterations: want at least 1, got %d", bf.MaxIterations)
	}
	if bf.EvalTimeout <= 0 {
		return errors.New("--eval-timeout: want a positive time")
	}
	if bf.RepoCache != "" {
		if fi, err := os.Stat(bf.RepoCache); err != nil || !fi.IsDir() {
			return fmt.Errorf("--repo-cache %s: not a directory", bf.RepoCache)
		}
		abs, err := filepath.Abs(bf.RepoCache)
		if err != nil {
			return fmt.Errorf("--repo-cache: %w", err)
		}
		bf.RepoCache = abs
	}
	// The model is checked before anything is built: a missing key must
	// not surface after an hour of builds.
	var newModel build.ModelFactory
	if bf.MaxIterations > 1 || bf.ModelName != "" {
		name, opts, note, err := buildModel(bf.ModelName, bf.BaseURL, bf.APIKey, os.Getenv)
		switch {
		case err != nil && bf.MaxIterations > 1:
			return err
		case err != nil:
			fmt.Fprintf(stderr, "swerve: --max-iterations 1: no repairs, so the model is not used (%v)\n", err)
		default:
			if note != "" {
				fmt.Fprintf(stderr, "swerve: %s\n", note)
			}
			bf.ModelName = name
			newModel = modelFactory(name, opts)
		}
	}

	res, _, err := loadDataset(cmd, bf.Input, "", "", task.LoadOptions{})
	if err != nil {
		return fmt.Errorf("--input: %w", err)
	}
	if res.Dialect != task.DialectSWEFactory {
		return fmt.Errorf("--input %s: %s rows, not SWE-Factory rows (a JSON list with dockerfile and eval_script)", bf.Input, res.Dialect)
	}
	if len(res.Tasks) == 0 {
		return fmt.Errorf("--input %s: no rows", bf.Input)
	}

	if err := docker.Probe(ctx); err != nil {
		return fmt.Errorf("swerve build needs a container engine: %w", err)
	}
	eng, err := docker.New(ctx, docker.Config{Options: sandbox.Options{
		RunID: "build-" + strconv.Itoa(os.Getpid()), ShimPath: os.Getenv("SWERVE_SHIM_BINARY"),
	}})
	if err != nil {
		return err
	}
	cleanupOrphans(ctx, sandbox.Options{}, stderr)

	prog := newReporter(stdout, stderr, bf.JSON, len(res.Tasks), "swerve build", "proven")
	events := func(e build.Event) { prog.report(e, buildLine(e), counts{e.Done, e.Total, e.Running, e.Succeeded}) }
	stop := gracefulStop(ctx, "stopping: nothing new starts; running instances end after their current attempt and run again next time")
	sum, err := build.Run(ctx, build.Options{
		Tasks: res.Tasks, Output: bf.Output, Stem: build.DatasetStem(bf.Input), InputFile: bf.Input,
		MaxIterations: bf.MaxIterations, EvalTimeout: bf.EvalTimeout, Workers: bf.Workers,
		SkipExisting: bf.SkipExisting, RepoCache: bf.RepoCache, Engine: eng,
		NewModel: newModel, ModelName: bf.ModelName, Events: events, Stop: stop,
		RunID: "build-" + strconv.Itoa(os.Getpid()),
	})
	prog.finish()
	if sum != nil {
		printBuildSummary(stderr, sum, bf.Output)
	}
	if err != nil {
		if errors.Is(err, build.ErrInterrupted) || ctx.Err() != nil {
			fmt.Fprintf(stderr, "swerve: interrupted; rerun the same command with --skip-existing to finish the remaining instances\n")
			return exitError{130}
		}
		return err
	}
	return nothingProven(stderr, sum)
}

// nothingProven is build's exit status once it finished: a build that
// proved none of its instances did not do what was asked, so it exits 1
// with a line saying so (the summary above lists why each failed).
func nothingProven(stderr io.Writer, s *build.Summary) error {
	if s == nil || s.Main.Total == 0 || s.Main.Succeeded > 0 {
		return nil
	}
	fmt.Fprintf(stderr, "swerve: build proved none of the %d instances (see the failures above)\n", s.Main.Total)
	return exitError{1}
}

// buildModel turns --model_name into a model name and options the way
// SWE-Factory's builder picks its endpoint: a name without a provider goes
// to OpenRouter when OPENROUTER_API_KEY is set, else to the OpenAI(-
// compatible) endpoint; a provider prefix is kept, unless only OpenRouter's
// key is there (OpenRouter names models "openai/..." too). A missing key is
// an error. note says what was decided when it is not the name as given.
func buildModel(name, baseURL, apiKey string, getenv func(string) string) (string, llm.Options, string, error) {
	opts := llm.Options{BaseURL: baseURL, APIKey: apiKey, Getenv: getenv}
	if strings.TrimSpace(name) == "" {
		return "", opts, "", errors.New("--model_name: name the repair model (e.g. openai/gpt-4.1-mini), or pass --max-iterations 1 to build without repairs")
	}
	provider, _, err := llm.ParseName(name)
	if err != nil {
		return "", opts, "", fmt.Errorf("--model_name: %w", err)
	}
	hasOpenRouter := getenv("OPENROUTER_API_KEY") != ""
	note := ""
	switch provider {
	case llm.ProviderOracle:
		return "", opts, "", fmt.Errorf("--model_name %s: oracle models apply gold patches in Stage 2; repairs need a chat model, or replay/<file> offline", name)
	case llm.ProviderCompatible:
		if getenv("OPENROUTER_API_KEY") != "" && baseURL == "" {
			name = llm.ProviderOpenRouter + "/" + name
		} else {
			name = llm.ProviderOpenAI + "/" + name
		}
		note = "--model_name: using " + name
	case llm.ProviderOpenAI, llm.ProviderAnthropic:
		if _, err := llm.Resolve(name, opts); errors.Is(err, llm.ErrNoKey) && hasOpenRouter {
			name = llm.ProviderOpenRouter + "/" + name
			note = "--model_name: no key for " + provider + ", OPENROUTER_API_KEY is set: using " + name
		}
	}
	if _, err := llm.Resolve(name, opts); err != nil {
		if errors.Is(err, llm.ErrNoKey) {
			return "", opts, "", fmt.Errorf("--model_name %s: %w (SWE-Factory's builder reads OPENROUTER_API_KEY, or OPENAI_API_KEY with OPENAI_BASE_URL; --api-key works too)", name, err)
		}
		return "", opts, "", fmt.Errorf("--model_name: %w", err)
	}
	if provider == llm.ProviderReplay {
		if err := llm.Check(name, getenv); err != nil {
			return "", opts, "", fmt.Errorf("--model_name: %w", err)
		}
	}
	return name, opts, note, nil
}

// modelFactory makes one model per instance; replay/<dir> reads the
// instance's own file, <dir>/<instance_id>.json (or .jsonl).
func modelFactory(name string, opts llm.Options) build.ModelFactory {
	return func(t *task.Task) (llm.Client, error) {
		provider, path, _ := llm.ParseName(name)
		if provider == llm.ProviderReplay {
			if fi, err := os.Stat(path); err == nil && fi.IsDir() {
				base := filepath.Join(path, fsutil.SafeName(t.InstanceID))
				for _, ext := range []string{".json", ".jsonl"} {
					if _, err := os.Stat(base + ext); err == nil {
						return llm.NewReplay(name, base+ext)
					}
				}
				return nil, fmt.Errorf("replay model %s has no replies for %s (%s.json)", name, t.InstanceID, base)
			}
		}
		return llm.New(name, opts)
	}
}

func printBuildSummary(w io.Writer, s *build.Summary, out string) {
	m := s.Main
	fmt.Fprintf(w, "\nproven        %d / %d (%.1f%%)\n", m.Succeeded, m.Total, 100*m.SuccessRate)
	if s.Skipped > 0 {
		fmt.Fprintf(w, "this run      %d built, %d kept from before\n", s.Ran, s.Skipped)
	}
	// Every row not proven is listed in <stem>_failed.json; the terminal
	// gets the first few.
	const show = 20
	for i, f := range m.FailedInstances {
		if i == show {
			fmt.Fprintf(w, "failed        … and %d more (all in %s)\n", len(m.FailedInstances)-show, s.FailedFile)
			break
		}
		fmt.Fprintf(w, "failed        %s: %s\n", f.InstanceID, f.Reason)
	}
	if s.Errors > 0 {
		fmt.Fprintf(w, "errors        %d instances hit an engine or model API error; rerun with --skip-existing\n", s.Errors)
	}
	fmt.Fprintf(w, "wall time     %s\n", s.Wall.Round(time.Second))
	if s.Transferred != "" {
		fmt.Fprintf(w, "transferred   %s\n", s.Transferred)
	}
	fmt.Fprintf(w, "output        %s\n", out)
}

// buildLine is the line a build event prints ("" for none).
func buildLine(e build.Event) string {
	switch e.Kind {
	case build.EventDone:
		if e.Status == build.StatusSuccess {
			return fmt.Sprintf("✓ %s proven at attempt %d · %.0fs", e.InstanceID, e.Iteration, e.Seconds)
		}
		return fmt.Sprintf("✗ %s %s after %s · %.0fs · %s", e.InstanceID, e.Status, attemptCount(e.Iteration), e.Seconds, e.Reason)
	case build.EventIteration:
		if e.Status != build.StatusSuccess {
			return fmt.Sprintf("  %s attempt %d: %s", e.InstanceID, e.Iteration, e.Reason)
		}
	case build.EventAborted:
		return fmt.Sprintf("… %s interrupted (%s); it runs again next time", e.InstanceID, e.Reason)
	}
	return ""
}

// attemptCount writes "1 attempt", "3 attempts".
func attemptCount(n int) string {
	if n == 1 {
		return "1 attempt"
	}
	return fmt.Sprintf("%d attempts", n)
}
