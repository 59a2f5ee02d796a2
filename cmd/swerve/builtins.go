package main

// The agent scaffolds and sandbox backends this binary ships. Each registers
// itself by name in init(); drop a line here (or guard it with a build tag)
// to leave a scaffold out. The backends are listed in internal/backends,
// which the cli's tests import too.
import (
	// Agent scaffolds.
	_ "github.com/swerve-dev/swerve/internal/agent/scaffold/mini"
	_ "github.com/swerve-dev/swerve/internal/agent/scaffold/openhands"
	_ "github.com/swerve-dev/swerve/internal/agent/scaffold/r2egym"

	// Sandbox backends: docker, local, k8s, apptainer, e2b.
	_ "github.com/swerve-dev/swerve/internal/backends"
)
