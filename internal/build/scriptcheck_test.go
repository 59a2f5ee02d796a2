package build

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/swerve-dev/swerve/internal/llm"
	"github.com/swerve-dev/swerve/internal/task"
	"github.com/swerve-dev/swerve/internal/testutil"
)

// origScript is shaped like SWE-Factory's eval scripts (and the calc
// fixtures'): reset the test file, apply the test patch from a heredoc,
// run the tests, save and echo the status.
const origScript = `#!/bin/bash
set -uxo pipefail
cd /testbed
git checkout 8f257f3 -- tests/test_calc.py
git apply -v - <<'EOF_114329324912'
diff --git a/tests/test_calc.py b/tests/test_calc.py
--- a/tests/test_calc.py
+++ b/tests/test_calc.py
@@ -1,5 +1,8 @@
-from calc import add
+from calc import add, div
 
 
 def test_add():
     assert add(2, 3) == 5
+
+def test_div():
+    assert div(6, 3) == 2
EOF_114329324912
python3 -m pytest -q -p no:cacheprovider tests/test_calc.py::test_div
rc=$?
echo "OMNIGRIL_EXIT_CODE=$rc"
git checkout 8f257f3 -- tests/test_calc.py
`

const testCmd = "python3 -m pytest -q -p no:cacheprovider tests/test_calc.py::test_div"

func TestCheckRepair(t *testing.T) {
	patchStart := strings.Index(origScript, "git apply")
	patchEnd := strings.Index(origScript, "EOF_114329324912\npython3") + len("EOF_114329324912\n")
	patch := origScript[patchStart:patchEnd]
	withoutPatch := origScript[:patchStart] + origScript[patchEnd:]
	for _, tc := range []struct {
		name     string
		repaired string
		want     string // the failure's reason; empty: accepted
	}{
		{"unchanged", origScript, ""},
		{"flags changed", strings.Replace(origScript, "-q -p no:cacheprovider", "-rA -v", 1), ""},
		{"pytest called directly, with env", strings.Replace(origScript, "python3 -m pytest", "PYTHONPATH=. timeout 600 pytest", 1), ""},
		{"set-up added before the tests", strings.Replace(origScript, "cd /testbed\n", "cd /testbed\npip install -e . >/dev/null\nexport LANG=C.UTF-8\n", 1), ""},
		{"test patch written to a file, applied later",
			strings.Replace(origScript, "git apply -v - <<'EOF_114329324912'", "cat > /tmp/test.patch <<'EOF_114329324912'", 1) + "", "repair dropped the test patch (the heredoc applying tests/test_calc.py)"},
		{"test patch written to a file and applied",
			strings.Replace(strings.Replace(origScript, "git apply -v - <<'EOF_114329324912'", "cat > /tmp/test.patch <<'EOF_114329324912'", 1),
				"python3 -m pytest", "git apply -v /tmp/test.patch\npython3 -m pytest", 1), ""},
		{"test patch dropped", withoutPatch, "repair dropped the test patch (the heredoc applying tests/test_calc.py)"},
		{"test patch weakened", strings.Replace(origScript, "+    assert div(6, 3) == 2\n", "+    pass\n", 1), "repair dropped the test patch"},
		{"test patch commented out", strings.Replace(origScript, patch, "# "+strings.ReplaceAll(patch, "\n", "\n# "), 1), "repair dropped the test patch"},
		{"grep for the fix instead of the tests",
			strings.Replace(origScript, testCmd, "grep -q 'def div' calc.py", 1), "repair dropped the test command `" + testCmd + "`"},
		{"test selector dropped", strings.Replace(origScript, "tests/test_calc.py::test_div", "tests/test_calc.py::test_add", 1), "repair dropped the test command"},
		{"test command only in a comment", strings.Replace(origScript, testCmd, "# "+testCmd+"\ntrue", 1), "repair dropped the test command"},
		{"test command echoed", strings.Replace(origScript, testCmd, "echo "+testCmd, 1), "repair dropped the test command"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := checkRepair(origScript, tc.repaired)
			switch {
			case tc.want == "" && f != nil:
				t.Errorf("refused: %s", f.Reason)
			case tc.want != "" && f == nil:
				t.Errorf("accepted, want %q", tc.want)
			case f != nil && (!strings.HasPrefix(f.Reason, tc.want) || f.Stage != StageRepair || strings.Contains(f.Reason, "\n")):
				t.Errorf("failure %+v, want stage %s and reason %q", f, StageRepair, tc.want)
			}
		})
	}
}

