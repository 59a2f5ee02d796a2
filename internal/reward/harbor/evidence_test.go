package harbor

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestListTests(t *testing.T) {
	for _, tt := range []struct {
		name, src string
		want      []string
	}{
		{"functions", "from calc import add\n\n\ndef test_add():\n    assert add(1, 2) == 3\n\n\nasync def test_async():\n    pass\n\n\ndef helper():\n    pass\n", []string{"test_add", "test_async"}},
		{"class methods", "class TestOps:\n    def test_a(self):\n        def test_inner():\n            pass\n\n    # comment\n    def test_b(self):\n        pass\n\n    def util(self):\n        pass\n\n\nclass Helper:\n    def test_not(self):\n        pass\n\n\ndef test_c():\n    pass\n",
			[]string{"TestOps::test_a", "TestOps::test_b", "test_c"}},
		{"decorated", "import pytest\n\n\n@pytest.mark.parametrize('x', [1, 2])\ndef test_p(x):\n    assert x\n", []string{"test_p"}},
		{"none", "def check():\n    pass\n", nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := listTests(tt.src); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func TestPytestFiles(t *testing.T) {
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "tests", "sub"), 0o755)
	os.WriteFile(filepath.Join(dir, "tests", "test_outputs.py"), []byte("def test_a():\n    pass\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "tests", "sub", "test_more.py"), []byte("def test_b():\n    pass\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "tests", "helpers.py"), []byte("def util():\n    pass\n"), 0o644)
	for _, tt := range []struct {
		name, script string
		want         []string
		why          string
	}{
		{"calc-harbor's", "cd /testbed\nif python3 -m pytest -rA /tests/test_outputs.py; then echo 1 > /logs/verifier/reward.txt; fi\n", []string{"test_outputs.py"}, ""},
		{"two files", "uvx --with pytest pytest /tests/test_outputs.py /tests/sub/test_more.py -rA\n", []string{"sub/test_more.py", "test_outputs.py"}, ""},
		{"a longer name is not the file", "pytest /tests/test_outputs.py.bak\n", nil, "names no test file"},
		{"no pytest", "python3 /tests/test_outputs.py\n", nil, "does not run pytest"},
		{"a file without tests", "pytest /tests/helpers.py\n", nil, "names no test file"},
		{"converted eval script", "source /tests/eval.sh\n", nil, "does not run pytest"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			files, why := pytestFiles(dir, tt.script)
			var got []string
			for _, f := range files {
				got = append(got, f.Rel)
			}
			if !reflect.DeepEqual(got, tt.want) || !strings.Contains(why, tt.why) {
				t.Errorf("got %q (%q), want %q (%q)", got, why, tt.want, tt.why)
			}
		})
	}
}

