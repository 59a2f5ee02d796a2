package swefactory

import (
	"fmt"
	"path"
	"sort"
	"strings"

	"github.com/swerve-dev/swerve/internal/lazyre"
	"github.com/swerve-dev/swerve/internal/reward"
	"github.com/swerve-dev/swerve/internal/reward/swebench"
	"github.com/swerve-dev/swerve/internal/task"
)

// An exit status is not evidence that tests ran: code the tests import can
// replace the test process with /bin/true, or exit with 256 (the shell
// reads 0). So a sealed run's status 0 counts only when the test output
// bash traced between the test command and the script's echo of the
// marker holds results, read with the framework's log parser (a test
// named twice counts as its worst copy): every test the row lists, or,
// for a row with no lists (SWE-Factory's own rows have none), every test
// the test patch adds or changes, present and passed. Where no parser is
// known for the test command (a C++ test binary), the status stands, and
// the result says why the check did not apply.

// rcLine is the script's save of the test command's status.
var rcLine = lazyre.New(`^rc=\$\?\s*(#.*)?$`)

// resetLineRe is the script's reset of the test files to the base commit.
var resetLineRe = lazyre.New(`^git checkout [0-9a-f]{7,40}(\s+\S+)+\s*$`)

// heredocStart is a line that opens a here-document, and its end word.
var heredocStart = lazyre.New(`<<-?\s*['"]?([A-Za-z0-9_]+)['"]?\s*$`)

// TestCommand returns the eval script's test command: the lines after the
// test patch's here-document (else after the reset of the test files) up
// to the `rc=$?` that saves its status, comments and blank lines left out.
// "" when the script has no `rc=$?` line.
func TestCommand(script string) string {
	lines := strings.Split(script, "\n")
	from, rc := 0, -1
	for i := 0; i < len(lines); i++ {
		l := strings.TrimSpace(lines[i])
		if m := heredocStart.FindStringSubmatch(l); m != nil {
			for i++; i < len(lines) && lines[i] != m[1]; i++ {
			}
			from = i + 1
			continue
		}
		if resetLineRe.MatchString(l) {
			from = i + 1
			continue
		}
		if rcLine.MatchString(l) {
			rc = i
			break
		}
	}
	if rc < 0 {
		return ""
	}
	var out []string
	for _, l := range lines[min(from, rc):rc] {
		l = strings.TrimSpace(l)
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		out = append(out, l)
	}
	return strings.Join(out, "\n")
}

var (
	runsPytest = lazyre.New(`(^|[\s/;&|(])(pytest|py\.test)(\s|$)`)
	// -rA, -rP, -rp, -r fEsP ... : pytest lists passed tests in its
	// short summary only when the report characters include A, P or p.
	pytestListsPassed = lazyre.New(`(^|\s)(-r\s*|--report-chars[=\s])[a-zA-Z]*[ApP]`)
)

// Framework names the log parser that reads the test command's output, or
// "" and why none does: the row's own log_parser when it has one, else
// parse_log_pytest for a pytest command that lists passed tests.
func Framework(t *task.Task, cmd string) (parser, why string) {
	if t.LogParser != "" {
		if _, err := swebench.LookupParser(t.LogParser); err != nil {
			return "", fmt.Sprintf("the row's log parser %q is unknown", t.LogParser)
		}
		return t.LogParser, ""
	}
	switch {
	case cmd == "":
		return "", "no test command found before rc=$?"
	case !runsPytest.MatchString(cmd):
		return "", "no log parser is known for the test command (`" + firstLine(cmd) + "`)"
	case !pytestListsPassed.MatchString(cmd):
		return "", "pytest runs without -rA (or -rP), so passed tests are not listed"
	}
	return "parse_log_pytest", ""
}

func firstLine(s string) string {
	l, _, _ := strings.Cut(s, "\n")
	if len(l) > 80 {
		l = l[:80] + "…"
	}
	return l
}

