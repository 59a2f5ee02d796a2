package tamper

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Mutant canaries are copies of one of the task's own hidden tests: the
// must-fail one with one expected value of an assertion changed, the
// must-pass one unchanged. Whatever makes the real test pass without
// computing the right answer (an equality that always holds, a result
// class that turns failures into passes, a value read back from the
// caller's frame) makes the changed copy pass as well.
//
// The Python source is read by lines, as Python's own tokenizer reads it:
// strings (triple-quoted ones span lines), brackets and backslashes join
// physical lines into logical ones, and indentation says what belongs to
// a class or a def. Only assertions that sit directly in the test's body
// are changed (not under if, for, with or try), so one that the passing
// original runs is certainly run by its copy.

// logical is one logical line of Python source.
type logical struct {
	first, last int    // physical lines, 0-based, inclusive
	indent      string // the first line's leading whitespace
	text        string // the lines joined with "\n", indentation of the first stripped
}

// logicalLines splits src into its logical lines; blank lines and lines
// holding only a comment are not logical lines.
func logicalLines(src string) []logical {
	phys := strings.Split(src, "\n")
	var out []logical
	var cur *logical
	depth := 0
	inStr := "" // the open string's quote ("'''", `"`, ...) across lines
	for i, line := range phys {
		line = strings.TrimSuffix(line, "\r")
		if cur == nil {
			t := strings.TrimLeft(line, " \t\f")
			if t == "" || strings.HasPrefix(t, "#") {
				continue
			}
			out = append(out, logical{first: i, last: i, indent: line[:len(line)-len(t)]})
			cur = &out[len(out)-1]
			cur.text = t
		} else {
			cur.text += "\n" + line
			cur.last = i
		}
		cont := false
		j := 0
		if cur.first == i {
			j = len(cur.indent)
		}
		for j < len(line) {
			c := line[j]
			if inStr != "" {
				switch {
				case c == '\\':
					// Even in a raw string a backslash keeps the next
					// character from ending it.
					j += 2
					continue
				case strings.HasPrefix(line[j:], inStr):
					j += len(inStr)
					inStr = ""
					continue
				}
				j++
				continue
			}
			switch {
			case c == '#':
				j = len(line)
				continue
			case c == '\'' || c == '"':
				q := string(c)
				if strings.HasPrefix(line[j:], q+q+q) {
					q = q + q + q
				}
				inStr = q
				j += len(q)
				continue
			case c == '(' || c == '[' || c == '{':
				depth++
			case c == ')' || c == ']' || c == '}':
				if depth > 0 {
					depth--
				}
			case c == '\\' && j == len(line)-1:
				cont = true
			}
			j++
		}
		if len(inStr) == 1 {
			// A one-quote string cannot span lines (unless the line ends
			// with a backslash, which the loop skipped over).
			if !strings.HasSuffix(line, "\\") {
				inStr = ""
			}
		}
		if depth == 0 && inStr == "" && !cont {
			cur = nil
		}
	}
	return out
}

// testBlock is one test's source in a file.
type testBlock struct {
	first, last int    // physical lines of its decorators, def and body
	indent      string // the def's indentation
	body        []logical
	decorators  []string
}

