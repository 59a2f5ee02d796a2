package sessions

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/swerve-dev/swerve/internal/sandbox"
	"github.com/swerve-dev/swerve/internal/sandbox/docker"
	"github.com/swerve-dev/swerve/internal/task"
	"github.com/swerve-dev/swerve/internal/testutil"
)

// TestGymRealTask runs the Gym resources surface on a real SWE-bench
// Verified task in its Docker image: one session applies the gold patch
// through /bash and verifies (reward 1, graded in a fresh box with the
// hidden tests), another verifies untouched (reward 0). It needs Docker
// and the task's image (../shared/realtasks/build.sh); it skips without
// them unless SWERVE_REALTASKS=1.
func TestGymRealTask(t *testing.T) {
	const id = "django__django-17087"
	required := os.Getenv("SWERVE_REALTASKS") == "1"
	if !required && !testutil.DockerRequired() {
		t.Skip("Docker tests are off (SWERVE_DOCKER_TESTS=1 turns them on)")
	}
	ctx := context.Background()
	if err := docker.Probe(ctx); err != nil {
		testutil.SkipOrFail(t, "no container engine: %v", err)
	}
	eng, err := docker.New(ctx, docker.Config{Options: sandbox.Options{RunID: "test-sessions-real", ShimPath: testutil.SwerveBinary(t)}})
	if err != nil {
		t.Fatal(err)
	}
	res, err := task.Load(ctx, filepath.Join(testutil.SharedDir(t), "data", "swebench", "verified-test.parquet"), task.LoadOptions{InstanceIDs: []string{id}})
	if err != nil {
		t.Fatal(err)
	}
	tasks, err := task.Select(res.Tasks, task.Selection{InstanceIDs: []string{id}})
	if err != nil || len(tasks) != 1 {
		t.Fatalf("select %s: %v", id, err)
	}
	tk := tasks[0]
	if ok, err := eng.ImageExists(ctx, tk.Image); err != nil || !ok {
		if required {
			t.Fatalf("SWERVE_REALTASKS=1 but image %s is missing: %v", tk.Image, err)
		}
		t.Skipf("image %s not built (../shared/realtasks/build.sh): %v", tk.Image, err)
	}
	open := func(ctx context.Context, t *task.Task) (sandbox.Sandbox, string, error) {
		box, err := eng.Open(ctx, sandbox.Spec{Image: t.Image, Pull: sandbox.PullNever, Task: t.InstanceID})
		return box, "/testbed", err
	}
	ts := startServer(t, Options{Open: open, Tasks: NewCatalog(tasks, false), Verifier: GraderVerifier{Open: open}})

	gold := &gymClient{t: t, url: ts.URL}
	none := &gymClient{t: t, url: ts.URL}
	for _, c := range []*gymClient{gold, none} {
		if status, body, _ := c.post("/seed_session", map[string]any{"instance_id": id}); status != 200 {
			t.Fatalf("seed: %d %s", status, body)
		}
	}
	apply := "cat > /tmp/gold.diff <<'SWERVE_PATCH_END'\n" + tk.Patch + "SWERVE_PATCH_END\ngit apply /tmp/gold.diff && rm /tmp/gold.diff && git status --short"
	if status, body, hdr := gold.post("/bash", map[string]any{"command": apply}); status != 200 || hdr.Get("X-Exit-Code") != "0" {
		t.Fatalf("apply the gold patch: %d %s", status, body)
	}
	// The hidden tests are not in the agent's box: the test patch still
	// applies there.
	check := "cat > /tmp/t.diff <<'SWERVE_PATCH_END'\n" + tk.TestPatch + "SWERVE_PATCH_END\ngit apply --check /tmp/t.diff; e=$?; rm /tmp/t.diff; exit $e"
	if status, body, hdr := none.post("/bash", map[string]any{"command": check}); status != 200 || hdr.Get("X-Exit-Code") != "0" {
		t.Errorf("the test patch does not apply in the agent's box: %d %s", status, body)
	}
	for _, c := range []struct {
		cl     *gymClient
		reward float64
	}{{gold, 1}, {none, 0}} {
		status, body, _ := c.cl.post("/verify", map[string]any{"instance_id": id, "responses_create_params": map[string]any{"input": []any{}}})
		var v map[string]any
		if status != 200 || json.Unmarshal(body, &v) != nil {
			t.Fatalf("verify: %d %s", status, body)
		}
		if v["reward"] != c.reward || v["evaluation_completed"] != true {
			t.Errorf("verify: reward %v (want %v), completed %v, reason %v, infra %v", v["reward"], c.reward, v["evaluation_completed"], v["reason"], v["infrastructure_error"])
		}
		if c.reward == 1 && !strings.Contains(v["model_patch"].(string), "diff --git") {
			t.Errorf("model_patch: %v", v["model_patch"])
		}
	}
}
