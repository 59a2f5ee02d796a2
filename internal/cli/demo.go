package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/swerve-dev/swerve/internal/agent"
	"github.com/swerve-dev/swerve/internal/demo"
	"github.com/swerve-dev/swerve/internal/llm"
	"github.com/swerve-dev/swerve/internal/run"
	"github.com/swerve-dev/swerve/internal/sandbox"
	"github.com/swerve-dev/swerve/internal/sandbox/docker"
	"github.com/swerve-dev/swerve/internal/task"
)

func init() { register(newDemoCmd) }

func newDemoCmd() *cobra.Command {
	var (
		backend, trajDir, llmName, scaffold, base string
		workers                                   int
		fn                                        pyBool
	)
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "Run the whole loop on swerve's bundled tasks: no API key, no registry",
		Long: `demo runs swerve end to end on three small tasks built into the binary (two
Python, one Bash; graded by the swebench and swefactory graders). With a
container engine it builds the tasks' images from a locally made base image
(debootstrap, about a minute the first time; no registry); without one it uses
the local backend. It then runs every scaffold, in each mode it has, with the
offline oracle/gold model (which applies the gold patch with the scaffold's own
tools), grades each patch in a fresh box, and prints a table and where the
output files are.

With --llm_name (and the provider's key) it runs that model instead, with
--scaffold (default mini_swe_agent).`,
		Example: `  swerve demo
  swerve demo --backend local --traj_dir /tmp/demo
  OPENAI_API_KEY=... swerve demo --llm_name openai/gpt-4o-mini --scaffold r2egym`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			stdout, stderr := cmd.OutOrStdout(), cmd.ErrOrStderr()
			if llmName != "" && llmName != agent.OracleName {
				if err := llm.Check(llmName, nil); err != nil {
					return fmt.Errorf("--llm_name %s: %w", llmName, err)
				}
			}
			if trajDir == "" {
				trajDir = filepath.Join("swerve-demo", time.Now().Format("20060102-150405"))
			}
			dataset, err := demo.Extract(ctx, filepath.Join(trajDir, "tasks"))
			if err != nil {
				return err
			}
			chosen, dataset, err := demoBackend(ctx, backend, base, filepath.Dir(dataset), dataset, stderr)
			if err != nil {
				return err
			}
			res, err := task.Load(ctx, dataset, task.LoadOptions{})
			if err != nil {
				return err
			}
			type combo struct {
				s    *agent.Scaffold
				mode agent.Mode
			}
			var combos []combo
			if llmName != "" && llmName != agent.OracleName {
				af := agentFlags{Scaffold: scaffold, LLMName: llmName, FnCalling: fn}
				s, mode, err := af.setup()
				if err != nil {
					return err
				}
				combos = append(combos, combo{s, mode})
			} else {
				llmName = agent.OracleName
				for _, name := range agent.Scaffolds() {
					s, _ := agent.Lookup(name)
					for _, m := range s.Modes {
						combos = append(combos, combo{s, m})
					}
				}
			}
			bf := boxFlags{Backend: chosen, Pull: sandbox.PullNever, Network: sandbox.NetworkNone}
			opener := func(ctx context.Context, t *task.Task) (sandbox.Sandbox, string, error) {
				box, _, err := bf.open(ctx, *t, io.Discard)
				if err != nil {
					return nil, "", err
				}
				wd, err := repoDir(ctx, box, "")
				if err != nil {
					box.Close(context.WithoutCancel(ctx))
					return nil, "", err
				}
				return box, wd, nil
			}
			af := agentFlags{LLMName: llmName}
			stop := gracefulStop(ctx, "stopping after the current steps")
			tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
			fmt.Fprintf(tw, "SCAFFOLD\tMODE\tRESOLVED\tTURNS\tSECONDS\tOUTPUT\n")
			failed := 0
			for _, c := range combos {
				dir := filepath.Join(trajDir, c.s.Name+"-"+c.mode.String())
				fmt.Fprintf(stderr, "swerve demo: %s (%s mode) with %s on %d tasks, %s backend\n", c.s.Name, c.mode, llmName, len(res.Tasks), chosen)
				start := time.Now()
				sum, err := run.Run(ctx, run.Options{
					Tasks: res.Tasks, TrajDir: dir, ExpName: "demo", Workers: workers,
					Scaffold: c.s.Name, Mode: c.mode, ModelName: llmName, NewModel: af.model, Open: opener,
					Limits: agent.Limits{StepTimeout: time.Minute}, SkipIfExists: true, Stop: stop,
				})
				if err != nil {
					if errors.Is(err, run.ErrInterrupted) || ctx.Err() != nil {
						tw.Flush()
						return exitError{130}
					}
					return err
				}
				f := sum.File
				resolved := fmt.Sprintf("%d/%d", f.Reward1.Count, f.Total)
				if f.Errors > 0 {
					resolved += fmt.Sprintf(" (%d errors)", f.Errors) // not graded: no reward either way
				}
				if f.Reward1.Count != f.Total || f.Errors > 0 {
					failed++
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%.1f\t%.1f\t%s\n", c.s.Name, c.mode, resolved, f.AverageTurns, time.Since(start).Seconds(), dir)
			}
			tw.Flush()
			if llmName == agent.OracleName {
				fmt.Fprintf(stdout, "\nmodel oracle/gold is offline: it applies each task's gold patch with the scaffold's tools, so this checks the pipeline, not a model.\n")
			}
			fmt.Fprintf(stdout, "output: %s\n", trajDir)
			if llmName == agent.OracleName && failed > 0 {
				return fmt.Errorf("%d scaffold runs left tasks unresolved or in errors with the gold patch: see the output directories", failed)
			}
			return nil
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&backend, "backend", "auto", "auto (docker when an engine answers, else local), docker, local")
	fs.StringVar(&trajDir, "traj_dir", "", "output directory (default ./swerve-demo/<time>)")
	fs.StringVar(&llmName, "llm_name", "", "run this model instead of oracle/gold (needs its API key)")
	fs.StringVar(&scaffold, "scaffold", "mini_swe_agent", "scaffold for --llm_name")
	fs.Var(&fn, "use_fn_calling", "True or False, for --llm_name (default: the scaffold's own mode)")
	workersVar(fs, &workers, "max_workers", 3, "tasks run at once")
	fs.StringVar(&base, "base_image", demo.BaseImage, "base image of the demo images (built with debootstrap when missing or built from another recipe)")
	cmd.AddCommand(newDemoBaseImageCmd())
	return cmd
}

