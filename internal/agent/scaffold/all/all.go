// Package all links every agent scaffold swerve ships. Each scaffold
// registers itself by name in init() (see agent.Register), so importing
// this package for its side effects gives a program all of them:
//
//	import _ "github.com/swerve-dev/swerve/internal/agent/scaffold/all"
//
// cmd/swerve imports it, and so do the tests that run scaffolds by name.
// Drop a line here, or guard a scaffold's files with a build tag, to leave
// that scaffold out of the binary.
package all

import (
	_ "github.com/swerve-dev/swerve/internal/agent/scaffold/mini"
	_ "github.com/swerve-dev/swerve/internal/agent/scaffold/openhands"
	_ "github.com/swerve-dev/swerve/internal/agent/scaffold/r2egym"
)
