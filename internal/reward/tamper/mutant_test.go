package tamper

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/swerve-dev/swerve/internal/task"
	"github.com/swerve-dev/swerve/internal/testutil"
)

// TestFindMutation changes one literal of the first assertion directly in
// a test's body that compares with one, and nothing where no change
// certainly fails.
func TestFindMutation(t *testing.T) {
	tests := []struct {
		name, body string
		want       []string // the changed body line, any of these; none: no mutation
	}{
		{"assertEqual int", "self.assertEqual(f(2), 5)", []string{"self.assertEqual(f(2), 6)"}},
		{"assertEqual literal first", "self.assertEqual(5, f(2))", []string{"self.assertEqual(6, f(2))"}},
		{"negative", "assert f(2) == -2", []string{"assert f(2) == -3"}},
		{"float", "assert f(2) == 1.5", []string{"assert f(2) == 2.5"}},
		{"string", `assert g() == "ab"`, []string{`assert g() == "aba"`, `assert g() == "abb"`, `assert g() == "abaa"`, `assert g() == "abab"`, `assert g() == "abba"`, `assert g() == "abbb"`}},
		{"assert with message", `assert f(2) == 5, "five"`, []string{`assert f(2) == 6, "five"`}},
		{"assertIs", "self.assertIs(h(), True)", []string{"self.assertIs(h(), False)"}},
		{"is None", "assert h() is None", []string{"assert h() is False"}},
		{"list", "self.assertEqual(k(), [1, 2])", []string{"self.assertEqual(k(), [2, 2])", "self.assertEqual(k(), [1, 3])"}},
		{"empty list", "self.assertSequenceEqual(k(), [])", []string{"self.assertSequenceEqual(k(), [1])"}},
		{"empty dict", "assert k() == {}", []string{"assert k() == {1: 1}"}},
		{"empty tuple", "assert k() == ()", []string{"assert k() == (1,)"}},
		{"triple-quoted", "assert g() == '''a\nb'''", []string{"ba'''", "bb'''", "baa'''", "bab'''", "bba'''", "bbb'''"}},
		{"msg argument", `self.assertEqual(f(2), 5, "msg")`, []string{`self.assertEqual(f(2), 6, "msg")`}},
		{"multi-line call", "self.assertEqual(\n    f(2),\n    5,\n)", []string{"6,"}},
		{"no literal", "assert f(2) == g(3)", nil},
		{"not equal", "assert f(2) != 5", nil},
		{"chained", "assert 5 == f(2) == 5", nil},
		{"arithmetic", "assert f(2) == 2 + 3", nil},
		{"hex", "assert f(2) == 0x5", nil},
		{"f-string", `assert g() == f"a{x}"`, nil},
		{"under for", "for i in range(3):\n    assert f(i) == 5", nil},
		{"under with", "with self.assertRaises(ValueError):\n    self.assertEqual(f(2), 5)", nil},
		{"after return", "return\nassert f(2) == 5", nil},
		{"after a nested return", "if g():\n    return\nassert f(2) == 5", nil},
		{"after a skip", "if g():\n    self.skipTest('no g')\nassert f(2) == 5", nil},
		{"after a loop", "for i in range(3):\n    h(i)\nassert f(2) == 5", []string{"assert f(2) == 6"}},
		{"assertIn", `self.assertIn("a", g())`, nil},
		{"assertTrue", `self.assertTrue(f(2) == 5)`, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var body []string
			for _, l := range strings.Split(tc.body, "\n") {
				body = append(body, "        "+l)
			}
			src := "class T:\n    def test_it(self):\n        x = 1\n" + strings.Join(body, "\n") + "\n\n    def test_next(self):\n        pass\n"
			b, ok := findTest(src, "T", "test_it")
			if !ok {
				t.Fatal("test_it not found")
			}
			if b.first != 1 || b.last != 2+len(body) {
				t.Fatalf("block lines %d-%d, want 1-%d", b.first, b.last, 2+len(body))
			}
			lines := strings.Split(src, "\n")
			m, ok := findMutation(newTestRand(3), lines, b, false)
			if len(tc.want) == 0 {
				if ok {
					t.Fatalf("mutated %q to %q", lines[m.line], m.text)
				}
				return
			}
			if !ok {
				t.Fatal("no mutation")
			}
			got, err := copyTest(lines, b, "test_it", "test_copy", &m)
			if err != nil {
				t.Fatal(err)
			}
			changed := strings.Split(got, "\n")[m.line-b.first]
			for _, w := range tc.want {
				if strings.TrimSpace(changed) == strings.TrimSpace(w) {
					return
				}
			}
			t.Errorf("changed line %q, want one of %q", changed, tc.want)
		})
	}
}