// newDemoBaseImageCmd builds the base image alone: scripts/test-image.sh
// calls it, so the demo and the Docker tests share one builder.
func newDemoBaseImageCmd() *cobra.Command {
	var (
		image, mirror string
		force         bool
	)
	cmd := &cobra.Command{
		Use:   "base-image",
		Short: "Build the base image of the demo and the Docker tests (debootstrap, no registry)",
		Long: `base-image builds the image the demo's images and swerve's Docker tests start
from: a minimal Debian bookworm made with debootstrap (python3, pytest, git,
patch, procps), working directory /testbed, imported into the engine without
any registry. It needs root and debootstrap, and about a minute. The image is
stamped with a hash of its recipe (label ` + demo.BaseLabel + `): an image
of that name with the same stamp is kept, any other is rebuilt.`,
		Example: `  sudo swerve demo base-image
  sudo swerve demo base-image --image swerve-test-base:bookworm --force`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			b, err := docker.New(ctx, docker.Config{})
			if err != nil {
				return err
			}
			built, err := demo.EnsureBase(ctx, b, image, demo.BaseOptions{Force: force, Mirror: mirror, Progress: cmd.ErrOrStderr()})
			if err != nil {
				return err
			}
			if !built {
				fmt.Fprintf(cmd.OutOrStdout(), "%s is up to date (recipe %s)\n", image, demo.BaseRecipe())
			} else {
				fmt.Fprintf(cmd.OutOrStdout(), "built %s (recipe %s)\n", image, demo.BaseRecipe())
			}
			return nil
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&image, "image", demo.BaseImage, "name of the image to build")
	fs.StringVar(&mirror, "mirror", "", "Debian mirror for debootstrap (default: the one apt uses here, else deb.debian.org)")
	fs.BoolVar(&force, "force", false, "rebuild even when the image carries this recipe's stamp")
	return cmd
}

// demoBackend picks the backend and, for docker, makes the images; it
// returns the backend's name and the dataset to run.
func demoBackend(ctx context.Context, want, base, dir, dataset string, stderr io.Writer) (string, string, error) {
	if want == "local" {
		return "local", dataset, nil
	}
	if want != "auto" && want != "docker" {
		return "", "", fmt.Errorf("--backend: want auto, docker or local, got %q", want)
	}
	fallback := func(err error) (string, string, error) {
		if want == "docker" {
			return "", "", err
		}
		fmt.Fprintf(stderr, "swerve demo: using the local backend: %v\n", err)
		return "local", dataset, nil
	}
	if err := docker.Probe(ctx); err != nil {
		return fallback(fmt.Errorf("no container engine answers (%v)", err))
	}
	b, err := docker.New(ctx, docker.Config{})
	if err != nil {
		return fallback(err)
	}
	if _, err := demo.EnsureBase(ctx, b, base, demo.BaseOptions{Progress: stderr}); err != nil {
		return fallback(fmt.Errorf("the base image %s could not be built: %v", base, err))
	}
	ds, err := demo.Images(ctx, b, dir, base, stderr)
	if err != nil {
		return fallback(err)
	}
	return "docker", ds, nil
}
