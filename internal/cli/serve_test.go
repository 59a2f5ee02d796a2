package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/swerve-dev/swerve/internal/testutil"
)

// TestServeConfig reads a Gym agent config nested as Gym writes it: Gym's
// keys set the flags, the command line wins, Gym's wiring keys are skipped,
// and a token in the file is refused.
func TestServeConfig(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "agent.yaml")
	os.WriteFile(path, []byte(`swerve_agent:
  responses_api_agents:
    mini_swe_agent:
      entrypoint: app.py
      model_server: {type: responses_api_models, name: policy_model}
      concurrency: 8
      env: docker
      cache_dir_template: ???
      run_golden: true
      step_timeout: 300
      eval_timeout: 900
      skip_if_exists: true
      step_limit: 100
      collapse_limit: 5
`), 0o644)
	cmd := newServeCmd()
	if err := cmd.ParseFlags([]string{"--concurrency", "4"}); err != nil {
		t.Fatal(err)
	}
	if err := applyServeConfig(cmd.Flags(), path); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"concurrency": "4", "env": "docker", "cache_dir_template": "", "run_golden": "true",
		"step_timeout": "5m0s", "eval_timeout": "15m0s", "skip_if_exists": "true", "step_limit": "100", "collapse_limit": "5"}
	for k, w := range want {
		if got := cmd.Flags().Lookup(k).Value.String(); got != w {
			t.Errorf("%s = %q, want %q", k, got, w)
		}
	}

	// Gym's defaults when nothing is given.
	cmd = newServeCmd()
	for k, w := range map[string]string{"concurrency": "16", "step_timeout": "10m0s", "eval_timeout": "30m0s",
		"step_limit": "250", "collapse_limit": "3", "run_golden": "false", "skip_if_exists": "false", "listen": "127.0.0.1:8000"} {
		if got := cmd.Flags().Lookup(k).Value.String(); got != w {
			t.Errorf("default %s = %q, want %q", k, got, w)
		}
	}

	for body, errHas := range map[string]string{
		"token: abc\n":       "not in a file",
		"no_such_key: 1\n":   `unknown key "no_such_key"`,
		"concurrency: x\n":   "concurrency",
		"config: other.yaml": `unknown key "config"`,
	} {
		p := filepath.Join(dir, "bad.yaml")
		os.WriteFile(p, []byte(body), 0o644)
		if err := applyServeConfig(newServeCmd().Flags(), p); err == nil || !strings.Contains(err.Error(), errHas) {
			t.Errorf("%q: %v, want %q", body, err, errHas)
		}
	}
}

// TestServeHelp: serve documents itself and lists Gym's keys as flags.
func TestServeHelp(t *testing.T) {
	var out bytes.Buffer
	root := NewRoot(&out, &bytes.Buffer{})
	root.SetArgs([]string{"serve", "--help"})
	if err := root.Execute(); err != nil {
		t.Fatal(err)
	}
	cmd, _, _ := root.Find([]string{"serve"})
	if cmd.Short == "" || cmd.Long == "" || cmd.Example == "" {
		t.Error("serve: Short, Long or Example missing")
	}
	for _, flag := range []string{"--listen", "--token", "--config", "--concurrency", "--queue", "--env", "--cache-dir-template",
		"--run-golden", "--step-timeout", "--eval-timeout", "--skip-if-exists", "--step-limit", "--collapse-limit", "--dataset", "swerve serve --"} {
		if !strings.Contains(out.String(), flag) {
			t.Errorf("serve --help lacks %s", flag)
		}
	}
}

// TestServeExampleConfig: the example config in examples/serve loads.
func TestServeExampleConfig(t *testing.T) {
	cmd := newServeCmd()
	if err := applyServeConfig(cmd.Flags(), filepath.Join(testutil.RepoRoot(t), "examples", "serve", "swerve_agent.yaml")); err != nil {
		t.Fatal(err)
	}
	if got := cmd.Flags().Lookup("env").Value.String(); got != "docker" {
		t.Errorf("env %q", got)
	}
}
