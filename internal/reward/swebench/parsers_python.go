package swebench

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/swerve-dev/swerve/internal/task"
)

// Parsers for the Python repositories of SWE-bench (all but django, which
// has its own file). They follow swebench/harness/log_parsers/python.py of
// SWE-bench 5.x line for line in behaviour, odd corners included, because a
// reward must be the one the official grader would give. The golden logs
// under testdata/parsers check them against that code.

func init() {
	for name, p := range map[string]Parser{
		"parse_log_pytest":         parsePytest,
		"parse_log_pytest_options": parsePytestOptions,
		"parse_log_pytest_v2":      parsePytestV2,
		"parse_log_seaborn":        parseSeaborn,
		"parse_log_sympy":          parseSympy,
		"parse_log_matplotlib":     parseMatplotlib,

		// Upstream's per-repository names are plain aliases of the above.
		"parse_log_astroid":     parsePytest,
		"parse_log_flask":       parsePytest,
		"parse_log_marshmallow": parsePytest,
		"parse_log_pvlib":       parsePytest,
		"parse_log_pyvista":     parsePytest,
		"parse_log_sqlfluff":    parsePytest,
		"parse_log_xarray":      parsePytest,

		"parse_log_pydicom":  parsePytestOptions,
		"parse_log_requests": parsePytestOptions,
		"parse_log_pylint":   parsePytestOptions,

		"parse_log_astropy": parsePytestV2,
		"parse_log_scikit":  parsePytestV2,
		"parse_log_sphinx":  parsePytestV2,
	} {
		RegisterParser(name, p)
	}
}

// statusWords are the values of upstream's TestStatus, the words a result
// line may start (or, for pytest_v2, end) with.
var statusWords = [...]string{string(Failed), string(Passed), string(Skipped), string(Error), string(XFail)}

func startsWithStatus(line string) bool {
	for _, w := range statusWords {
		if strings.HasPrefix(line, w) {
			return true
		}
	}
	return false
}

func endsWithStatus(line string) bool {
	for _, w := range statusWords {
		if strings.HasSuffix(line, w) {
			return true
		}
	}
	return false
}

// firstTwoFields returns the first two fields of s as Python's str.split()
// would cut them, and whether there are at least two.
func firstTwoFields(s string) (first, second string, ok bool) {
	for i := range 2 {
		s = strings.TrimLeftFunc(s, pyIsSpace)
		if s == "" {
			return first, "", false
		}
		end := strings.IndexFunc(s, pyIsSpace)
		if end < 0 {
			end = len(s)
		}
		if i == 0 {
			first = s[:end]
		} else {
			second = s[:end]
		}
		s = s[end:]
	}
	return first, second, true
}

// isSkipSummary reports whether a SKIPPED line is pytest's short summary
// "SKIPPED [N] path:line: reason", whose second word is a count and not a
// test. Only SKIPPED is exempted: upstream keeps "PASSED [100%]" because two
// pytest instances' PASS_TO_PASS lists name "[100%]" as a test.
func isSkipSummary(status, name string) bool {
	if status != string(Skipped) || len(name) < 3 || name[0] != '[' || name[len(name)-1] != ']' {
		return false
	}
	// Python's \d: any Unicode decimal digit, not just 0-9.
	for _, r := range name[1 : len(name)-1] {
		if !unicode.IsDigit(r) {
			return false
		}
	}
	return true
}

// pytestResult reads one line of `pytest -rA` output the way upstream's
// parse_log_pytest does: a line starting with a status word gives
// name=second word, status=first word. On FAILED lines every " - " is first
// collapsed to a space, so the message after the id never joins it (but a
// " - " inside a parametrised id splits it too).
func pytestResult(line string) (name string, status Status, ok bool) {
	if !startsWithStatus(line) {
		return "", "", false
	}
	if strings.HasPrefix(line, string(Failed)) {
		line = strings.ReplaceAll(line, " - ", " ")
	}
	st, name, ok := firstTwoFields(line)
	if !ok || isSkipSummary(st, name) {
		return "", "", false
	}
	return name, Status(st), true
}

