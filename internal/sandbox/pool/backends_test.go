package pool_test

// Every backend swerve ships, so that SWERVE_POOL_BACKEND may name any of
// them and the figures and leak checks can run there too.
import _ "github.com/swerve-dev/swerve/internal/sandbox/all"
