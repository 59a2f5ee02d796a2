package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/swerve-dev/swerve/internal/run"
	"github.com/swerve-dev/swerve/internal/testutil"
)

// TestFigurePrewarmKit runs the five real django tasks with the oracle model
// on one backend, without and with --prewarm 2, in one go, and logs each
// run's wall time and what the pool did. Every task must resolve both ways.
// Gated by SWERVE_REALTASKS=1 and SWERVE_POOL_FIGURES=1; the backend is
// SWERVE_POOL_BACKEND (default docker), the workers SWERVE_POOL_WORKERS
// (default 1), the runs' --prewarm values in order SWERVE_POOL_ORDER
// (default 0,2):
//
//	SWERVE_DOCKER_TESTS=1 SWERVE_REALTASKS=1 SWERVE_POOL_FIGURES=1 \
//	  go test -count=1 -run TestFigurePrewarmKit -v -timeout 60m ./internal/cli/
func TestFigurePrewarmKit(t *testing.T) {
	if os.Getenv("SWERVE_REALTASKS") != "1" || os.Getenv("SWERVE_POOL_FIGURES") != "1" {
		t.Skip("SWERVE_REALTASKS=1 SWERVE_POOL_FIGURES=1 times the kit tasks with and without --prewarm")
	}
	backend := os.Getenv("SWERVE_POOL_BACKEND")
	if backend == "" {
		backend = "docker"
		e2eDocker(t)
	}
	workers := os.Getenv("SWERVE_POOL_WORKERS")
	if workers == "" {
		workers = "1"
	}
	data := filepath.Join(testutil.SharedDir(t), "realtasks", "instances.jsonl")
	ids := 0
	for range readRows(t, data) {
		ids++
	}
	work := t.TempDir()
	tmp := filepath.Join(work, "tmp")
	os.Mkdir(tmp, 0o755)
	env := e2eEnv(t, tmp)
	order := "0,2"
	if v := os.Getenv("SWERVE_POOL_ORDER"); v != "" {
		order = v // e.g. 2,0 to rule out that the second run gains from the first
	}
	for i, prewarm := range strings.Split(order, ",") {
		traj := filepath.Join(work, fmt.Sprintf("run%d-prewarm%s", i, prewarm))
		start := time.Now()
		_, stderr, code := runSwerve(t, env, work, 40*time.Minute, "run", "--dataset", data, "--llm_name", "oracle/gold",
			"--scaffold", "r2egym", "--backend", backend, "--pull", "never", "--max_workers", workers,
			"--traj_dir", traj, "--exp_name", "kit", "--prewarm", prewarm)
		wall := time.Since(start)
		if code != 0 {
			t.Fatalf("--prewarm %s: exit %d\n%s", prewarm, code, tail(stderr, 3000))
		}
		recs, err := run.LoadRecords(traj)
		if err != nil {
			t.Fatal(err)
		}
		resolved := 0
		for _, r := range recs {
			if r.Reward == 1 {
				resolved++
			}
		}
		if resolved != ids {
			t.Errorf("--prewarm %s: %d of %d resolved", prewarm, resolved, ids)
		}
		pool := "-"
		if m := warmLine.FindString(stderr); m != "" {
			pool = m
		}
		t.Logf("FIGURE kit backend=%s workers=%s prewarm=%s tasks=%d resolved=%d wall=%s (%s)", backend, workers, prewarm, ids, resolved, wall.Round(100*time.Millisecond), pool)
	}
}