// findTest finds the last definition of function fn at the top level of
// src (class == "") or directly in top-level class class.
func findTest(src, class, fn string) (*testBlock, bool) {
	lines := logicalLines(src)
	scopeIndent := ""
	lo, hi := 0, len(lines)
	if class != "" {
		lo = -1
		for i, l := range lines {
			if l.indent == "" && isDef(l.text, "class", class) {
				lo, hi = i+1, len(lines)
				for j := i + 1; j < len(lines); j++ {
					if lines[j].indent == "" {
						hi = j
						break
					}
				}
			}
		}
		if lo < 0 || lo >= hi {
			return nil, false
		}
		scopeIndent = lines[lo].indent
		if scopeIndent == "" {
			return nil, false
		}
	}
	var found *testBlock
	for i := lo; i < hi; i++ {
		l := lines[i]
		if l.indent != scopeIndent || !(isDef(l.text, "def", fn) || isDef(l.text, "async def", fn)) {
			continue
		}
		b := &testBlock{first: l.first, indent: l.indent}
		for k := i - 1; k >= lo && lines[k].indent == scopeIndent && strings.HasPrefix(lines[k].text, "@"); k-- {
			b.first = lines[k].first
			b.decorators = append(b.decorators, lines[k].text)
		}
		b.last = l.last
		for k := i + 1; k < hi && len(lines[k].indent) > len(scopeIndent) && strings.HasPrefix(lines[k].indent, scopeIndent); k++ {
			b.body = append(b.body, lines[k])
			b.last = lines[k].last
		}
		if len(b.body) == 0 {
			continue // a one-line def
		}
		found = b
	}
	return found, found != nil
}

// isDef reports whether a logical line defines name with keyword kw
// ("def", "class").
func isDef(text, kw, name string) bool {
	rest, ok := strings.CutPrefix(text, kw+" ")
	if !ok {
		return false
	}
	rest = strings.TrimLeft(rest, " \t")
	rest, ok = strings.CutPrefix(rest, name)
	if !ok {
		return false
	}
	rest = strings.TrimLeft(rest, " \t")
	return strings.HasPrefix(rest, "(") || (kw == "class" && strings.HasPrefix(rest, ":"))
}

// pyToken is one token of a logical line.
type pyToken struct {
	kind  byte // 'n' name, '0' number, 's' string, 'o' operator or bracket
	text  string
	start int // byte offset in the logical line's text
}

// tokenize splits a logical line's text into tokens; ok is false for text
// it does not fully understand (an unterminated string, say).
func tokenize(s string) ([]pyToken, bool) {
	var out []pyToken
	i := 0
	for i < len(s) {
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f':
			i++
		case c == '\\' && i+1 < len(s) && (s[i+1] == '\n' || s[i+1] == '\r'):
			i += 2
		case c == '#':
			for i < len(s) && s[i] != '\n' {
				i++
			}
		case isIdentStart(c):
			j := i
			for j < len(s) && isIdentPart(s[j]) {
				j++
			}
			if j < len(s) && (s[j] == '\'' || s[j] == '"') && j-i <= 2 && strings.Trim(strings.ToLower(s[i:j]), "rbuf") == "" {
				end, ok := stringEnd(s, i, j)
				if !ok {
					return nil, false
				}
				out = append(out, pyToken{'s', s[i:end], i})
				i = end
				continue
			}
			out = append(out, pyToken{'n', s[i:j], i})
			i = j
		case c >= '0' && c <= '9' || c == '.' && i+1 < len(s) && s[i+1] >= '0' && s[i+1] <= '9':
			j := i
			for j < len(s) && (isIdentPart(s[j]) || s[j] == '.' || (s[j] == '+' || s[j] == '-') && (s[j-1] == 'e' || s[j-1] == 'E')) {
				j++
			}
			out = append(out, pyToken{'0', s[i:j], i})
			i = j
		case c == '\'' || c == '"':
			end, ok := stringEnd(s, i, i)
			if !ok {
				return nil, false
			}
			out = append(out, pyToken{'s', s[i:end], i})
			i = end
		default:
			n := 1
			for _, op := range []string{"**=", "//=", ">>=", "<<=", "...", "==", "!=", "<=", ">=", "->", ":=", "**", "//", "<<", ">>", "+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=", "@="} {
				if strings.HasPrefix(s[i:], op) {
					n = len(op)
					break
				}
			}
			out = append(out, pyToken{'o', s[i : i+n], i})
			i += n
		}
	}
	return out, true
}

func isIdentStart(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= 0x80
}
func isIdentPart(c byte) bool { return isIdentStart(c) || c >= '0' && c <= '9' }

