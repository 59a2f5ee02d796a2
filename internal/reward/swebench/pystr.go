package swebench

import (
	"strings"
	"unicode"
)

// Helpers that reproduce Python's str methods where Go's differ, so parsers
// split and trim exactly as the official (Python) ones do.

// pyIsSpace is Python's str.isspace for one rune: Unicode white space plus
// the ASCII separators \x1c-\x1f, which Go's unicode.IsSpace leaves out.
func pyIsSpace(r rune) bool {
	return unicode.IsSpace(r) || (r >= 0x1c && r <= 0x1f)
}

// pyStrip is Python's str.strip() with no argument.
func pyStrip(s string) string { return strings.TrimFunc(s, pyIsSpace) }

// pyLStrip is Python's str.lstrip() with no argument.
func pyLStrip(s string) string { return strings.TrimLeftFunc(s, pyIsSpace) }

// pyFields is Python's str.split() with no argument.
func pyFields(s string) []string { return strings.FieldsFunc(s, pyIsSpace) }

// pyBefore returns s up to the first sep, or all of s: Python's
// s.split(sep)[0].
func pyBefore(s, sep string) string {
	before, _, _ := strings.Cut(s, sep)
	return before
}
