package e2blocal_test

import (
	"context"
	"testing"

	"github.com/swerve-dev/swerve/internal/sandbox"
	"github.com/swerve-dev/swerve/internal/sandbox/e2b"
	"github.com/swerve-dev/swerve/internal/testutil"
)

// BenchmarkCommand compares a trivial command through the helper's one
// long-lived envd process stream (every command swerve runs) with one
// envd process.Start per command (what E2B clients without a helper do),
// in the same sandbox of the local plane:
//
//	SWERVE_E2B_TESTS=1 SWERVE_ENVD_BINARY=... go test -run '^$' -bench Command -benchtime 200x ./internal/sandbox/e2b/e2blocal/
func BenchmarkCommand(b *testing.B) {
	srv := startPlane(b, nil)
	be := backendFor(b, srv, e2b.Templates{Rule: "{image}"}, "bench")
	ctx := context.Background()
	sb, err := be.Open(ctx, sandbox.Spec{Image: testutil.TestImage()})
	if err != nil {
		b.Fatal(err)
	}
	defer sb.Close(ctx)
	box := sb.(*e2b.Box)
	b.Run("shim-stream", func(b *testing.B) {
		for b.Loop() {
			res, err := box.Exec(ctx, sandbox.ExecRequest{Cmd: []string{"true"}})
			if err != nil || res.ExitCode != 0 {
				b.Fatalf("exec: %+v, %v", res, err)
			}
		}
	})
	b.Run("envd-start-per-command", func(b *testing.B) {
		for b.Loop() {
			code, out, err := box.Envd().Run(ctx, e2b.ProcessConfig{Cmd: "true"})
			if err != nil || code != 0 {
				b.Fatalf("process.Start: exit %d, %q, %v", code, out, err)
			}
		}
	})
}
