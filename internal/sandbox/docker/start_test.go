package docker

import (
	"context"
	"errors"
	"fmt"
	"testing"
)

// TestTransientStart: only the engine's own start-up hook failing makes
// Open try another container; an image, a request or a cancellation
// does not.
func TestTransientStart(t *testing.T) {
	for _, c := range []struct {
		err  error
		want bool
	}{
		{errors.New("docker: start container from swerve-test-base:bookworm: Error response from daemon: failed to create shim task: OCI runtime create failed: runc create failed: unable to start container process: error during container init: error running hook #0: error running hook: signal: killed, stdout: , stderr:: unknown"), true},
		{errors.New("docker: start container from x: Error response from daemon: failed to create shim task: OCI runtime create failed: runc create failed: unable to start container process: exec: \"/.swerve/swerve\": permission denied: unknown"), false},
		{errors.New("docker: create container from x: error running hook"), false},
		{fmt.Errorf("docker: start container from x: %w", context.Canceled), false},
		{errors.New("docker: the helper in abc did not answer: EOF"), false},
	} {
		if got := transientStart(c.err); got != c.want {
			t.Errorf("transientStart(%q) = %v, want %v", c.err, got, c.want)
		}
	}
}
