package docker

import (
	"context"
	"testing"

	"github.com/swerve-dev/swerve/internal/sandbox"
	"github.com/swerve-dev/swerve/internal/testutil"
)

// testBackend returns a backend on the engine in the environment, with its
// own run id, or skips (fails under SWERVE_DOCKER_TESTS=1) when no engine
// answers or the test image is missing.
func testBackend(tb testing.TB, runID string) *Backend {
	tb.Helper()
	ctx := context.Background()
	if err := Probe(ctx); err != nil {
		testutil.SkipOrFail(tb, "no container engine: %v", err)
	}
	b, err := New(ctx, Config{Options: sandbox.Options{ShimPath: testutil.SwerveBinary(tb), RunID: runID}})
	if err != nil {
		tb.Fatal(err)
	}
	if _, err := b.cli.ImageInspect(ctx, testutil.TestImage()); err != nil {
		testutil.SkipOrFail(tb, "test image %s missing (build it with scripts/test-image.sh): %v", testutil.TestImage(), err)
	}
	return b
}
