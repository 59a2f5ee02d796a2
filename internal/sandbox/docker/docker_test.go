package docker

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/client"

	"github.com/swerve-dev/swerve/internal/sandbox"
	"github.com/swerve-dev/swerve/internal/sandbox/sandboxtest"
	"github.com/swerve-dev/swerve/internal/testutil"
)

// leaks lists every container of the run, whatever its state: once a box is
// closed nothing of it may remain.
func leaks(b *Backend) func(context.Context) ([]string, error) {
	return func(ctx context.Context) ([]string, error) {
		left, err := b.listContainers(ctx, true, b.runID)
		if err != nil {
			return nil, err
		}
		var out []string
		for _, l := range left {
			out = append(out, fmt.Sprintf("container %s (%s, %s)", short(l.ID), l.Image, l.State))
		}
		return out, nil
	}
}

func conformance(t *testing.T, b *Backend, image string) {
	sandboxtest.Run(t, sandboxtest.Harness{
		Backend: b,
		Spec: func(testing.TB) sandbox.Spec {
			return sandbox.Spec{Image: image, Pull: sandbox.PullNever, Limits: sandbox.Limits{PIDs: 512, MemoryMiB: 1024}}
		},
		Leaks: leaks(b),
	})
}

func TestConformance(t *testing.T) {
	b := testBackend(t, fmt.Sprintf("test-conformance-%d", os.Getpid()))
	conformance(t, b, testutil.TestImage())
}

// TestConformancePodman runs the same suite against Podman's Docker-
// compatible socket, named by SWERVE_PODMAN_HOST (CI starts one; see
// scripts/podman-service.sh). The test image must be loaded into Podman.
// TestConformanceAttachStream runs the suite with requests on the engine's
// attach stream, the path remote engines take (no shared socket).
func TestConformanceAttachStream(t *testing.T) {
	b := testBackend(t, fmt.Sprintf("test-attach-%d", os.Getpid()))
	b.socket = false
	conformance(t, b, testutil.TestImage())
}

func TestSocketIsUsedAndCleanedUp(t *testing.T) {
	b := testBackend(t, fmt.Sprintf("test-socket-%d", os.Getpid()))
	ctx := context.Background()
	sb, err := b.Open(ctx, sandbox.Spec{Image: testutil.TestImage()})
	if err != nil {
		t.Fatal(err)
	}
	box := sb.(*Box)
	if box.sock == nil || box.Client == box.lifeline {
		t.Fatal("requests are not on the shared socket with a local engine")
	}
	if _, err := os.Stat(box.sockDir); err != nil {
		t.Fatalf("socket directory: %v", err)
	}
	if err := box.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(box.sockDir); !os.IsNotExist(err) {
		t.Errorf("socket directory %s still there after Close (%v)", box.sockDir, err)
	}
}

func TestConformancePodman(t *testing.T) {
	host := os.Getenv("SWERVE_PODMAN_HOST")
	if host == "" {
		t.Skip("SWERVE_PODMAN_HOST not set (scripts/podman-service.sh starts Podman's API socket)")
	}
	ctx := context.Background()
	b, err := New(ctx, Config{Host: host, Options: sandbox.Options{ShimPath: testutil.SwerveBinary(t), RunID: fmt.Sprintf("test-podman-%d", os.Getpid())}})
	if err != nil {
		t.Fatal(err)
	}
	if err := ping(ctx, b.cli); err != nil {
		t.Fatal(err)
	}
	img := "localhost/" + testutil.TestImage()
	if _, err := b.cli.ImageInspect(ctx, img); err != nil {
		t.Fatalf("podman has no %s (load it: docker save %s | podman load): %v", img, testutil.TestImage(), err)
	}
	conformance(t, b, img)
}