// TestNegation turns an assertion directly in a test's body into its
// opposite where no literal can be changed.
func TestNegation(t *testing.T) {
	tests := []struct{ body, want string }{
		{"self.assertTrue(f(2))", "self.assertFalse(f(2))"},
		{"self.assertIsNone(f(2), msg='x')", "self.assertIsNotNone(f(2), msg='x')"},
		{"self.assertNotIn(a, f(2))", "self.assertIn(a, f(2))"},
		{"self.assertEqual(f(2), g)", "self.assertNotEqual(f(2), g)"},
		{"assert f(2) == g", "assert f(2) != g"},
		{"assert a not in f(2)", "assert a in f(2)"},
		{"assert a in f(2), 'msg'", "assert a not in f(2), 'msg'"},
		{"assert a is not g", "assert a is g"},
		{"assert f(2)", "assert not f(2)"},
		{"assert not f(2)", "assert f(2)"},
		{"assert a < b", "assert not a < b"},
		{"assert a or b", ""},
		{"assert a < b < c", "assert not a < b < c"},
		{"self.assertCountEqual(f(2), g)", ""},
		{"self.assertTrue(f(2)) or g()", ""},
	}
	for _, tc := range tests {
		t.Run(tc.body, func(t *testing.T) {
			src := "def test_it():\n    " + tc.body + "\n"
			b, ok := findTest(src, "", "test_it")
			if !ok {
				t.Fatal("test_it not found")
			}
			lines := strings.Split(src, "\n")
			m, ok := findMutation(newTestRand(1), lines, b, true)
			if !ok {
				if tc.want != "" {
					t.Fatalf("no negation, want %q", tc.want)
				}
				return
			}
			got := strings.TrimSpace(lines[m.line][:m.start] + m.text + lines[m.line][m.end:])
			if got != tc.want {
				t.Errorf("negated to %q, want %q", got, tc.want)
			}
		})
	}
}

// TestLogicalLines joins lines the way Python does: brackets, triple
// quotes (text at column 0 inside them included) and backslashes.
func TestLogicalLines(t *testing.T) {
	src := "class A:\n    x = '''doc\nat column 0\n'''\n    def test_a(self):  # (\n        y = [1,\n2]\n        z = 'it''s' \\\n            'x'\n\n# comment\nclass B: pass\n"
	var got []string
	for _, l := range logicalLines(src) {
		got = append(got, strings.Fields(l.text)[0]+"@"+strconv.Itoa(l.first)+"-"+strconv.Itoa(l.last))
	}
	want := "class@0-0 x@1-3 def@4-4 y@5-6 z@7-8 class@11-11"
	if strings.Join(got, " ") != want {
		t.Errorf("logical lines %q, want %q", strings.Join(got, " "), want)
	}
}