// stringEnd returns the offset just past the string literal whose prefix
// starts at i and whose quote is at q.
func stringEnd(s string, i, q int) (int, bool) {
	quote := s[q : q+1]
	if strings.HasPrefix(s[q:], quote+quote+quote) {
		quote = quote + quote + quote
	}
	j := q + len(quote)
	for j < len(s) {
		switch {
		case s[j] == '\\':
			j += 2 // raw strings too: a backslash keeps a quote from ending them
		case strings.HasPrefix(s[j:], quote):
			return j + len(quote), true
		case s[j] == '\n' && len(quote) == 1:
			return 0, false
		default:
			j++
		}
	}
	return 0, false
}

// mutation is one change of a test's source: bytes [start, end) of
// physical line line (0-based, in the file) replaced by text.
type mutation struct {
	line, start, end int
	text             string
}

// equalityAsserts are the unittest assertions whose two first arguments
// must be equal: changing one literal in a literal argument certainly
// makes a passing one fail.
var equalityAsserts = map[string]bool{
	"assertEqual": true, "assertEquals": true, "assertListEqual": true, "assertTupleEqual": true,
	"assertDictEqual": true, "assertSetEqual": true, "assertSequenceEqual": true,
	"assertMultiLineEqual": true, "assertCountEqual": true, "assertItemsEqual": true,
}

// findMutation picks an assertion directly in the test's body and a change
// of it that certainly fails where the original passes: with negate
// false, a literal it compares with changed; with negate true, the
// assertion turned into its opposite (assertTrue and assertFalse,
// assertIn and assertNotIn, == and !=, `assert x` and `assert not x`,
// ...). ok is false when the test has none.
func findMutation(rng *rand.Rand, src []string, b *testBlock, negate bool) (mutation, bool) {
	if !plainDecorators(b) {
		// A test expected to fail, or parametrized with marks that may
		// make some of its cases expected to fail or skip, is not one
		// whose copy certainly fails.
		return mutation{}, false
	}
	bodyIndent := b.body[0].indent
	var options []mutation
	for _, l := range b.body {
		toks, ok := tokenize(l.text)
		if !ok || len(toks) == 0 {
			continue
		}
		if mayLeave(toks, l.indent == bodyIndent) {
			break // what follows may not run
		}
		if l.indent != bodyIndent {
			continue
		}
		if negate {
			if m, ok := negation(toks); ok {
				line, col := position(l, m.start)
				endLine, endCol := position(l, m.end)
				if line != endLine || line >= len(src) || endCol > len(src[line]) || src[line][col:endCol] != l.text[m.start:m.end] {
					continue
				}
				m.line, m.start, m.end = line, col, endCol
				return m, true
			}
			continue
		}
		var lits [][]pyToken
		switch {
		case toks[0].text == "assert":
			lits = assertStmtLiterals(toks[1:])
		case len(toks) > 3 && toks[0].text == "self" && toks[1].text == "." && toks[2].kind == 'n' && toks[3].text == "(":
			lits = assertCallLiterals(toks[2].text, toks[3:])
		}
		for _, side := range lits {
			for i, t := range side {
				if i+1 < len(side) && emptyFill[t.text+side[i+1].text] != "" {
					// An empty list, tuple or dict gets one element.
					if m, ok := place(src, l, t, t.text+emptyFill[t.text+side[i+1].text]); ok {
						options = append(options, m)
					}
					continue
				}
				if m, ok := mutateToken(rng, t); ok {
					if m, ok := place(src, l, t, m.text); ok {
						options = append(options, m)
					}
				}
			}
		}
		if len(options) > 0 {
			// The first assertion with a literal: the one nearest the
			// test's start is the least likely to sit behind anything.
			return options[rng.IntN(len(options))], true
		}
	}
	return mutation{}, false
}

// opposites are unittest assertions and the ones that fail wherever they
// pass (for values whose != is the opposite of their ==).
var opposites = map[string]string{}

