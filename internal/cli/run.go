package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"sigs.k8s.io/yaml"

	"github.com/swerve-dev/swerve/internal/agent"
	"github.com/swerve-dev/swerve/internal/llm"
	"github.com/swerve-dev/swerve/internal/reward/grader"
	"github.com/swerve-dev/swerve/internal/run"
)

func init() { register(newRunCmd) }

// runFlags are swerve run's own flags.
type runFlags struct {
	Workers      int
	TrajDir      string
	ExpName      string
	EvalTimeout  time.Duration
	RunGolden    bool
	SkipIfExists bool
	GradeIn      string
	MaxAttempts  int
	MaxInfraRow  int
	Reward       string
	Config       string
	JSON         bool
	Prewarm      int
	Upstream     upstreamFlags
}

func newRunCmd() *cobra.Command {
	var (
		df datasetFlags
		bf boxFlags
		af agentFlags
		rf runFlags
	)
	cmd := &cobra.Command{
		Use:   "run",
		Short: "Run an agent on many tasks, grade every patch, write trajectories and rewards (Stage 2)",
		Long: `run is Stage 2: for every selected task it opens the task's box, runs the
scaffold with the model, takes the patch with git, grades it in a fresh box from
the same image, and writes the files the SWE-Factory / R2E-Gym runners write
under --traj_dir:

  <exp_name>.jsonl                        one trajectory per task
  trajectories.jsonl                      messages per task (+ tools in fn mode)
  trajectories_rejection_sampling.jsonl   the same for reward-1 tasks only
  reward_summary.json, preds.json         counts and ids; SWE-bench predictions
  <instance_id>/                          agent.log, output_patch.diff,
                                          test_output.log, metadata.json

Rerunning the same command resumes: finished tasks are skipped, the rest run
again, none is lost or counted twice, also after kill -9. The first Ctrl-C
starts nothing new and lets running tasks finish their current step (they run
again next time); the second cancels at once. Boxes are always removed.

A task that fails for a reason outside the model (a box that will not open, a
missing image, the engine, the model provider down past its retries, a grader
that cannot grade, a full disk) is recorded as an error, not as reward 0: it
is left out of the accuracy, <exp_name>.jsonl, the trajectory files and
preds.json, and counted apart in reward_summary.json (errors, error_ids,
error_kinds, given_up). The next run with the same arguments runs it again, up
to --max_attempts attempts in all; a task whose grading failed keeps its
trajectory, and only its grading is redone. The exit status is 3 when errors
remain. Failures of the model itself (format errors, limits, a context
overflow, a patch that does not apply, failing tests) stay reward 0.

Before the first task: the engine must answer when a task names an image
(--backend auto never runs such a task on the host instead), and the model's
endpoint is asked once whether it answers, takes the key and serves the model
(--skip_llm_check leaves that out). Either failing is one line, exit status 1,
nothing started. The run stops, exit status 1, keeping what finished and
printing the command that resumes, when a disk fills, the engine goes away,
or --max_consecutive_infra_errors tasks in a row end in the same kind of
error. Model retries are printed as they happen (retry 3/7 in 4s: ...).

--config FILE reads the same keys from YAML or JSON; flags given on the
command line win. --args_path FILE is R2E-Gym's: an AgentArgs YAML whose
system_prompt, instance_prompt and command_files replace the scaffold's.

A rerun must use the settings the directory's results were made with (model,
scaffold, limits, sampling, grader, eval timeout, iterations, box settings,
each task's dataset row): otherwise it is refused with one line naming what
changed. Two runs on one --traj_dir at once are refused (a lock naming the
holder's pid). Upstream's runner flags are taken under their names; the ones
swerve does not do (--num_restarts other than 1, --use_existing False,
--root_mode False) are refused with the reason; --backend kubernetes is k8s.`,
		Example: `  swerve run --dataset X_transferred.json --split dev --k 10 --start_idx 0 --max_workers 5 \
      --traj_dir ./run_logs/my_run --exp_name my_run --llm_name openai/gpt-4o-mini \
      --use_fn_calling False --backend docker --scaffold mini_swe_agent
  swerve run --dataset examples/sample/tasks.jsonl --llm_name oracle/gold --scaffold r2egym \
      --traj_dir /tmp/oracle --exp_name oracle
  # upstream's names: --max_tokens, --max_reward_calc_time, retries at rising temperature
  swerve run --dataset X_transferred.json --split test --k 50 --max_workers 8 --llm_name openai/gpt-4o \
      --scaffold r2egym --use_fn_calling True --max_tokens 65536 --max_reward_calc_time 300 \
      --max_iterations 3 --skip_existing True --prepull_images True --backend docker \
      --traj_dir ./traj --exp_name gpt4o_run2
  swerve run --dataset verified-test.parquet --instance_ids django__django-16901 --run_golden \
      --traj_dir /tmp/golden --exp_name golden`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if rf.Config != "" {
				if err := applyConfig(cmd.Flags(), rf.Config); err != nil {
					return err
				}
			}
			return runRun(cmd, &df, &bf, &af, &rf)
		},
	}
	df.register(cmd.Flags())
	bf.register(cmd.Flags())
	af.register(cmd.Flags())
	fs := cmd.Flags()
	rf.Upstream.register(fs, &rf.EvalTimeout)
	workersVar(fs, &rf.Workers, "max_workers", 1, "tasks run at once")
	fs.StringVar(&rf.TrajDir, "traj_dir", "", "output directory (default ./run_logs/<exp_name>)")
	fs.StringVar(&rf.ExpName, "exp_name", "", "experiment name: names <exp_name>.jsonl (default: the dataset's name)")
	secondsVar(fs, &rf.EvalTimeout, "eval_timeout", 300*time.Second, "time limit of the eval script")
	fs.BoolVar(&rf.RunGolden, "run_golden", false, "grade each task's gold patch instead of running the model (a pipeline check)")
	fs.BoolVar(&rf.SkipIfExists, "skip_if_exists", false, "keep finished tasks even when they were run with other settings")
	fs.IntVar(&rf.MaxAttempts, "max_attempts", run.DefaultMaxAttempts, "attempts at a task that keeps ending in an infrastructure error, counted across runs; then it is given up")
	fs.IntVar(&rf.MaxInfraRow, "max_consecutive_infra_errors", defaultMaxInfraRow, "stop the run after this many tasks in a row end in the same kind of infrastructure error (a model endpoint or engine gone), keeping what finished; 0: never")
	fs.StringVar(&rf.GradeIn, "grade_in", "fresh", "grade in a fresh box from the task's image (fresh), or in the agent's own box as upstream does (same)")
	fs.StringVar(&rf.Reward, "reward", "", "force a grader: swebench, swefactory, r2e, swesmith, harbor (default: the task's)")
	fs.StringVar(&rf.Config, "config", "", "YAML file with the same keys as the flags (flags win)")
	fs.BoolVar(&rf.JSON, "json", false, "print progress as JSON lines on stdout")
	registerPrewarm(fs, &rf.Prewarm)
	return cmd
}

