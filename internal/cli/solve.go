package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/swerve-dev/swerve/internal/agent"
	"github.com/swerve-dev/swerve/internal/fsutil"
	"github.com/swerve-dev/swerve/internal/llm"
	"github.com/swerve-dev/swerve/internal/reward/grader"
	"github.com/swerve-dev/swerve/internal/task"
)

func init() { register(newSolveCmd) }

func newSolveCmd() *cobra.Command {
	var (
		df  datasetFlags
		bf  boxFlags
		af  agentFlags
		out string
	)
	cmd := &cobra.Command{
		Use:   "solve",
		Short: "Run an agent on one task and watch it work",
		Long: `solve runs one agent episode on one task: it opens the task's box, drives the
model through the scaffold's tools, streams every step to the terminal, and
writes the trajectory and the patch (taken with git after the episode) to a
directory it names at the end.

Models: any LiteLLM-style name (openai/..., anthropic/..., openrouter/...,
hosted_vllm/..., a bare name at $LLM_BASE_URL), or the offline oracle/gold,
which applies the task's gold patch with the scaffold's own tools, and
replay/<file>, which replays recorded replies. Offline results are marked as
such.

Before the box opens, the engine (for a task with an image) and the model's
endpoint (unless --skip_llm_check) are checked: a failure is one line and exit
status 1. Model retries are printed on stderr as they happen. The exit status
is 3 when the episode ended in llm_error or sandbox_error.`,
		Example: `  swerve solve --dataset examples/sample/tasks.jsonl --instance_id sample__calc-1 \
      --scaffold r2egym --llm_name oracle/gold
  OPENAI_API_KEY=... swerve solve --dataset verified-test.parquet \
      --instance_id django__django-16901 --scaffold mini_swe_agent --llm_name openai/gpt-4o-mini`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			stderr := cmd.ErrOrStderr()
			if err := bf.check(ctx, false); err != nil {
				return err
			}
			s, mode, err := af.setup()
			if err != nil {
				return err
			}
			t, err := oneTask(&df, func() ([]task.Task, error) { return df.load(cmd) })
			if err != nil {
				return err
			}
			if err := bf.checkTasks(ctx, []task.Task{t}); err != nil {
				return err
			}
			if err := af.checkModel(ctx); err != nil {
				return err
			}
			af.retries = func(_ string, r llm.Retry) { fmt.Fprintf(stderr, "swerve: model %s\n", r) }
			if s.Experimental {
				fmt.Fprintf(stderr, "swerve: scaffold %s is experimental\n", s.Name)
			}
			box, backend, err := bf.openFor(ctx, t, stderr, true)
			if err != nil {
				return err
			}
			defer box.Close(context.WithoutCancel(ctx))
			workdir, err := repoDir(ctx, box, bf.Workdir)
			if err != nil {
				return fmt.Errorf("task %s: %w", t.InstanceID, err)
			}
			proof, err := grader.PrepareBox(ctx, box, &t, "", workdir, true)
			if err != nil {
				return err
			}
			model, err := af.model(s, &t, workdir, mode)
			if err != nil {
				return err
			}
			if llm.IsOffline(model) {
				fmt.Fprintf(stderr, "swerve: %s is an offline model: this run says nothing about a real model's ability\n", model.Name())
			}
			fmt.Fprintf(stderr, "swerve: %s · %s (%s mode) · %s · %s backend · repository %s\n", t.InstanceID, s.Name, mode, model.Name(), backend, workdir)
			fmt.Fprintf(stderr, "swerve: %s\n", proof.Summary())
			p := newStepPrinter(cmd.OutOrStdout())
			traj, runErr := agent.Run(ctx, agent.Options{
				Scaffold: s, Mode: mode, Model: model, Box: box, Task: &t, Workdir: workdir,
				Limits: af.limits(), Sampling: af.sampling(cmd.Flags().Changed),
				OnStep: p.step,
			})
			if traj == nil {
				return runErr
			}
			if out == "" {
				out = filepath.Join("swerve-solve", fmt.Sprintf("%s-%s", fsutil.SafeName(t.InstanceID), time.Now().Format("20060102-150405")))
			}
			if err := writeSolve(out, traj); err != nil {
				return err
			}
			p.summary(traj, out)
			if runErr != nil {
				return runErr
			}
			if traj.ExitReason == agent.ExitLLMError || traj.ExitReason == agent.ExitSandboxError {
				// The episode was cut short outside the model's choices:
				// not the result asked for.
				fmt.Fprintf(stderr, "swerve: the episode ended in %s: %s\n", traj.ExitReason, traj.ExitDetail)
				return exitError{exitTaskErrors}
			}
			return nil
		},
	}
	df.register(cmd.Flags())
	bf.register(cmd.Flags())
	af.register(cmd.Flags())
	cmd.Flags().StringVar(&out, "out", "", "directory for trajectory.json, messages.json and patch.diff (default ./swerve-solve/<id>-<time>)")
	return cmd
}