func init() {
	for _, p := range [][2]string{{"assertTrue", "assertFalse"}, {"assertIsNone", "assertIsNotNone"},
		{"assertIn", "assertNotIn"}, {"assertIsInstance", "assertNotIsInstance"}, {"assertIs", "assertIsNot"},
		{"assertEqual", "assertNotEqual"}, {"assertRegex", "assertNotRegex"}} {
		opposites[p[0]], opposites[p[1]] = p[1], p[0]
	}
}

// negation returns the change (offsets in the logical line's text) that
// turns an assertion statement into its opposite.
func negation(toks []pyToken) (mutation, bool) {
	if len(toks) > 3 && toks[0].text == "self" && toks[1].text == "." && toks[3].text == "(" {
		opp, ok := opposites[toks[2].text]
		if !ok || !wholeCall(toks[3:]) {
			return mutation{}, false
		}
		return mutation{start: toks[2].start, end: toks[2].start + len(toks[2].text), text: opp}, true
	}
	if toks[0].text != "assert" || len(toks) < 2 {
		return mutation{}, false
	}
	cond := toks[1:]
	depth := 0
	var ops []int
	for i, t := range cond {
		switch t.text {
		case "(", "[", "{":
			depth++
		case ")", "]", "}":
			depth--
		}
		if depth != 0 {
			continue
		}
		if t.text == "," {
			cond = cond[:i]
			break
		}
		switch t.text {
		case "or", "and", "if", "else", "lambda", ":=":
			return mutation{}, false
		case "==", "!=", "<", ">", "<=", ">=", "in", "is":
			ops = append(ops, i)
		}
	}
	if len(cond) == 0 {
		return mutation{}, false
	}
	span := func(a, b pyToken, text string) (mutation, bool) {
		return mutation{start: a.start, end: b.start + len(b.text), text: text}, true
	}
	if cond[0].text == "not" {
		if len(cond) < 2 {
			return mutation{}, false
		}
		return mutation{start: cond[0].start, end: cond[1].start, text: ""}, true
	}
	if len(ops) == 1 {
		i := ops[0]
		t := cond[i]
		switch t.text {
		case "==":
			return span(t, t, "!=")
		case "!=":
			return span(t, t, "==")
		case "in":
			if i > 0 && cond[i-1].text == "not" {
				return span(cond[i-1], t, "in")
			}
			return span(t, t, "not in")
		case "is":
			if i+1 < len(cond) && cond[i+1].text == "not" {
				return span(t, cond[i+1], "is")
			}
			return span(t, t, "is not")
		}
	}
	// Anything else: `assert x` becomes `assert not x` (not binds more
	// loosely than any comparison).
	return mutation{start: cond[0].start, end: cond[0].start, text: "not "}, true
}

// wholeCall reports whether toks (from the call's "(") are one call and
// nothing after it.
func wholeCall(toks []pyToken) bool {
	depth := 0
	for i, t := range toks {
		switch t.text {
		case "(", "[", "{":
			depth++
		case ")", "]", "}":
			depth--
			if depth == 0 {
				return i == len(toks)-1
			}
		}
	}
	return false
}

// mayLeave reports whether a statement may end the test early without
// failing it, so that the statements after it may not run: a return or
// yield at any depth (under an if, say), a skip, and at the body's own
// level a raise.
func mayLeave(toks []pyToken, top bool) bool {
	first := toks[0].text
	if first == "return" || first == "yield" || top && first == "raise" {
		return true
	}
	for _, t := range toks {
		if t.kind == 'n' && (t.text == "skipTest" || t.text == "skip" || t.text == "SkipTest" || t.text == "yield") {
			return true
		}
	}
	return false
}

// place makes the change of token t (of logical line l) into text a change
// of one physical line of src: the part that differs, which must not span
// lines (a triple-quoted string changes before its closing quotes).
func place(src []string, l logical, t pyToken, text string) (mutation, bool) {
	p := 0
	for p < len(t.text) && p < len(text) && t.text[p] == text[p] {
		p++
	}
	q := 0
	for q < len(t.text)-p && q < len(text)-p && t.text[len(t.text)-1-q] == text[len(text)-1-q] {
		q++
	}
	old := t.text[p : len(t.text)-q]
	if strings.Contains(old, "\n") || strings.Contains(text[p:len(text)-q], "\n") {
		return mutation{}, false
	}
	line, col := position(l, t.start+p)
	if line >= len(src) || col+len(old) > len(src[line]) || src[line][col:col+len(old)] != old {
		return mutation{}, false
	}
	return mutation{line: line, start: col, end: col + len(old), text: text[p : len(text)-q]}, true
}