// applyConfig sets every flag named in the YAML file that the command line
// did not set.
func applyConfig(fs *pflag.FlagSet, path string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("--config: %w", err)
	}
	var m map[string]any
	if err := yaml.Unmarshal(data, &m); err != nil {
		return fmt.Errorf("--config %s: %w", path, err)
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		f := fs.Lookup(k)
		if f == nil || k == "config" || k == "args_path" {
			return fmt.Errorf("--config %s: unknown key %q", path, k)
		}
		if f.Changed {
			continue
		}
		var vals []string
		switch v := m[k].(type) {
		case []any:
			for _, x := range v {
				vals = append(vals, fmt.Sprint(x))
			}
		case bool:
			vals = []string{strconv.FormatBool(v)}
		case float64:
			vals = []string{strconv.FormatFloat(v, 'f', -1, 64)}
		case nil:
			continue
		default:
			vals = []string{fmt.Sprint(v)}
		}
		for _, v := range vals {
			if err := fs.Set(k, v); err != nil {
				return fmt.Errorf("--config %s: %s: %w", path, k, err)
			}
		}
	}
	return nil
}

func runRun(cmd *cobra.Command, df *datasetFlags, bf *boxFlags, af *agentFlags, rf *runFlags) error {
	ctx := cmd.Context()
	stdout, stderr := cmd.OutOrStdout(), cmd.ErrOrStderr()
	var (
		s    *agent.Scaffold
		mode agent.Mode
		err  error
	)
	if rf.RunGolden {
		if s, err = agent.Lookup(af.Scaffold); err != nil {
			return fmt.Errorf("--scaffold: %w", err)
		}
	} else if s, mode, err = af.setup(); err != nil {
		return err
	}
	if err := rf.Upstream.check(rf.RunGolden); err != nil {
		return err
	}
	if _, err := bf.resolve(ctx); err != nil {
		return err
	}
	tasks, err := df.load(cmd)
	if err != nil {
		return err
	}
	if len(tasks) == 0 {
		return errors.New("no tasks selected")
	}
	for i := range tasks {
		if _, err := grader.Choose(&tasks[i], rf.Reward); err != nil {
			return err
		}
	}
	if rf.ExpName == "" {
		rf.ExpName = datasetStem(df.Dataset)
	}
	if rf.TrajDir == "" {
		rf.TrajDir = "run_logs/" + rf.ExpName
	}
	if p := rf.Upstream.SkipExisting.ptr(); p != nil && *p {
		solved, err := solvedImages(rf.TrajDir, rf.ExpName)
		if err != nil {
			return err
		}
		var n int
		if tasks, n = dropSolved(tasks, solved); n > 0 {
			fmt.Fprintf(stderr, "swerve: --skip_existing: %d tasks already have reward 1 in %s; %d left\n", n, rf.TrajDir, len(tasks))
		}
	}
	// Before any task: the engine the tasks' images need must answer.
	if err := bf.checkTasks(ctx, tasks); err != nil {
		return err
	}
	if !rf.RunGolden {
		if err := af.checkModel(ctx); err != nil {
			return err
		}
	}
	if p := rf.Upstream.Prepull.ptr(); p != nil && *p && len(tasks) > 0 {
		if err := prepull(ctx, bf, tasks, rf.Workers, stderr); err != nil {
			return err
		}
	}
	if s.Experimental {
		fmt.Fprintf(stderr, "swerve: scaffold %s is experimental\n", s.Name)
	}
	// Boxes a killed earlier run left behind go first.
	cleanupOrphans(ctx, bf.options(), stderr)

	closeWarm, err := bf.setPrewarm(rf.Prewarm)
	if err != nil {
		return err
	}
	defer closeWarm(context.WithoutCancel(ctx))
	opener := bf.openRepo
	config := map[string]any{}
	cmd.Flags().VisitAll(func(f *pflag.Flag) {
		if f.Name != "json" && f.Name != "config" && f.Name != "prewarm" {
			config[strings.ReplaceAll(f.Name, "-", "_")] = f.Value.String()
		}
	})
	prog := newReporter(stdout, stderr, rf.JSON, len(tasks), "swerve run", "resolved")
	events := func(e run.Event) { prog.report(e, runLine(e), counts{e.Done, e.Total, e.Running, e.Resolved}) }
	af.retries = func(id string, r llm.Retry) { prog.note(fmt.Sprintf("%s: model %s", id, r)) }
	stop := gracefulStop(ctx, "stopping: nothing new starts; running tasks end after their current step and will run again next time")
	sum, err := run.Run(ctx, run.Options{
		Tasks: tasks, TrajDir: rf.TrajDir, ExpName: rf.ExpName, Workers: rf.Workers,
		Scaffold: s.Name, Mode: mode, ModelName: af.LLMName, NewModel: af.model, Open: opener, AgentOpen: bf.openAgentRepo,
		Limits: af.limits(), Sampling: af.sampling(cmd.Flags().Changed),
		EvalTimeout: rf.EvalTimeout, Reward: rf.Reward, RunGolden: rf.RunGolden, SkipIfExists: rf.SkipIfExists,
		GradeIn: rf.GradeIn, MaxAttempts: rf.MaxAttempts, MaxConsecutiveErrors: rf.MaxInfraRow, Config: config, Events: events, Stop: stop,
		MaxIterations: rf.Upstream.MaxIterations, Box: bf.boxSettings(),
		Override: af.override, OverrideHash: af.overrideHash,
		Upcoming: bf.upcoming(ctx, warmBoxes(rf.RunGolden, rf.GradeIn), !rf.RunGolden),
	})
	prog.finish()
	if sum != nil {
		printRunSummary(stderr, sum)
	}
	printWarmSummary(stderr, bf.warm)
	if err != nil {
		if errors.Is(err, run.ErrInterrupted) || ctx.Err() != nil {
			fmt.Fprintf(stderr, "swerve: interrupted; rerun the same command to finish the remaining tasks\n")
			return exitError{130}
		}
		if errors.Is(err, run.ErrStopped) {
			fmt.Fprintf(stderr, "swerve: stopped: %v\nswerve: to resume, rerun: %s\n", err, commandLine())
			return exitError{1}
		}
		return err
	}
	if sum != nil && sum.Errors > 0 {
		return exitError{exitTaskErrors}
	}
	return nil
}