func TestApplyTestPatch(t *testing.T) {
	base := "a\nb\nc\nd\n"
	diff := "diff --git a/f.py b/f.py\n--- a/f.py\n+++ b/f.py\n@@ -1,2 +1,3 @@\n a\n+x\n b\n@@ -4 +5,2 @@\n-d\n+e\n+f\ndiff --git a/g.py b/g.py\n--- a/g.py\n+++ b/g.py\n@@ -1 +1 @@\n-q\n+r\n"
	got, err := ApplyTestPatch(diff, "f.py", base)
	if err != nil || got != "a\nx\nb\nc\ne\nf\n" {
		t.Errorf("ApplyTestPatch = %q, %v", got, err)
	}
	if _, err := ApplyTestPatch(diff, "f.py", "a\nB\nc\nd\n"); err == nil {
		t.Error("a base that does not match applied")
	}
	created := "diff --git a/n.py b/n.py\nnew file mode 100644\n--- /dev/null\n+++ b/n.py\n@@ -0,0 +1,2 @@\n+one\n+two\n"
	if got, err := ApplyTestPatch(created, "n.py", ""); err != nil || got != "one\ntwo\n" || !CreatedBy(created, "n.py") || CreatedBy(diff, "f.py") {
		t.Errorf("new file: %q, %v", got, err)
	}
}

// TestMutantCanariesRun plans mutant canaries for small tasks of each
// covered framework, injects them with the host's Python and runs the
// file: the must-fail copy fails, the must-pass copy passes, both sit in
// the original's class, and their names are new.
func TestMutantCanariesRun(t *testing.T) {
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 not found; the injector is checked in the Docker tests")
	}
	django := `import unittest


def double(x):
    return 2 * x


class DoubleTests(unittest.TestCase):
    @unittest.skipIf(False, "never")
    def test_double_small(self):
        text = """several
lines at column 0"""
        self.assertEqual(double(2), 4)
        self.assertEqual(len(text), 25)

    def test_double_zero(self):
        self.assertEqual(double(0), 0)

    def test_double_words(self):
        self.assertEqual(double("ab"), "abab")
`
	pytestSrc := `import pytest


def double(x):
    return 2 * x


MARK = pytest.mark.skipif(False, reason="never")


@MARK
def test_double_small():
    assert double(2) == 4


def test_double_list():
    assert double([1]) == [1, 1]


class TestDouble:
    def test_in_class(self):
        assert double(3) == 6
`
	cases := []struct {
		name, parser, file, src string
		f2p, p2p                []string
		class, original         string
	}{
		{"django", "parse_log_django", "tests/app/tests.py", django,
			[]string{"test_double_words (app.tests.DoubleTests)"}, []string{"test_double_small (app.tests.DoubleTests.test_double_small)"},
			"DoubleTests", "test_double_words (app.tests.DoubleTests)"},
		{"pytest module", "parse_log_pytest", "pkg/tests/test_mod.py", pytestSrc,
			[]string{"pkg/tests/test_mod.py::test_double_small"}, []string{"pkg/tests/test_mod.py::test_double_list", "pkg/tests/test_mod.py::TestDouble::test_in_class"},
			"", "pkg/tests/test_mod.py::test_double_small"},
		{"pytest class", "parse_log_pytest", "pkg/tests/test_mod.py", pytestSrc,
			[]string{"pkg/tests/test_mod.py::TestDouble::test_in_class[x]"}, nil,
			"TestDouble", "pkg/tests/test_mod.py::TestDouble::test_in_class[x]"},
		{"sympy", "parse_log_sympy", "pkg/tests/test_mod.py", pytestSrc,
			[]string{"test_double_list"}, []string{"test_double_small"},
			"", "test_double_list"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			patch := "diff --git a/" + tc.file + " b/" + tc.file + "\nnew file mode 100644\n--- /dev/null\n+++ b/" + tc.file + "\n@@ -0,0 +1," + strconv.Itoa(strings.Count(tc.src, "\n")) + " @@\n"
			for _, l := range strings.SplitAfter(strings.TrimSuffix(tc.src, "\n"), "\n") {
				patch += "+" + l
			}
			patch += "\n"
			cmd := "./tests/runtests.py app.tests"
			if tc.parser != "parse_log_django" {
				cmd = "pytest -rA " + tc.file
			}
			tk := &task.Task{LogParser: tc.parser, TestPatch: patch, FailToPass: tc.f2p, PassToPass: tc.p2p,
				EvalScript: "git apply t.diff\n" + startLine + "\n" + cmd + "\n: '>>>>> End Test Output'\n"}
			src := func(f string) (string, bool) {
				s, err := ApplyTestPatch(patch, f, "")
				return s, err == nil && f == tc.file
			}
			for seed := uint64(0); seed < 3; seed++ {
				c := PlanCanariesSeeded(tk, src, seed, 5)
				if !c.Available() || c.Original != tc.original || c.File != tc.file || c.Class != tc.class {
					t.Fatalf("seed %d: planned %+v (%s), want mutants of %s in %s/%s", seed, c, c.Kind(), tc.original, tc.file, tc.class)
				}
				for _, n := range []string{c.MustFail, c.MustPass} {
					if strings.Contains(tc.src, n) || !strings.HasPrefix(n, "test_") {
						t.Fatalf("seed %d: canary name %q is not new or not styled", seed, n)
					}
				}
				dir := t.TempDir()
				full := filepath.Join(dir, tc.file)
				if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(full, []byte(tc.src), 0o644); err != nil {
					t.Fatal(err)
				}
				inj := filepath.Join(dir, "inj.py")
				if err := os.WriteFile(inj, c.Injector(), 0o644); err != nil {
					t.Fatal(err)
				}
				run := exec.Command(py, inj)
				run.Dir = dir
				if out, err := run.CombinedOutput(); err != nil {
					t.Fatalf("injector: %v\n%s", err, out)
				}
				// Run every test function of the host (class or module)
				// and print each one's result.
				runner := "import sys, unittest, types\nsys.modules['pytest'] = types.SimpleNamespace(mark=types.SimpleNamespace(skipif=lambda *a, **k: (lambda f: f)))\n" +
					"sys.path.insert(0, " + quotePy(filepath.Dir(full)) + ")\nimport " + strings.TrimSuffix(filepath.Base(tc.file), ".py") + " as m\n" +
					"host = getattr(m, " + quotePy(tc.class) + ")() if " + quotePy(tc.class) + " else None\n" +
					"for n in sorted(k for k in dir(host if host is not None else m) if k.startswith('test')):\n" +
					"    f = getattr(host if host is not None else m, n)\n" +
					"    try:\n        f(); print(n, 'ok')\n    except AssertionError:\n        print(n, 'F')\n"
				run = exec.Command(py, "-c", runner)
				run.Dir = dir
				out, err := run.CombinedOutput()
				s := string(out)
				if err != nil || !strings.Contains(s, c.MustFail+" F\n") || !strings.Contains(s, c.MustPass+" ok\n") || strings.Contains(s, " F\n"+c.MustFail) {
					inj, _ := os.ReadFile(full)
					t.Fatalf("seed %d: canaries came out wrong (%v):\n%s\n%s", seed, err, s, inj)
				}
				if strings.Count(s, " F\n") != 1 {
					t.Fatalf("seed %d: other tests failed:\n%s", seed, s)
				}
			}
		})
	}
}

