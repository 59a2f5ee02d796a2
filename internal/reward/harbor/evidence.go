package harbor

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
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
// result there and every result is PASSED; a skip or an expected failure
// counts only where the test's own marks excuse it (see mark: library
// code can skip a test as easily as it can exit, and can make a mark's
// condition true).
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
	kw         = lazyre.New(`^\w+\s*=[^=]`)
	foldedSkip = lazyre.New(`^SKIPPED \[\d+\] (\S+?):(\d+): `)
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

// mark is what a test's own decorators in the task's file say of it.
// The file is root's and read-only while the tests run, so the patch
// cannot add a mark; but a mark's condition (skipif, xfail(cond),
// unittest's skipIf and skipUnless) is evaluated in the test process,
// after the code under test was imported, and that code can make it true:
// set the environment variable it reads, the attribute, the version, the
// platform. So a skip or an expected failure counts only when its mark is
// unconditional (skip, xfail without a condition, unittest's skip and
// expectedFailure: the author expects it whatever the code does), or when
// the task's gold run on the same image skipped or xfailed the same test
// too (then the condition is the environment's, not the patch's doing).
type mark struct {
	// Skip and XFail: an unconditional skip, an unconditional xfail.
	Skip, XFail bool
	// IfSkip and IfXFail: a skip or xfail under a condition.
	IfSkip, IfXFail bool
	// Line is the test's first line, its first decorator's (where pytest
	// locates it in a folded "SKIPPED [n] file:line: reason" line), and
	// Def its def line.
	Line, Def int
}

// allows reports whether m excuses a result st of its test, goldSkipped
// saying whether the gold run skipped or xfailed the test too.
func (m mark) allows(st swebench.Status, goldSkipped bool) bool {
	switch st {
	case swebench.Skipped:
		return m.Skip || m.IfSkip && goldSkipped
	case swebench.XFail:
		return m.XFail || m.IfXFail && goldSkipped
	}
	return false
}

// conditional reports whether st is a result m's conditional marks
// excuse (a skip of a skipif test, an xfail of an xfail(cond) test).
func (m mark) conditional(st swebench.Status) bool {
	return st == swebench.Skipped && m.IfSkip && !m.Skip || st == swebench.XFail && m.IfXFail && !m.XFail
}

// testMarks reads the skip and xfail decorators of src's tests (named as
// listTests names them); a test without one is not in the map.
func testMarks(src string) map[string]mark {
	out := map[string]mark{}
	lines := strings.Split(src, "\n")
	class := ""
	var cur mark
	marked, first := false, 0
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		t := strings.TrimSpace(l)
		if t == "" || strings.HasPrefix(t, "#") {
			continue
		}
		if strings.HasPrefix(t, "@") {
			if first == 0 {
				first = i + 1
			}
			text := t
			// A decorator's arguments may run over several lines.
			for depth := strings.Count(t, "(") - strings.Count(t, ")"); depth > 0 && i+1 < len(lines); {
				i++
				text += " " + strings.TrimSpace(lines[i])
				depth += strings.Count(lines[i], "(") - strings.Count(lines[i], ")")
			}
			if m := skipMark.FindStringSubmatch(text); m != nil {
				marked = true
				args := strings.TrimSpace(text[len(m[0]):])
				switch name := m[2] + m[3]; name {
				case "skip":
					cur.Skip = true
				case "expectedFailure":
					cur.XFail = true
				case "skipif", "skipIf", "skipUnless":
					cur.IfSkip = true
				case "xfail":
					if xfailCondition(args) {
						cur.IfXFail = true
					} else {
						cur.XFail = true
					}
				}
			}
			continue
		}
		top := l[0] != ' ' && l[0] != '\t'
		name := ""
		switch {
		case top && testClass.MatchString(l):
			class = testClass.FindStringSubmatch(l)[1]
		case top:
			class = ""
			if m := topTest.FindStringSubmatch(l); m != nil {
				name = m[1]
			}
		case class != "":
			if m := methodTest.FindStringSubmatch(l); m != nil && indentOf(l) == methodIndent(src, class) {
				name = class + "::" + m[1]
			}
		}
		if name != "" && marked {
			cur.Def, cur.Line = i+1, first
			out[name] = cur
		}
		cur, marked, first = mark{}, false, 0
	}
	return out
}

// xfailCondition reports whether the arguments of an xfail mark ("",
// "(reason=...)", "(cond, reason=...)") hold a condition: a first
// argument that is not a keyword, or condition=.
func xfailCondition(args string) bool {
	if !strings.HasPrefix(args, "(") {
		return false
	}
	inner := strings.TrimSpace(strings.TrimPrefix(args, "("))
	if strings.HasPrefix(inner, ")") {
		return false
	}
	if kw.MatchString(inner) {
		return strings.Contains(args, "condition")
	}
	return true
}

