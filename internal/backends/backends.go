// Package backends links every sandbox backend swerve ships. Each registers
// itself by name in init() (see sandbox.Register); importing this package
// for its side effects gives a binary all of them. cmd/swerve imports it,
// and so do the cli's tests, so that they check the backends users get.
//
// Drop a line here (or guard its file with a build tag) to leave a backend
// out of the binary.
package backends

import (
	_ "github.com/swerve-dev/swerve/internal/sandbox/apptainer"
	_ "github.com/swerve-dev/swerve/internal/sandbox/docker"
	_ "github.com/swerve-dev/swerve/internal/sandbox/e2b"
	_ "github.com/swerve-dev/swerve/internal/sandbox/k8s"
	_ "github.com/swerve-dev/swerve/internal/sandbox/local"
)
