package swefactory

import (
	"reflect"
	"strings"
	"testing"

	"github.com/swerve-dev/swerve/internal/reward"
	"github.com/swerve-dev/swerve/internal/task"
)

const base = "0123456789abcdef0123456789abcdef01234567"

// factoryScript is an eval script in SWE-Factory's shape around cmd.
func factoryScript(testPatch, cmd string) string {
	return strings.Join([]string{
		"#!/bin/bash",
		"set -uxo pipefail",
		"cd /testbed",
		"git checkout " + base + " tests/test_ops.py",
		"git apply -v - <<'EOF_114329324912'",
		strings.TrimRight(testPatch, "\n"),
		"EOF_114329324912",
		"# run the target tests",
		cmd,
		"rc=$? # keep the status",
		`echo "OMNIGRIL_EXIT_CODE=$rc"`,
		"git checkout " + base + " tests/test_ops.py",
		"",
	}, "\n")
}

const opsPatch = `diff --git a/tests/test_ops.py b/tests/test_ops.py
index 1111111..2222222 100644
--- a/tests/test_ops.py
+++ b/tests/test_ops.py
@@ -5,7 +5,7 @@ def test_mul():
 
 
 def test_add_zero():
-    assert add(5, 0) == 4
+    assert add(5, 0) == 5
 
 
 def test_add_pair():
@@ -14,3 +14,12 @@ def test_add_pair():
 
 def helper():
     return 1
+
+
+@pytest.mark.parametrize("a", [1, 2])
+def test_add_many(a):
+    assert add(a, 1) == a + 1
+
+
+class TestAdd:
+    def test_in_class(self):
+        assert add(1, 1) == 2
diff --git a/tests/test_other.py b/tests/test_other.py
new file mode 100644
--- /dev/null
+++ b/tests/test_other.py
@@ -0,0 +1,2 @@
+def test_elsewhere():
+    pass
diff --git a/docs/notes.txt b/docs/notes.txt
--- a/docs/notes.txt
+++ b/docs/notes.txt
@@ -1 +1 @@
-old
+new
`

