package main

// The agent scaffolds and sandbox backends this binary ships. Each registers
// itself by name in init(); the lists are in scaffold/all and sandbox/all,
// which the tests import too, so that they check what users get.
import (
	_ "github.com/swerve-dev/swerve/internal/agent/scaffold/all"
	_ "github.com/swerve-dev/swerve/internal/sandbox/all"
)