// defaultMaxInfraRow is --max_consecutive_infra_errors' default.
const defaultMaxInfraRow = 5

// commandLine is this process's command line, quoted for a POSIX shell.
func commandLine() string {
	args := make([]string, len(os.Args))
	for i, a := range os.Args {
		if a != "" && strings.IndexFunc(a, func(r rune) bool {
			return !(r == '-' || r == '_' || r == '.' || r == '/' || r == ':' || r == '=' || r == ',' || r == '@' || r == '+' ||
				(r >= '0' && r <= '9') || (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z'))
		}) < 0 {
			args[i] = a
			continue
		}
		args[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
	}
	return strings.Join(args, " ")
}

// exitTaskErrors is the exit status of a run, validate or grade that ended
// with tasks in infrastructure errors: no verdict, not a reward of 0.
const exitTaskErrors = 3

// datasetStem is the dataset's file name without extensions.
func datasetStem(p string) string {
	base := p
	if i := strings.LastIndexByte(base, '/'); i >= 0 {
		base = base[i+1:]
	}
	if i := strings.IndexByte(base, '.'); i > 0 {
		base = base[:i]
	}
	if base == "" {
		return "run"
	}
	return base
}

func printRunSummary(w io.Writer, s *run.Summary) {
	f := s.File
	if f == nil {
		return
	}
	fmt.Fprintf(w, "\nresolved      %d / %d graded (accuracy %.1f%%)\n", f.Reward1.Count, f.Total, 100*f.Accuracy)
	if s.Skipped > 0 || s.Retried > 0 {
		again := ""
		if s.Retried > 0 {
			again = fmt.Sprintf(" (%d again after an error)", s.Retried)
		}
		fmt.Fprintf(w, "this run      %d ran%s, %d finished before\n", s.Ran, again, s.Skipped)
	}
	fmt.Fprintf(w, "average turns %.1f\n", f.AverageTurns)
	var reasons []string
	for r, n := range f.ExitReasons {
		reasons = append(reasons, fmt.Sprintf("%s %d", r, n))
	}
	sort.Strings(reasons)
	fmt.Fprintf(w, "exit reasons  %s\n", strings.Join(reasons, ", "))
	est := ""
	if f.Tokens.Estimated {
		est = " (estimated)"
	}
	fmt.Fprintf(w, "tokens        in %d, out %d%s\n", f.Tokens.Input, f.Tokens.Output, est)
	if f.Errors > 0 {
		var kinds []string
		for k, n := range f.ErrorKinds {
			kinds = append(kinds, fmt.Sprintf("%s %d", k, n))
		}
		sort.Strings(kinds)
		fmt.Fprintf(w, "errors        %d, no reward (%s); see reward_summary.json's error_reasons\n", f.Errors, strings.Join(kinds, ", "))
		if again := f.Errors - f.GivenUp.Count; again > 0 {
			fmt.Fprintf(w, "              %d run again when the same command is rerun\n", again)
		}
		if f.GivenUp.Count > 0 {
			fmt.Fprintf(w, "              %d given up after --max_attempts: %s\n", f.GivenUp.Count, strings.Join(f.GivenUp.InstanceIDs, ", "))
		}
	}
	fmt.Fprintf(w, "wall time     %s\n", s.Wall.Round(time.Second))
	if f.Offline {
		fmt.Fprintf(w, "model         %s: offline, results say nothing about a real model\n", strings.Join(f.Models, ", "))
	}
	fmt.Fprintf(w, "output        %s\n", s.TrajDir)
}

// runLine is the line a run event prints ("" for none).
func runLine(e run.Event) string {
	switch e.Kind {
	case run.EventDone:
		mark := "✗"
		if e.Reward == 1 {
			mark = "✓"
		}
		return fmt.Sprintf("%s %s reward %g · %s · %d steps · %.0fs · %s", mark, e.InstanceID, e.Reward, e.ExitReason, e.Steps, e.Seconds, e.Reason)
	case run.EventError:
		next := "it runs again next time"
		if e.GivenUp {
			next = fmt.Sprintf("given up after %d attempts", e.Attempts)
		}
		return fmt.Sprintf("! %s error (%s), no reward · attempt %d · %s · %s", e.InstanceID, e.ErrorKind, e.Attempts, next, e.Reason)
	case run.EventAborted:
		return fmt.Sprintf("… %s interrupted (%s); it runs again next time", e.InstanceID, e.Reason)
	}
	return ""
}
