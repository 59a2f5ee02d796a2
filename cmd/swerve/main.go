// Command swerve builds task images, runs coding agents in sandboxes, grades
// their patches and serves all of it to RL trainers. See README.md and docs/.
package main

import (
	"os"

	"github.com/swerve-dev/swerve/internal/cli"
)

func main() {
	os.Exit(cli.Main(os.Args[1:]))
}