func quotePy(s string) string { return "'" + strings.ReplaceAll(s, "'", `\'`) + "'" }

// TestMutantsRealTasks plans mutant canaries for the five real django
// tasks of ../shared/realtasks, reading their test files from the kit's
// git bundle at each base commit (as the grader reads them from the box),
// and logs what each would copy and change. Three get mutants; the tests
// of 15499 (assertOptimizesTo, a helper) have no assertion of their own,
// so it gets template canaries.
func TestMutantsRealTasks(t *testing.T) {
	kit := filepath.Join(testutil.SharedDir(t), "realtasks")
	if _, err := os.Stat(filepath.Join(kit, "django.bundle")); err != nil {
		t.Skipf("realtasks kit not found: %v", err)
	}
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not found")
	}
	// The bundle holds each base commit at depth 2: unpack it into a
	// shallow bare repository whose boundary is the kit's table.
	repo := t.TempDir()
	table, err := os.ReadFile(filepath.Join(kit, "instances.tsv"))
	if err != nil {
		t.Fatal(err)
	}
	var shallow []string
	for _, l := range strings.Split(string(table), "\n") {
		if f := strings.Split(l, "\t"); len(f) >= 4 && !strings.HasPrefix(l, "#") {
			shallow = append(shallow, f[3])
		}
	}
	for _, args := range [][]string{{"init", "-q", "--bare", repo}, {"--git-dir", repo, "fetch", "-q", filepath.Join(kit, "django.bundle"), "refs/tags/*:refs/tags/*"}} {
		if len(args) > 3 {
			if err := os.WriteFile(filepath.Join(repo, "shallow"), []byte(strings.Join(shallow, "\n")+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		if out, err := exec.Command("git", args...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	res, err := task.Load(context.Background(), filepath.Join(kit, "instances.jsonl"), task.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Tasks) != 5 {
		t.Fatalf("%d tasks in the kit, want 5", len(res.Tasks))
	}
	for i := range res.Tasks {
		tk := &res.Tasks[i]
		t.Run(tk.InstanceID, func(t *testing.T) {
			src := func(f string) (string, bool) {
				base := ""
				if !CreatedBy(tk.TestPatch, f) {
					out, err := exec.Command("git", "--git-dir", repo, "show", tk.BaseCommit+":"+f).Output()
					if err != nil {
						return "", false
					}
					base = string(out)
				}
				s, err := ApplyTestPatch(tk.TestPatch, f, base)
				return s, err == nil
			}
			c := PlanCanariesSeeded(tk, src, 11, 12)
			if tk.InstanceID == "django__django-15499" {
				if !c.Available() || c.Original != "" || c.Template != "no listed test has an assertion to change" {
					t.Fatalf("want template canaries, got %s %s", c.Unavailable, c.Kind())
				}
				return
			}
			if !c.Available() || c.Original == "" {
				t.Fatalf("no mutant canaries: %s %s", c.Unavailable, c.Kind())
			}
			t.Logf("%s in %s/%s: %s, %s", c.Kind(), c.File, c.Class, c.MustFail, c.MustPass)
			for _, b := range c.blocks {
				if !strings.Contains(b.Source, "def "+c.MustFail+"(") && !strings.Contains(b.Source, "def "+c.MustPass+"(") {
					t.Errorf("a block defines neither canary:\n%s", b.Source)
				}
			}
			text, _ := src(c.File)
			if strings.Contains(text, c.blocks[0].Source) {
				t.Errorf("the must-fail block is unchanged")
			}
			t.Logf("must fail:\n%s", c.blocks[0].Source)
		})
	}
}

// TestNameBoundNotCopied: a test that finds data by its own name (a
// baseline image, regression data) is not copied under another name; the
// next listed test is.
func TestNameBoundNotCopied(t *testing.T) {
	src := "@image_comparison(['plot.png'])\ndef test_plot():\n    assert draw() == 1\n\n\ndef test_other_plot():\n    assert draw() == 2\n"
	file := "lib/tests/test_plot.py"
	tk := &task.Task{LogParser: "parse_log_pytest", TestPatch: "diff --git a/" + file + " b/" + file + "\n",
		FailToPass: []string{file + "::test_plot", file + "::test_other_plot"},
		EvalScript: startLine + "\npytest -rA " + file + "\n: '>>>>> End Test Output'\n"}
	c := PlanCanariesSeeded(tk, func(string) (string, bool) { return src, true }, 1, 2)
	if c.Original != file+"::test_other_plot" || strings.Contains(c.blocks[1].Source, "image_comparison") {
		t.Errorf("planned %s; must pass:\n%s", c.Kind(), c.blocks[1].Source)
	}
}

// TestMutantCoverage counts, per repository, the Verified and Lite rows
// whose canaries are mutants, reading each row's test files at its base
// commit from local clones: SWERVE_CANARY_REPOS names a directory holding
// one git directory per repository, named "<owner>+<name>" (a bare
// repository, or one whose git directory is its "repo" or ".git"). Rows
// of repositories without a clone there are not counted.
func TestMutantCoverage(t *testing.T) {
	dir := os.Getenv("SWERVE_CANARY_REPOS")
	if dir == "" {
		t.Skip("set SWERVE_CANARY_REPOS to a directory of <owner>+<name> git clones to count mutant canaries")
	}
	for _, name := range []string{"verified-test", "lite-test"} {
		tasks := loadShared(t, name)
		type count struct{ rows, mutants, f2p int }
		per := map[string]*count{}
		var none []string
		for i := range tasks {
			tk := &tasks[i]
			gitDir := ""
			for _, sub := range []string{"repo", ".git", ""} {
				d := filepath.Join(dir, strings.ReplaceAll(tk.Repo, "/", "+"), sub)
				if _, err := os.Stat(filepath.Join(d, "HEAD")); err == nil {
					gitDir = d
					break
				}
			}
			if gitDir == "" {
				continue
			}
			src := func(f string) (string, bool) {
				base := ""
				if !CreatedBy(tk.TestPatch, f) {
					out, err := exec.Command("git", "--git-dir", gitDir, "show", tk.BaseCommit+":"+f).Output()
					if err != nil {
						return "", false
					}
					base = string(out)
				}
				s, err := ApplyTestPatch(tk.TestPatch, f, base)
				return s, err == nil
			}
			c := PlanCanariesSeeded(tk, src, uint64(i), 7)
			if !c.Available() || c.Template == "no listed test's file could be read" {
				continue // (a clone without the base commit)
			}
			if per[tk.Repo] == nil {
				per[tk.Repo] = &count{}
			}
			per[tk.Repo].rows++
			if c.Original == "" {
				none = append(none, tk.InstanceID+": "+c.Template)
				continue
			}
			per[tk.Repo].mutants++
			for _, n := range tk.FailToPass {
				if n == c.Original {
					per[tk.Repo].f2p++
				}
			}
		}
		total := count{}
		for repo, c := range per {
			t.Logf("%s %s: %d rows, %d with mutants (%d of a FAIL_TO_PASS test)", name, repo, c.rows, c.mutants, c.f2p)
			total.rows, total.mutants, total.f2p = total.rows+c.rows, total.mutants+c.mutants, total.f2p+c.f2p
		}
		t.Logf("%s: %d rows, %d with mutants (%d of a FAIL_TO_PASS test); templates: %s", name, total.rows, total.mutants, total.f2p, strings.Join(none, "; "))
	}
}

// TestPlanCanariesCmd plans mutants for a script without test output
// markers (SWE-Factory's) from the test command it is given; without one
// there are none.
func TestPlanCanariesCmd(t *testing.T) {
	src := "from calc import add\n\n\ndef test_add_pair():\n    assert add(2, 3) == 5\n\n\ndef test_add_zero():\n    assert add(5, 0) == 5\n"
	file := "tests/test_ops.py"
	tk := &task.Task{LogParser: "parse_log_pytest", TestPatch: "diff --git a/" + file + " b/" + file + "\n",
		FailToPass: []string{file + "::test_add_pair"}, PassToPass: []string{file + "::test_add_zero"},
		EvalScript: "git apply - <<'EOF'\nEOF\npython -m pytest -rA " + file + "\nrc=$?\necho \"OMNIGRIL_EXIT_CODE=$rc\"\n"}
	read := func(string) (string, bool) { return src, true }
	if c := PlanCanariesSeeded(tk, read, 1, 2); c.Available() {
		t.Errorf("planned canaries from a script without markers: %s", c.Kind())
	}
	c := PlanCanariesCmdSeeded(tk, "python -m pytest -rA "+file, read, 1, 2)
	if c.Original != file+"::test_add_pair" || c.File != file || !strings.Contains(c.blocks[0].Source, "add(2, 3)") {
		t.Errorf("planned %s in %s; must fail:\n%s", c.Kind(), c.File, c.blocks[0].Source)
	}
	if c := PlanCanariesCmdSeeded(tk, " ", read, 1, 2); c.Available() {
		t.Errorf("planned canaries without a test command: %s", c.Kind())
	}
}
