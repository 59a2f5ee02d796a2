package local

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/swerve-dev/swerve/internal/episode/leaktest"
	"github.com/swerve-dev/swerve/internal/sandbox"
	"github.com/swerve-dev/swerve/internal/testutil"
)

// TestLeaks: issue 23's proof on the local backend, whose boxes are copies
// of host directories: the leak repositories are made on the host, and
// each agent box is stripped on its own (no prepared copy here).
func TestLeaks(t *testing.T) {
	testutil.HostPytest(t) // the task's tests run with the host's pytest
	dir := t.TempDir()
	leaktest.Plant(t, dir)
	b := newTestBackend(t)
	leaktest.Run(t, leaktest.Harness{Name: "local", Backend: b, Spec: func(kind string) sandbox.Spec {
		return sandbox.Spec{Image: filepath.Join(dir, kind)}
	}})
	if left, err := leaks(b)(context.Background()); err != nil || len(left) > 0 {
		t.Errorf("left after the leak test: %v %v", left, err)
	}
}
