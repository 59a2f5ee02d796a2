package cli

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/swerve-dev/swerve/internal/sandbox"
)

// probetest is a backend registered only in this test binary: its probe
// records the settings it was given and refuses, so that a command stops
// right after its pre-flight.
const (
	probetestName  = "probetest"
	probetestParam = "probetest_where"
	probetestEnv   = "SWERVE_PROBETEST_WHERE"
)

var probetest struct {
	mu   sync.Mutex
	seen []string // opts.Param(probetestParam) of every probe
}

var errProbetest = errors.New("probetest refuses, as the test asks")

func init() {
	sandbox.Register(&sandbox.Registration{
		Name:        probetestName,
		Description: "test backend that records what its probe sees",
		New: func(context.Context, sandbox.Options) (sandbox.Backend, error) {
			return nil, errors.New("probetest opens no boxes")
		},
		Probe: func(_ context.Context, opts sandbox.Options) error {
			probetest.mu.Lock()
			defer probetest.mu.Unlock()
			probetest.seen = append(probetest.seen, opts.Param(probetestParam))
			return errProbetest
		},
		Params: []sandbox.Param{{Name: probetestParam, Env: probetestEnv, Usage: "probetest: a setting its probe records"}},
	})
}

// TestProbeGetsFlagSettings: a backend setting given as a flag reaches the
// backend's probe in its options, in every command's pre-flight and in gc,
// and swerve's own environment is left as it was (child processes inherit
// it).
func TestProbeGetsFlagSettings(t *testing.T) {
	if v, ok := os.LookupEnv(probetestEnv); ok {
		t.Fatalf("%s is set (%q) before the test", probetestEnv, v)
	}
	data := tasksSampleDataset(t)
	preds := filepath.Join(t.TempDir(), "preds.json")
	os.WriteFile(preds, []byte(`{"sample__calc-1":{"instance_id":"sample__calc-1","model_name_or_path":"m","model_patch":"x"}}`), 0o644)
	box := []string{"--backend", probetestName}
	tests := []struct {
		args    []string
		refused bool // the command stops at the probe's refusal
	}{
		{append([]string{"run", "--dataset", data, "--llm_name", "oracle/gold", "--traj_dir", t.TempDir()}, box...), true},
		{append([]string{"validate", "--dataset", data}, box...), true},
		{append([]string{"grade", "--dataset", data, "--predictions", preds, "--run_id", "r", "--report_dir", t.TempDir()}, box...), true},
		// gc skips a backend whose probe refuses; --dry-run removes nothing.
		{[]string{"gc", "--dry-run"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.args[0], func(t *testing.T) {
			probetest.mu.Lock()
			probetest.seen = nil
			probetest.mu.Unlock()
			want := "given-to-" + tt.args[0]
			_, _, err := execTasksCLI(t, append(tt.args, "--"+probetestParam, want)...)
			if tt.refused {
				if !errors.Is(err, errProbetest) && (err == nil || !strings.Contains(err.Error(), errProbetest.Error())) {
					t.Errorf("err %v; want the probe's refusal", err)
				}
			} else if err != nil {
				t.Errorf("err %v", err)
			}
			probetest.mu.Lock()
			seen := probetest.seen
			probetest.mu.Unlock()
			if len(seen) == 0 {
				t.Fatal("the probe was not called")
			}
			for _, got := range seen {
				if got != want {
					t.Errorf("the probe saw --%s %q, want %q", probetestParam, got, want)
				}
			}
			if v, ok := os.LookupEnv(probetestEnv); ok {
				t.Errorf("%s=%q: the flag was copied into swerve's environment", probetestEnv, v)
			}
		})
	}
}
