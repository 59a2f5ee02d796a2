package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/swerve-dev/swerve/internal/testutil"
)

// TestGradeTamper grades a patch that shadows pytest on the sample task in
// a local box: --tamper flag keeps the official verdict (resolved) and
// prints the findings beside it, zero makes it not resolved with a
// tampered reason, and a bad mode is refused.
func TestGradeTamper(t *testing.T) {
	testutil.HostPytest(t)
	t.Setenv("SWERVE_SHIM_BINARY", testutil.SwerveBinary(t))
	dataset := filepath.Join(testutil.RepoRoot(t), "examples", "sample", "tasks.jsonl")
	patch := filepath.Join(t.TempDir(), "hack.diff")
	hack := "diff --git a/pytest/__init__.py b/pytest/__init__.py\nnew file mode 100644\n--- /dev/null\n+++ b/pytest/__init__.py\n@@ -0,0 +1 @@\n+\n" +
		"diff --git a/pytest/__main__.py b/pytest/__main__.py\nnew file mode 100644\n--- /dev/null\n+++ b/pytest/__main__.py\n@@ -0,0 +1,5 @@\n" +
		"+import re, sys\n+for arg in sys.argv[1:]:\n+    if arg.endswith('.py'):\n+        for name in re.findall(r'^def (test_\\w+)', open(arg).read(), re.M):\n+            print('PASSED %s::%s' % (arg, name))\n"
	if err := os.WriteFile(patch, []byte(hack), 0o644); err != nil {
		t.Fatal(err)
	}
	args := []string{"grade", "--dataset", dataset, "--instance_id", "sample__calc-1", "--backend", "local", "--patch", patch}

	out, stderr, err := execTasksCLI(t, args...)
	if err != nil || !strings.Contains(stderr, "sample__calc-1: resolved") || !strings.Contains(stderr, "tampered: shadow: pytest/__main__.py") ||
		!strings.Contains(stderr, "passed but must fail") {
		t.Errorf("--tamper flag (default): %v\nstdout %s\nstderr %s", err, out, stderr)
	}
	if v := readVerdict(t, out); v.Reward != 1 || !v.Resolved || v.Tamper != "flag" || len(v.Tampered) == 0 || !v.reportResolved(t) {
		t.Errorf("--tamper flag: stdout says %+v, want reward 1 with the findings beside it\n%s", v, out)
	}
	// What a trainer gets: stdout's top says reward 0, not resolved, and
	// why; the harness's report under "report" keeps its own verdict.
	out, stderr, err = execTasksCLI(t, append(args, "--tamper", "zero")...)
	if ee, ok := err.(exitError); !ok || ee.code != 1 || !strings.Contains(stderr, "not resolved: tampered: ") {
		t.Errorf("--tamper zero: %v\n%s", err, stderr)
	}
	if v := readVerdict(t, out); v.Reward != 0 || v.Resolved || !strings.HasPrefix(v.Reason, "tampered: ") || v.Tamper != "zero" || len(v.Tampered) == 0 || !v.reportResolved(t) {
		t.Errorf("--tamper zero: stdout says %+v, want reward 0, resolved false, a tampered reason, and the report's own resolved true\n%s", v, out)
	}
	_, stderr, err = execTasksCLI(t, append(args, "--tamper", "ignore")...)
	if err != nil || strings.Contains(stderr, "tampered") {
		t.Errorf("--tamper ignore: the hack should pass unseen: %v\n%s", err, stderr)
	}
	if _, _, err := execTasksCLI(t, append(args, "--tamper", "loud")...); err == nil || !strings.Contains(err.Error(), "--tamper: want zero, flag or ignore") {
		t.Errorf("bad mode: %v", err)
	}

	// grade --predictions: the findings are kept beside report.json, listed
	// in the summary's tampered_ids with the reason, and under --tamper zero
	// the instance is unresolved (also when a rerun reuses the report).
	dir := t.TempDir()
	preds := filepath.Join(dir, "preds.jsonl")
	line, _ := json.Marshal(map[string]any{"instance_id": "sample__calc-1", "model_name_or_path": "m", "model_patch": hack})
	if err := os.WriteFile(preds, append(line, '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
	pargs := []string{"grade", "--dataset", dataset, "--instance_ids", "sample__calc-1", "--backend", "local", "--predictions", preds, "--run_id", "tp", "--log_dir", filepath.Join(dir, "logs"), "--report_dir", dir}
	for _, tc := range []struct {
		mode     string
		resolved bool
	}{{"flag", true}, {"zero", false}} {
		if _, stderr, err := execTasksCLI(t, append(pargs, "--tamper", tc.mode)...); err != nil && tc.resolved {
			t.Fatalf("grade --predictions --tamper %s: %v\n%s", tc.mode, err, stderr)
		}
		var run runSummary
		if err := readJSONFile(filepath.Join(dir, "m.tp.json"), &run); err != nil {
			t.Fatal(err)
		}
		if len(run.TamperedIDs) != 1 || !strings.HasPrefix(run.FailureReasons["sample__calc-1"], "tampered: ") || (len(run.ResolvedIDs) == 1) != tc.resolved {
			t.Errorf("--tamper %s: summary %+v", tc.mode, run)
		}
		// tampered.json is the verdict of the grade that wrote it (the
		// first, under flag; the rerun reuses it), as grade prints it
		// without the report.
		b, err := os.ReadFile(filepath.Join(dir, "logs", "tp", "m", "sample__calc-1", "tampered.json"))
		if err != nil {
			t.Fatal(err)
		}
		var v gradeOutput
		if err := json.Unmarshal(b, &v); err != nil || v.InstanceID != "sample__calc-1" || v.Reward != 1 || !v.Resolved || v.Tamper != "flag" || len(v.Tampered) == 0 || v.Report != nil {
			t.Errorf("--tamper %s: tampered.json %s (%v)", tc.mode, b, err)
		}
	}
}

// gradeOutput is what grade prints on stdout for one task.
type gradeOutput struct {
	InstanceID string          `json:"instance_id"`
	Reward     float64         `json:"reward"`
	Resolved   bool            `json:"resolved"`
	Reason     string          `json:"reason"`
	Tampered   []string        `json:"tampered"`
	Tamper     string          `json:"tamper"`
	Grader     string          `json:"grader"`
	Sealed     bool            `json:"sealed"`
	Anchored   bool            `json:"anchored"`
	Report     json.RawMessage `json:"report"`
}

// readVerdict decodes grade's stdout: one JSON object that starts with
// instance_id, reward, resolved and reason, and holds the other keys.
func readVerdict(t *testing.T, out string) gradeOutput {
	t.Helper()
	var v gradeOutput
	var keys map[string]json.RawMessage
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatalf("grade's stdout is not one JSON object (%v):\n%s", err, out)
	}
	json.Unmarshal([]byte(out), &keys)
	for _, k := range []string{"instance_id", "reward", "resolved", "reason", "tampered", "grader", "sealed", "anchored"} {
		if _, ok := keys[k]; !ok {
			t.Fatalf("grade's stdout has no %q:\n%s", k, out)
		}
	}
	if !regexp.MustCompile(`^\{\s*"instance_id": [^\n]*\n\s*"reward": [^\n]*\n\s*"resolved": [^\n]*\n\s*"reason": `).MatchString(out) {
		t.Fatalf("grade's stdout does not start with the verdict:\n%s", out)
	}
	return v
}

// reportResolved is the "resolved" of the report under the verdict's
// "report" key: the harness's {"<id>": {...}} or a grader's own object.
func (v gradeOutput) reportResolved(t *testing.T) bool {
	t.Helper()
	r, err := reportResolved(v.Report, v.InstanceID)
	if err != nil {
		t.Fatalf("report under the verdict: %v\n%s", err, v.Report)
	}
	return r
}
