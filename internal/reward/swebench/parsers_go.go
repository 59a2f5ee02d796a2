package swebench

import (
	"regexp"
	"strings"

	"github.com/swerve-dev/swerve/internal/lazyre"
	"github.com/swerve-dev/swerve/internal/task"
)

// This file holds the parser for `go test -v` logs, and the helpers every
// non-Python parser (parsers_{go,rust,java,php,ruby,javascript,c}.go) shares to read
// logs the way the official Python parsers do.

func init() { RegisterParser("parse_log_gotest", parseGoTest) }

var goTestResult = mlLazy(`^--- (PASS|FAIL|SKIP): (.+) \((.+)\)$`)

// parseGoTest reads the "--- PASS: TestName (0.00s)" lines go test -v prints
// for every test and subtest.
func parseGoTest(log string, _ *task.Task) StatusMap {
	sm, w := StatusMap{}, WorstCopy{}
	for _, line := range strings.Split(log, "\n") {
		m := goTestResult.FindStringSubmatch(pyStrip(line))
		if m == nil {
			continue
		}
		switch m[1] {
		case "PASS":
			w.Set(sm, m[2], Passed)
		case "FAIL":
			w.Set(sm, m[2], Failed)
		case "SKIP":
			w.Set(sm, m[2], Skipped)
		}
	}
	return w.Apply(sm)
}

// Python's re module, given a str pattern, reads \s, \d and \w as Unicode
// classes, where RE2 reads them as ASCII ones. These are the Python classes
// written out for RE2 (Python's \s is exactly the set str.isspace accepts).
const (
	mlSpaceSet = `\t-\r\x1c-\x20\x{85}\x{a0}\x{1680}\x{2000}-\x{200a}\x{2028}\x{2029}\x{202f}\x{205f}\x{3000}`
	mlWordSet  = `\p{L}\p{N}_`
	mlDigitSet = `\p{Nd}`
)

// mlRegexp compiles a pattern written in the syntax both Python's re and RE2
// accept, giving \s \S \d \D \w \W their Python (Unicode) meaning. Negated
// classes inside brackets and the escapes RE2 lacks or reads differently
// (\b \B \Z) are refused: those patterns are spelled out by hand instead.
// Without (?m), RE2's $ is Python's \Z; the parsers only use $ on single
// lines, where Python's $ means the same.
func mlRegexp(pat string) *regexp.Regexp {
	return regexp.MustCompile(mlTranslate(pat))
}

// mlLazy is mlRegexp compiled on first use, for package-level expressions.
func mlLazy(pat string) *lazyre.Regexp {
	return lazyre.Func(func() *regexp.Regexp { return mlRegexp(pat) })
}

// mlTranslate rewrites pat's Python escapes and classes for RE2 (see
// mlRegexp).
func mlTranslate(pat string) string {
	var b strings.Builder
	inClass := false
	for i := 0; i < len(pat); i++ {
		c := pat[i]
		switch {
		case c == '\\' && i+1 < len(pat):
			i++
			e := pat[i]
			switch e {
			case 's', 'd', 'w':
				set := map[byte]string{'s': mlSpaceSet, 'd': mlDigitSet, 'w': mlWordSet}[e]
				if inClass {
					b.WriteString(set)
				} else {
					b.WriteString("[" + set + "]")
				}
			case 'S', 'D', 'W':
				if inClass {
					panic("mlRegexp: negated class escape inside brackets: " + pat)
				}
				set := map[byte]string{'S': mlSpaceSet, 'D': mlDigitSet, 'W': mlWordSet}[e]
				b.WriteString("[^" + set + "]")
			case 'b', 'B', 'Z':
				panic("mlRegexp: escape with no RE2 equivalent: " + pat)
			default:
				b.WriteByte('\\')
				b.WriteByte(e)
			}
		case c == '[' && !inClass:
			inClass = true
			b.WriteByte(c)
			// A ] right after [ or [^ is a literal in both dialects.
			if i+1 < len(pat) && pat[i+1] == '^' {
				i++
				b.WriteByte('^')
			}
			if i+1 < len(pat) && pat[i+1] == ']' {
				i++
				b.WriteString(`\]`)
			}
		case c == ']' && inClass:
			inClass = false
			b.WriteByte(c)
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// mlLines is Python's log.split("\n").
func mlLines(log string) []string { return strings.Split(log, "\n") }

// mlRStrip is Python's str.rstrip() with no argument.
func mlRStrip(s string) string { return strings.TrimRightFunc(s, pyIsSpace) }

// mlIndent is Python's len(line) - len(line.lstrip()): the number of
// leading white-space characters (code points, not bytes).
func mlIndent(line string) int {
	n := 0
	for _, r := range line {
		if !pyIsSpace(r) {
			break
		}
		n++
	}
	return n
}

// mlAnsiRe is swebench.utils.ansi_escape's pattern (ESC plus one
// Fe byte, or a CSI sequence); RE2 reads it as Python does.
var mlAnsiRe = lazyre.New(`\x1b(?:[@-Z\\-_]|\[[0-?]*[ -/]*[@-~])`)

// mlAnsiEscape is swebench.utils.ansi_escape: it deletes ANSI escape
// sequences.
func mlAnsiEscape(s string) string { return mlAnsiRe.ReplaceAllString(s, "") }