// parsePytest is upstream's parse_log_pytest (also astroid, flask,
// marshmallow, pvlib, pyvista, sqlfluff and xarray).
func parsePytest(log string, _ *task.Task) StatusMap {
	sm, w := StatusMap{}, WorstCopy{}
	for line := range strings.SplitSeq(log, "\n") {
		if name, st, ok := pytestResult(line); ok {
			w.Set(sm, name, st)
		}
	}
	return w.Apply(sm)
}

// parseMatplotlib is parse_log_pytest after spelling matplotlib's
// MouseButton.LEFT / MouseButton.RIGHT parameters as 1 and 3, as the dataset's
// test ids do.
func parseMatplotlib(log string, _ *task.Task) StatusMap {
	sm, w := StatusMap{}, WorstCopy{}
	for line := range strings.SplitSeq(log, "\n") {
		if strings.Contains(line, "MouseButton.") {
			line = strings.ReplaceAll(line, "MouseButton.LEFT", "1")
			line = strings.ReplaceAll(line, "MouseButton.RIGHT", "3")
		}
		if name, st, ok := pytestResult(line); ok {
			w.Set(sm, name, st)
		}
	}
	return w.Apply(sm)
}

// parsePytestOptions is upstream's parse_log_pytest_options (pydicom,
// requests, pylint): parse_log_pytest, then a parametrised id keeps only the
// text from its first "[" to its last "]" (anything after that is dropped),
// and a parameter that is an absolute path (one leading "/", no "*") is cut
// to "/" plus its last element, so ids built from temporary paths match.
func parsePytestOptions(log string, _ *task.Task) StatusMap {
	sm, w := StatusMap{}, WorstCopy{}
	for line := range strings.SplitSeq(log, "\n") {
		name, st, ok := pytestResult(line)
		if !ok {
			continue
		}
		open := strings.IndexByte(name, '[')
		if close := strings.LastIndexByte(name, ']'); open >= 0 && close > open {
			main, option := name[:open], name[open+1:close]
			if strings.HasPrefix(option, "/") && !strings.HasPrefix(option, "//") && !strings.Contains(option, "*") {
				option = option[strings.LastIndexByte(option, '/'):]
			}
			name = main + "[" + option + "]"
		}
		w.Set(sm, name, st)
	}
	return w.Apply(sm)
}

// stripTerminalCodes does what parse_log_pytest_v2 does to each line before
// reading it: delete every "[<digits>m" (the tail of an ANSI colour code;
// the digits may be any Unicode decimal digits, as for Python's \d), then
// delete every character from U+0001 to U+001F, tab and ESC included.
func stripTerminalCodes(line string) string {
	clean := true
	for i := 0; i < len(line); i++ {
		if c := line[i]; c == '[' || (c >= 0x01 && c <= 0x1f) {
			clean = false
			break
		}
	}
	if clean {
		return line
	}
	var b strings.Builder
	b.Grow(len(line))
	// First pass: drop "[digits m", scanning left to right without overlap.
	rest := line
	for {
		i := strings.IndexByte(rest, '[')
		if i < 0 {
			b.WriteString(rest)
			break
		}
		b.WriteString(rest[:i])
		j, digits := i+1, 0
		for j < len(rest) {
			r, size := utf8.DecodeRuneInString(rest[j:])
			if !unicode.IsDigit(r) {
				break
			}
			j += size
			digits++
		}
		if digits > 0 && j < len(rest) && rest[j] == 'm' {
			rest = rest[j+1:]
			continue
		}
		b.WriteByte('[')
		rest = rest[i+1:]
	}
	// Second pass: drop the C0 control characters (but not NUL).
	s := b.String()
	return strings.Map(func(r rune) rune {
		if r >= 0x01 && r <= 0x1f {
			return -1
		}
		return r
	}, s)
}