// TestCheckEvidence reads logs as test.sh leaves them: a reward above 0
// counts only when every test of the file has a result, all PASSED, or
// excused by the test's own marks.
func TestCheckEvidence(t *testing.T) {
	files := []pytestFile{{Rel: "test_outputs.py", Tests: []string{"test_add", "test_mul", "TestX::test_p"}}}
	// The same file, whose author marked test_add as one that may be
	// skipped (unconditionally), and the same under a condition.
	src := "import pytest\n\n@pytest.mark.skip(\n    reason=\"not here\",\n)\ndef test_add():\n    pass\n\ndef test_mul():\n    pass\n\nclass TestX:\n    def test_p(self):\n        pass\n"
	marked := []pytestFile{{Rel: "test_outputs.py", Tests: files[0].Tests, Source: src}}
	cond := []pytestFile{{Rel: "test_outputs.py", Tests: files[0].Tests,
		Source: strings.Replace(src, "@pytest.mark.skip(\n", "@pytest.mark.skipif(\n    os.environ.get(\"X\") == \"1\",\n", 1)}}
	xcond := []pytestFile{{Rel: "test_outputs.py", Tests: files[0].Tests,
		Source: strings.Replace(src, "@pytest.mark.skip(\n", "@pytest.mark.xfail(\n    calc.LEGACY,\n", 1)}}
	passes := "PASSED ../tests/test_outputs.py::test_add\nPASSED ../tests/test_outputs.py::test_mul\nPASSED ../tests/test_outputs.py::TestX::test_p[1]\nPASSED ../tests/test_outputs.py::TestX::test_p[2]\n"
	skipAdd := strings.Replace(passes, "PASSED ../tests/test_outputs.py::test_add", "SKIPPED ../tests/test_outputs.py::test_add", 1)
	// pytest's own short summary names a skipped test by its place: the
	// line of its first decorator.
	foldedAdd := strings.Replace(passes, "PASSED ../tests/test_outputs.py::test_add", "SKIPPED [1] ../tests/test_outputs.py:3: not here", 1)
	xfailAdd := strings.Replace(passes, "PASSED ../tests/test_outputs.py::test_add", "XFAIL ../tests/test_outputs.py::test_add - legacy", 1)
	goldSkipped := reference{Known: true, Skips: map[string]bool{"test_outputs.py::test_add": true}}
	goldRan := reference{Known: true, Skips: map[string]bool{}}
	for _, tt := range []struct {
		name  string
		files []pytestFile
		ref   reference
		log   string
		// passed, why: the evidence; cond: the conditional skips kept.
		passed int
		why    string
		cond   int
	}{
		{"all passed", files, reference{}, passes, 3, "", 0},
		{"nothing ran (pytest.exit, exec /bin/true, status 256)", files, reference{}, "collected 3 items\n\n========== no tests ran in 0.01s ==========\n", 0, "no record that the tests ran: test_outputs.py::test_add has no result", 0},
		{"one missing", files, reference{}, "PASSED ../tests/test_outputs.py::test_add\nPASSED ../tests/test_outputs.py::TestX::test_p[1]\n", 2, "test_outputs.py::test_mul has no result", 0},
		{"a failure, then a forged pass", files, reference{}, passes + "FAILED ../tests/test_outputs.py::test_mul - assert 5 == 6\nPASSED ../tests/test_outputs.py::test_mul\n", 2, "test_outputs.py::test_mul did not pass", 0},
		{"one parameter failed", files, reference{}, passes + "FAILED ../tests/test_outputs.py::TestX::test_p[2]\n", 2, "TestX::test_p did not pass", 0},
		{"skipped by the code under test", files, reference{}, skipAdd, 2, "test_add did not pass", 0},
		{"another file's results", files, reference{}, strings.ReplaceAll(passes, "test_outputs.py", "test_other.py"), 0, "has no result", 0},
		{"a longer name is another test", files, reference{}, strings.ReplaceAll(passes, "::test_add", "::test_add_big"), 2, "test_add has no result", 0},
		{"skipped as its own mark allows", marked, reference{}, skipAdd, 2, "", 0},
		{"skipped as its own mark allows, folded", marked, reference{}, foldedAdd, 2, "", 0},
		{"a folded skip of another line", marked, reference{}, strings.Replace(foldedAdd, ".py:3:", ".py:9:", 1), 2, "test_add has no result", 0},
		{"a marked test's skip does not excuse another", marked, reference{}, strings.Replace(passes, "PASSED ../tests/test_outputs.py::test_mul", "SKIPPED ../tests/test_outputs.py::test_mul", 1), 2, "test_mul did not pass", 0},
		{"a marked test that fails", marked, reference{}, passes + "FAILED ../tests/test_outputs.py::test_add\n", 2, "test_add did not pass", 0},
		// A condition the code under test can make true: only the gold
		// run's own skip of the test excuses it.
		{"a conditional skip, no gold run known", cond, reference{}, foldedAdd, 2, "test_add was skipped under its own mark's condition, and no gold run", 1},
		{"a conditional skip the gold run did not make", cond, goldRan, foldedAdd, 2, "which the gold run on this image did not meet", 1},
		{"a conditional skip the gold run made too", cond, goldSkipped, foldedAdd, 2, "", 1},
		{"a conditional skip in the gold run itself", cond, reference{Gold: true}, skipAdd, 2, "", 1},
		{"a conditional xfail the gold run did not make", xcond, goldRan, xfailAdd, 2, "test_outputs.py::test_add was skipped under its own mark's condition", 1},
		{"a conditional xfail the gold run made too", xcond, goldSkipped, xfailAdd, 2, "", 1},
		{"a conditional xfail is no skip", xcond, goldSkipped, skipAdd, 2, "test_add did not pass", 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e := checkEvidence(foldedSkips(parsePytest(tt.log), tt.log, tt.files), tt.files, tt.ref)
			if e.Passed != tt.passed || e.Tests != 3 || e.ok() != (tt.why == "") || !strings.Contains(e.why(), tt.why) || len(e.CondSkipped) != tt.cond {
				t.Errorf("passed %d of %d, ok %v, why %q, conditional %q; want %d, %q, %d", e.Passed, e.Tests, e.ok(), e.why(), e.CondSkipped, tt.passed, tt.why, tt.cond)
			}
		})
	}
}

