package cli

import (
	"errors"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/swerve-dev/swerve/internal/shim"
)

// opensBoxes names the top-level commands that open boxes. Container boxes
// run this very binary inside as their helper, so it must be static.
var opensBoxes = map[string]bool{
	"build": true, "demo": true, "exec": true, "grade": true, "run": true, "serve": true,
	"shell": true, "solve": true, "validate": true,
}

// checkStaticHelper refuses at once a command that would open container
// boxes when the helper they would run (this binary, or
// $SWERVE_SHIM_BINARY) is dynamically linked, as `go build` and `go install`
// make it where a C compiler is present. Without this every box fails and
// a run records each task as a sandbox error. The local backend runs the
// helper on this machine, so --backend local is let through, and so is
// `grade --log`, which opens no box.
func checkStaticHelper(cmd *cobra.Command) error {
	if !cmd.HasParent() || cmd.Parent().HasParent() || !opensBoxes[cmd.Name()] {
		return nil
	}
	backend := cmd.Flags().Lookup("backend")
	if backend != nil && backend.Value.String() == "local" {
		return nil
	}
	if cmd.Name() == "grade" && cmd.Flags().Changed("log") {
		return nil
	}
	path, err := shim.HostBinary(os.Getenv("SWERVE_SHIM_BINARY"))
	if err != nil {
		return nil // the backend says so when it needs the helper
	}
	if err := shim.CheckStatic(path); !errors.Is(err, shim.ErrDynamic) {
		return nil
	}
	alt := ""
	if backend != nil && cmd.Name() != "build" { // build's --backend only names where images will run
		alt = ", or pass --backend local"
	}
	return fmt.Errorf("%s: this swerve (%s) is dynamically linked (built with cgo), but boxes run it as their in-box helper, which must be static: %s%s", cmd.Name(), path, shim.StaticFix, alt)
}