// parsePytestV2 is upstream's parse_log_pytest_v2 (astropy, scikit-learn,
// sphinx). After stripTerminalCodes, a line starting with a status word maps
// the rest of the line, words joined by single spaces, to that word (on
// FAILED lines the rest stops at the first " - "; "SKIPPED [N]" summaries are
// skipped). Any other line ending with a status word is read as verbose
// output, "<name...> STATUS", and maps its other words to its last word.
func parsePytestV2(log string, _ *task.Task) StatusMap {
	sm, w := StatusMap{}, WorstCopy{}
	for line := range strings.SplitSeq(log, "\n") {
		line = stripTerminalCodes(line)
		if startsWithStatus(line) {
			if strings.HasPrefix(line, string(Failed)) {
				line = pyBefore(line, " - ")
			}
			f := pyFields(line)
			if len(f) >= 2 && !isSkipSummary(f[0], f[1]) {
				w.Set(sm, strings.Join(f[1:], " "), Status(f[0]))
			}
		} else if endsWithStatus(line) {
			f := pyFields(line)
			if len(f) >= 2 {
				w.Set(sm, strings.Join(f[:len(f)-1], " "), Status(f[len(f)-1]))
			}
		}
	}
	return w.Apply(sm)
}

// parseSeaborn is upstream's parse_log_seaborn. It knows only FAILED and
// PASSED: "FAILED <name> ..." anywhere at a line start; a line containing
// " PASSED " counts only when PASSED is its second word ("<name> PASSED
// [ 50%]"), and such a line is never also read as "PASSED <name>".
func parseSeaborn(log string, _ *task.Task) StatusMap {
	sm, w := StatusMap{}, WorstCopy{}
	for line := range strings.SplitSeq(log, "\n") {
		first, second, ok := firstTwoFields(line)
		if !ok {
			continue
		}
		switch {
		case strings.HasPrefix(line, string(Failed)):
			w.Set(sm, second, Failed)
		case strings.Contains(line, " PASSED "):
			if second == string(Passed) {
				sm[first] = Passed
			}
		case strings.HasPrefix(line, string(Passed)):
			sm[second] = Passed
		}
	}
	return w.Apply(sm)
}

// sympyFailureKey reads a line the way upstream's findall of
// `(_*) (.*)\.py:(.*) (_*)` does, the pattern meant for the
// "____ path/test_x.py:test_name ____" headers of bin/test's failure report
// (but it also fits warnings, tracebacks and more). No part of the pattern
// matches a newline, so it works line by line, and in one line it matches at
// most once: the earliest start needs the first space, the greedy groups run
// to the last ".py:" and the last space, and nothing after the last space can
// match again. The key it builds, group 2 + ".py:" + group 3, is therefore
// the text between the line's first and last space (U+0020 only), when that
// text contains ".py:". TestSympyFailureKeyIsTheRegexp checks this against
// the pattern itself.
func sympyFailureKey(line string) (string, bool) {
	first, last := strings.IndexByte(line, ' '), strings.LastIndexByte(line, ' ')
	if first < 0 || last <= first {
		return "", false
	}
	key := line[first+1 : last]
	return key, strings.Contains(key, ".py:")
}

// parseSympy is upstream's parse_log_sympy: every failure-report header
// marks "<path>.py:<name>" FAILED, then each stripped line that starts with
// "test_" and ends with " E", " F" or " ok" (bin/test --verbose) marks its
// first word ERROR, FAILED or PASSED.
func parseSympy(log string, _ *task.Task) StatusMap {
	sm, w := StatusMap{}, WorstCopy{}
	for raw := range strings.SplitSeq(log, "\n") {
		if key, ok := sympyFailureKey(raw); ok {
			w.Set(sm, key, Failed)
			// The verbose lines name a test by its function alone; a
			// report header for "<path>.py:test_x" fails "test_x" too.
			if name := key[strings.LastIndex(key, ".py:")+len(".py:"):]; strings.HasPrefix(name, "test_") {
				w.Note(name, Failed)
			}
		}
	}
	for raw := range strings.SplitSeq(log, "\n") {
		line := pyStrip(raw)
		if !strings.HasPrefix(line, "test_") {
			continue
		}
		var st Status
		switch {
		case strings.HasSuffix(line, " E"):
			st = Error
		case strings.HasSuffix(line, " F"):
			st = Failed
		case strings.HasSuffix(line, " ok"):
			st = Passed
		default:
			continue
		}
		w.Set(sm, pyFields(line)[0], st)
	}
	return w.Apply(sm)
}
