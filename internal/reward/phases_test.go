package reward

import (
	"strings"
	"testing"
)

// harnessShaped is an eval script in the SWE-bench harness's shape, with an
// install step and the exit-code lines swebench.RecordTestExitCode adds.
const harnessShaped = `#!/bin/bash
set -uxo pipefail
source /opt/miniconda3/bin/activate
conda activate testbed
cd /testbed
git config --global --add safe.directory /testbed
cd /testbed
git status
git show
git -c core.fileMode=false diff abc1234
source /opt/miniconda3/bin/activate
conda activate testbed
python -m pip install -e .
git checkout abc1234 tests/test_a.py tests/sub/test_b.py
git apply -v - <<'EOF_114329324912'
diff --git a/tests/test_a.py b/tests/test_a.py
+: '>>>>> Start Test Output'
+cd /
EOF_114329324912
: '>>>>> Start Test Output'
./tests/runtests.py --verbosity 2 a b
SWEBENCH_TEST_EXIT_CODE=$?
: '>>>>> End Test Output'
echo ">>>>> Test Exit Code: $SWEBENCH_TEST_EXIT_CODE"
git checkout abc1234 tests/test_a.py tests/sub/test_b.py
`

func TestSplitPhases(t *testing.T) {
	plan, why := splitPhases(harnessShaped)
	if plan == nil {
		t.Fatalf("splitPhases: not split: %s", why)
	}
	// Every line lands in exactly one phase, in order.
	if got := plan.setup + plan.install + plan.apply + plan.tests + plan.cleanup; got != harnessShaped {
		t.Errorf("the phases joined differ from the script:\n%s", got)
	}
	for _, c := range []struct{ name, phase, first, last string }{
		{"setup", plan.setup, "#!/bin/bash", "git -c core.fileMode=false diff abc1234"},
		{"install", plan.install, "source /opt/miniconda3/bin/activate", "python -m pip install -e ."},
		{"apply", plan.apply, "git checkout abc1234 tests/test_a.py tests/sub/test_b.py", "EOF_114329324912"},
		{"tests", plan.tests, ": '>>>>> Start Test Output'", `echo ">>>>> Test Exit Code: $SWEBENCH_TEST_EXIT_CODE"`},
	} {
		lines := strings.Split(strings.TrimSuffix(c.phase, "\n"), "\n")
		if lines[0] != c.first || lines[len(lines)-1] != c.last {
			t.Errorf("%s phase runs from %q to %q, want %q to %q", c.name, lines[0], lines[len(lines)-1], c.first, c.last)
		}
	}
	if got := strings.Join(plan.testFiles, " "); got != "tests/test_a.py tests/sub/test_b.py" {
		t.Errorf("test files %q", got)
	}
}

// factoryShaped is an eval script in SWE-Factory's shape: no git diff, no
// markers, the tests and the echo of their status right after the test
// patch; with a line the caller runs as root after the echo.
const factoryShaped = `#!/bin/bash
set -uxo pipefail
# the project root
cd /testbed
pip install -q -e .
git checkout abc1234 "tests/test_a.py"
git apply -v - <<'EOF_114329324912'
diff --git a/tests/test_a.py b/tests/test_a.py
EOF_114329324912
python -m pytest -rA tests/test_a.py
rc=$? # keep it
echo "OMNIGRIL_EXIT_CODE=$rc"
python3 /inject.py; rm -f /inject.py
python -m pytest -rA tests/test_a.py
git checkout abc1234 "tests/test_a.py"
`

