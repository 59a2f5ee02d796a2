package tamper

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"

	"github.com/swerve-dev/swerve/internal/task"
)

// Mutant canaries for `cargo test` (parse_log_cargo). A listed test
// ("module::path::name", or "name") is found as a `#[test]` (or
// `#[tokio::test]`) function of that name defined once in one .rs file of
// the test patch, and copied next to itself (so in its own module, under
// the same path) under a name in the file's snake_case style: once with
// one assertion directly in its body changed, once as it is. The change is
// a literal argument of assert_eq! or assert_ne! (an integer one step
// towards zero, keeping its suffix; a float plus one; a string with
// letters added; true and false swapped), else assert_eq! and assert_ne!
// swapped or assert!(c) made assert!(!(c)). Statements after a `return`
// are not read. Names are checked against the whole file (a module of the
// crate lives in one file, and two functions of one name would not
// compile) and must contain one of the command's test filters; a command
// with --exact or --skip gets none. As for Go, the whole file is computed
// here and written by a shell injector.

const frameworkRust = "cargo"

// rustCanaries says whether graders get Rust canaries. Not yet: libtest
// runs a binary's tests in parallel threads, so a copy runs beside its
// original and can race it for a fixed resource (tokio-6838's test binds
// the abstract socket "\0aaa"; nushell's tests share playground
// directories by name), failing an honest run; and no cargo run could
// prove the honest verdicts here (no crates registry). The planner is
// tested (TestRustCanariesMultilingual turns it on through ExtraCanariesEnv).

// rsSharedResource reports whether a test's text names something a copy
// running beside it would contend for: sockets, ports, fixed paths,
// environment variables, the working directory, nushell playgrounds.
func rsSharedResource(body string) bool {
	for _, w := range []string{"bind(", "connect(", "Listener", "Socket", "Playground::", "set_var", "remove_var",
		"set_current_dir", "\"/tmp", "\"127.0.0.1", "\"localhost", "\"0.0.0.0", "\"\\0"} {
		if strings.Contains(body, w) {
			return true
		}
	}
	return false
}

// cargoFilters reads the test name filters of a cargo test command; ok is
// false when it is not one cargo test command whose filters can be
// matched by substring.
func cargoFilters(cmd string) ([]string, bool) {
	words := shellWords(cmd)
	at := -1
	for i := 0; i+1 < len(words); i++ {
		if words[i] == "cargo" && words[i+1] == "test" {
			if at >= 0 {
				return nil, false
			}
			at = i + 2
		}
	}
	if at < 0 {
		return nil, false
	}
	withValue := map[string]bool{"-p": true, "--package": true, "--test": true, "--features": true, "-F": true,
		"--bin": true, "--example": true, "--bench": true, "--target": true, "--manifest-path": true, "-j": true,
		"--jobs": true, "--profile": true, "--target-dir": true, "--exclude": true, "--color": true, "--message-format": true,
		"--test-threads": true, "--format": true, "-Z": true, "--config": true}
	var filters []string
	afterDash := false
	for i := at; i < len(words); i++ {
		w := words[i]
		if w == "|" || w == "&&" || w == ";" || w == "||" || w == ")" {
			break
		}
		switch {
		case w == "--" && !afterDash:
			afterDash = true
		case w == "--exact" || w == "--skip" || strings.HasPrefix(w, "--skip=") || w == "--include-ignored" || w == "--ignored":
			return nil, false
		case strings.HasPrefix(w, "-"):
			if withValue[w] {
				i++
			}
		default:
			filters = append(filters, w)
		}
	}
	return filters, true
}

// rsFn is one test function found in a Rust file.
type rsFn struct {
	start, end int // bytes: its first attribute to its closing brace (inclusive)
	nameAt     int // the name's offset
	bodyOpen   int // the body's "{"
	name       string
	attrs      []string
}

