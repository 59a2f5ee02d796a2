package swebench

import (
	"strings"

	"github.com/swerve-dev/swerve/internal/lazyre"
)

// pytestStatusWords start the result lines of pytest's -rA summary.
var pytestStatusWords = []string{"PASSED ", "FAILED ", "ERROR ", "SKIPPED ", "XFAIL ", "XPASS "}

// unittestLabel is a line of verbose unittest output that names a test
// whose result follows on the next line under its docstring:
// "test_x (mod.Class.test_x)".
var unittestLabel = lazyre.New(`^\w+ \([\w.]+\)$`)

// Copies lists, for each test sm names, the result lines of section filed
// under it, each as the label that ran it: a unittest-style "<name> ...
// <result>" line (django, unittest, sympy's runner) or a pytest summary
// line "<STATUS> <name>[ - <message>]". The label is the name itself, or,
// where verbose unittest output prints a docstring's first line in place
// of the name, the "test_x (mod.Class.test_x)" line just before it. A test
// with no such line (a parser that reads another layout) has one copy,
// itself.
//
// The harness keys results by name, so tests that share a docstring (an
// inherited test has one copy per class) are one entry of sm; the copies
// say how many ran, so that a run cannot hide one of them behind the
// others, and their labels say which are canaries.
func Copies(section string, sm StatusMap) map[string][]string {
	out := make(map[string][]string, len(sm))
	label := ""
	for line := range strings.SplitSeq(section, "\n") {
		line = strings.TrimSpace(line)
		name := ""
		if before, _, ok := strings.Cut(line, " ... "); ok {
			name = strings.TrimSpace(before)
		} else if strings.HasSuffix(line, " ...") {
			name = strings.TrimSpace(strings.TrimSuffix(line, " ..."))
		} else {
			for _, w := range pytestStatusWords {
				if rest, ok := strings.CutPrefix(line, w); ok {
					name, _, _ = strings.Cut(rest, " - ")
					break
				}
			}
		}
		if name == "" {
			if unittestLabel.MatchString(line) {
				label = line
			} else if line != "" {
				label = ""
			}
			continue
		}
		if _, ok := sm[name]; ok {
			l := name
			if label != "" && label != name {
				l = label
			}
			out[name] = append(out[name], l)
		}
		label = ""
	}
	for name := range sm {
		if len(out[name]) == 0 {
			out[name] = []string{name}
		}
	}
	return out
}