func TestSplitPhasesExitStatusShape(t *testing.T) {
	plan, why := splitPhases(factoryShaped, "python3 /inject.py; rm -f /inject.py")
	if plan == nil {
		t.Fatalf("splitPhases: not split: %s", why)
	}
	if got := plan.setup + plan.install + plan.apply + plan.tests + plan.rootStep + plan.tests2 + plan.cleanup; got != factoryShaped {
		t.Errorf("the phases joined differ from the script:\n%s", got)
	}
	for _, c := range []struct{ name, phase, first, last string }{
		{"setup", plan.setup, "#!/bin/bash", "cd /testbed"},
		{"install", plan.install, "pip install -q -e .", "pip install -q -e ."},
		{"apply", plan.apply, `git checkout abc1234 "tests/test_a.py"`, "EOF_114329324912"},
		{"tests", plan.tests, "python -m pytest -rA tests/test_a.py", `echo "OMNIGRIL_EXIT_CODE=$rc"`},
		{"root step", plan.rootStep, "python3 /inject.py; rm -f /inject.py", "python3 /inject.py; rm -f /inject.py"},
		{"tests after it", plan.tests2, "python -m pytest -rA tests/test_a.py", "python -m pytest -rA tests/test_a.py"},
	} {
		lines := strings.Split(strings.TrimSuffix(c.phase, "\n"), "\n")
		if lines[0] != c.first || lines[len(lines)-1] != c.last {
			t.Errorf("%s phase runs from %q to %q, want %q to %q", c.name, lines[0], lines[len(lines)-1], c.first, c.last)
		}
	}
	if got := strings.Join(plan.testFiles, " "); got != `"tests/test_a.py"` {
		t.Errorf("test files %q", got)
	}
	// Without root lines the test phase runs on to the reset.
	plan, _ = splitPhases(factoryShaped)
	if plan == nil || plan.rootStep != "" || !strings.HasSuffix(plan.tests, "python -m pytest -rA tests/test_a.py\n") {
		t.Errorf("without root lines: %+v", plan)
	}
	// A state change in the install step, or no here-document (the real
	// C++ row applies no test patch), stays one run.
	for _, c := range []struct{ old, new, why string }{
		{"pip install -q -e .", "cd build && make\ncd /testbed", "changes the shell's state"},
		{"git apply -v - <<'EOF_114329324912'\ndiff --git a/tests/test_a.py b/tests/test_a.py\nEOF_114329324912\n", "", "no test patch"},
	} {
		script := strings.Replace(factoryShaped, c.old, c.new, 1)
		if plan, why := splitPhases(script); plan != nil || !strings.Contains(why, c.why) {
			t.Errorf("split %q: %v, %q; want it refused saying %q", c.new, plan != nil, why, c.why)
		}
	}
}

func TestSplitPhasesRefuses(t *testing.T) {
	for _, c := range []struct{ name, old, new, why string }{
		{"errexit", "set -uxo pipefail", "set -euxo pipefail", "set -e"},
		{"no test patch", "git apply -v - <<'EOF_114329324912'", "cat <<'EOF_114329324912'", "here-document other than"},
		{"no diff", "git -c core.fileMode=false diff abc1234\n", "", "no git diff"},
		{"no reset before apply", "git checkout abc1234 tests/test_a.py tests/sub/test_b.py\ngit apply", "git apply", "right after the test files are reset"},
		{"no markers", ": '>>>>> End Test Output'\n", "", "no test output markers"},
		{"install changes state", "python -m pip install -e .", "export X=1\npython -m pip install -e .", "changes the shell's state"},
		{"install cds", "python -m pip install -e .", "cd /tmp", "changes the shell's state"},
		{"exit in the tests", "./tests/runtests.py --verbosity 2 a b", "exit 0", "changes the shell's state"},
		{"cleanup reads the tests' variable", "git checkout abc1234 tests/test_a.py tests/sub/test_b.py\n", "git checkout abc1234 tests/test_a.py tests/sub/test_b.py\necho $SWEBENCH_TEST_EXIT_CODE\n", "the cleanup reads"},
	} {
		t.Run(c.name, func(t *testing.T) {
			i := strings.LastIndex(harnessShaped, c.old)
			if i < 0 {
				t.Fatalf("%q not in the script", c.old)
			}
			script := harnessShaped[:i] + c.new + harnessShaped[i+len(c.old):]
			plan, why := splitPhases(script)
			if plan != nil {
				t.Fatalf("split a script that must run as one")
			}
			if !strings.Contains(why, c.why) {
				t.Errorf("why = %q, want it to say %q", why, c.why)
			}
		})
	}
}

func entry(kind byte, perm uint32, size int64, ino uint64) treeEntry {
	return treeEntry{kind: kind, perm: perm, owner: "0:0", size: size, mtime: 1, ctime: 1, ino: ino}
}