// rsScan walks Rust source, calling visit for each byte outside comments,
// strings and character literals with the bracket depth before it; it
// returns false when the source is not understood (an unterminated
// string or comment).
func rsScan(src string, visit func(i, depth int) bool) bool {
	depth := 0
	for i := 0; i < len(src); {
		c := src[i]
		switch {
		case strings.HasPrefix(src[i:], "//"):
			j := strings.IndexByte(src[i:], '\n')
			if j < 0 {
				return true
			}
			i += j
			continue
		case strings.HasPrefix(src[i:], "/*"):
			n, j := 1, i+2
			for j < len(src) && n > 0 {
				switch {
				case strings.HasPrefix(src[j:], "/*"):
					n++
					j += 2
				case strings.HasPrefix(src[j:], "*/"):
					n--
					j += 2
				default:
					j++
				}
			}
			if n > 0 {
				return false
			}
			i = j
			continue
		}
		if end, ok := rsLiteralEnd(src, i); ok {
			if end < 0 {
				return false
			}
			i = end
			continue
		}
		if !visit(i, depth) {
			return true
		}
		switch c {
		case '(', '[', '{':
			depth++
		case ')', ']', '}':
			depth--
		}
		i++
	}
	return true
}

// rsLiteralEnd: when a string, raw string, byte string or character
// literal starts at i, the offset just past it (-1 when it does not end)
// and true.
func rsLiteralEnd(src string, i int) (int, bool) {
	if i > 0 && isIdentPart(src[i-1]) {
		return 0, false
	}
	j := i
	if j < len(src) && src[j] == 'b' {
		j++
	}
	if j < len(src) && src[j] == 'r' {
		k := j + 1
		for k < len(src) && src[k] == '#' {
			k++
		}
		if k < len(src) && src[k] == '"' {
			closing := "\"" + strings.Repeat("#", k-j-1)
			e := strings.Index(src[k+1:], closing)
			if e < 0 {
				return -1, true
			}
			return k + 1 + e + len(closing), true
		}
		return 0, false
	}
	if j < len(src) && src[j] == '"' {
		for k := j + 1; k < len(src); k++ {
			switch src[k] {
			case '\\':
				k++
			case '"':
				return k + 1, true
			}
		}
		return -1, true
	}
	if j < len(src) && src[j] == '\'' {
		// A character literal ('a', '\n', '\u{1F600}'), not a lifetime.
		if j+2 < len(src) && src[j+1] == '\\' {
			e := strings.IndexByte(src[j+2:], '\'')
			if e < 0 || e > 10 {
				return -1, true
			}
			return j + 2 + e + 1, true
		}
		r := []rune(src[j+1 : min(len(src), j+6)])
		if len(r) >= 2 && r[1] == '\'' {
			return j + 1 + len(string(r[0])) + 1, true
		}
		return 0, false
	}
	return 0, false
}

// rsTests finds the test functions of src: `fn name(` preceded by outer
// attributes among which one is a test attribute.
func rsTests(src string) ([]rsFn, bool) {
	type tok struct{ i, depth int }
	var toks []tok // offsets of bytes outside literals/comments, with depth
	ok := rsScan(src, func(i, depth int) bool {
		toks = append(toks, tok{i, depth})
		return true
	})
	if !ok {
		return nil, false
	}
	var out []rsFn
	for k, t := range toks {
		if !strings.HasPrefix(src[t.i:], "fn ") || (t.i > 0 && isIdentPart(src[t.i-1])) {
			continue
		}
		// The name.
		p := t.i + 3
		for p < len(src) && src[p] == ' ' {
			p++
		}
		q := p
		for q < len(src) && isIdentPart(src[q]) {
			q++
		}
		if q == p || q >= len(src) || src[q] != '(' {
			continue
		}
		// The body's "{": the first brace at this depth after the name.
		open := -1
		for _, u := range toks[k:] {
			if u.i > q && u.depth == t.depth && src[u.i] == '{' {
				open = u.i
				break
			}
			if u.i > q && u.depth == t.depth && src[u.i] == ';' {
				break
			}
		}
		if open < 0 {
			continue
		}
		closeAt := -1
		for _, u := range toks {
			if u.i > open && u.depth == t.depth+1 && src[u.i] == '}' {
				closeAt = u.i
				break
			}
		}
		if closeAt < 0 {
			continue
		}
		// Attributes and qualifiers before fn, line by line upwards.
		lineStart := strings.LastIndexByte(src[:t.i], '\n') + 1
		head := strings.TrimSpace(src[lineStart:t.i])
		if head != "" && head != "async" && head != "pub" && head != "pub async" {
			continue
		}
		start := lineStart
		var attrs []string
		for start > 0 {
			prev := strings.LastIndexByte(src[:start-1], '\n') + 1
			l := strings.TrimSpace(src[prev : start-1])
			if !strings.HasPrefix(l, "#[") || !strings.HasSuffix(l, "]") {
				break
			}
			attrs = append(attrs, l)
			start = prev
		}
		out = append(out, rsFn{start: start, end: closeAt, nameAt: p, bodyOpen: open, name: src[p:q], attrs: attrs})
	}
	return out, true
}

