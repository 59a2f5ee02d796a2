package e2blocal_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/moby/moby/client"

	"github.com/swerve-dev/swerve/internal/reward/grader/kittest"
	"github.com/swerve-dev/swerve/internal/sandbox"
	"github.com/swerve-dev/swerve/internal/sandbox/e2b"
	"github.com/swerve-dev/swerve/internal/sandbox/e2b/e2blocal"
	"github.com/swerve-dev/swerve/internal/sandbox/sandboxtest"
	"github.com/swerve-dev/swerve/internal/task"
	"github.com/swerve-dev/swerve/internal/testutil"
)

// needEnvd returns the envd binary the tests run in their containers:
// SWERVE_ENVD_BINARY, when SWERVE_E2B_TESTS=1 (scripts/cluster/e2b-ci.sh
// sets both when it could build envd). Without SWERVE_E2B_TESTS the test
// skips: envd cannot be built where its source is not reachable.
func needEnvd(t testing.TB) string {
	t.Helper()
	if os.Getenv("SWERVE_E2B_TESTS") != "1" {
		t.Skip("SWERVE_E2B_TESTS not set: no envd binary here (scripts/cluster/build-envd.sh builds one from e2b-dev/infra's source)")
	}
	p := os.Getenv("SWERVE_ENVD_BINARY")
	if p == "" {
		t.Fatal("SWERVE_E2B_TESTS=1 but SWERVE_ENVD_BINARY is not set")
	}
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("SWERVE_E2B_TESTS=1 but SWERVE_ENVD_BINARY: %v", err)
	}
	cli, err := client.New(client.FromEnv)
	if err == nil {
		_, err = cli.Ping(context.Background(), client.PingOptions{})
		cli.Close()
	}
	if err != nil {
		t.Fatalf("SWERVE_E2B_TESTS=1 but Docker does not answer: %v", err)
	}
	return p
}

func randomKey() string {
	b := make([]byte, 20)
	_, _ = rand.Read(b)
	return "e2b_" + hex.EncodeToString(b)
}

// startPlane starts a local plane for the test, closed at its end.
func startPlane(t testing.TB, templates map[string]string) *e2blocal.Server {
	t.Helper()
	envd := needEnvd(t)
	srv, err := e2blocal.Serve(context.Background(), e2blocal.Config{Envd: envd, Templates: templates, AnyImage: templates == nil, APIKey: randomKey()}, "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	return srv
}

// backendFor is the e2b backend pointed at srv, as a user sets it with
// E2B_API_URL and E2B_SANDBOX_URL.
func backendFor(t testing.TB, srv *e2blocal.Server, tpl e2b.Templates, runID string) *e2b.Backend {
	t.Helper()
	b, err := e2b.New(context.Background(), e2b.Config{
		APIKey: srv.Plane.APIKey(), APIURL: srv.URL, SandboxURL: srv.URL, Domain: "e2b.local",
		Templates: tpl, Timeout: time.Minute, RunID: runID, ShimPath: testutil.SwerveBinary(t),
	})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestConformance(t *testing.T) {
	srv := startPlane(t, nil)
	runID := fmt.Sprintf("e2b-conformance-%d", os.Getpid())
	b := backendFor(t, srv, e2b.Templates{Rule: "{image}"}, runID)
	sandboxtest.Run(t, sandboxtest.Harness{
		Backend: b,
		Spec: func(testing.TB) sandbox.Spec {
			return sandbox.Spec{Image: testutil.TestImage()}
		},
		Leaks: func(ctx context.Context) ([]string, error) {
			left, err := b.Leftovers(ctx, sandbox.LeftoverOptions{All: true, RunID: runID})
			if err != nil {
				return nil, err
			}
			var out []string
			for _, l := range left {
				out = append(out, "sandbox "+l.ID)
			}
			return out, nil
		},
		Parallel: 6,
		// Measured: from the internal network a sandbox connects to every
		// address of this machine. Box to box is TestSandboxCannotDriveAnother's.
		NetworkNotIsolated: "the local plane puts internet-less sandboxes on an internal Docker network, " +
			"and the machine running it answers them there (at the network's gateway, and at its other addresses)",
	})
}

// TestKit grades the five real django tasks through the plane, each image
// standing for a template named after its task, as on AGS.
func TestKit(t *testing.T) {
	needEnvd(t)
	if os.Getenv("SWERVE_REALTASKS") != "1" {
		testutil.SkipOrFail(t, "SWERVE_REALTASKS not set: the real django images may be missing")
	}
	tasks := kittest.Tasks(t)
	templates := map[string]string{} // template id → image, the plane's side
	imageMap := map[string]string{}  // image → template id, the user's map
	for id, tk := range tasks {
		tpl := "swe-" + id
		templates[tpl] = tk.Image
		imageMap[tk.Image] = tpl
	}
	srv := startPlane(t, templates)
	b := backendFor(t, srv, e2b.Templates{Map: imageMap, Source: "test map"}, fmt.Sprintf("e2b-kit-%d", os.Getpid()))
	kittest.Run(t, kittest.Harness{
		Backend: b,
		Spec: func(_ testing.TB, tk *task.Task) sandbox.Spec {
			return sandbox.Spec{Image: tk.Image, Task: tk.InstanceID}
		},
	})
	if n := srv.Running(); n != 0 {
		t.Errorf("%d sandboxes still running after the kit", n)
	}
}

// TestTimeout: a sandbox whose timeout passes is killed, one whose timeout
// is renewed lives on, and errors come back in the API's shape.
func TestTimeout(t *testing.T) {
	srv := startPlane(t, nil)
	ctx := context.Background()
	api := &e2b.API{URL: srv.URL, Key: srv.APIKey()}
	short, err := api.Create(ctx, e2b.CreateRequest{TemplateID: testutil.TestImage(), Timeout: 2, Metadata: map[string]string{"t": "timeout"}})
	if err != nil {
		t.Fatal(err)
	}
	kept, err := api.Create(ctx, e2b.CreateRequest{TemplateID: testutil.TestImage(), Timeout: 2, Metadata: map[string]string{"t": "timeout"}})
	if err != nil {
		t.Fatal(err)
	}
	for range 4 {
		time.Sleep(time.Second)
		if err := api.SetTimeout(ctx, kept.SandboxID, 2*time.Second); err != nil {
			t.Fatal(err)
		}
	}
	list, err := api.List(ctx, map[string]string{"t": "timeout"})
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 1 || list[0].SandboxID != kept.SandboxID {
		t.Errorf("after 4s: listed %+v, want only the renewed %s (not %s)", list, kept.SandboxID, short.SandboxID)
	}
	if err := api.Kill(ctx, short.SandboxID); !errors.Is(err, sandbox.ErrNotFound) {
		t.Errorf("kill of a timed-out sandbox: %v, want not found", err)
	}
	if err := api.Kill(ctx, kept.SandboxID); err != nil {
		t.Errorf("kill: %v", err)
	}
	bad := &e2b.API{URL: srv.URL, Key: "e2b_wrong"}
	if _, err := bad.List(ctx, nil); !errors.Is(err, e2b.ErrUnauthorized) {
		t.Errorf("wrong key: %v", err)
	}
	if _, err := api.Create(ctx, e2b.CreateRequest{TemplateID: "no-such-image:nowhere"}); !errors.Is(err, sandbox.ErrNotFound) {
		t.Errorf("unknown template: %v", err)
	}
}
