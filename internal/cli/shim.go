package cli

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/swerve-dev/swerve/internal/shim"
	"github.com/swerve-dev/swerve/internal/version"
)

func init() {
	register(newShimCmd)
	register(newShimExecCmd)
	register(newShimDialCmd)
	register(newShimTreeCmd)
}

// newShimTreeCmd is what a grader runs in a box to list the files outside
// the repository before and after the patch's code ran.
func newShimTreeCmd() *cobra.Command {
	return &cobra.Command{
		Use:    shim.TreeSubcommand + " ROOT...",
		Short:  "List every file under the roots with its type, mode, owner, size, times and inode (used inside boxes)",
		Hidden: true,
		Args:   cobra.MinimumNArgs(1),
		Example: `  # what a phased eval run lists before and after the install step:
  /.swerve/swerve shim-tree /usr /etc /opt`,
		RunE: func(cmd *cobra.Command, args []string) error {
			return shim.WalkTree(cmd.OutOrStdout(), args)
		},
	}
}

// newShimDialCmd is what a backend runs in a box to see whether the box
// can reach an address (a network-less box must not).
func newShimDialCmd() *cobra.Command {
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:    shim.DialSubcommand + " HOST:PORT...",
		Short:  "Try a TCP connection to each address and print what happened (used inside boxes)",
		Hidden: true,
		Args:   cobra.MinimumNArgs(1),
		Example: `  # what the k8s backend runs in the first network-less pod of a run:
  /.swerve/swerve shim-dial --timeout 1500ms 10.0.0.4:10250`,
		RunE: func(cmd *cobra.Command, args []string) error {
			return shim.DialAll(cmd.Context(), cmd.OutOrStdout(), args, timeout)
		},
	}
	cmd.Flags().DurationVar(&timeout, "timeout", 2*time.Second, "how long each connection attempt may take")
	return cmd
}

// newShimExecCmd is what the helper re-executes itself as to start a
// command with sandbox.ExecRequest.PrivateMemory.
func newShimExecCmd() *cobra.Command {
	var user string
	cmd := &cobra.Command{
		Use:    shim.ExecSubcommand + " -- CMD [ARG...]",
		Short:  "Start a command whose memory other processes cannot read (used by the in-box helper)",
		Hidden: true,
		Args:   cobra.MinimumNArgs(1),
		Example: `  # what the helper runs for a sealed eval script:
  /.swerve/swerve shim-exec -- /bin/bash -c '...' /eval.sh`,
		DisableFlagParsing: false,
		RunE: func(_ *cobra.Command, args []string) error {
			return shim.ExecPrivate(user, args)
		},
	}
	cmd.Flags().StringVar(&user, "user", "", "run the command as this numeric UID:GID, without supplementary groups")
	return cmd
}

func newShimCmd() *cobra.Command {
	var listen string
	cmd := &cobra.Command{
		Use:    "shim",
		Short:  "Serve the in-sandbox helper protocol on stdin/stdout (started by swerve itself)",
		Hidden: true,
		// Engines may append the image's CMD; the helper ignores arguments.
		Args: cobra.ArbitraryArgs,
		Long: `shim is what swerve runs inside every sandbox: one long-lived helper that
reads framed requests on stdin and answers on stdout, so each command costs a
fork/exec in the box instead of a round trip through the container engine.
People never need to run it.`,
		Example: `  # what the docker backend starts as the container's main process:
  /.swerve/swerve shim --listen /.swerve/run/shim.sock`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			// Nothing sent from inside the box ends the helper: not the
			// signals that cancel other commands (see withSignals), nor any
			// other catchable one. Its stream ending is what stops it.
			defer shim.HoldSignals()()
			// Nor can it trace the helper or open its stream through /proc.
			if err := shim.Undumpable(); err != nil {
				fmt.Fprintf(os.Stderr, "swerve shim: %v\n", err)
			}
			ctx := context.WithoutCancel(cmd.Context())
			s := &shim.Server{Software: "swerve " + version.String()}
			if listen != "" {
				// Not fatal: the client falls back to the main stream.
				if err := s.Listen(listen); err != nil {
					fmt.Fprintf(os.Stderr, "swerve shim: %v\n", err)
				}
			}
			return s.Serve(ctx, os.Stdin, os.Stdout)
		},
	}
	cmd.Flags().StringVar(&listen, "listen", "", "also serve on a unix socket at this path while stdin lasts")
	return cmd
}
