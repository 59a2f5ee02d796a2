package docker_test

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

// TestLeaks: issue 23's proof on Docker, through the prepared copy run
// makes of the image (built once, its boxes proved as found).
func TestLeaks(t *testing.T) {
	if !testutil.DockerRequired() {
		t.Skip("Docker tests need SWERVE_DOCKER_TESTS=1")
	}
	ctx := context.Background()
	if err := docker.Probe(ctx); err != nil {
		testutil.SkipOrFail(t, "no container engine: %v", err)
	}
	runID := fmt.Sprintf("test-leaks-%d", os.Getpid())
	b, err := docker.New(ctx, docker.Config{Options: sandbox.Options{ShimPath: testutil.SwerveBinary(t), RunID: runID}})
	if err != nil {
		t.Fatal(err)
	}
	if ok, _ := b.ImageExists(ctx, testutil.TestImage()); !ok {
		testutil.SkipOrFail(t, "test image %s missing (build it with scripts/test-image.sh)", testutil.TestImage())
	}
	img := leaktest.EnsureDocker(t, b, testutil.TestImage(), false)
	leaktest.Run(t, leaktest.Harness{Name: "docker", Backend: b, Spec: containerSpec(img)})
	noneLeft(t, b, runID)
}

// TestLeaksPodman: the same on Podman's Docker-compatible socket
// (SWERVE_PODMAN_HOST), which builds the image and its prepared copy
// itself.
func TestLeaksPodman(t *testing.T) {
	host := os.Getenv("SWERVE_PODMAN_HOST")
	if host == "" {
		t.Skip("SWERVE_PODMAN_HOST not set (scripts/podman-service.sh starts Podman's API socket)")
	}
	ctx := context.Background()
	runID := fmt.Sprintf("test-leaks-podman-%d", os.Getpid())
	b, err := docker.New(ctx, docker.Config{Host: host, Options: sandbox.Options{ShimPath: testutil.SwerveBinary(t), RunID: runID}})
	if err != nil {
		t.Fatal(err)
	}
	base := "localhost/" + testutil.TestImage()
	if ok, err := b.ImageExists(ctx, base); !ok {
		t.Fatalf("podman has no %s (load it: docker save %s | podman load): %v", base, testutil.TestImage(), err)
	}
	img := leaktest.EnsureDocker(t, b, base, true)
	leaktest.Run(t, leaktest.Harness{Name: "podman", Backend: b, Spec: containerSpec(img)})
	noneLeft(t, b, runID)
}

// noneLeft fails the test when a container of the run is left.
func noneLeft(t *testing.T, b *docker.Backend, runID string) {
	left, err := b.Leftovers(context.Background(), sandbox.LeftoverOptions{All: true, RunID: runID})
	if err != nil || len(left) > 0 {
		t.Errorf("containers left after the leak test: %v %v", left, err)
	}
}

func containerSpec(img string) func(kind string) sandbox.Spec {
	return func(kind string) sandbox.Spec {
		return sandbox.Spec{Image: img, Workdir: leaktest.Root + "/" + kind, Pull: sandbox.PullNever, Task: "leak-" + kind}
	}
}