// rsPlainTest reports whether a test's attributes make it a test that runs
// and passes by returning: #[test] or #[tokio::test(...)], with nothing
// but cfg, allow or doc attributes beside it.
func rsPlainTest(f rsFn) bool {
	test := false
	for _, a := range f.attrs {
		switch {
		case a == "#[test]" || a == "#[tokio::test]" || strings.HasPrefix(a, "#[tokio::test("):
			test = true
		case strings.HasPrefix(a, "#[cfg(") || strings.HasPrefix(a, "#[allow(") || strings.HasPrefix(a, "#[doc"):
		default:
			return false // should_panic, ignore, test_case, rstest, …
		}
	}
	return test
}

// rsStatements splits a function body (between its braces) into its
// top-level statements: [start, end) offsets.
func rsStatements(src string, f rsFn) [][2]int {
	var out [][2]int
	start := -1
	base := -1
	blockStmt := false
	rsScan(src[:f.end], func(i, depth int) bool {
		if i <= f.bodyOpen {
			if i == f.bodyOpen {
				base = depth + 1
			}
			return true
		}
		c := src[i]
		if depth == base && start < 0 && c != ' ' && c != '\n' && c != '\t' && c != '\r' {
			start = i
			w := src[i:]
			blockStmt = false
			for _, kw := range []string{"if ", "for ", "while ", "loop ", "match ", "unsafe ", "{"} {
				if strings.HasPrefix(w, kw) {
					blockStmt = true
				}
			}
		}
		switch {
		case depth == base && c == ';' && start >= 0:
			out = append(out, [2]int{start, i + 1})
			start = -1
		case depth == base+1 && c == '}' && start >= 0 && blockStmt:
			// A block statement ends with its block (else / else if go on).
			rest := strings.TrimLeft(src[i+1:f.end], " \t\r\n")
			if !strings.HasPrefix(rest, "else") {
				out = append(out, [2]int{start, i + 1})
				start = -1
			}
		}
		return true
	})
	return out
}

// rsMutation picks a change of an assertion directly in the body of f.
func rsMutation(rng *rand.Rand, src string, f rsFn, negate bool) (goEdit, bool) {
	for _, st := range rsStatements(src, f) {
		text := src[st[0]:st[1]]
		if rsMayLeave(text) {
			break
		}
		for _, mac := range []string{"assert_eq!", "assert_ne!", "assert!"} {
			rest, ok := strings.CutPrefix(text, mac)
			if !ok {
				continue
			}
			rest = strings.TrimLeft(rest, " ")
			if !strings.HasPrefix(rest, "(") || !strings.HasSuffix(strings.TrimSpace(text), ");") {
				break
			}
			open := st[0] + len(text) - len(rest)
			args := rsArgs(src, open, st[0]+strings.LastIndexByte(text, ')'))
			if len(args) == 0 {
				break
			}
			if negate {
				switch mac {
				case "assert_eq!":
					return goEdit{st[0], st[0] + len(mac), "assert_ne!"}, true
				case "assert_ne!":
					return goEdit{st[0], st[0] + len(mac), "assert_eq!"}, true
				default:
					a := args[0]
					return goEdit{a[0], a[1], "!(" + strings.TrimSpace(src[a[0]:a[1]]) + ")"}, true
				}
			}
			if mac != "assert_eq!" || len(args) < 2 {
				break
			}
			var options []goEdit
			for _, a := range args[:2] {
				if e, ok := rsLiteralEdit(rng, src, a[0], a[1]); ok {
					options = append(options, e)
				}
			}
			if len(options) > 0 {
				return options[rng.IntN(len(options))], true
			}
			break
		}
	}
	return goEdit{}, false
}

