package e2blocal_test

import (
	"context"
	"fmt"
	"os"
	"testing"

	"github.com/swerve-dev/swerve/internal/episode/leaktest"
	"github.com/swerve-dev/swerve/internal/sandbox"
	"github.com/swerve-dev/swerve/internal/sandbox/docker"
	"github.com/swerve-dev/swerve/internal/sandbox/e2b"
	"github.com/swerve-dev/swerve/internal/testutil"
)

// TestLeaks: issue 23's proof through E2B's envd on the local plane, whose
// sandboxes are Docker containers of the template's image. An E2B backend
// builds no prepared copy (a template is built by E2B's own tooling), so
// each agent box is stripped on its own.
func TestLeaks(t *testing.T) {
	needEnvd(t)
	ctx := context.Background()
	d, err := docker.New(ctx, docker.Config{Options: sandbox.Options{ShimPath: testutil.SwerveBinary(t), RunID: fmt.Sprintf("test-e2b-leaks-%d", os.Getpid())}})
	if err != nil {
		t.Fatal(err)
	}
	img := leaktest.EnsureDocker(t, d, testutil.TestImage(), false)
	srv := startPlane(t, nil)
	b := backendFor(t, srv, e2b.Templates{Rule: "{image}"}, fmt.Sprintf("e2b-leaks-%d", os.Getpid()))
	leaktest.Run(t, leaktest.Harness{Name: "e2b", Backend: b, Spec: func(kind string) sandbox.Spec {
		return sandbox.Spec{Image: img, Workdir: leaktest.Root + "/" + kind, Task: "leak-" + kind}
	}})
	if n := srv.Running(); n != 0 {
		t.Errorf("%d sandboxes still running after the leak test", n)
	}
}
