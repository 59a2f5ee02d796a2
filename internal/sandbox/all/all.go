// Package all links every sandbox backend swerve ships. Each backend
// registers itself by name in init() (see sandbox.Register), so importing
// this package for its side effects gives a program all of them:
//
//	import _ "github.com/swerve-dev/swerve/internal/sandbox/all"
//
// cmd/swerve imports it, and so do the tests that check what users get
// (--backend, gc). Drop a line here, or guard a backend's files with a
// build tag, to leave that backend out of the binary.
package all

import (
	_ "github.com/swerve-dev/swerve/internal/sandbox/apptainer"
	_ "github.com/swerve-dev/swerve/internal/sandbox/docker"
	_ "github.com/swerve-dev/swerve/internal/sandbox/e2b"
	_ "github.com/swerve-dev/swerve/internal/sandbox/k8s"
	_ "github.com/swerve-dev/swerve/internal/sandbox/local"
)