// foldedSkips adds to sm the tests of files that pytest's short summary
// names only by place: a test a mark skips is reported as "SKIPPED [n]
// <file>:<line>: <reason>", the line its first decorator's (or its
// def's), which SWE-bench's parser files under "[n]". A test that has a
// result of its own keeps it.
func foldedSkips(sm swebench.StatusMap, log string, files []pytestFile) swebench.StatusMap {
	out := swebench.StatusMap{}
	for k, v := range sm {
		out[k] = v
	}
	for _, l := range strings.Split(log, "\n") {
		m := foldedSkip.FindStringSubmatch(strings.TrimRight(l, "\r"))
		if m == nil {
			continue
		}
		n, err := strconv.Atoi(m[2])
		if err != nil {
			continue
		}
		for _, f := range files {
			if m[1] != f.Rel && !strings.HasSuffix(m[1], "/"+f.Rel) {
				continue
			}
			for t, mk := range testMarks(f.Source) {
				if mk.Line != n && mk.Def != n {
					continue
				}
				k := f.Rel + "::" + t
				if _, ok := out[k]; !ok {
					out[k] = swebench.Skipped
				}
			}
		}
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
	// all PASSED or (as their own marks allow, see mark) SKIPPED or
	// XFAIL, not all PASSED.
	Tests, Passed, Skipped int
	// Missing and NotPassed name the others ("file::test"); Conditional
	// those of NotPassed that a conditional mark would have excused had
	// the gold run skipped them too.
	Missing, NotPassed, Conditional []string
	// CondSkipped name the tests skipped or xfailed under a condition,
	// excused or not: what a gold run keeps for the others.
	CondSkipped []string
	// GoldKnown: the gold run's conditional skips were known.
	GoldKnown bool
}

func (e evidence) ok() bool { return e.Passed > 0 && e.Passed+e.Skipped == e.Tests }

// why says in a few words what is wrong with e.
func (e evidence) why() string {
	switch {
	case len(e.Conditional) > 0 && len(e.Conditional) == len(e.NotPassed):
		ref := "which the gold run on this image did not meet"
		if !e.GoldKnown {
			ref = "and no gold run of the task on this image is known to have met it (swerve validate or grade --baseline records one)"
		}
		return fmt.Sprintf("no record that the tests passed: %s was skipped under its own mark's condition, %s%s", e.Conditional[0], ref, more(len(e.Conditional)))
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

// reference is what excuses a conditional skip: the run is the task's
// gold run (its own reference), or the gold run's conditional skips on
// this image ("file::test"), when known.
type reference struct {
	Gold, Known bool
	Skips       map[string]bool
}

// checkEvidence reads the results of files' tests out of sm (the pytest
// parser's map of test.sh's output, with the folded skips added: see
// foldedSkips). A test's results are every key that names its file (the
// path pytest printed ends in the file's path under tests/) and the test,
// with or without parameters; it passed when there is at least one and
// all are PASSED, or excused by its marks (see mark; ref says which
// conditional skips count).
func checkEvidence(sm swebench.StatusMap, files []pytestFile, ref reference) evidence {
	e := evidence{GoldKnown: ref.Gold || ref.Known}
	keys := make([]string, 0, len(sm))
	for k := range sm {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, f := range files {
		marks := testMarks(f.Source)
		for _, t := range f.Tests {
			e.Tests++
			id := f.Rel + "::" + t
			mk := marks[t]
			found, passed, skipped, cond, other := false, true, false, false, false
			for _, k := range keys {
				file, name, ok := strings.Cut(k, "::")
				if !ok || (file != f.Rel && !strings.HasSuffix(file, "/"+f.Rel)) {
					continue
				}
				if name != t && !strings.HasPrefix(name, t+"[") {
					continue
				}
				found = true
				st := sm[k]
				if mk.conditional(st) {
					cond = true
				}
				switch {
				case st == swebench.Passed:
				case mk.allows(st, ref.Gold || ref.Skips[id]):
					skipped = true
				default:
					passed = false
					other = other || !mk.conditional(st)
				}
			}
			if cond {
				e.CondSkipped = append(e.CondSkipped, id)
			}
			switch {
			case !found:
				e.Missing = append(e.Missing, id)
			case passed && skipped:
				e.Skipped++
			case !passed:
				e.NotPassed = append(e.NotPassed, id)
				if cond && !other {
					e.Conditional = append(e.Conditional, id)
				}
			default:
				e.Passed++
			}
		}
	}
	return e
}
