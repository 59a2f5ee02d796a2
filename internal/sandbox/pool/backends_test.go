package pool_test

// The backends SWERVE_POOL_BACKEND may name besides docker and local, so
// that the figures and leak checks can run on them too.
import (
	_ "github.com/swerve-dev/swerve/internal/sandbox/apptainer"
	_ "github.com/swerve-dev/swerve/internal/sandbox/e2b"
	_ "github.com/swerve-dev/swerve/internal/sandbox/k8s"
)
