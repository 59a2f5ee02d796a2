package cli

import (
	"context"
	"strings"
	"testing"

	_ "github.com/swerve-dev/swerve/internal/agent/scaffold/all"
	"github.com/swerve-dev/swerve/internal/sandbox/docker"
	"github.com/swerve-dev/swerve/internal/testutil"
)

// checkDemo runs swerve demo on backend and checks every scaffold and mode
// resolved every task.
func checkDemo(t *testing.T, backend string) {
	if backend == "local" {
		testutil.HostPython(t) // the demo tasks' tests run with the host's python3
	}
	t.Setenv("SWERVE_SHIM_BINARY", testutil.SwerveBinary(t))
	// The demo's base image is the test image: one name, one builder.
	out, errOut, err := execTasksCLI(t, "demo", "--backend", backend, "--base_image", testutil.TestImage(), "--traj_dir", t.TempDir())
	if err != nil {
		t.Fatalf("demo: %v\nstdout:\n%s\nstderr:\n%s", err, out, errOut)
	}
	rows := 0
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) != 6 || f[0] == "SCAFFOLD" {
			continue
		}
		rows++
		if f[2] != "3/3" {
			t.Errorf("not all resolved: %s", line)
		}
	}
	if rows != 6 {
		t.Errorf("%d scaffold/mode rows, want 6:\n%s", rows, out)
	}
	if !strings.Contains(out, "offline") || !strings.Contains(errOut, backend+" backend") {
		t.Errorf("output does not say the model is offline or which backend ran:\n%s\n%s", out, errOut)
	}
}

func TestDemoLocal(t *testing.T) { checkDemo(t, "local") }

func TestDemoDocker(t *testing.T) {
	if err := docker.Probe(context.Background()); err != nil {
		testutil.SkipOrFail(t, "no container engine: %v", err)
	}
	checkDemo(t, "docker")
}