// Section is the test command's output in a sealed run's log: from the end
// of the last traced `git apply`/`git checkout` line before the script's
// traced echo of the marker (the test patch put in place) to the traced
// `rc=` line, else to the echo. ok is false when bash traced no echo.
func Section(log string, tr *reward.Trace) (string, bool) {
	if tr == nil {
		return "", false
	}
	echo := -1
	for i, l := range tr.Lines {
		if markerTrace.MatchString(l.Text) {
			echo = i
		}
	}
	if echo < 0 {
		return "", false
	}
	from, to := 0, tr.Lines[echo].Start
	for i := echo - 1; i >= 0; i-- {
		l := tr.Lines[i]
		if strings.HasPrefix(l.Text, "rc=") && l.Start < to {
			to = l.Start
		}
		if strings.HasPrefix(l.Text, "git apply") || strings.HasPrefix(l.Text, "git checkout") {
			// The test command's own trace line follows.
			from = l.End
			if i+1 < echo && tr.Lines[i+1].End <= to {
				from = tr.Lines[i+1].End
			}
			break
		}
	}
	if from > to {
		from = to
	}
	// The section ends with the last whole line before the trace line.
	sec := log[from:to]
	if i := strings.LastIndexByte(sec, '\n'); i >= 0 {
		sec = sec[:i+1]
	}
	return sec, true
}

// Required lists the tests a row's run must show passed: its
// FAIL_TO_PASS and PASS_TO_PASS lists, else, when parser reads pytest's
// names, the tests its test patch adds or changes in the files the test
// command runs (derived is true; their names are "file::function", the
// class not known). Other parsers' names are not derived: none.
func Required(t *task.Task, cmd, parser string) (tests []string, derived bool) {
	if len(t.FailToPass)+len(t.PassToPass) > 0 {
		return append(append([]string{}, t.FailToPass...), t.PassToPass...), false
	}
	if !strings.HasPrefix(parser, "parse_log_pytest") {
		return nil, true
	}
	return PatchTests(t.TestPatch, cmd), true
}

var (
	hunkHeader = lazyre.New(`^@@ -\d+(?:,\d+)? \+\d+(?:,\d+)? @@ ?(.*)$`)
	pyTestDef  = lazyre.New(`^\s*(?:async\s+)?def\s+(test\w*)\s*\(`)
	pyAnyDef   = lazyre.New(`^(\s*)(?:async\s+)?(?:def|class)\s+(\w+)`)
)

// PatchTests names the pytest test functions ("file::function") a test
// patch adds or changes, in the .py files the test command names or under
// the directories it names ("tests/", "src/pkg/tests"; all of the patch's
// files when it names neither): a function whose def line is added, or
// that holds an added or removed line.
func PatchTests(testPatch, cmd string) []string {
	named, dirs := map[string]bool{}, []string{}
	for _, w := range strings.Fields(cmd) {
		f, _, _ := strings.Cut(w, "::")
		f = strings.TrimPrefix(f, "./")
		switch {
		case strings.HasSuffix(f, ".py"):
			named[f] = true
		case strings.HasSuffix(f, "/") || strings.Contains(f, "/") && !strings.HasPrefix(f, "-") && !strings.HasPrefix(f, "/") && path.Ext(f) == "":
			// A directory of the repository the command runs.
			dirs = append(dirs, strings.TrimSuffix(f, "/")+"/")
		}
	}
	runs := func(file string) bool {
		if len(named)+len(dirs) == 0 {
			return true
		}
		for _, d := range dirs {
			if strings.HasPrefix(file, d) {
				return true
			}
		}
		return named[file]
	}
	seen := map[string]bool{}
	var out []string
	add := func(file, fn string) {
		if fn == "" || !runs(file) {
			return
		}
		if n := file + "::" + fn; !seen[n] {
			seen[n] = true
			out = append(out, n)
		}
	}
	file, current := "", ""
	currentIndent := -1
	for _, l := range strings.Split(testPatch, "\n") {
		switch {
		case strings.HasPrefix(l, "diff --git "):
			file, current = "", ""
		case strings.HasPrefix(l, "+++ "):
			p := strings.TrimSpace(strings.TrimPrefix(l, "+++ "))
			if p == "/dev/null" {
				file = ""
				continue
			}
			if strings.HasPrefix(p, "b/") {
				p = p[2:]
			}
			file = ""
			if path.Ext(p) == ".py" {
				file = p
			}
		case strings.HasPrefix(l, "--- "):
		case strings.HasPrefix(l, "@@"):
			current, currentIndent = "", -1
			if m := hunkHeader.FindStringSubmatch(l); m != nil {
				if d := pyTestDef.FindStringSubmatch(m[1]); d != nil {
					current, currentIndent = d[1], indentOf(m[1])
				}
			}
		case file == "":
		case len(l) > 0 && (l[0] == '+' || l[0] == ' '):
			// The new file's structure: a test's def starts it; a def,
			// class or statement at its indentation or less ends it.
			body := strings.TrimRight(l[1:], "\r")
			text := strings.TrimSpace(body)
			if d := pyAnyDef.FindStringSubmatch(body); d != nil {
				if t := pyTestDef.FindStringSubmatch(body); t != nil {
					current, currentIndent = t[1], len(d[1])
				} else if currentIndent < 0 || len(d[1]) <= currentIndent {
					current, currentIndent = "", -1
				}
			} else if text != "" && currentIndent >= 0 && indentOf(body) <= currentIndent && !strings.HasPrefix(text, "@") && !strings.HasPrefix(text, ")") && !strings.HasPrefix(text, "#") {
				current, currentIndent = "", -1
			}
			if l[0] == '+' && text != "" {
				add(file, current)
			}
		case len(l) > 0 && l[0] == '-':
			if strings.TrimSpace(l[1:]) != "" {
				add(file, current)
			}
		}
	}
	return out
}

