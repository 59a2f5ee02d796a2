package sessions

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/swerve-dev/swerve/internal/testutil"
)

// TestVerlAdapter runs integrations/verl's Python tests: the adapter, a
// subclass of verl's real BaseTool (loaded unmodified from
// ../shared/clients/verl), driven through verl's per-call lifecycle against
// this package's surfaces on loopback, with swerve's real grader.
func TestVerlAdapter(t *testing.T) {
	shared := testutil.SharedDir(t)
	client := filepath.Join(shared, "clients", "verl")
	if _, err := os.Stat(filepath.Join(client, "verl", "tools", "base_tool.py")); err != nil {
		testutil.Missing(t, "verl's client code is not at %s", client)
	}
	python, err := exec.LookPath("python3")
	if err != nil {
		testutil.Missing(t, "no python3 on PATH")
	}
	if out, err := exec.Command(python, "-c", "import pydantic, yaml; assert pydantic.VERSION >= '2'").CombinedOutput(); err != nil {
		testutil.Missing(t, "%s has no pydantic 2 or yaml: %s", python, strings.TrimSpace(lastLine(out)))
	}
	testutil.HostPytest(t) // the sample task's tests, in the grading box
	o := newLocalOpener(t)
	ts := startServer(t, Options{Open: o.Open, Verifier: GraderVerifier{Open: o.Open}, MaxSessions: 8})

	fix := `python3 - <<'EOF'
import re
p = "calc.py"
s = open(p).read()
s = s.replace("    return ordered[middle]\n", "    if len(ordered) % 2 == 0:\n        return (ordered[middle - 1] + ordered[middle]) / 2\n    return ordered[middle]\n", 1)
open(p, "w").write(s)
EOF`
	dir := filepath.Join(testutil.RepoRoot(t), "integrations", "verl")
	cmd := exec.Command(python, "-m", "unittest", "-v", "tests/test_swerve_verl.py")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "SWERVE_URL="+ts.URL, "VERL_CLIENT_DIR="+client, "SWERVE_TASK=sample__calc-1", "SWERVE_FIX="+fix, "PYTHONDONTWRITEBYTECODE=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("python tests: %v\n%s", err, out)
	}
	t.Logf("%s", out)
	if n := ts.m.Len(); n != 0 {
		t.Errorf("%d sandboxes left open by the adapter's trajectories", n)
	}
}

func lastLine(b []byte) string {
	s := strings.TrimSpace(string(b))
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		return s[i+1:]
	}
	return s
}
