package cli

// The cli's tests run with the backends the shipped binary has, so that
// --backend checks what users meet.
import _ "github.com/swerve-dev/swerve/internal/backends"
