package main

// The sandbox backends and agent scaffolds this binary ships. Each registers
// itself by name in init(); drop a line here (or guard it with a build tag)
// to leave one out.
import (
	// Agent scaffolds.
	_ "github.com/swerve-dev/swerve/internal/agent/scaffold/mini"
	_ "github.com/swerve-dev/swerve/internal/agent/scaffold/openhands"
	_ "github.com/swerve-dev/swerve/internal/agent/scaffold/r2egym"

	// _ "github.com/swerve-dev/swerve/internal/sandbox/docker"
	_ "github.com/swerve-dev/swerve/internal/sandbox/apptainer"
	_ "github.com/swerve-dev/swerve/internal/sandbox/e2b"
	_ "github.com/swerve-dev/swerve/internal/sandbox/k8s"
	_ "github.com/swerve-dev/swerve/internal/sandbox/local"
)