// TestTestMarks: only a test's own skip, skipif or xfail decorators (over
// one line or several) excuse a skip, and each is read as unconditional
// or under a condition.
func TestTestMarks(t *testing.T) {
	src := `import pytest, unittest

@pytest.mark.skipif(
    sys.platform == "win32",
    reason="posix only",
)
def test_a():
    pass

@pytest.fixture
def test_b():
    pass

def test_c():
    pytest.skip("at run time")

class TestK:
    @pytest.mark.xfail
    def test_d(self):
        pass

    @unittest.skip("later")
    def test_e(self):
        pass

    def test_f(self):
        pass

    @pytest.mark.xfail(reason="known", strict=True)
    def test_g(self):
        pass

    @pytest.mark.xfail(calc.LEGACY, reason="legacy")
    def test_h(self):
        pass

    @pytest.mark.xfail(condition=calc.LEGACY, reason="legacy")
    def test_i(self):
        pass

    @unittest.skipUnless(calc.FAST, "slow")
    @pytest.mark.skip
    def test_j(self):
        pass

    @unittest.expectedFailure
    def test_k(self):
        pass
`
	want := map[string]mark{
		"test_a":        {IfSkip: true, Line: 3, Def: 7},
		"TestK::test_d": {XFail: true, Line: 18, Def: 19},
		"TestK::test_e": {Skip: true, Line: 22, Def: 23},
		"TestK::test_g": {XFail: true, Line: 29, Def: 30},
		"TestK::test_h": {IfXFail: true, Line: 33, Def: 34},
		"TestK::test_i": {IfXFail: true, Line: 37, Def: 38},
		"TestK::test_j": {IfSkip: true, Skip: true, Line: 41, Def: 43},
		"TestK::test_k": {XFail: true, Line: 46, Def: 47},
	}
	if got := testMarks(src); !reflect.DeepEqual(got, want) {
		t.Errorf("testMarks =\n%+v\nwant\n%+v", got, want)
	}
}

