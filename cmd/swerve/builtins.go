package main

// The sandbox backends this binary ships. Each registers itself by name in
// init(); drop a line here (or guard it with a build tag) to leave one out.
import (
	// _ "github.com/swerve-dev/swerve/internal/sandbox/docker"
	_ "github.com/swerve-dev/swerve/internal/sandbox/local"
)