func TestTestCommand(t *testing.T) {
	for _, tt := range []struct {
		name, script, want string
	}{
		{"after the heredoc, comments left out", factoryScript(opsPatch, "python -m pytest -rA tests/test_ops.py"), "python -m pytest -rA tests/test_ops.py"},
		{"no heredoc: after the reset", "set -x\ncd /testbed\ngit checkout " + base + " \"tests/t.cpp\"\n\ncd build\n./tests/utests\nrc=$? # Required\necho \"OMNIGRIL_EXIT_CODE=$rc\"\n", "cd build\n./tests/utests"},
		{"no rc line", "pytest -rA\necho OMNIGRIL_EXIT_CODE=$?\n", ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := TestCommand(tt.script); got != tt.want {
				t.Errorf("TestCommand = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestFramework(t *testing.T) {
	for _, tt := range []struct {
		name, parser, cmd, want, why string
	}{
		{"pytest -rA", "", "python -m pytest -rA tests/test_ops.py", "parse_log_pytest", ""},
		{"pytest -rP", "", "pytest -q -rP x.py", "parse_log_pytest", ""},
		{"pytest without -rA lists no passes", "", "pytest tests/", "", "without -rA"},
		{"-ra lists no passes", "", "pytest -ra tests/", "", "without -rA"},
		{"a C++ test binary", "", "cd build\n./tests/spdlog-utests", "", "no log parser is known"},
		{"the row's own parser", "parse_log_django", "./tests/runtests.py x", "parse_log_django", ""},
		{"an unknown parser", "parse_log_nothing", "pytest -rA", "", "unknown"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, why := Framework(&task.Task{LogParser: tt.parser}, tt.cmd)
			if got != tt.want || !strings.Contains(why, tt.why) || (tt.why == "") != (why == "") {
				t.Errorf("Framework = %q, %q; want %q, %q", got, why, tt.want, tt.why)
			}
		})
	}
}

func TestPatchTests(t *testing.T) {
	for _, tt := range []struct {
		name, cmd string
		want      []string
	}{
		{"files the command names", "pytest -rA tests/test_ops.py", []string{"tests/test_ops.py::test_add_zero", "tests/test_ops.py::test_add_many", "tests/test_ops.py::test_in_class"}},
		{"every file when it names none", "pytest -rA", []string{"tests/test_ops.py::test_add_zero", "tests/test_ops.py::test_add_many", "tests/test_ops.py::test_in_class", "tests/test_other.py::test_elsewhere"}},
		{"a node id names its file", "pytest -rA tests/test_other.py::test_elsewhere", []string{"tests/test_other.py::test_elsewhere"}},
		{"a directory names its files", "pytest -rA -p no:cacheprovider tests/", []string{"tests/test_ops.py::test_add_zero", "tests/test_ops.py::test_add_many", "tests/test_ops.py::test_in_class", "tests/test_other.py::test_elsewhere"}},
		{"another directory names none", "pytest -rA lib/tests", nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := PatchTests(opsPatch, tt.cmd); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("PatchTests = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestCheckEvidence(t *testing.T) {
	cmd := "python -m pytest -rA tests/test_ops.py"
	script := factoryScript(opsPatch, cmd)
	allPass := "PASSED tests/test_ops.py::test_add_zero\nPASSED tests/test_ops.py::test_add_many[1]\nPASSED tests/test_ops.py::test_add_many[2]\nPASSED tests/test_ops.py::TestAdd::test_in_class\nPASSED tests/test_ops.py::test_mul\n"
	listed := &task.Task{InstanceID: "a", FailToPass: []string{"tests/test_ops.py::test_add_zero"}, PassToPass: []string{"tests/test_ops.py::test_mul"}}
	unlisted := &task.Task{InstanceID: "a", TestPatch: opsPatch}
	noPatch := &task.Task{InstanceID: "a"}
	for _, tt := range []struct {
		name    string
		t       *task.Task
		script  string
		section string
		applied bool
		results int
		problem string
	}{
		{"listed tests passed", listed, script, allPass, true, 5, ""},
		{"unlisted: the patch's tests passed", unlisted, script, allPass, true, 5, ""},
		{"no output at all (exec of /bin/true)", unlisted, script, "", true, 0, "no test results in the log"},
		{"a listed test missing", listed, script, "PASSED tests/test_ops.py::test_mul\n", true, 1, "no test results for tests/test_ops.py::test_add_zero"},
		{"a patch test missing", unlisted, script, "PASSED tests/test_ops.py::test_add_zero\nPASSED tests/test_ops.py::test_add_many[1]\n", true, 2, "no test results for tests/test_ops.py::test_in_class"},
		{"worst copy: a parametrised copy failed", unlisted, script, allPass + "FAILED tests/test_ops.py::test_add_many[2] - x\n", true, 5, "tests failed"},
		{"a failure listed with status 0", listed, script, allPass + "FAILED tests/test_ops.py::test_other - x\n", true, 6, "tests failed: tests/test_ops.py::test_other"},
		{"a skipped F2P test", listed, script, "SKIPPED tests/test_ops.py::test_add_zero\nPASSED tests/test_ops.py::test_mul\n", true, 2, "did not pass"},
		{"a skipped P2P test is fine", listed, script, "PASSED tests/test_ops.py::test_add_zero\nSKIPPED tests/test_ops.py::test_mul\n", true, 2, ""},
		{"every patch test skipped", unlisted, script, "SKIPPED tests/test_ops.py::test_add_zero\nSKIPPED tests/test_ops.py::test_add_many\nSKIPPED tests/test_ops.py::TestAdd::test_in_class\n", true, 3, "no test results of a passed test"},
		{"no derivable test: one pass is enough", noPatch, factoryScript("", cmd), "PASSED tests/test_ops.py::test_x\n", true, 1, ""},
		{"no derivable test and only skips", noPatch, factoryScript("", cmd), "SKIPPED tests/test_ops.py::test_x\n", true, 1, "no test results of a passed test"},
		{"another parser's names are not derived: one pass is enough", &task.Task{InstanceID: "a", TestPatch: opsPatch, LogParser: "parse_log_tap"}, factoryScript(opsPatch, "bash tests/run.sh"), "ok 1 - x\n", true, 1, ""},
		{"C++: not applied", unlisted, factoryScript(opsPatch, "cd build\n./tests/utests"), "", false, 0, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ev := CheckEvidence(tt.t, tt.script, tt.section)
			if ev.Applied != tt.applied || ev.Results != tt.results || !strings.Contains(ev.Problem, tt.problem) || (tt.problem == "") != (ev.Problem == "") {
				t.Errorf("CheckEvidence = applied %v, %d results, problem %q (why %q); want %v, %d, %q", ev.Applied, ev.Results, ev.Problem, ev.Why, tt.applied, tt.results, tt.problem)
			}
		})
	}
}

func TestWithEvidence(t *testing.T) {
	// A resolved verdict without evidence becomes 0; one the check does
	// not apply to stands, saying why; a failure stays a failure.
	r := &Result{Reward: 1, Resolved: true, Reason: "resolved"}
	withEvidence(r, &Evidence{Applied: true, Problem: "no test results in the log"})
	if r.Reward != 0 || r.Resolved || r.Reason != "no test results in the log" || r.Evidence != "checked" || r.TestResults == nil || *r.TestResults != 0 {
		t.Errorf("no evidence: %+v", r)
	}
	r = &Result{Reward: 1, Resolved: true, Reason: "resolved"}
	withEvidence(r, &Evidence{Why: "no log parser is known for the test command"})
	if r.Reward != 1 || !r.Resolved || r.Evidence != "not applied: no log parser is known for the test command" || r.TestResults != nil {
		t.Errorf("not applied: %+v", r)
	}
	r = &Result{Reason: "tests failed: OMNIGRIL_EXIT_CODE=1"}
	withEvidence(r, &Evidence{Applied: true, Results: 3, Problem: "tests failed: x"})
	if r.Reward != 0 || r.Reason != "tests failed: OMNIGRIL_EXIT_CODE=1" || *r.TestResults != 3 {
		t.Errorf("failed run: %+v", r)
	}
}

// traced builds a sealed run's log and trace from lines: a line starting
// with "+ " is a trusted trace line.
func traced(lines ...string) (string, *reward.Trace) {
	var b strings.Builder
	tr := &reward.Trace{Ended: true}
	for _, l := range lines {
		if text, ok := strings.CutPrefix(l, "+ "); ok {
			b.WriteString("+ ")
			tr.Lines = append(tr.Lines, reward.TraceLine{Text: text, Start: b.Len(), End: b.Len() + len(text)})
			b.WriteString(text + "\n")
			continue
		}
		b.WriteString(l + "\n")
	}
	return b.String(), tr
}

func TestSections(t *testing.T) {
	log, tr := traced(
		"+ git checkout "+base+" tests/test_ops.py",
		"+ git apply -v -",
		"Applied patch tests/test_ops.py cleanly.",
		"+ python -m pytest -rA tests/test_ops.py",
		"PASSED tests/test_ops.py::test_add_zero",
		"+ rc=0",
		"+ echo OMNIGRIL_EXIT_CODE=0",
		"OMNIGRIL_EXIT_CODE=0",
		"+ /usr/bin/python3 /tmp/.inj.py",
		"+ rm -f /tmp/.inj.py",
		"+ python -m pytest -rA tests/test_ops.py",
		"FAILED tests/test_ops.py::test_canary - x",
		"+ : '>>>>> End Canary Run'",
		"+ git checkout "+base+" tests/test_ops.py",
	)
	sec, ok := Section(log, tr)
	if !ok || !strings.Contains(sec, "PASSED tests/test_ops.py::test_add_zero") || strings.Contains(sec, "Applied patch") || strings.Contains(sec, "rc=0") || strings.Contains(sec, "test_canary") {
		t.Errorf("Section = %q, %v", sec, ok)
	}
	cs, ok := CanarySection(log, tr, "/tmp/.inj.py")
	if !ok || !strings.Contains(cs, "FAILED tests/test_ops.py::test_canary") || strings.Contains(cs, "test_add_zero") {
		t.Errorf("CanarySection = %q, %v", cs, ok)
	}
	// A printed marker is no trace: no section.
	plain := "PASSED tests/test_ops.py::test_add_zero\necho OMNIGRIL_EXIT_CODE=0\nOMNIGRIL_EXIT_CODE=0\n"
	if _, ok := Section(plain, &reward.Trace{}); ok {
		t.Error("Section found a section without a traced echo")
	}
	if _, ok := CanarySection(log, tr, "/tmp/.other.py"); ok {
		t.Error("CanarySection found another injector's run")
	}
}

func TestCanaryScript(t *testing.T) {
	script := Traced(factoryScript(opsPatch, "python -m pytest -rA tests/test_ops.py"))
	got, err := CanaryScript(script, "/tmp/.inj.py")
	if err != nil {
		t.Fatal(err)
	}
	// The canary run comes after the verdict's echo, before the revert;
	// the verdict part is untouched.
	echo := strings.Index(got, `echo "OMNIGRIL_EXIT_CODE=$rc"`)
	inj := strings.Index(got, "'/tmp/.inj.py'; rm -f '/tmp/.inj.py'\npython -m pytest -rA tests/test_ops.py\n"+canaryEnd+"\ngit checkout")
	if echo < 0 || inj < echo || !strings.HasPrefix(got, script[:strings.Index(script, `echo "OMNIGRIL`)]) {
		t.Errorf("CanaryScript =\n%s", got)
	}
	for _, cmd := range []string{"cd build\n./utests", "cd sub && pytest -rA x.py", "pytest -rA $(cat files)"} {
		if _, err := CanaryScript(factoryScript("", cmd), "/x"); err == nil {
			t.Errorf("CanaryScript took %q", cmd)
		}
	}
}
