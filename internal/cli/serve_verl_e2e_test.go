package cli

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/swerve-dev/swerve/internal/convert/verl"

	"github.com/swerve-dev/swerve/internal/testutil"
)

// TestServeVerlAdapter runs integrations/verl's Python tests against a real
// `swerve serve` process behind a token: the adapter, a subclass of verl's
// unmodified BaseTool (../shared/clients/verl), driven through verl's
// per-call lifecycle (create, execute, release around each call; one box
// per trajectory), graded by swerve's real grader. The rows it drives are
// the ones `swerve convert verl --ground_truth_patch` writes for the same
// dataset, read back from the parquet file: each row's own tools_kwargs
// create the tools, its gold patch must earn 1 and no change 0.
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
	rows := convertedRows(t, e2eEnv(t, t.TempDir()), work, data)
	fix := `python3 - <<'EOF'
p = "calc.py"
s = open(p).read()
s = s.replace("    return ordered[middle]\n", "    if len(ordered) % 2 == 0:\n        return (ordered[middle - 1] + ordered[middle]) / 2\n    return ordered[middle]\n", 1)
open(p, "w").write(s)
EOF`
	cmd := exec.Command(python, "-m", "unittest", "-v", "tests/test_swerve_verl.py")
	cmd.Dir = filepath.Join(testutil.RepoRoot(t), "integrations", "verl")
	cmd.Env = append(os.Environ(), "SWERVE_URL="+base, "SWERVE_TOKEN=verl-token", "VERL_CLIENT_DIR="+client,
		"SWERVE_TASK=sample__calc-1", "SWERVE_FIX="+fix, "SWERVE_VERL_ROWS="+rows, "PYTHONDONTWRITEBYTECODE=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("python tests against swerve serve: %v\n%s\nserve:\n%s", err, out, p.stderr.String())
	}
	if !strings.Contains(string(out), "OK") || strings.Contains(string(out), "skipped") {
		t.Errorf("python tests did not all run and pass:\n%s", out)
	}
	t.Logf("%s", out)
}

// convertedRows runs swerve convert verl on dataset, reads the parquet rows
// back and writes them as JSON lines, the dicts pandas gives verl's
// dataset (nested structs as dicts), for the Python tests.
func convertedRows(t *testing.T, env []string, dir, dataset string) string {
	t.Helper()
	pq := filepath.Join(t.TempDir(), "train.parquet")
	stdout, stderr, code := runSwerve(t, env, dir, 2*time.Minute, "convert", "verl", "--dataset", dataset, "--output", pq, "--ground_truth_patch")
	if code != 0 {
		t.Fatalf("swerve convert verl: exit %d\n%s%s", code, stdout, stderr)
	}
	rows, err := verl.Read(pq)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) == 0 {
		t.Fatalf("swerve convert verl wrote no rows: %s", stdout)
	}
	var buf bytes.Buffer
	for _, r := range rows {
		if r.ExtraInfo.GroundTruthPatch == "" {
			t.Fatalf("row %s has no ground_truth_patch", r.ExtraInfo.InstanceID)
		}
		line, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		buf.Write(append(line, '\n'))
	}
	path := filepath.Join(t.TempDir(), "rows.jsonl")
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}