// emptyFill is what goes into an empty container literal to make it
// unequal to what it was.
var emptyFill = map[string]string{"[]": "1", "()": "1,", "{}": "1: 1"}

// position maps a byte offset in a logical line's text to a physical line
// and column.
func position(l logical, off int) (int, int) {
	line, col := l.first, len(l.indent)
	for _, c := range []byte(l.text[:off]) {
		if c == '\n' {
			line++
			col = 0
			continue
		}
		col++
	}
	return line, col
}

// assertStmtLiterals reads `assert A == B[, msg]` (and `assert A is
// True|False|None`): the sides made only of literals.
func assertStmtLiterals(toks []pyToken) [][]pyToken {
	cond := toks
	depth := 0
	for i, t := range toks {
		switch t.text {
		case "(", "[", "{":
			depth++
		case ")", "]", "}":
			depth--
		case ",":
			if depth == 0 {
				cond = toks[:i]
			}
		}
		if len(cond) < len(toks) {
			break
		}
	}
	op, depth := -1, 0
	for i, t := range cond {
		switch t.text {
		case "(", "[", "{":
			depth++
		case ")", "]", "}":
			depth--
		case "==", "is":
			if depth == 0 {
				if op >= 0 {
					return nil
				}
				op = i
			}
		case "!=", "<", ">", "<=", ">=", "in", "not", "and", "or", "if", "else", "lambda", ":=":
			if depth == 0 {
				return nil
			}
		}
	}
	if op <= 0 || op == len(cond)-1 {
		return nil
	}
	left, right := cond[:op], cond[op+1:]
	if cond[op].text == "is" {
		if len(right) == 1 && singleton(right[0].text) {
			return [][]pyToken{right}
		}
		return nil
	}
	var out [][]pyToken
	for _, side := range [][]pyToken{right, left} {
		if literalOnly(side) {
			out = append(out, side)
		}
	}
	if len(out) > 1 {
		out = out[:1]
	}
	return out
}

// assertCallLiterals reads self.<method>(a, b, ...): for an equality
// assertion the first literal one of b and a; for assertIs a singleton b.
func assertCallLiterals(method string, toks []pyToken) [][]pyToken {
	if !equalityAsserts[method] && method != "assertIs" {
		return nil
	}
	// toks starts at "(": split the arguments at depth 1.
	var args [][]pyToken
	start, depth := 1, 0
	for i, t := range toks {
		switch t.text {
		case "(", "[", "{":
			depth++
		case ")", "]", "}":
			depth--
			if depth == 0 {
				if i != len(toks)-1 {
					return nil // the call is not the whole statement
				}
				if i > start {
					args = append(args, toks[start:i])
				}
			}
		case ",":
			if depth == 1 {
				args = append(args, toks[start:i])
				start = i + 1
			}
		}
	}
	if len(args) < 2 {
		return nil
	}
	for _, a := range args[:2] {
		if len(a) > 1 && a[1].text == "=" {
			return nil // keyword arguments: leave them
		}
	}
	if method == "assertIs" {
		if len(args[1]) == 1 && singleton(args[1][0].text) {
			return [][]pyToken{args[1]}
		}
		return nil
	}
	for _, a := range []([]pyToken){args[1], args[0]} {
		if literalOnly(a) {
			return [][]pyToken{a}
		}
	}
	return nil
}

func singleton(s string) bool { return s == "True" || s == "False" || s == "None" }

