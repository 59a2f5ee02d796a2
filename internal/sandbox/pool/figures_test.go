package pool_test

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/swerve-dev/swerve/internal/sandbox"
	"github.com/swerve-dev/swerve/internal/sandbox/pool"
)

// TestFigureBoxReady measures box-ready latency, the time from "a task
// wants its box" to "the box is ready", with and without a warm pool, on
// one backend: SWERVE_POOL_BACKEND (default docker; k8s or another after
// merge), image SWERVE_TEST_IMAGE. Tasks come one after another, each
// holding its box for SWERVE_POOL_WORK (default 1s) of agent work, as a
// run with --max_workers 1 does; SWERVE_POOL_TASKS tasks (default 20) per
// mode. Gated by SWERVE_POOL_FIGURES=1:
//
//	SWERVE_POOL_FIGURES=1 go test -count=1 -run TestFigureBoxReady -v ./internal/sandbox/pool/
func TestFigureBoxReady(t *testing.T) {
	if os.Getenv("SWERVE_POOL_FIGURES") != "1" {
		t.Skip("SWERVE_POOL_FIGURES=1 measures box-ready latency with and without the pool")
	}
	isolate(t)
	name := os.Getenv("SWERVE_POOL_BACKEND")
	if name == "" {
		t.Setenv("SWERVE_POOL_BACKEND", "docker")
		name = "docker"
	}
	tg := targets(t)[0]
	tasks := envInt(t, "SWERVE_POOL_TASKS", 20)
	work := time.Second
	if v := os.Getenv("SWERVE_POOL_WORK"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			t.Fatalf("SWERVE_POOL_WORK: %v", err)
		}
		work = d
	}
	for _, size := range []int{0, 1, 2} {
		lat := readyLatencies(t, tg, size, tasks, work)
		var sum time.Duration
		for _, d := range lat {
			sum += d
		}
		t.Logf("FIGURE backend=%s prewarm=%d tasks=%d work=%s box-ready p50=%s p90=%s p99=%s mean=%s",
			name, size, tasks, work, pct(lat, 50), pct(lat, 90), pct(lat, 99), (sum / time.Duration(len(lat))).Round(time.Microsecond))
	}
}

// readyLatencies runs tasks one after another through a pool of size
// (0: no pool, every box on demand) and returns the sorted box-ready times.
func readyLatencies(t *testing.T, tg target, size, tasks int, work time.Duration) []time.Duration {
	ctx := context.Background()
	p, runID := newPool(t, tg, size)
	defer func() {
		p.Close(ctx)
		if left := tg.boxes(t, runID); len(left) > 0 {
			t.Errorf("boxes left: %v", left)
		}
	}()
	specs := make([]sandbox.Spec, tasks)
	tickets := make([]*pool.Ticket, tasks)
	for i := range specs {
		specs[i] = tg.spec(fmt.Sprintf("task-%d", i))
		tickets[i] = p.Expect(specs[i])
	}
	var lat []time.Duration
	for i, s := range specs {
		start := time.Now()
		box, err := p.Open(ctx, s)
		if err != nil {
			t.Fatal(err)
		}
		lat = append(lat, time.Since(start))
		// The agent's work: a command, then time.
		if _, err := box.Exec(ctx, sandbox.ExecRequest{Cmd: sandbox.Bash("true"), Timeout: time.Minute}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(work)
		box.Close(ctx)
		tickets[i].Release(ctx)
	}
	slices.Sort(lat)
	return lat
}

// pct is the q-th percentile of sorted (nearest rank).
func pct(sorted []time.Duration, q int) time.Duration {
	i := (q*len(sorted)+99)/100 - 1
	return sorted[max(0, min(i, len(sorted)-1))].Round(time.Microsecond)
}

func envInt(t *testing.T, name string, def int) int {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n <= 0 {
		t.Fatalf("%s=%q: want a positive number", name, v)
	}
	return n
}
