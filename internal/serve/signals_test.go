package serve

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/swerve-dev/swerve/internal/agent/signals"
)

// TestRowAndMetricsCarrySignals: a rollout's audit flags reach its row's
// metadata and /metrics, for an infrastructure failure too; a clean
// rollout's row has no signals key, and every kind is on /metrics from the
// start.
func TestRowAndMetricsCarrySignals(t *testing.T) {
	flags := []signals.Flag{{Step: 0, Kind: signals.GitHistory, Command: "git reflog"}, {Step: 2, Kind: signals.Network, Command: "curl http://x"}}
	cases := []struct {
		name  string
		res   func(context.Context, *RolloutRequest) (*RolloutResult, error)
		want  map[string]int
		infra bool
	}{
		{"clean", resolved, nil, false},
		{"flagged", func(ctx context.Context, req *RolloutRequest) (*RolloutResult, error) {
			r, _ := resolved(ctx, req)
			r.Signals = flags
			return r, nil
		}, map[string]int{"git_history": 1, "network": 1}, false},
		{"flagged infra failure", func(ctx context.Context, req *RolloutRequest) (*RolloutResult, error) {
			return &RolloutResult{InfraError: "box", InfraDetail: "the box died", Signals: flags[:1]}, nil
		}, map[string]int{"git_history": 1}, true},
	}
	total := map[string]int{}
	_, ts := newTest(t, Options{Rollouts: &fake{fn: func(ctx context.Context, req *RolloutRequest) (*RolloutResult, error) {
		for i, c := range cases {
			if req.RolloutID == fmt.Sprintf("3-%d", i+1) {
				return c.res(ctx, req)
			}
		}
		return nil, fmt.Errorf("rollout %s: no such case", req.RolloutID)
	}}})
	for i, c := range cases {
		row := strings.Replace(smallRow, `"_ng_rollout_index":1`, fmt.Sprintf(`"_ng_rollout_index":%d`, i+1), 1)
		resp, b := post(t, ts.URL+"/run", row)
		if resp.StatusCode != 200 {
			t.Fatalf("%s: status %d: %s", c.name, resp.StatusCode, b)
		}
		got, err := ParseRow(b)
		if err != nil {
			t.Fatal(err)
		}
		var meta struct {
			Signals map[string]int `json:"signals"`
			Flags   []signals.Flag `json:"signal_flags"`
		}
		if err := json.Unmarshal(got["metadata"], &meta); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(meta.Signals, c.want) || len(meta.Flags) != signals.Sum(c.want) {
			t.Errorf("%s: metadata signals %v flags %v, want %v", c.name, meta.Signals, meta.Flags, c.want)
		}
		if _, ok := got["infra_error"]; ok != c.infra {
			t.Errorf("%s: infra_error %v, want %v", c.name, ok, c.infra)
		}
		for k, n := range c.want {
			total[k] += n
		}
	}
	m := scrape(t, ts.URL)
	for _, k := range signals.Kinds {
		want := fmt.Sprintf(`swerve_signals_total{kind="%s"} %d`, k, total[string(k)])
		if !strings.Contains(m, want+"\n") {
			t.Errorf("metrics lack %q", want)
		}
	}
}
