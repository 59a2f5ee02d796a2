package run_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime/metrics"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/swerve-dev/swerve/internal/agent"
	"github.com/swerve-dev/swerve/internal/llm"
	"github.com/swerve-dev/swerve/internal/run"
)

// fakeRunDir writes n finished tasks under a new directory: each a record
// with a 20-step trajectory (about 30 KB of JSON) and a test log, the way a
// run leaves them.
func fakeRunDir(tb testing.TB, n int) string {
	tb.Helper()
	dir := tb.TempDir()
	obs := strings.Repeat("output line of a command\n", 40)
	for i := range n {
		id := fmt.Sprintf("bench__agg-%05d", i)
		traj := &agent.Trajectory{InstanceID: id, Scaffold: "mini_swe_agent", Mode: "text", Model: "replay/bench", ExitReason: agent.ExitSubmitted}
		traj.Messages = []llm.Message{{Role: llm.RoleSystem, Content: "system prompt"}, {Role: llm.RoleUser, Content: "the issue"}}
		for s := range 20 {
			cmd := fmt.Sprintf("grep -rn thing%d src/", s)
			traj.Steps = append(traj.Steps, agent.Step{Index: s, Count: s + 1, Thought: "Looking.", Action: cmd, Observation: obs, Calls: []agent.Call{{Name: "bash", Args: map[string]any{"command": cmd}, Raw: cmd}}})
			traj.Messages = append(traj.Messages, llm.Message{Role: llm.RoleAssistant, Content: "Looking.\n```bash\n" + cmd + "\n```"}, llm.Message{Role: llm.RoleUser, Content: obs})
		}
		rec := run.Record{InstanceID: id, DockerImage: "img:" + id, ExpName: "bench", Scaffold: "mini_swe_agent", Mode: "text", Model: "replay/bench",
			Standing: run.Standing{Status: run.StatusGraded, Attempts: 1}, Reward: float64(i % 2), RewardReason: "tests", Patch: "diff --git a/x b/x\n", Trajectory: traj}
		b, err := json.Marshal(rec)
		if err != nil {
			tb.Fatal(err)
		}
		td := run.TaskDir(dir, id)
		if err := os.MkdirAll(td, 0o755); err != nil {
			tb.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(td, "result.json"), b, 0o644); err != nil {
			tb.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(td, "test_output.log"), []byte("Ran 3 tests\nOK\n"), 0o644); err != nil {
			tb.Fatal(err)
		}
	}
	return dir
}

// peakHeap samples the live heap every millisecond while f runs and
// returns the largest value seen.
func peakHeap(f func()) uint64 {
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	var peak atomic.Uint64
	read := func() {
		metrics.Read(sample)
		if v := sample[0].Value.Uint64(); v > peak.Load() {
			peak.Store(v)
		}
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				read()
			}
		}
	}()
	f()
	close(done)
	wg.Wait()
	read()
	return peak.Load()
}

// BenchmarkWriteAggregates rebuilds the run-level files of a run of 1,000
// and of 10,000 finished tasks. peak-heap-MiB is the largest live heap seen
// while it runs (sampled every millisecond); it must stay flat as the
// number of tasks grows tenfold, as the records are streamed from their
// directories into the files, not held.
//
//	go test -run '^$' -bench BenchmarkWriteAggregates -benchtime 3x ./internal/run/
func BenchmarkWriteAggregates(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		b.Run(fmt.Sprintf("tasks=%d", n), func(b *testing.B) {
			dir := fakeRunDir(b, n)
			b.ReportAllocs()
			b.ResetTimer()
			var peak uint64
			for range b.N {
				p := peakHeap(func() {
					if _, err := run.WriteAggregates(dir, "bench"); err != nil {
						b.Fatal(err)
					}
				})
				peak = max(peak, p)
			}
			b.ReportMetric(float64(peak)/(1<<20), "peak-heap-MiB")
			b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N*n), "µs/task")
		})
	}
}