func TestTestCommand(t *testing.T) {
	for _, tc := range []struct{ script, want string }{
		{origScript, testCmd},
		{"cd build\n./tests/spdlog-utests\nrc=$? # Required: save it\necho \"OMNIGRIL_EXIT_CODE=$rc\"\n", "./tests/spdlog-utests"},
		{"npx jest src/a.test.js \\\n  --ci\necho \"OMNIGRIL_EXIT_CODE=$?\"\n", "npx jest src/a.test.js    --ci"},
		{"go test ./pkg/...\n\n# the status\nstatus=$?\necho OMNIGRIL_EXIT_CODE=$status\n", "go test ./pkg/..."},
		{"echo OMNIGRIL_EXIT_CODE=0\n", ""},
	} {
		if got := testCommand(tc.script); got != tc.want {
			t.Errorf("testCommand(%q) = %q, want %q", tc.script, got, tc.want)
		}
	}
}

func TestKeyOf(t *testing.T) {
	for _, tc := range []struct {
		line      string
		program   string
		selectors []string
	}{
		{testCmd, "pytest", []string{"tests/test_calc.py::test_div"}},
		{"./tests/runtests.py --verbosity 2 --settings=test_sqlite --parallel 1 admin_views.tests", "runtests.py", []string{"admin_views.tests"}},
		{`./spdlog-utests "[registry]" 2>&1 | tee log`, "spdlog-utests", []string{"[registry]"}},
		// A bare word may be an option's value: not a selector.
		{"PYTHONPATH=. timeout -s KILL 300 python -W ignore -m pytest -rA r2e_tests", "pytest", nil},
		{"go test ./pkg/... -run TestX", "go", []string{"pkg/..."}},
		{"bundle exec rspec spec/a_spec.rb", "bundle", []string{"spec/a_spec.rb"}},
	} {
		k := keyOf(tc.line)
		if k.program != tc.program || strings.Join(k.selectors, " ") != strings.Join(tc.selectors, " ") {
			t.Errorf("keyOf(%q) = %+v, want %s %v", tc.line, k, tc.program, tc.selectors)
		}
	}
}

// The SWE-Factory rows' own repairs pass: results_fixed.json holds scripts
// a repair produced from the originals in results.json.
func TestCheckRepairSharedData(t *testing.T) {
	dir := filepath.Join(testutil.SharedDir(t), "data", "swe-factory")
	read := func(name string) map[string]string {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Skipf("shared data: %v", err)
		}
		var rows []struct {
			ID     string `json:"instance_id"`
			Script string `json:"eval_script"`
		}
		if err := json.Unmarshal(b, &rows); err != nil {
			t.Fatal(err)
		}
		out := map[string]string{}
		for _, r := range rows {
			out[r.ID] = r.Script
		}
		return out
	}
	orig, fixed := read("results.json"), read("results_fixed.json")
	n := 0
	for id, o := range orig {
		if f, ok := fixed[id]; ok {
			n++
			if fail := checkRepair(o, f); fail != nil {
				t.Errorf("%s: the dataset's own repair refused: %s", id, fail.Reason)
			}
		}
	}
	t.Logf("%d repaired rows checked", n)
}

// A repair that drops the test command fails its attempt without a build,
// and the model is told why.
func TestBuildRunRefusesRepairWithoutTests(t *testing.T) {
	out := t.TempDir()
	eng := &fakeEngine{err: errNoBuild}
	tk := fakeTasks("o__r-1")
	tk[0].EvalScript = origScript
	bad := strings.Replace(origScript, testCmd, "grep -q 'def div' calc.py", 1)
	var prompts []string
	model := func(*task.Task) (llm.Client, error) {
		return &recorder{Client: llm.NewScripted("replay/fake", []llm.Message{
			{Content: "Just check the source.\n```bash\n" + bad + "```\n"},
			{Content: "Sorry.\n```bash\n" + origScript + "```\n"},
		}), prompts: &prompts}, nil
	}
	if _, err := Run(context.Background(), Options{Tasks: tk, Output: out, Stem: "in", MaxIterations: 3, Engine: eng, NewModel: model}); err != nil {
		t.Fatal(err)
	}
	st, err := ReadStatus(InstanceDir(out, "o__r-1"))
	if err != nil {
		t.Fatal(err)
	}
	if len(st.History) != 3 || st.History[1].Stage != StageRepair || st.History[1].Reason != "repair dropped the test command `"+testCmd+"`" {
		t.Fatalf("history %+v", st.History)
	}
	if eng.builds.Load() != 2 {
		t.Errorf("%d builds, want 2 (the refused repair is not built)", eng.builds.Load())
	}
	if len(prompts) != 2 || !strings.Contains(prompts[1], "repair dropped the test command") {
		t.Errorf("the model was not told:\n%s", strings.Join(prompts, "\n----\n"))
	}
}
