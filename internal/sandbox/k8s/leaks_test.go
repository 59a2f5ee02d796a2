package k8s

import (
	"context"
	"testing"

	"github.com/swerve-dev/swerve/internal/episode/leaktest"
	"github.com/swerve-dev/swerve/internal/sandbox"
)

// TestLeaks: issue 23's proof on Kubernetes. The cluster has no registry:
// the leak image is imported into its runtime from Docker (scripts/
// leak-image.sh builds it, scripts/cluster/up.sh imports it), and the
// backend builds no prepared copy, so each agent box is stripped on its
// own.
func TestLeaks(t *testing.T) {
	b := testBackend(t, nil)
	img := leaktest.Image()
	leaktest.Run(t, leaktest.Harness{Name: "k8s", Backend: b, Spec: func(kind string) sandbox.Spec {
		return sandbox.Spec{Image: img, Workdir: leaktest.Root + "/" + kind, Pull: sandbox.PullNever, Task: "leak-" + kind,
			Limits: sandbox.Limits{CPUs: 1, MemoryMiB: 1024}}
	}})
	if left, err := runPods(context.Background(), b); err != nil || len(left) > 0 {
		t.Errorf("pods left after the leak test: %v %v", left, err)
	}
}