// rsMayLeave reports whether a statement may end the test early without
// failing it: a return (outside closures, which the text cannot tell
// apart: any return counts).
func rsMayLeave(text string) bool {
	found := false
	rsScan(text, func(i, _ int) bool {
		if strings.HasPrefix(text[i:], "return") && (i == 0 || !isIdentPart(text[i-1])) && (i+6 >= len(text) || !isIdentPart(text[i+6])) {
			found = true
			return false
		}
		return true
	})
	return found
}

// rsArgs splits the macro arguments between open "(" and closeAt ")" at
// top-level commas: [start, end) of each, trimmed.
func rsArgs(src string, open, closeAt int) [][2]int {
	var out [][2]int
	from := open + 1
	base := -1
	rsScan(src[:closeAt+1], func(i, depth int) bool {
		if i < open {
			return true
		}
		if i == open {
			base = depth + 1
			return true
		}
		if depth == base && src[i] == ',' || i == closeAt {
			s, e := from, i
			for s < e && strings.ContainsRune(" \t\r\n", rune(src[s])) {
				s++
			}
			for e > s && strings.ContainsRune(" \t\r\n", rune(src[e-1])) {
				e--
			}
			if e > s {
				out = append(out, [2]int{s, e})
			}
			from = i + 1
		}
		return true
	})
	return out
}

// rsLiteralEdit changes the literal src[s:e] (the whole argument) so that
// it certainly differs and keeps its type.
func rsLiteralEdit(rng *rand.Rand, src string, s, e int) (goEdit, bool) {
	lit := src[s:e]
	switch lit {
	case "true":
		return goEdit{s, e, "false"}, true
	case "false":
		return goEdit{s, e, "true"}, true
	}
	if end, ok := rsLiteralEnd(src, s); ok && end == e && !strings.HasPrefix(strings.TrimLeft(lit, "b"), "'") {
		// A string: letters go before its closing quote (and hashes).
		q := strings.LastIndexByte(lit, '"')
		if q <= 0 {
			return goEdit{}, false
		}
		body := lit[strings.IndexByte(lit, '"')+1 : q]
		return goEdit{s + q, s + q, stringSuffix(rng, body)}, true
	}
	// A number with an optional type suffix.
	n := 0
	for n < len(lit) && (lit[n] >= '0' && lit[n] <= '9' || lit[n] == '_' || lit[n] == '.') {
		n++
	}
	num, suffix := strings.ReplaceAll(lit[:n], "_", ""), lit[n:]
	if num == "" || strings.HasSuffix(num, ".") {
		return goEdit{}, false
	}
	switch suffix {
	case "", "u8", "u16", "u32", "u64", "u128", "usize", "i8", "i16", "i32", "i64", "i128", "isize", "f32", "f64":
	default:
		return goEdit{}, false
	}
	if strings.Contains(num, ".") || strings.HasPrefix(suffix, "f") {
		v, err := strconv.ParseFloat(num, 64)
		if err != nil || v >= 1e15 {
			return goEdit{}, false
		}
		t := strconv.FormatFloat(v+1, 'f', -1, 64)
		if !strings.Contains(t, ".") && suffix == "" {
			t += ".0"
		}
		return goEdit{s, e, t + suffix}, true
	}
	v, err := strconv.ParseInt(num, 10, 64)
	if err != nil {
		return goEdit{}, false
	}
	if v > 0 {
		v--
	} else {
		v++
	}
	return goEdit{s, e, strconv.FormatInt(v, 10) + suffix}, true
}