func TestCompareTrees(t *testing.T) {
	const sp, bin = "/usr/local/lib/python3.11/dist-packages", "/usr/local/bin"
	rules := treeRules{workdir: "/testbed", sitePkgs: []string{sp}, scripts: []string{bin}}
	before := map[string]treeEntry{
		"/usr/bin/git":                      entry('f', 0o755, 3000000, 10),
		"/etc/passwd":                       entry('f', 0o644, 900, 11),
		sp:                                  entry('d', 0o755, 4096, 12),
		sp + "/__editable__.Django-5.0.pth": entry('f', 0o644, 90, 13),
		sp + "/__editable___Django_5_0_finder.py": entry('f', 0o644, 9000, 14),
		sp + "/Django-5.0.dist-info":              entry('d', 0o755, 4096, 15),
		sp + "/Django-5.0.dist-info/RECORD":       entry('f', 0o644, 500, 16),
		sp + "/six.py":                            entry('f', 0o644, 30000, 17),
		sp + "/numpy-1.0.dist-info":               entry('d', 0o755, 4096, 18),
		bin:                                       entry('d', 0o755, 4096, 19),
		bin + "/django-admin":                     entry('f', 0o755, 220, 20),
		bin + "/python3":                          entry('l', 0o777, 9, 21),
		"/testbed/.git":                           entry('d', 0o755, 4096, 22),
		"/testbed/.git/index":                     entry('f', 0o644, 100000, 23),
		"/testbed/.git/config":                    entry('f', 0o644, 100, 24),
	}
	clone := func(edit func(m map[string]treeEntry)) map[string]treeEntry {
		m := map[string]treeEntry{}
		for k, v := range before {
			m[k] = v
		}
		edit(m)
		return m
	}
	for _, c := range []struct {
		name string
		edit func(m map[string]treeEntry)
		want string // the findings joined with "; "
	}{
		{"nothing changed", func(map[string]treeEntry) {}, ""},
		{"the editable install redone", func(m map[string]treeEntry) {
			m[sp+"/__editable__.Django-5.0.pth"] = entry('f', 0o644, 91, 30)
			m[sp+"/__editable___Django_5_0_finder.py"] = entry('f', 0o644, 9001, 31)
			delete(m, sp+"/Django-5.0.dist-info/RECORD")
			m[sp+"/Django-5.0.dist-info"] = entry('d', 0o755, 4096, 32)
			m[sp+"/Django-5.0.dist-info/RECORD"] = entry('f', 0o644, 501, 33)
			m[sp+"/__pycache__"] = entry('d', 0o755, 4096, 34)
			m[sp+"/__pycache__/__editable___Django_5_0_finder.cpython-311.pyc"] = entry('f', 0o644, 5000, 35)
			m[bin+"/django-admin"] = entry('f', 0o755, 221, 36)
			m["/testbed/.git/index"] = entry('f', 0o644, 100001, 37)
		}, ""},
		{"a git first on PATH", func(m map[string]treeEntry) { m[bin+"/git"] = entry('f', 0o755, 200, 40) }, bin + "/git added"},
		{"git replaced in place", func(m map[string]treeEntry) {
			e := m["/usr/bin/git"]
			e.ctime = 2
			m["/usr/bin/git"] = e
		}, "/usr/bin/git modified"},
		{"a module replaced with the same size", func(m map[string]treeEntry) { m[sp+"/six.py"] = entry('f', 0o644, 30000, 41) }, sp + "/six.py replaced"},
		{"a .pth of another project", func(m map[string]treeEntry) {
			m[sp+"/__editable__.evil-1.0.pth"] = entry('f', 0o644, 20, 42)
			m[sp+"/usercustomize.py"] = entry('f', 0o644, 20, 43)
		}, sp + "/__editable__.evil-1.0.pth added; " + sp + "/usercustomize.py added"},
		{"a dist-info of another project", func(m map[string]treeEntry) {
			m[sp+"/evil-1.0.dist-info"] = entry('d', 0o755, 4096, 44)
			m[sp+"/evil-1.0.dist-info/entry_points.txt"] = entry('f', 0o644, 20, 45)
		}, sp + "/evil-1.0.dist-info added"},
		{"the interpreter's link changed", func(m map[string]treeEntry) {
			e := m[bin+"/python3"]
			e.link = "/tmp/py"
			m[bin+"/python3"] = e
		}, bin + "/python3 changed link (\"\" to \"/tmp/py\")"},
		{"a hook in .git", func(m map[string]treeEntry) { m["/testbed/.git/config"] = entry('f', 0o644, 140, 46) }, "/testbed/.git/config replaced"},
		{"a system file removed", func(m map[string]treeEntry) { delete(m, "/etc/passwd") }, "/etc/passwd removed"},
		{"mode changed", func(m map[string]treeEntry) { m["/etc/passwd"] = entry('f', 0o666, 900, 11) }, "/etc/passwd changed mode (644 to 666)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := strings.Join(compareTrees(before, clone(c.edit), rules), "; ")
			if got != c.want {
				t.Errorf("findings:\n got %q\nwant %q", got, c.want)
			}
		})
	}
}

func TestParseTree(t *testing.T) {
	out := `"/a b" f644 0:0 3 10 11 5 ""
"/l" l777 1:2 4 10 11 6 "/a b"
! "/d" "permission denied"
`
	m, err := parseTree(out)
	if err != nil {
		t.Fatal(err)
	}
	if e := m["/a b"]; e.kind != 'f' || e.perm != 0o644 || e.size != 3 || e.ino != 5 {
		t.Errorf("/a b: %+v", e)
	}
	if e := m["/l"]; e.kind != 'l' || e.link != "/a b" || e.owner != "1:2" {
		t.Errorf("/l: %+v", e)
	}
	if e := m["/d"]; e.kind != '!' {
		t.Errorf("/d: %+v", e)
	}
	if _, err := parseTree("/x f644\n"); err == nil {
		t.Errorf("a malformed line parsed")
	}
}
