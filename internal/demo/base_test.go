package demo

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/moby/moby/client"
	"github.com/swerve-dev/swerve/internal/sandbox/docker"
	"github.com/swerve-dev/swerve/internal/testutil"
)

// TestEnsureBaseKeepsOnlyItsOwnImage checks EnsureBase's decision without
// the minute-long debootstrap: an image stamped with this recipe is kept;
// one stamped with another recipe, or not at all (as an image built by
// hand under the same name), is rebuilt, which here stops at the missing
// debootstrap.
func TestEnsureBaseKeepsOnlyItsOwnImage(t *testing.T) {
	ctx := context.Background()
	if err := docker.Probe(ctx); err != nil {
		testutil.SkipOrFail(t, "no container engine: %v", err)
	}
	b, err := docker.New(ctx, docker.Config{})
	if err != nil {
		t.Fatal(err)
	}
	if ok, err := b.ImageExists(ctx, testutil.TestImage()); err != nil || !ok {
		testutil.SkipOrFail(t, "test image %s missing (scripts/test-image.sh): %v", testutil.TestImage(), err)
	}
	t.Setenv("PATH", t.TempDir()) // no debootstrap: a rebuild fails at once
	for _, tc := range []struct {
		name, label string
		rebuild     bool
	}{
		{"same recipe", "LABEL " + BaseLabel + "=" + BaseRecipe(), false},
		{"other recipe", "LABEL " + BaseLabel + "=000000000000", true},
		{"no stamp", "LABEL " + BaseLabel + "=", true}, // cleared: the test image may carry one
	} {
		t.Run(tc.name, func(t *testing.T) {
			ref := fmt.Sprintf("swerve-test-ensure-base:%s", strings.ReplaceAll(tc.name, " ", "-"))
			df := fmt.Sprintf("FROM %s\n%s\n", testutil.TestImage(), tc.label)
			if err := b.Build(ctx, docker.BuildOptions{ContextDir: t.TempDir(), Dockerfile: df, Tags: []string{ref}}); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { b.Client().ImageRemove(context.Background(), ref, client.ImageRemoveOptions{Force: true}) })
			built, err := EnsureBase(ctx, b, ref, BaseOptions{})
			rebuilt := err != nil && strings.Contains(err.Error(), "needs debootstrap")
			if rebuilt != tc.rebuild || (!rebuilt && (built || err != nil)) {
				t.Errorf("EnsureBase(%s) = %v, %v; want a rebuild: %v (a rebuild stops at the missing debootstrap)", tc.name, built, err, tc.rebuild)
			}
			if _, err := EnsureBase(ctx, b, ref, BaseOptions{Force: true}); err == nil || !strings.Contains(err.Error(), "needs debootstrap") {
				t.Errorf("EnsureBase(%s) with Force = %v; want a rebuild", tc.name, err)
			}
		})
	}
}
