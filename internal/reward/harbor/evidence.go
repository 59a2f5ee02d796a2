package harbor

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/swerve-dev/swerve/internal/lazyre"
	"github.com/swerve-dev/swerve/internal/reward/swebench"
)

// Evidence that the tests ran. The reward file is written by test.sh, in a
// box where the code under test runs while it does: that code can write
// the file itself, or make the test runner leave with status 0 before any
// test ran. So for a test.sh that runs pytest on test files of tests/ by
// name, the grader keeps its own record: pytest's result lines (-rA, which
// the grader asks for through PYTEST_ADDOPTS) read from test.sh's output
// with SWE-bench's pytest parser, the worst line about a test winning. A
// reward above 0 counts only when every test function of those files has a
// result there and every result is PASSED; a skipped or expected failure
// does not count (library code can skip a test as easily as it can exit).
// A test.sh that runs anything else keeps Harbor's verdict, and the result
// says the evidence was not checked.

// pytestFile is a test file of the task's tests/ directory that test.sh
// runs with pytest, and the tests it defines.
type pytestFile struct {
	// Rel is its path under tests/ (slashes).
	Rel string
	// Tests are its test functions: "test_x", or "TestClass::test_x".
	Tests []string
	// Source is its text as the task has it.
	Source string
}

var (
	pytestWord = lazyre.New(`(^|[\s/;&|(])(py\.test|pytest)($|[\s;&|)])`)
	topTest    = lazyre.New(`^(?:async\s+)?def\s+(test\w*)\s*\(`)
	testClass  = lazyre.New(`^class\s+(Test\w*)\s*[(:]`)
	skipMark   = lazyre.New(`^@\s*(pytest\s*\.\s*mark\s*\.\s*(skip|skipif|xfail)|unittest\s*\.\s*(skip|skipIf|skipUnless|expectedFailure))\b`)
	methodTest = lazyre.New(`^\s+(?:async\s+)?def\s+(test\w*)\s*\(`)
)

// Expected is tests/expected_tests.json: the runner whose result lines
// test.sh's output carries ("pytest", the only one read) and the tests, as
// pytest names them ("tests/test_x.py::test_y").
type Expected struct {
	Runner string   `json:"runner"`
	Tests  []string `json:"tests"`
}

// expectedFiles reads taskDir's tests/expected_tests.json into the files
// and tests the record must hold; nil and "" when there is no such file.
func expectedFiles(taskDir string) ([]pytestFile, string) {
	b, err := os.ReadFile(filepath.Join(taskDir, "tests", ExpectedTests))
	if err != nil {
		return nil, ""
	}
	var e Expected
	if err := json.Unmarshal(b, &e); err != nil {
		return nil, fmt.Sprintf("tests/%s: %v", ExpectedTests, err)
	}
	if e.Runner != "pytest" {
		return nil, fmt.Sprintf("tests/%s: runner %q (only pytest's output is read)", ExpectedTests, e.Runner)
	}
	var out []pytestFile
	at := map[string]int{}
	for _, name := range e.Tests {
		file, test, ok := strings.Cut(name, "::")
		if !ok || file == "" || test == "" {
			continue
		}
		i, seen := at[file]
		if !seen {
			i = len(out)
			at[file] = i
			out = append(out, pytestFile{Rel: file})
		}
		out[i].Tests = dedupe(append(out[i].Tests, test))
	}
	if len(out) == 0 {
		return nil, fmt.Sprintf("tests/%s names no test", ExpectedTests)
	}
	return out, ""
}

