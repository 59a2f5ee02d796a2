package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/swerve-dev/swerve/internal/testutil"
)

// TestGradeInfraErrors: a box that will not open (the local backend's
// source directory is gone) is an error with its kind for grade, grade
// --predictions and validate — exit status 3, error ids and reasons —
// never a reward of 0.
func TestGradeInfraErrors(t *testing.T) {
	t.Setenv("SWERVE_SHIM_BINARY", testutil.SwerveBinary(t))
	data := tasksSampleDataset(t)
	gone := filepath.Join(t.TempDir(), "gone")
	box := []string{"--backend", "local", "--source", gone}
	id := "sample__calc-1"

	patch := filepath.Join(t.TempDir(), "p.diff")
	os.WriteFile(patch, []byte(""), 0o644)
	_, stderr, err := execTasksCLI(t, append([]string{"grade", "--dataset", data, "--instance_id", id, "--patch", patch}, box...)...)
	if ee, ok := err.(exitError); !ok || ee.code != exitTaskErrors || !strings.Contains(stderr, id+": box error, no verdict") || strings.Contains(stderr, "not resolved") {
		t.Errorf("grade --patch: %v, %q; want exit %d and a box error", err, stderr, exitTaskErrors)
	}

	out, stderr, err := execTasksCLI(t, append([]string{"validate", "--dataset", data, "--json"}, box...)...)
	if ee, ok := err.(exitError); !ok || ee.code != exitTaskErrors {
		t.Errorf("validate: %v, want exit %d\n%s", err, exitTaskErrors, stderr)
	}
	var sum validationSummary
	if err := json.Unmarshal([]byte(out), &sum); err != nil {
		t.Fatalf("validate --json: %v\n%s", err, out)
	}
	if sum.Passed != 0 || len(sum.Failed) != 0 || len(sum.Errors) != 2 {
		t.Errorf("validate summary: passed %d, failed %v, errors %v", sum.Passed, sum.Failed, sum.Errors)
	}
	for _, v := range sum.Tasks {
		if v.Status != validError || v.ErrorKind != "box" || v.Gold != nil || v.Empty != nil || v.OK || !strings.Contains(v.Error, "gold run: ") {
			t.Errorf("validate %s: %+v", v.InstanceID, v)
		}
	}
	if !strings.Contains(out, `"gold_reward": null`) {
		t.Errorf("validate --json shows a reward for an error:\n%s", out)
	}
	out, _, _ = execTasksCLI(t, append([]string{"validate", "--dataset", data}, box...)...)
	if !strings.Contains(out, "0 of 2 tasks valid, 2 could not be checked") || !strings.Contains(out, "box error: gold run") {
		t.Errorf("validate table:\n%s", out)
	}

	dir := t.TempDir()
	preds := filepath.Join(dir, "preds.jsonl")
	os.WriteFile(preds, []byte(`{"instance_id": "`+id+`", "model_name_or_path": "m", "model_patch": "diff --git a/x b/x\n"}`+"\n"), 0o644)
	args := append([]string{"grade", "--dataset", data, "--instance_ids", id, "--predictions", preds, "--run_id", "e", "--log_dir", filepath.Join(dir, "logs"), "--report_dir", dir}, box...)
	_, stderr, err = execTasksCLI(t, args...)
	if ee, ok := err.(exitError); !ok || ee.code != exitTaskErrors {
		t.Errorf("grade --predictions: %v, want exit %d\n%s", err, exitTaskErrors, stderr)
	}
	var rs runSummary
	if err := readJSONFile(filepath.Join(dir, "m.e.json"), &rs); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(rs.ErrorIDs, []string{id}) || rs.Errors != 1 || len(rs.UnresolvedIDs) != 0 || !strings.HasPrefix(rs.FailureReasons[id], "box error: ") {
		t.Errorf("predictions summary: %+v", rs)
	}
}
