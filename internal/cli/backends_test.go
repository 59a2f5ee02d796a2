package cli

// The cli's tests run with the backends and scaffolds the shipped binary
// has, so that --backend and --scaffold check what users meet.
import (
	_ "github.com/swerve-dev/swerve/internal/agent/scaffold/all"
	_ "github.com/swerve-dev/swerve/internal/sandbox/all"
)