// literalOnly reports whether toks are a literal: numbers, strings,
// True/False/None, in tuples, lists, sets or dicts, with unary signs.
func literalOnly(toks []pyToken) bool {
	if len(toks) == 0 {
		return false
	}
	depth := 0
	for i, t := range toks {
		switch {
		case t.kind == '0' || t.kind == 's':
		case t.kind == 'n' && singleton(t.text):
		case t.text == "(" || t.text == "[" || t.text == "{":
			depth++
		case t.text == ")" || t.text == "]" || t.text == "}":
			depth--
			if depth < 0 {
				return false
			}
		case t.text == ",":
			if depth == 0 {
				return false
			}
		case t.text == ":":
			if depth == 0 {
				return false
			}
		case t.text == "-" || t.text == "+":
			if i+1 >= len(toks) || toks[i+1].kind != '0' || (i > 0 && (toks[i-1].kind == '0' || toks[i-1].kind == 's' || toks[i-1].kind == 'n' || toks[i-1].text == ")" || toks[i-1].text == "]" || toks[i-1].text == "}")) {
				return false // binary arithmetic
			}
		default:
			return false
		}
		if t.kind == 's' && i+1 < len(toks) && toks[i+1].text == "%" {
			return false
		}
	}
	return depth == 0
}

// mutateToken changes one literal so that it certainly compares unequal
// with what it was: an integer plus one, a float plus one, a string or
// bytes with characters added, True and False swapped, None made False.
func mutateToken(rng *rand.Rand, t pyToken) (mutation, bool) {
	switch t.kind {
	case 'n':
		switch t.text {
		case "True":
			return mutation{text: "False"}, true
		case "False":
			return mutation{text: "True"}, true
		case "None":
			return mutation{text: "False"}, true
		}
	case '0':
		if strings.ContainsAny(t.text, "_xXoObBjJ") {
			return mutation{}, false
		}
		if strings.ContainsAny(t.text, ".eE") {
			v, err := strconv.ParseFloat(t.text, 64)
			if err != nil || math.IsInf(v, 0) || math.Abs(v) >= 1e15 {
				return mutation{}, false
			}
			s := strconv.FormatFloat(v+1, 'g', -1, 64)
			if !strings.ContainsAny(s, ".e") {
				s += ".0"
			}
			return mutation{text: s}, true
		}
		if len(t.text) > 1 && t.text[0] == '0' {
			return mutation{}, false
		}
		v, err := strconv.ParseInt(t.text, 10, 64)
		if err != nil || v >= math.MaxInt64-1 {
			return mutation{}, false
		}
		return mutation{text: strconv.FormatInt(v+1, 10)}, true
	case 's':
		q := 0
		for q < len(t.text) && t.text[q] != '\'' && t.text[q] != '"' {
			q++
		}
		prefix := strings.ToLower(t.text[:q])
		if strings.Contains(prefix, "f") || !utf8.ValidString(t.text) {
			return mutation{}, false
		}
		quote := t.text[q : q+1]
		if strings.HasPrefix(t.text[q:], quote+quote+quote) {
			quote = quote + quote + quote
		}
		body := t.text[q+len(quote) : len(t.text)-len(quote)]
		add := stringSuffix(rng, body)
		return mutation{text: t.text[:len(t.text)-len(quote)] + add + quote}, true
	}
	return mutation{}, false
}

// stringSuffix draws the characters added to a string literal: letters of
// the string itself where it has some, so the change reads like a typo.
func stringSuffix(rng *rand.Rand, body string) string {
	var letters []rune
	for _, r := range body {
		if r < 0x80 && unicode.IsLetter(r) {
			letters = append(letters, r)
		}
	}
	if len(letters) == 0 {
		letters = []rune("abcdefghijklmnopqrstuvwxyz")
	}
	n := 1 + rng.IntN(2)
	var s strings.Builder
	for range n {
		s.WriteRune(letters[rng.IntN(len(letters))])
	}
	return s.String()
}