func writeSolve(dir string, traj *agent.Trajectory) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	tj, err := json.MarshalIndent(traj, "", "  ")
	if err != nil {
		return err
	}
	var msgs any = traj.Messages
	if len(traj.Tools) > 0 {
		msgs = map[string]any{"messages": traj.Messages, "tools": traj.Tools}
	}
	mj, err := json.MarshalIndent(msgs, "", "  ")
	if err != nil {
		return err
	}
	for name, data := range map[string][]byte{"trajectory.json": tj, "messages.json": mj, "patch.diff": []byte(traj.Patch)} {
		if err := fsutil.WriteFileAtomic(filepath.Join(dir, name), data, false); err != nil {
			return err
		}
	}
	return nil
}

// stepPrinter streams steps readably, coloured on a terminal.
type stepPrinter struct {
	w     io.Writer
	color bool
}

func newStepPrinter(w io.Writer) *stepPrinter {
	p := &stepPrinter{w: w}
	if f, ok := w.(*os.File); ok && term.IsTerminal(int(f.Fd())) && os.Getenv("NO_COLOR") == "" {
		p.color = true
	}
	return p
}

func (p *stepPrinter) paint(code, s string) string {
	if !p.color {
		return s
	}
	return "\x1b[" + code + "m" + s + "\x1b[0m"
}

func clip(s string, lines int) string {
	s = strings.TrimRight(s, "\n")
	parts := strings.Split(s, "\n")
	if len(parts) <= lines {
		return s
	}
	return strings.Join(parts[:lines], "\n") + fmt.Sprintf("\n… %d more lines", len(parts)-lines)
}

func (p *stepPrinter) step(s *agent.Step) {
	fmt.Fprintln(p.w, p.paint("1;36", fmt.Sprintf("── step %d · model %.1fs · tools %.1fs · %d tokens", s.Count, s.LLMTime, s.EnvTime, s.TotalTokens)))
	if t := strings.TrimSpace(s.Thought); t != "" {
		fmt.Fprintln(p.w, clip(t, 12))
	}
	if s.FormatError != "" {
		fmt.Fprintln(p.w, p.paint("1;31", "format error: "+s.FormatError))
		return
	}
	if s.RawAction != "" {
		fmt.Fprintln(p.w, p.paint("33", clip(s.RawAction, 15)))
	}
	if s.Observation != "" {
		fmt.Fprintln(p.w, p.paint("2", clip(s.Observation, 20)))
	}
}

func (p *stepPrinter) summary(t *agent.Trajectory, dir string) {
	reason := string(t.ExitReason)
	if t.ExitDetail != "" {
		reason += " (" + t.ExitDetail + ")"
	}
	col := "1;32"
	if t.ExitReason != agent.ExitSubmitted {
		col = "1;33"
	}
	fmt.Fprintln(p.w, p.paint(col, "── done: "+reason))
	est := ""
	if t.Usage.Estimated {
		est = " (estimated)"
	}
	fmt.Fprintf(p.w, "steps %d · tokens in %d, out %d%s · cost $%.4f · %.1fs\n", len(t.Steps), t.Usage.InputTokens, t.Usage.OutputTokens, est, t.Cost, t.Duration)
	if t.Offline {
		fmt.Fprintf(p.w, "model %s is offline (scripted): not a measure of a real model\n", t.Model)
	}
	fmt.Fprintf(p.w, "patch: %d lines · written to %s\n", strings.Count(t.Patch, "\n"), dir)
}
