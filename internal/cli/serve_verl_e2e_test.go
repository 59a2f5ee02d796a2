package cli

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/swerve-dev/swerve/internal/testutil"
)

// TestServeVerlAdapter runs integrations/verl's Python tests against a real
// `swerve serve` process behind a token: the adapter, a subclass of verl's
// unmodified BaseTool (../shared/clients/verl), driven through verl's
// per-call lifecycle (create, execute, release around each call; one box
// per trajectory), graded by swerve's real grader.
func TestServeVerlAdapter(t *testing.T) {
	client := filepath.Join(testutil.SharedDir(t), "clients", "verl")
	if _, err := os.Stat(filepath.Join(client, "verl", "tools", "base_tool.py")); err != nil {
		testutil.Missing(t, "verl's client code is not at %s", client)
	}
	python, err := exec.LookPath("python3")
	if err != nil {
		testutil.Missing(t, "no python3 on PATH")
	}
	if out, err := exec.Command(python, "-c", "import pydantic, yaml; assert pydantic.VERSION >= '2'").CombinedOutput(); err != nil {
		testutil.Missing(t, "%s has no pydantic 2 or yaml: %s", python, strings.TrimSpace(string(out)))
	}
	testutil.NeedPytest(t)
	work := t.TempDir()
	data := filepath.Join(testutil.RepoRoot(t), "examples", "sample", "tasks.jsonl")
	p := startSwerve(t, e2eEnv(t, t.TempDir()), work, nil, "serve", "--listen", "127.0.0.1:0", "--dataset", data,
		"--llm_name", "oracle/gold", "--backend", "local", "--results_dir", "", "--token", "verl-token")
	base := waitListening(t, p)
	fix := `python3 - <<'EOF'
p = "calc.py"
s = open(p).read()
s = s.replace("    return ordered[middle]\n", "    if len(ordered) % 2 == 0:\n        return (ordered[middle - 1] + ordered[middle]) / 2\n    return ordered[middle]\n", 1)
open(p, "w").write(s)
EOF`
	cmd := exec.Command(python, "-m", "unittest", "-v", "tests/test_swerve_verl.py")
	cmd.Dir = filepath.Join(testutil.RepoRoot(t), "integrations", "verl")
	cmd.Env = append(os.Environ(), "SWERVE_URL="+base, "SWERVE_TOKEN=verl-token", "VERL_CLIENT_DIR="+client,
		"SWERVE_TASK=sample__calc-1", "SWERVE_FIX="+fix, "PYTHONDONTWRITEBYTECODE=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("python tests against swerve serve: %v\n%s\nserve:\n%s", err, out, p.stderr.String())
	}
	if !strings.Contains(string(out), "OK") {
		t.Errorf("python tests did not report OK:\n%s", out)
	}
}