// planRust plans Rust mutant canaries for t; nil and the reason when it
// cannot.
func planRust(t *task.Task, cmd string, src Source, rng *rand.Rand, taken map[string]bool) (*Canaries, string) {
	filters, ok := cargoFilters(cmd)
	if !ok {
		return nil, "the test command is not one cargo test command whose filters are substrings"
	}
	type located struct {
		file, prefix string
		fn           rsFn
		f2p          bool
	}
	texts := map[string]string{}
	fns := map[string][]rsFn{}
	var files []string
	for _, f := range parseDiff(t.TestPatch) {
		if f.Deleted || !strings.HasSuffix(f.Path, ".rs") {
			continue
		}
		s, ok := src(f.Path)
		if !ok {
			continue
		}
		tests, ok := rsTests(s)
		if !ok {
			continue
		}
		files = append(files, f.Path)
		texts[f.Path], fns[f.Path] = s, tests
	}
	var tests []located
	for i, name := range append(append([]string{}, t.FailToPass...), t.PassToPass...) {
		prefix, fn := "", name
		if j := strings.LastIndex(name, "::"); j >= 0 {
			prefix, fn = name[:j+2], name[j+2:]
		}
		var found []located
		for _, file := range files {
			n := 0
			var hit rsFn
			for _, f := range fns[file] {
				if f.name == fn {
					n++
					hit = f
				}
			}
			if n > 1 {
				found = append(found, located{}, located{})
			} else if n == 1 && strings.Count(texts[file], "fn "+fn+"(") == 1 {
				found = append(found, located{file, prefix, hit, i < len(t.FailToPass)})
			}
		}
		if len(found) == 1 && rsPlainTest(found[0].fn) {
			tests = append(tests, found[0])
		}
	}
	if len(tests) == 0 {
		return nil, "no listed test is a plain #[test] function defined once in a .rs file of the test patch"
	}
	for _, pass := range []struct{ f2p, negate bool }{{true, false}, {true, true}, {false, false}, {false, true}} {
		for _, h := range tests {
			if h.f2p != pass.f2p {
				continue
			}
			text := texts[h.file]
			if rsNameBound(text, h.fn) {
				continue
			}
			m, ok := rsMutation(rng, text, h.fn, pass.negate)
			if !ok {
				continue
			}
			twin := h
			var twins []located
			for _, o := range tests {
				if o.file == h.file && o.prefix == h.prefix && o.fn.name != h.fn.name && !rsNameBound(text, o.fn) {
					twins = append(twins, o)
				}
			}
			if len(twins) > 0 {
				twin = twins[rng.IntN(len(twins))]
			}
			var names []string
			for _, f := range fns[h.file] {
				names = append(names, f.name)
			}
			exists := func(n string) bool {
				return taken[n] || containsWord(text, n) || strings.Contains(t.TestPatch, n)
			}
			mustFail, ok1 := rsStyledName(rng, names, h.prefix, h.fn.name, filters, exists)
			mustPass, ok2 := rsStyledName(rng, names, twin.prefix, twin.fn.name, filters, func(n string) bool { return n == mustFail || exists(n) })
			if !ok1 || !ok2 {
				continue
			}
			fail := rsCopy(text, h.fn, mustFail, &m)
			pass := rsCopy(text, twin.fn, mustPass, nil)
			content := rsInsert(rng, text, []rsFn{h.fn, twin.fn}, []string{fail, pass})
			if got, ok := rsTests(content); !ok || len(got) != len(fns[h.file])+2 {
				continue
			}
			return &Canaries{
				File: h.file, MustFail: mustFail, MustPass: mustPass, Original: h.prefix + h.fn.name,
				framework: frameworkRust, content: content, seed: rng.Uint64(),
			}, ""
		}
	}
	return nil, "no listed test has an assertion to change directly in its body"
}

