package apptainer

import (
	"context"
	"fmt"
	"os"
	"testing"

	"github.com/swerve-dev/swerve/internal/episode/leaktest"
	"github.com/swerve-dev/swerve/internal/sandbox"
	"github.com/swerve-dev/swerve/internal/sandbox/docker"
	"github.com/swerve-dev/swerve/internal/testutil"
)

// TestLeaks: issue 23's proof on Apptainer. Its boxes start from a .sif
// converted from the Docker image (cached by image id: scripts/cluster/
// apptainer-ci.sh converts it ahead), and it builds no prepared copy, so
// each agent box is stripped on its own, in its overlay.
func TestLeaks(t *testing.T) {
	b := testBackend(t)
	ctx := context.Background()
	if err := docker.Probe(ctx); err != nil {
		t.Fatalf("the leak image comes from the local Docker engine: %v", err)
	}
	d, err := docker.New(ctx, docker.Config{Options: sandbox.Options{ShimPath: testutil.SwerveBinary(t), RunID: fmt.Sprintf("test-apptainer-leaks-%d", os.Getpid())}})
	if err != nil {
		t.Fatal(err)
	}
	img := leaktest.EnsureDocker(t, d, testutil.TestImage(), false)
	leaktest.Run(t, leaktest.Harness{Name: "apptainer", Backend: b, Spec: func(kind string) sandbox.Spec {
		return sandbox.Spec{Image: img, Workdir: leaktest.Root + "/" + kind, Pull: sandbox.PullNever, Task: "leak-" + kind}
	}})
	if l, err := leaks(b)(ctx); err != nil || len(l) > 0 {
		t.Errorf("after the leak test: left %v (%v)", l, err)
	}
}