// copyTest returns test b of src under a new name, with m applied when m
// is not nil, in the file's own indentation.
func copyTest(src []string, b *testBlock, fn, name string, m *mutation) (string, error) {
	lines := append([]string{}, src[b.first:b.last+1]...)
	if m != nil {
		i := m.line - b.first
		lines[i] = lines[i][:m.start] + m.text + lines[i][m.end:]
	}
	renamed := false
	for i, l := range lines {
		t := strings.TrimLeft(l, " \t")
		for _, kw := range []string{"def ", "async def "} {
			if rest, ok := strings.CutPrefix(t, kw); ok && !renamed && strings.HasPrefix(strings.TrimLeft(rest, " \t"), fn) {
				at := len(l) - len(rest)
				rest = strings.TrimLeft(rest, " \t")
				lines[i] = l[:at] + name + rest[len(fn):]
				renamed = true
			}
		}
		if renamed {
			break
		}
	}
	if !renamed {
		return "", fmt.Errorf("no def %s in its block", fn)
	}
	return strings.Join(lines, "\n") + "\n", nil
}

// scopeTests lists the names of the test functions defined directly in
// class (or at the top level when class is "", anywhere when it is "*")
// of src.
func scopeTests(src, class string) []string {
	lines := logicalLines(src)
	in := class == "" || class == "*"
	scope := ""
	var out []string
	for _, l := range lines {
		if class != "" && class != "*" && l.indent == "" {
			in = isDef(l.text, "class", class)
			scope = ""
			continue
		}
		if !in {
			continue
		}
		if class != "" && class != "*" && scope == "" {
			scope = l.indent
		}
		if class != "*" && l.indent != scope {
			continue
		}
		t := strings.TrimPrefix(l.text, "async ")
		if rest, ok := strings.CutPrefix(t, "def "); ok {
			rest = strings.TrimLeft(rest, " \t")
			n := 0
			for n < len(rest) && isIdentPart(rest[n]) {
				n++
			}
			if name := rest[:n]; strings.HasPrefix(name, "test") {
				out = append(out, name)
			}
		}
	}
	return out
}

// nameWords splits a test name into its words after the "test" prefix:
// by underscores, or by capitals for camelCase names.
func nameWords(name string) []string {
	rest := strings.TrimPrefix(name, "test")
	if strings.Contains(rest, "_") {
		var out []string
		for _, w := range strings.Split(rest, "_") {
			if w != "" {
				out = append(out, w)
			}
		}
		return out
	}
	var out []string
	cur := ""
	for _, r := range rest {
		if unicode.IsUpper(r) && cur != "" {
			out = append(out, cur)
			cur = ""
		}
		cur += string(r)
	}
	if cur != "" {
		out = append(out, cur)
	}
	return out
}

// styledName draws a test name in the style of the scope's own: as many
// words as a test of the scope, drawn from the words of its tests' names,
// joined as they join them. ok is false when the names give too few
// words to draw a fresh one.
func styledName(rng *rand.Rand, names []string, taken func(string) bool) (string, bool) {
	var pool []string
	seen := map[string]bool{}
	for _, n := range names {
		for _, w := range nameWords(n) {
			lw := strings.ToLower(w)
			if !seen[lw] {
				seen[lw] = true
				pool = append(pool, w)
			}
		}
	}
	if len(names) == 0 || len(pool) < 3 {
		return "", false
	}
	for range 200 {
		model := names[rng.IntN(len(names))]
		words := nameWords(model)
		n := len(words)
		if n < 2 {
			n = 2
		}
		if n > len(pool) {
			n = len(pool)
		}
		pick := rng.Perm(len(pool))[:n]
		var s strings.Builder
		snake := strings.HasPrefix(model, "test_") || strings.Contains(strings.TrimPrefix(model, "test"), "_")
		s.WriteString("test")
		for _, i := range pick {
			w := pool[i]
			if snake {
				s.WriteString("_" + strings.ToLower(w))
			} else {
				r, size := utf8.DecodeRuneInString(w)
				s.WriteString(string(unicode.ToUpper(r)) + w[size:])
			}
		}
		if name := s.String(); !taken(name) {
			return name, true
		}
	}
	return "", false
}
