package cli

import (
	"os"

	"github.com/spf13/cobra"

	"github.com/swerve-dev/swerve/internal/shim"
	"github.com/swerve-dev/swerve/internal/version"
)

func init() { register(newShimCmd) }

func newShimCmd() *cobra.Command {
	return &cobra.Command{
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
  /.swerve/swerve shim`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			s := &shim.Server{Software: "swerve " + version.String()}
			return s.Serve(cmd.Context(), os.Stdin, os.Stdout)
		},
	}
}