// pytestFiles lists the Python files of taskDir's tests/ that script (the
// task's own test.sh) names by their path under TestsDir, when it runs
// pytest; "" and why not when there are none.
func pytestFiles(taskDir, script string) ([]pytestFile, string) {
	if !pytestWord.MatchString(script) {
		return nil, "test.sh does not run pytest"
	}
	root := filepath.Join(taskDir, "tests")
	var out []pytestFile
	err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".py") {
			return err
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		if !namesPath(script, TestsDir+"/"+rel) {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if tests := listTests(string(b)); len(tests) > 0 {
			out = append(out, pytestFile{Rel: rel, Tests: tests, Source: string(b)})
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Sprintf("tests/ could not be read: %v", err)
	}
	if len(out) == 0 {
		return nil, "test.sh names no test file of tests/ that defines tests"
	}
	return out, ""
}

// namesPath reports whether script holds p as a whole path (p followed by
// no name character, and not by "/").
func namesPath(script, p string) bool {
	for i := 0; ; {
		j := strings.Index(script[i:], p)
		if j < 0 {
			return false
		}
		end := i + j + len(p)
		if end == len(script) || !strings.ContainsRune("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-/", rune(script[end])) {
			return true
		}
		i = end
	}
}

// listTests lists the test functions pytest collects from src by default:
// module-level test* functions and test* methods of Test* classes.
func listTests(src string) []string {
	var out []string
	class := ""
	for _, l := range strings.Split(src, "\n") {
		t := strings.TrimSpace(l)
		if t == "" || strings.HasPrefix(t, "#") {
			continue
		}
		if l[0] != ' ' && l[0] != '\t' {
			class = ""
			if m := testClass.FindStringSubmatch(l); m != nil {
				class = m[1]
			} else if m := topTest.FindStringSubmatch(l); m != nil {
				out = append(out, m[1])
			}
			continue
		}
		if class != "" {
			if m := methodTest.FindStringSubmatch(l); m != nil && indentOf(l) == methodIndent(src, class) {
				out = append(out, class+"::"+m[1])
			}
		}
	}
	return dedupe(out)
}

// markedToSkip lists the tests of src (named as listTests names them)
// whose own decorators in the task's file say they may be skipped or may
// fail (pytest's skip, skipif and xfail marks, unittest's skip
// decorators): a SKIPPED or XFAIL result of one of them is what the task's
// author asked for, not a sign that the tests did not run. The file is
// root's and read-only while the tests run, so the patch cannot add one.
func markedToSkip(src string) map[string]bool {
	out := map[string]bool{}
	lines := strings.Split(src, "\n")
	class, marked := "", false
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		t := strings.TrimSpace(l)
		if t == "" || strings.HasPrefix(t, "#") {
			continue
		}
		if strings.HasPrefix(t, "@") {
			marked = marked || skipMark.MatchString(t)
			// A decorator's arguments may run over several lines.
			for depth := strings.Count(t, "(") - strings.Count(t, ")"); depth > 0 && i+1 < len(lines); {
				i++
				depth += strings.Count(lines[i], "(") - strings.Count(lines[i], ")")
			}
			continue
		}
		top := l[0] != ' ' && l[0] != '\t'
		switch {
		case top && testClass.MatchString(l):
			class = testClass.FindStringSubmatch(l)[1]
		case top:
			class = ""
			if m := topTest.FindStringSubmatch(l); m != nil && marked {
				out[m[1]] = true
			}
		case class != "":
			if m := methodTest.FindStringSubmatch(l); m != nil && marked && indentOf(l) == methodIndent(src, class) {
				out[class+"::"+m[1]] = true
			}
		}
		marked = false
	}
	return out
}

func indentOf(l string) int { return len(l) - len(strings.TrimLeft(l, " \t")) }

// methodIndent is the indentation of the first statement of class's body.
func methodIndent(src, class string) int {
	lines := strings.Split(src, "\n")
	for i, l := range lines {
		if m := testClass.FindStringSubmatch(l); m != nil && m[1] == class {
			for _, n := range lines[i+1:] {
				if t := strings.TrimSpace(n); t != "" && !strings.HasPrefix(t, "#") {
					return indentOf(n)
				}
			}
		}
	}
	return -1
}

func dedupe(list []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, s := range list {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}

// evidence is what the grader's own record says of the tests.
type evidence struct {
	// Tests is how many tests the files define; Passed how many of them
	// have results, all PASSED; Skipped how many of them have results,
	// all PASSED or (as their own skip or xfail marks allow) SKIPPED or
	// XFAIL, not all PASSED.
	Tests, Passed, Skipped int
	// Missing and NotPassed name the others ("file::test").
	Missing, NotPassed []string
}

func (e evidence) ok() bool { return e.Passed > 0 && e.Passed+e.Skipped == e.Tests }

// why says in a few words what is wrong with e.
func (e evidence) why() string {
	switch {
	case len(e.NotPassed) > 0:
		return fmt.Sprintf("no record that the tests passed: %s did not pass%s", e.NotPassed[0], more(len(e.NotPassed)))
	case len(e.Missing) > 0:
		return fmt.Sprintf("no record that the tests ran: %s has no result in the test output%s", e.Missing[0], more(len(e.Missing)))
	case e.Tests > 0 && e.Passed == 0:
		return fmt.Sprintf("no record that a test passed: the %d tests were skipped", e.Tests)
	}
	return ""
}

func more(n int) string {
	if n > 1 {
		return fmt.Sprintf(" (and %d more)", n-1)
	}
	return ""
}

// checkEvidence reads the results of files' tests out of sm (the pytest
// parser's map of test.sh's output). A test's results are every key that
// names its file (the path pytest printed ends in the file's path under
// tests/) and the test, with or without parameters; it passed when there
// is at least one and all are PASSED.
func checkEvidence(sm swebench.StatusMap, files []pytestFile) evidence {
	var e evidence
	keys := make([]string, 0, len(sm))
	for k := range sm {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, f := range files {
		maySkip := markedToSkip(f.Source)
		for _, t := range f.Tests {
			e.Tests++
			found, passed, skipped := false, true, false
			for _, k := range keys {
				file, name, ok := strings.Cut(k, "::")
				if !ok || (file != f.Rel && !strings.HasSuffix(file, "/"+f.Rel)) {
					continue
				}
				if name != t && !strings.HasPrefix(name, t+"[") {
					continue
				}
				found = true
				switch st := sm[k]; {
				case st == swebench.Passed:
				case maySkip[t] && (st == swebench.Skipped || st == swebench.XFail):
					skipped = true
				default:
					passed = false
				}
			}
			switch {
			case !found:
				e.Missing = append(e.Missing, f.Rel+"::"+t)
			case passed && skipped:
				e.Skipped++
			case !passed:
				e.NotPassed = append(e.NotPassed, f.Rel+"::"+t)
			default:
				e.Passed++
			}
		}
	}
	return e
}
