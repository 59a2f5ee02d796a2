// Package cli holds swerve's cobra commands. Each command parses its flags
// into an options struct and calls the layers below; nothing here knows how
// a sandbox or a dataset works.
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"sync/atomic"
	"syscall"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/swerve-dev/swerve/internal/sandbox/docker"
	"github.com/swerve-dev/swerve/internal/version"
)

// exitError carries a process exit code through cobra without printing
// anything more (the command already reported what happened).
type exitError struct{ code int }

func (e exitError) Error() string { return fmt.Sprintf("exit status %d", e.code) }

// Main runs swerve with args (without the program name) and returns the exit
// code.
func Main(args []string) int {
	if len(args) == 1 && args[0] == "--version" {
		// The answer needs no command tree: skip building it.
		fmt.Fprintf(os.Stdout, "swerve %s\n", version.String())
		return 0
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	defer docker.CloseClients()
	ctx, stopSignals := withSignals(ctx, cancel, os.Stderr)
	defer stopSignals()
	root := newRoot(os.Stdout, os.Stderr, true)
	root.SetArgs(args)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return 0
	}
	if ee, ok := errors.AsType[exitError](err); ok {
		return ee.code
	}
	fmt.Fprintf(os.Stderr, "swerve: %v\n", err)
	return 1
}

// commands lists the constructors of every top-level command; files add to
// it from init().
var commands []func() *cobra.Command

func register(fn func() *cobra.Command) { commands = append(commands, fn) }

// NewRoot builds the command tree writing to stdout and stderr.
func NewRoot(stdout, stderr io.Writer) *cobra.Command { return newRoot(stdout, stderr, false) }

// newRoot builds the command tree; with staticCheck (the real process, not
// a test calling commands in process) commands that open boxes first check
// that this binary can be their helper (checkStaticHelper).
func newRoot(stdout, stderr io.Writer, staticCheck bool) *cobra.Command {
	var logLevel string
	root := &cobra.Command{
		Use:   "swerve",
		Short: "Run coding agents on software-engineering tasks, grade them, serve them to RL trainers",
		Long: `swerve builds a container image per task, runs an agent scaffold in it, grades the
patch with the task's hidden tests, and serves all of that to RL trainers.

It reads the datasets you already have (SWE-bench, SWE-Factory, R2E-Gym,
SWE-smith, SWE-Gym, NeMo Gym) and keeps the flag names you already type.`,
		Example: `  swerve tasks ls --dataset verified-test.parquet
  swerve shell --dataset examples/sample/tasks.jsonl --instance_id sample__calc-1
  swerve exec --dataset verified-test.parquet --instance_id django__django-16901 -- git status`,
		Version:       version.String(),
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error {
			if showBackendFlags(cmd) {
				// --help-backend is --help with the backends' flags.
				if err := cmd.Help(); err != nil {
					return err
				}
				return exitError{0}
			}
			var lvl slog.Level
			if err := lvl.UnmarshalText([]byte(logLevel)); err != nil {
				return fmt.Errorf("--log-level: %w", err)
			}
			slog.SetDefault(slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: lvl})))
			if staticCheck {
				return checkStaticHelper(cmd)
			}
			return nil
		},
	}
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.SetVersionTemplate("swerve {{.Version}}\n")
	root.PersistentFlags().StringVar(&logLevel, "log-level", "warn", "log level: debug, info, warn, error")
	root.PersistentFlags().Bool(helpBackendFlag, false, helpBackendUsage)
	root.SetUsageFunc(usage)
	for _, fn := range commands {
		root.AddCommand(fn())
	}
	normalizeFlags(root)
	helpBackendSkipsArgs(root)
	return root
}

// helpBackendSkipsArgs lets --help-backend show a command's help whatever
// its arguments, as --help does: a command's argument check gives way.
func helpBackendSkipsArgs(cmd *cobra.Command) {
	if check := cmd.Args; check != nil {
		cmd.Args = func(c *cobra.Command, args []string) error {
			if showBackendFlags(c) {
				return nil
			}
			return check(c, args)
		}
	}
	for _, c := range cmd.Commands() {
		helpBackendSkipsArgs(c)
	}
}

// normalizeFlags makes every flag answer to both spellings: --start_idx and
// --start-idx are the same flag, whichever way it was declared.
func normalizeFlags(cmd *cobra.Command) {
	cmd.SetGlobalNormalizationFunc(func(_ *pflag.FlagSet, name string) pflag.NormalizedName {
		return pflag.NormalizedName(strings.ReplaceAll(name, "_", "-"))
	})
	for _, c := range cmd.Commands() {
		normalizeFlags(c)
	}
}

// sigState lets a command ask for a graceful first signal.
type sigState struct {
	stop     chan struct{}
	graceful atomic.Bool
	message  atomic.Value // string
}

type sigKey struct{}

// withSignals handles SIGINT and SIGTERM: the first one cancels ctx, unless
// the command asked for a graceful stop (gracefulStop), in which case it
// closes that channel instead; the second always cancels.
func withSignals(ctx context.Context, cancel context.CancelFunc, stderr io.Writer) (context.Context, func()) {
	st := &sigState{stop: make(chan struct{})}
	ctx = context.WithValue(ctx, sigKey{}, st)
	ch := make(chan os.Signal, 2)
	signal.Notify(ch, os.Interrupt, syscall.SIGTERM)
	done := make(chan struct{})
	go func() {
		n := 0
		for {
			select {
			case <-done:
				return
			case sig := <-ch:
				n++
				if n == 1 && st.graceful.Load() {
					msg, _ := st.message.Load().(string)
					fmt.Fprintf(stderr, "\nswerve: %v: %s (again to stop at once)\n", sig, msg)
					close(st.stop)
					continue
				}
				if n > 1 {
					fmt.Fprintf(stderr, "\nswerve: %v again: cancelling now\n", sig)
				}
				cancel()
			}
		}
	}()
	return ctx, func() { signal.Stop(ch); close(done) }
}

// gracefulStop asks for a graceful first signal; the channel closes when it
// comes, and message is what the user is told. Outside Main (tests) it
// returns a channel that never closes.
func gracefulStop(ctx context.Context, message string) <-chan struct{} {
	st, ok := ctx.Value(sigKey{}).(*sigState)
	if !ok {
		return make(chan struct{})
	}
	st.message.Store(message)
	st.graceful.Store(true)
	return st.stop
}
