package swebench

import "strings"

// pytestStatusWords start the result lines of pytest's -rA summary.
var pytestStatusWords = []string{"PASSED ", "FAILED ", "ERROR ", "SKIPPED ", "XFAIL ", "XPASS "}

// Copies counts, for each test sm names, the result lines of section that
// name it: a unittest-style "<name> ... <result>" line (django, unittest,
// sympy's runner) or a pytest summary line "<STATUS> <name>[ - <message>]".
// A test with no such line (a parser that reads another layout) counts
// once. The harness keys results by name, so tests that share a name
// (django prints a docstring's first line in place of the name, and an
// inherited test has one copy per class) are one entry of sm; the copies
// say how many ran, so that a run cannot hide one of them behind the
// others.
func Copies(section string, sm StatusMap) map[string]int {
	out := make(map[string]int, len(sm))
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
		if _, ok := sm[name]; ok && name != "" {
			out[name]++
		}
	}
	for name := range sm {
		if out[name] == 0 {
			out[name] = 1
		}
	}
	return out
}
