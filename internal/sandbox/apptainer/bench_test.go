package apptainer

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/swerve-dev/swerve/internal/sandbox"
	"github.com/swerve-dev/swerve/internal/testutil"
)

// BenchmarkExec compares one command (`true`) in the same instance run two
// ways: through the helper's stream (what the backend does), and one
// `apptainer exec instance://NAME true` per command (what a tool without
// a helper pays each time: a starter process joining the instance's
// namespaces).
//
//	SWERVE_APPTAINER_TESTS=1 go test -run '^$' -bench Exec -benchtime 100x ./internal/sandbox/apptainer
func BenchmarkExec(b *testing.B) {
	be := testBackend(b)
	ctx := context.Background()
	sb, err := be.Open(ctx, sandbox.Spec{Image: testutil.TestImage()})
	if err != nil {
		b.Fatal(err)
	}
	defer sb.Close(ctx)
	box := sb.(*Box)

	b.Run("shim", func(b *testing.B) {
		for b.Loop() {
			res, err := box.Exec(ctx, sandbox.ExecRequest{Cmd: []string{"true"}})
			if err != nil || res.ExitCode != 0 {
				b.Fatalf("shim exec: %+v, %v", res, err)
			}
		}
	})
	b.Run("apptainer-exec", func(b *testing.B) {
		args := []string{"exec"}
		if len(box.drop) > 0 {
			args = append(args, "--drop-caps", strings.Join(box.drop, ","))
		}
		args = append(args, "instance://"+box.name, "true")
		for b.Loop() {
			if out, err := be.exec(ctx, slices.Clone(args)...).CombinedOutput(); err != nil {
				b.Fatalf("apptainer exec: %v: %s", err, out)
			}
		}
	})
}