// rsNameBound reports whether a test may read files or snapshots by its
// own name, or holds a resource a copy beside it would contend for.
func rsNameBound(text string, f rsFn) bool {
	body := text[f.start : f.end+1]
	if rsSharedResource(body) {
		return true
	}
	for _, w := range []string{"insta::", "assert_snapshot!", "assert_debug_snapshot!", "assert_yaml_snapshot!", "function_name!", "module_path!", "\"" + f.name} {
		if strings.Contains(body, w) {
			return true
		}
	}
	return false
}

// rsCopy returns test f under name, with m applied when it is not nil.
func rsCopy(text string, f rsFn, name string, m *goEdit) string {
	edits := []goEdit{{f.nameAt, f.nameAt + len(f.name), name}}
	if m != nil {
		edits = append(edits, *m)
	}
	if len(edits) == 2 && edits[1].start < edits[0].start {
		edits[0], edits[1] = edits[1], edits[0]
	}
	out := text[f.start : f.end+1]
	for k := len(edits) - 1; k >= 0; k-- {
		e := edits[k]
		out = out[:e.start-f.start] + e.text + out[e.end-f.start:]
	}
	return out
}

// rsInsert puts each block right before or right after its original (in
// its module), at random.
func rsInsert(rng *rand.Rand, text string, origs []rsFn, blocks []string) string {
	type ins struct {
		at   int
		text string
	}
	var picks []ins
	for i, f := range origs {
		// A block starts with its first line's indentation and f.start is
		// the start of a line.
		b := blocks[i]
		if rng.IntN(2) == 0 {
			picks = append(picks, ins{f.start, b + "\n\n"})
		} else {
			picks = append(picks, ins{f.end + 1, "\n\n" + b})
		}
	}
	if picks[0].at < picks[1].at {
		picks[0], picks[1] = picks[1], picks[0]
	}
	for _, p := range picks {
		text = text[:p.at] + p.text + text[p.at:]
	}
	return text
}

// rsStyledName draws a snake_case name from the words of the file's test
// names, in the length of one of them; the full name (prefix + name) must
// contain one of the command's filters when it has any.
func rsStyledName(rng *rand.Rand, names []string, prefix, orig string, filters []string, exists func(string) bool) (string, bool) {
	var pool []string
	seen := map[string]bool{}
	for _, n := range names {
		for _, w := range strings.Split(n, "_") {
			if len(w) > 1 && !seen[w] && w != "test" {
				seen[w] = true
				pool = append(pool, w)
			}
		}
	}
	selected := func(n string) bool {
		if len(filters) == 0 {
			return true
		}
		for _, f := range filters {
			if strings.Contains(prefix+n, f) {
				return true
			}
		}
		return false
	}
	ok := func(n string) bool { return selected(n) && !exists(n) }
	if len(pool) >= 2 {
		for range 300 {
			model := names[rng.IntN(len(names))]
			words := strings.Split(strings.TrimPrefix(model, "test_"), "_")
			n := min(max(len(words), 2), len(pool))
			var parts []string
			if strings.HasPrefix(model, "test_") {
				parts = append(parts, "test")
			}
			for _, k := range rng.Perm(len(pool))[:n] {
				parts = append(parts, pool[k])
			}
			if name := strings.Join(parts, "_"); ok(name) {
				return name, true
			}
		}
	}
	for _, k := range rng.Perm(len(pool)) {
		if name := orig + "_" + pool[k]; ok(name) {
			return name, true
		}
	}
	return "", false
}

// safePlanRust is planRust with a failure of its reading of the source a
// reason for no canaries rather than a crash of the grader.
func safePlanRust(t *task.Task, cmd string, src Source, rng *rand.Rand, taken map[string]bool) (c *Canaries, reason string) {
	defer func() {
		if r := recover(); r != nil {
			c, reason = nil, fmt.Sprintf("planning mutants failed: %v", r)
		}
	}()
	return planRust(t, cmd, src, rng, taken)
}