func indentOf(s string) int { return len(s) - len(strings.TrimLeft(s, " \t")) }

// Evidence is what the test output shows of a run.
type Evidence struct {
	// Applied is false when no parser reads the test command's output;
	// Why says why then.
	Applied bool
	Why     string
	// Results is the number of test results the parser read.
	Results int
	// Status is the parsed test section.
	Status swebench.StatusMap
	// Problem says why the results do not show the tests ran and passed;
	// "" when they do.
	Problem string
}

// CheckEvidence reads section (the test command's output) with the
// framework's parser and says whether it shows the row's tests ran and
// passed.
func CheckEvidence(t *task.Task, script, section string) *Evidence {
	cmd := TestCommand(script)
	parser, why := Framework(t, cmd)
	if parser == "" {
		return &Evidence{Why: why}
	}
	p, err := swebench.LookupParser(parser)
	if err != nil {
		return &Evidence{Why: err.Error()}
	}
	sm := p(section, t)
	ev := &Evidence{Applied: true, Results: len(sm), Status: sm}
	if len(sm) == 0 {
		ev.Problem = "no test results in the log: the test command printed no result " + parser + " reads (exit status alone is not evidence)"
		return ev
	}
	var bad []string
	for _, k := range sortedKeys(sm) {
		if s := sm[k]; s == swebench.Failed || s == swebench.Error {
			bad = append(bad, k)
		}
	}
	if len(bad) > 0 {
		ev.Problem = "tests failed: " + strings.Join(clipList(bad), ", ") + " (although the exit status is 0)"
		return ev
	}
	req, derived := Required(t, cmd, parser)
	var missing, failed []string
	passedAny := false
	p2p := map[string]bool{}
	for _, n := range t.PassToPass {
		p2p[n] = true
	}
	for _, n := range req {
		sts := lookupTest(sm, n, derived)
		if len(sts) == 0 {
			missing = append(missing, n)
			continue
		}
		for _, s := range sts {
			switch {
			case s == swebench.Passed || s == swebench.XFail:
				passedAny = true
			case s == swebench.Skipped && (derived || p2p[n]):
			default:
				failed = append(failed, n)
			}
		}
	}
	switch {
	case len(missing) > 0:
		ev.Problem = "no test results for " + strings.Join(clipList(missing), ", ") + " in the log"
	case len(failed) > 0:
		ev.Problem = "tests failed: " + strings.Join(clipList(failed), ", ") + " did not pass"
	case len(req) > 0 && !passedAny:
		ev.Problem = "no test results of a passed test the test patch adds"
	case len(req) == 0 && !anyPassed(sm):
		ev.Problem = "no test results of a passed test in the log"
	}
	return ev
}

// lookupTest returns every status sm holds for test name: its own key
// and its parametrised copies ("name[...]"); for a derived name
// ("file::function") also the function in any class of the file.
func lookupTest(sm swebench.StatusMap, name string, derived bool) []swebench.Status {
	var out []swebench.Status
	file, fn, _ := strings.Cut(name, "::")
	for k, s := range sm {
		base := k
		if i := strings.IndexByte(k, '['); i >= 0 {
			base = k[:i]
		}
		if base == name || derived && strings.HasPrefix(base, file+"::") && strings.HasSuffix(base, "::"+fn) {
			out = append(out, s)
		}
	}
	return out
}

