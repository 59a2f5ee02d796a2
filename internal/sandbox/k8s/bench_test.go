package k8s

import (
	"context"
	"testing"

	"github.com/swerve-dev/swerve/internal/sandbox"
	"github.com/swerve-dev/swerve/internal/testutil"
)

// BenchmarkK8sExec compares one command (`true`) run two ways on the same
// pod, in one run: one client-go exec per command through the API server
// and the kubelet (what tools without a helper pay every time), and through
// the helper's one long-lived exec stream.
//
//	SWERVE_K8S_TESTS=1 KUBECONFIG=... go test -run '^$' -bench K8sExec -benchtime 100x ./internal/sandbox/k8s
func BenchmarkK8sExec(b *testing.B) {
	be := testBackend(b, nil)
	ctx := context.Background()
	box, err := be.Open(ctx, sandbox.Spec{Image: testutil.TestImage(), Pull: sandbox.PullNever})
	if err != nil {
		b.Fatal(err)
	}
	defer box.Close(ctx)
	kb := box.(*Box)
	b.Run("api-exec", func(b *testing.B) {
		for b.Loop() {
			if _, stderr, err := kb.plainExec(ctx, []string{"true"}, nil); err != nil {
				b.Fatalf("exec: %v (%s)", err, stderr)
			}
		}
	})
	b.Run("shim", func(b *testing.B) {
		for b.Loop() {
			res, err := box.Exec(ctx, sandbox.ExecRequest{Cmd: []string{"true"}})
			if err != nil || res.ExitCode != 0 {
				b.Fatalf("shim exec: %+v, %v", res, err)
			}
		}
	})
}

// BenchmarkK8sOpenClose measures a box from nothing to its helper's first
// answer and back to nothing: create the pod, wait for it to run, upload
// the helper (or not, with an init container), start it, delete the pod.
//
//	SWERVE_K8S_TESTS=1 KUBECONFIG=... go test -run '^$' -bench K8sOpenClose -benchtime 10x ./internal/sandbox/k8s
func BenchmarkK8sOpenClose(b *testing.B) {
	be := testBackend(b, nil)
	ctx := context.Background()
	for b.Loop() {
		box, err := be.Open(ctx, sandbox.Spec{Image: testutil.TestImage(), Pull: sandbox.PullNever})
		if err != nil {
			b.Fatal(err)
		}
		if err := box.Close(ctx); err != nil {
			b.Fatal(err)
		}
	}
}
