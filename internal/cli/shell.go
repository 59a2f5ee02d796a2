package cli

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/swerve-dev/swerve/internal/reward/grader"
	"github.com/swerve-dev/swerve/internal/sandbox"
	"github.com/swerve-dev/swerve/internal/task"
)

func init() { register(newShellCmd) }

func newShellCmd() *cobra.Command {
	var (
		df datasetFlags
		bf boxFlags
	)
	cmd := &cobra.Command{
		Use:   "shell --dataset D --instance_id ID [flags] [-- CMD...]",
		Short: "Open an interactive shell in a task's box",
		Long: `shell opens the task's box (the image an agent would get: repository at its
base commit, hidden tests absent) and attaches your terminal to a login shell
in it, with a real TTY when stdin is a terminal. The box is removed when the
shell exits.`,
		Example: `  swerve shell --dataset verified-test.parquet --instance_id django__django-16901
  swerve shell --dataset examples/sample/tasks.jsonl --instance_id sample__calc-1 --backend local
  swerve shell --dataset tasks.jsonl --instance_id x --network bridge -- python3`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := bf.check(cmd.Context(), false); err != nil {
				return err
			}
			t, err := oneTask(&df, func() ([]task.Task, error) { return df.load(cmd) })
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			box, backend, err := bf.openFor(ctx, t, cmd.ErrOrStderr(), true)
			if err != nil {
				return err
			}
			defer box.Close(context.WithoutCancel(ctx))
			// What an agent would see: the hidden tests are not there.
			// and the repository holds nothing past its base commit.
			proof, err := grader.PrepareBox(ctx, box, &t, "", bf.Workdir, true)
			if err != nil {
				return err
			}
			cmd.PrintErrf("swerve: %s\n", proof.Summary())
			ia, ok := box.(sandbox.Interactive)
			if !ok {
				return fmt.Errorf("backend %s cannot attach a terminal", backend)
			}
			cmd.PrintErrf("swerve: %s in %s (%s); exit the shell to remove the box\n", t.InstanceID, box.ID(), backend)
			req := sandbox.AttachRequest{Cmd: args, Stdin: os.Stdin, Stdout: os.Stdout}
			fd := int(os.Stdin.Fd())
			if term.IsTerminal(fd) && term.IsTerminal(int(os.Stdout.Fd())) {
				req.TTY = true
				if v := os.Getenv("TERM"); v != "" {
					req.Env = append(req.Env, "TERM="+v)
				}
				if backend != "local" {
					// The local shell uses this terminal directly; a
					// container's pty needs ours in raw mode and its size.
					state, err := term.MakeRaw(fd)
					if err != nil {
						return fmt.Errorf("terminal: %w", err)
					}
					defer term.Restore(fd, state)
					req.Resize = watchSize(ctx, int(os.Stdout.Fd()))
				}
			}
			code, err := ia.Attach(ctx, req)
			if err != nil {
				return err
			}
			if code != 0 {
				return exitError{code}
			}
			return nil
		},
	}
	df.register(cmd.Flags())
	bf.register(cmd.Flags())
	return cmd
}

// watchSize sends the terminal's size now and on every SIGWINCH until ctx
// ends.
func watchSize(ctx context.Context, fd int) <-chan [2]uint {
	ch := make(chan [2]uint, 1)
	winch := make(chan os.Signal, 1)
	signal.Notify(winch, syscall.SIGWINCH)
	send := func() {
		if w, h, err := term.GetSize(fd); err == nil {
			select {
			case ch <- [2]uint{uint(w), uint(h)}:
			default:
			}
		}
	}
	send()
	go func() {
		defer signal.Stop(winch)
		defer close(ch)
		for {
			select {
			case <-ctx.Done():
				return
			case <-winch:
				send()
			}
		}
	}()
	return ch
}