func anyPassed(sm swebench.StatusMap) bool {
	for _, s := range sm {
		if s == swebench.Passed || s == swebench.XFail {
			return true
		}
	}
	return false
}

func sortedKeys(sm swebench.StatusMap) []string {
	out := make([]string, 0, len(sm))
	for k := range sm {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// clipList keeps a reason one line: five names, then a count.
func clipList(names []string) []string {
	if len(names) <= 5 {
		return names
	}
	return append(names[:5:5], fmt.Sprintf("and %d more", len(names)-5))
}

// withEvidence records ev in r and takes a resolved verdict back when the
// test output does not show the tests ran and passed.
func withEvidence(r *Result, ev *Evidence) {
	if !ev.Applied {
		r.Evidence = "not applied: " + ev.Why
		return
	}
	r.Evidence = "checked"
	n := ev.Results
	r.TestResults = &n
	if r.Resolved && ev.Problem != "" {
		r.Reward, r.Resolved, r.Reason = 0, false, ev.Problem
	}
}

// parse reads a canary run's output with the parser CheckEvidence used.
func parse(t *task.Task, section string) swebench.StatusMap {
	parser, _ := Framework(t, TestCommand(t.EvalScript))
	p, err := swebench.LookupParser(parser)
	if err != nil {
		return nil
	}
	return p(section, t)
}

// canaryEnd is the traced line that closes the canary run.
const canaryEnd = ": '>>>>> End Canary Run'"

// CanaryScript returns script (traced) with, right after the script's echo
// of the marker, the canary run: the injector at injector runs (and is
// deleted), then the test command runs again, now over the canaries; its
// status is never echoed as the marker, and the script's own revert of
// the test files follows. The test command must be one line without a
// change of directory (it runs again where it ran).
func CanaryScript(script, injector string) (string, error) {
	cmd := TestCommand(script)
	switch {
	case cmd == "":
		return "", fmt.Errorf("canaries: no test command before rc=$?")
	case strings.Contains(cmd, "\n"), strings.Contains(cmd, "cd "), strings.ContainsAny(cmd, ";&|<>`$("):
		return "", fmt.Errorf("canaries: the test command is not one simple command")
	}
	lines := strings.Split(script, "\n")
	at := -1
	for i, l := range lines {
		if echoMarker.MatchString(strings.TrimSpace(l)) {
			at = i
		}
	}
	if at < 0 {
		return "", fmt.Errorf("canaries: no echo of %s in the eval script", Marker)
	}
	run := []string{
		injectLine(injector),
		cmd,
		canaryEnd,
	}
	out := append(append(append([]string{}, lines[:at+1]...), run...), lines[at+1:]...)
	return strings.Join(out, "\n"), nil
}

// injectLine is the line of CanaryScript that runs the injector and
// deletes it: in a phased run, the one line of the test part run as root.
func injectLine(injector string) string {
	q := "'" + strings.ReplaceAll(injector, "'", `'\''`) + "'"
	return fmt.Sprintf(`"$(command -v python || command -v python3)" -E -s -S %s; rm -f %s`, q, q)
}

// CanaryCommand is the test command CanaryScript runs again, or "" when
// it cannot run it (for the canaries' planning).
func CanaryCommand(script string) string {
	if _, err := CanaryScript(script, "/x"); err != nil {
		return ""
	}
	return TestCommand(script)
}

// echoMarker is the script's own echo of the marker.
var echoMarker = lazyre.New(`^echo\s+["']?` + Marker + `=\$\{?rc\}?["']?\s*(#.*)?$`)

// CanarySection is the canary run's output in a sealed run's log: from the
// traced removal of the injector (at injector) to the traced end line.
func CanarySection(log string, tr *reward.Trace, injector string) (string, bool) {
	from := -1
	for _, l := range tr.Lines {
		if from < 0 && (l.Text == "rm -f "+injector || l.Text == "rm -f '"+injector+"'") {
			from = l.End
			continue
		}
		if from >= 0 && l.Text == canaryEnd {
			return log[from:l.Start], true
		}
	}
	return "", false
}