func TestOpenMissingImagePullNever(t *testing.T) {
	b := testBackend(t, fmt.Sprintf("test-missing-%d", os.Getpid()))
	_, err := b.Open(context.Background(), sandbox.Spec{Image: "swerve-no-such-image:never", Pull: sandbox.PullNever})
	if !errors.Is(err, sandbox.ErrNotFound) || !strings.Contains(err.Error(), "swerve-no-such-image:never") || !strings.Contains(err.Error(), "docker build") {
		t.Fatalf("Open of a missing image with --pull never: %v; want ErrNotFound naming the image and how to get it", err)
	}
	if left, _ := leaks(b)(context.Background()); len(left) > 0 {
		t.Errorf("failed Open left %v", left)
	}
}

func TestOpenSetsLabelsLimitsNetwork(t *testing.T) {
	b := testBackend(t, fmt.Sprintf("test-labels-%d", os.Getpid()))
	ctx := context.Background()
	box, err := b.Open(ctx, sandbox.Spec{
		Image:  testutil.TestImage(),
		Task:   "demo__task-1",
		Limits: sandbox.Limits{CPUs: 1.5, MemoryMiB: 256, PIDs: 64},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer box.Close(ctx)
	insp, err := b.cli.ContainerInspect(ctx, box.ID(), client.ContainerInspectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	c := insp.Container
	if c.Config.Labels[LabelTask] != "demo__task-1" || c.Config.Labels[LabelRun] != b.runID || c.Config.Labels[LabelManaged] != "true" || c.Config.Labels[LabelOwnerPID] != fmt.Sprint(os.Getpid()) {
		t.Errorf("labels = %v", c.Config.Labels)
	}
	hc := c.HostConfig
	if hc.NanoCPUs != 1.5e9 || hc.Memory != 256<<20 || hc.PidsLimit == nil || *hc.PidsLimit != 64 {
		t.Errorf("limits: cpus %d, memory %d, pids %v", hc.NanoCPUs, hc.Memory, hc.PidsLimit)
	}
	if hc.NetworkMode != "none" {
		t.Errorf("network mode %q, want none by default", hc.NetworkMode)
	}
	// No network interface but loopback inside.
	res, err := box.Exec(ctx, sandbox.ExecRequest{Cmd: sandbox.Bash("ls /sys/class/net")})
	if err != nil || strings.TrimSpace(string(res.Output)) != "lo" {
		t.Errorf("interfaces in a network-none box: %q, %v", res.Output, err)
	}
}

func TestShimCopyMode(t *testing.T) {
	b := testBackend(t, fmt.Sprintf("test-copy-%d", os.Getpid()))
	b.copyShim, b.socket = true, false // as for a remote engine
	ctx := context.Background()
	box, err := b.Open(ctx, sandbox.Spec{Image: testutil.TestImage()})
	if err != nil {
		t.Fatal(err)
	}
	defer box.Close(ctx)
	res, err := box.Exec(ctx, sandbox.ExecRequest{Cmd: sandbox.Bash("echo copied; grep -c ' /.swerve/' /proc/mounts")})
	if err != nil || !strings.HasPrefix(string(res.Output), "copied\n0") {
		t.Errorf("copy mode: %q, %v (want the helper copied in, not mounted)", res.Output, err)
	}
}

func TestGCRemovesDeadOwnersContainers(t *testing.T) {
	b := testBackend(t, fmt.Sprintf("test-gc-%d", os.Getpid()))
	ctx := context.Background()
	// A box whose owner looks dead: as if swerve had been killed -9.
	b.labels[LabelOwnerPID] = "4194305" // above pid_max: never alive
	box, err := b.Open(ctx, sandbox.Spec{Image: testutil.TestImage()})
	if err != nil {
		t.Fatal(err)
	}
	left, err := b.Leftovers(ctx, sandbox.LeftoverOptions{RunID: b.runID})
	if err != nil || len(left) != 1 || left[0].ID != short(box.ID()) || left[0].RunID != b.runID {
		t.Fatalf("Leftovers = %+v, %v; want the dead owner's box", left, err)
	}
	if err := b.Remove(ctx, left[0]); err != nil {
		t.Fatal(err)
	}
	if err := box.Close(ctx); err != nil {
		t.Errorf("Close after gc removed the container: %v (want nil: already gone)", err)
	}
	if l, _ := leaks(b)(ctx); len(l) > 0 {
		t.Errorf("left after gc: %v", l)
	}
}

func TestStaleSocketDirs(t *testing.T) {
	tmp := t.TempDir()
	dead := filepath.Join(tmp, sockDirPrefix+"4194305-abc") // pid above pid_max
	alive := filepath.Join(tmp, fmt.Sprintf("%s%d-abc", sockDirPrefix, os.Getpid()))
	os.Mkdir(dead, 0o755)
	os.Mkdir(alive, 0o755)
	if got := StaleSocketDirs(tmp, false); len(got) != 1 || got[0] != dead {
		t.Errorf("StaleSocketDirs = %v, want only %s", got, dead)
	}
	if got := StaleSocketDirs(tmp, true); len(got) != 2 {
		t.Errorf("StaleSocketDirs(all) = %v, want both", got)
	}
}

// TestRemoveSocketDir: gc's Remove takes a socket directory Leftovers
// listed (a path) off the host without asking the engine, and refuses a
// path that is not one.
func TestRemoveSocketDir(t *testing.T) {
	tmp := t.TempDir()
	dead := filepath.Join(tmp, sockDirPrefix+"4194305-abc")
	other := filepath.Join(tmp, "not-swerve")
	os.Mkdir(dead, 0o755)
	os.Mkdir(other, 0o755)
	b := &Backend{} // no engine: a path never reaches it
	if err := b.Remove(context.Background(), sandbox.Leftover{ID: dead}); err != nil {
		t.Errorf("Remove(%s): %v", dead, err)
	}
	if _, err := os.Stat(dead); !os.IsNotExist(err) {
		t.Errorf("%s still there (%v)", dead, err)
	}
	if err := b.Remove(context.Background(), sandbox.Leftover{ID: other}); err == nil {
		t.Errorf("Remove(%s) = nil, want a refusal", other)
	}
	if _, err := os.Stat(other); err != nil {
		t.Errorf("%s removed: %v", other, err)
	}
}

func TestNonRootUser(t *testing.T) {
	b := testBackend(t, fmt.Sprintf("test-user-%d", os.Getpid()))
	ctx := context.Background()
	sb, err := b.Open(ctx, sandbox.Spec{Image: testutil.TestImage(), User: "65534:65534", Workdir: "/tmp"})
	if err != nil {
		t.Fatal(err)
	}
	defer sb.Close(ctx)
	if sb.(*Box).sock == nil {
		t.Error("a non-root helper could not serve the shared socket")
	}
	res, err := sb.Exec(ctx, sandbox.ExecRequest{Cmd: sandbox.Bash("id -u; touch /root/x 2>/dev/null || echo denied")})
	if err != nil || string(res.Output) != "65534\ndenied\n" {
		t.Errorf("as user 65534: %q, %v", res.Output, err)
	}
}

// TestOpenCancelLeavesNothing cancels Open at many points of its way
// (before, during and after the container's create) and checks that no
// container of the run is left: an engine that finishes a create after the
// client gave up must not leave one behind.
func TestOpenCancelLeavesNothing(t *testing.T) {
	runID := fmt.Sprintf("test-open-cancel-%d", os.Getpid())
	b := testBackend(t, runID)
	ctx := context.Background()
	for i := range 12 {
		cctx, cancel := context.WithTimeout(ctx, time.Duration(i)*25*time.Millisecond)
		box, err := b.Open(cctx, sandbox.Spec{Image: testutil.TestImage(), Pull: sandbox.PullNever})
		cancel()
		if err == nil {
			box.Close(ctx)
		}
	}
	left, err := b.listContainers(ctx, true, runID)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range left {
		b.removeContainer(ctx, l.ID)
	}
	if len(left) > 0 {
		t.Fatalf("%d containers left by cancelled opens: %+v", len(left), left)
	}
}
