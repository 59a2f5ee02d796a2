package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// swerve audit on the local backend: one JSON row per source directory
// (tasks that share one are one row), each with its proof, or the table.
// The leaks themselves are found in internal/episode's Docker test.
func TestAuditLocal(t *testing.T) {
	work := t.TempDir()
	tmp := filepath.Join(work, "tmp")
	os.Mkdir(tmp, 0o755)
	env := e2eEnv(t, tmp)
	data, _ := e2eDataset(t, work, 1)
	out, stderr, code := runSwerve(t, env, work, 5*time.Minute, "audit", "--dataset", data, "--backend", "local", "--json")
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	rows := strings.Split(strings.TrimSpace(out), "\n")
	sources := map[string]bool{}
	for _, row := range readRows(t, data) {
		sources[row["source_dir"].(string)] = true
	}
	if len(rows) != len(sources) {
		t.Fatalf("%d rows for %d source directories:\n%s", len(rows), len(sources), out)
	}
	for _, line := range rows {
		var a struct {
			Image     string   `json:"image"`
			Instances []string `json:"instance_ids"`
			Proof     *struct {
				Findings []string `json:"findings"`
			} `json:"proof"`
			Error string `json:"error"`
		}
		if err := json.Unmarshal([]byte(line), &a); err != nil {
			t.Fatalf("%v: %s", err, line)
		}
		if a.Error != "" || a.Proof == nil || len(a.Instances) == 0 {
			t.Errorf("row %s", line)
		}
	}
	// The table says how many images hold something.
	out, stderr, code = runSwerve(t, env, work, 5*time.Minute, "audit", "--dataset", data, "--backend", "local")
	if code != 0 || !strings.Contains(out, "IMAGE") || !strings.Contains(out, "hold something past their base commit") {
		t.Errorf("table: exit %d\n%s\n%s", code, out, stderr)
	}
}