// TestPlanCanaries: the calc Harbor task's test file gets mutant
// canaries of its first test, named like its tests, absent from it.
func TestPlanCanaries(t *testing.T) {
	src, err := os.ReadFile(filepath.Join("..", "adversarial", "testdata", "harbor-calc", "tests", "test_outputs.py"))
	if err != nil {
		t.Fatal(err)
	}
	f := pytestFile{Rel: "test_outputs.py", Tests: listTests(string(src)), Source: string(src)}
	can := planCanaries("calc-harbor", f)
	if !can.Available() {
		t.Fatalf("no canaries: %s", can.Unavailable)
	}
	if can.File != "test_outputs.py" || !strings.HasPrefix(can.Kind(), "mutants of test_outputs.py::") {
		t.Errorf("file %q, kind %q", can.File, can.Kind())
	}
	for _, n := range []string{can.MustFail, can.MustPass} {
		if !strings.HasPrefix(n, "test_") || strings.Contains(string(src), n) {
			t.Errorf("canary name %q", n)
		}
	}
	// A log where the must-fail canary passes is a finding; the honest
	// one is not.
	ok := "PASSED ../tests/test_outputs.py::" + can.MustPass + "\nFAILED ../tests/test_outputs.py::" + can.MustFail + " - assert 5 == 6\n"
	if got := can.Verify(parsePytest(ok), true); len(got) != 0 {
		t.Errorf("honest canary run: %q", got)
	}
	bad := "PASSED ../tests/test_outputs.py::" + can.MustPass + "\nPASSED ../tests/test_outputs.py::" + can.MustFail + "\n"
	if got := can.Verify(parsePytest(bad), true); len(got) == 0 {
		t.Error("a passing must-fail canary is not a finding")
	}
}

// TestRootNeed: a test.sh (or a script of tests/) that installs packages
// or changes the repository runs as root; run as the grading user, a test
// patch it applies would silently not be applied.
func TestRootNeed(t *testing.T) {
	for _, tt := range []struct{ script, want string }{
		{"cd /testbed\nif python3 -m pytest -rA /tests/test_outputs.py; then echo 1 > /logs/verifier/reward.txt; fi\n", ""},
		{"uvx --with pytest==8.4.1 pytest /tests/test_state.py -rA\n", ""},
		{"apt-get update\napt-get install -y curl\n", "needs root (apt-get "},
		{"cd /testbed\ngit checkout abc123 tests/test_x.py\n", "changes the repository (git checkout"},
		{"git apply -v - <<'EOF'\n", "changes the repository (git apply"},
		{"git -c core.fileMode=false diff abc\n", ""},
		{"patch -p1 < /tests/t.diff\n", "changes the repository (patch "},
		{"python3 -m pip install -e .\n", "installs Python packages"},
		{"sudo -u x true\n", "needs root (sudo "},
	} {
		if got := rootNeed(tt.script); (tt.want == "") != (got == "") || !strings.HasPrefix(got, tt.want) {
			t.Errorf("rootNeed(%q) = %q, want %q", tt.script, got, tt.want)
		}
	}
}

func TestExpectedFiles(t *testing.T) {
	for _, tt := range []struct {
		name, body string
		want       []pytestFile
		why        string
	}{
		{"none", "", nil, ""},
		{"pytest", `{"runner": "pytest", "tests": ["tests/a.py::test_x", "tests/b.py::T::test_y", "tests/a.py::test_z", "tests/a.py::test_x", "bad"]}`,
			[]pytestFile{{Rel: "tests/a.py", Tests: []string{"test_x", "test_z"}}, {Rel: "tests/b.py", Tests: []string{"T::test_y"}}}, ""},
		{"another runner", `{"runner": "go", "tests": ["x::y"]}`, nil, "only pytest"},
		{"no tests", `{"runner": "pytest", "tests": []}`, nil, "names no test"},
		{"not JSON", `{`, nil, "expected_tests.json"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			os.MkdirAll(filepath.Join(dir, "tests"), 0o755)
			if tt.body != "" {
				os.WriteFile(filepath.Join(dir, "tests", ExpectedTests), []byte(tt.body), 0o644)
			}
			got, why := expectedFiles(dir)
			if !reflect.DeepEqual(got, tt.want) || !strings.Contains(why, tt.why) || (tt.why == "") != (why == "") {
				t.Errorf("got %+v (%q), want %+v (%q)", got, why, tt.want, tt.why)
			}
		})
	}
}
