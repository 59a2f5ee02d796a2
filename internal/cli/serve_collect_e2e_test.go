package cli

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/swerve-dev/swerve/internal/testutil"
)

// TestConvertCollectServe chains the RL pieces as a trainer would use them:
// `swerve convert gym` turns a dataset into Gym rows, `swerve collect`
// posts them (two rollouts each) to a real `swerve serve` process, and the
// rollouts come back resolved, with the reward profile printed and the
// server's /aggregate_metrics answer saved.
func TestConvertCollectServe(t *testing.T) {
	testutil.NeedPytest(t)
	work := t.TempDir()
	tmp := filepath.Join(work, "tmp")
	os.Mkdir(tmp, 0o755)
	data := filepath.Join(testutil.RepoRoot(t), "examples", "sample", "tasks.jsonl")
	rows := filepath.Join(work, "rows.jsonl")
	if _, stderr, err := execTasksCLI(t, "convert", "gym", "--dataset", data, "--instance_ids", "sample__calc-1,sample__calc-2", "--output", rows); err != nil {
		t.Fatalf("convert gym: %v\n%s", err, stderr)
	}
	p := startSwerve(t, e2eEnv(t, tmp), work, nil, "serve", "--listen", "127.0.0.1:0", "--dataset", data,
		"--llm_name", "oracle/gold", "--backend", "local", "--results_dir", "", "--concurrency", "2")
	base := waitListening(t, p)
	out := filepath.Join(work, "rollouts.jsonl")
	stdout, stderr, err := execTasksCLI(t, "collect", "--server", base, "-i", rows, "-o", out, "--num_repeats", "2", "--concurrency", "2")
	if err != nil {
		t.Fatalf("collect: %v\n%s\nserve:\n%s", err, stderr, p.stderr.String())
	}
	for _, s := range []string{"Accuracy: 1.00", "Resolved: 4", "Total Instances: 4"} {
		if !strings.Contains(stdout, s) {
			t.Errorf("collect's profile lacks %q:\n%s", s, stdout)
		}
	}
	f, err := os.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	seen := map[string]int{}
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 64<<20)
	for sc.Scan() {
		var r struct {
			ID       string  `json:"instance_id"`
			Reward   float64 `json:"reward"`
			Task     *int    `json:"_ng_task_index"`
			Rollout  *int    `json:"_ng_rollout_index"`
			Response struct {
				Output []json.RawMessage `json:"output"`
			} `json:"response"`
		}
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatal(err)
		}
		if r.Reward != 1 || r.Task == nil || r.Rollout == nil || len(r.Response.Output) == 0 {
			t.Errorf("rollout row %s: reward %g, task index %v, rollout index %v, %d output items", r.ID, r.Reward, r.Task, r.Rollout, len(r.Response.Output))
		}
		seen[r.ID]++
	}
	if seen["sample__calc-1"] != 2 || seen["sample__calc-2"] != 2 {
		t.Errorf("rollouts per task %v, want 2 each", seen)
	}
	agg, err := os.ReadFile(filepath.Join(work, "rollouts_aggregate_metrics.json"))
	if err != nil || !strings.Contains(string(agg), `"mean/reward"`) {
		t.Errorf("aggregate metrics: %v %.300s", err, agg)
	}
}
