package tamper

import (
	"fmt"
	"math"
	"math/rand/v2"
	"path"
	"slices"
	"strconv"
	"strings"
	"unicode"

	"github.com/swerve-dev/swerve/internal/lazyre"
	"github.com/swerve-dev/swerve/internal/task"
)

// Mutant canaries for PHPUnit run with --testdox (parse_log_phpunit, keys
// "Suite > Test name" from the class and method names). The file is read
// by its layout, as PSR-12 lays it out: a test is a line `public function
// testName()` (no parameters, so no data provider; an optional `: void`)
// followed by `{` and closed by the first line as indented as it, `}`. A
// method with annotations or attributes above it (a copy is the method
// alone), or whose body skips itself, expects an exception, or asks for
// its own name, is not copied. The must-fail copy
// changes the literal expected value (first argument) of a
// $this->/self::/static:: assertSame or assertEquals statement directly in
// the body, with nothing before it that can end the test early and only
// assertions after it. Copies are named testWordWord... from the words of
// the class's test names and go after a test of the class at or after the
// one they copy. The injector is a shell script that writes the file.

const frameworkPHP = "phpunit"

var (
	phpMethod = lazyre.New(`^([ \t]+)public function (test[A-Za-z0-9_]*)\(\)(?:: ?void)?$`)
	phpClass  = lazyre.New(`^(?:final |abstract )?class ([A-Za-z0-9_]+)`)
	// phpAssert matches an assertion's first line whose first argument is
	// a literal: group 1 is the literal.
	phpAssert = lazyre.New(`^(?:\$this->|self::|static::)assert(?:Same|Equals)\(\s*('(?:[^'\\\n]|\\.)*'|"[^"\\$\n]*"|-?[0-9]+(?:\.[0-9]+)?|true|false)\s*,`)
)

// phpTest is one test method of a file.
type phpTest struct {
	start, end int // the method line and its closing `}`
	indent     string
	method     string
}

// phpFile is a test file read by its layout.
type phpFile struct {
	text  string
	lines []string
	class string
	tests []phpTest
}

func parsePHPFile(text string) *phpFile {
	f := &phpFile{text: text, lines: strings.Split(text, "\n")}
	// The test class: the one class whose name ends in "Test" (others
	// are stubs); its methods are those up to the next class.
	lo, hi := 0, len(f.lines)
	var starts []int
	for i, l := range f.lines {
		if m := phpClass.FindStringSubmatch(l); m != nil {
			starts = append(starts, i)
		}
	}
	for k, i := range starts {
		if m := phpClass.FindStringSubmatch(f.lines[i]); strings.HasSuffix(m[1], "Test") {
			if f.class != "" {
				f.class = ""
				break
			}
			f.class, lo = m[1], i
			if k+1 < len(starts) {
				hi = starts[k+1]
			}
		}
	}
	for i, l := range f.lines {
		if f.class == "" || i < lo || i >= hi {
			continue
		}
		m := phpMethod.FindStringSubmatch(l)
		if m == nil || i+1 >= len(f.lines) || f.lines[i+1] != m[1]+"{" {
			continue
		}
		end := -1
		for j := i + 2; j < len(f.lines); j++ {
			lj := f.lines[j]
			if strings.TrimSpace(lj) == "" {
				continue
			}
			ind := leadingSpace(lj)
			if len(ind) > len(m[1]) && strings.HasPrefix(ind, m[1]) {
				continue
			}
			if lj == m[1]+"}" {
				end = j
			}
			break
		}
		if end >= 0 && end < hi {
			f.tests = append(f.tests, phpTest{start: i, end: end, indent: m[1], method: m[2]})
		}
	}
	return f
}

// phpPretty is PHPUnit's testdox title of a test method: "test" (and the
// underscores after it) dropped, the first letter upper-cased, underscores made spaces (then nothing
// else), else a space before each capital (lower-cased) and before each
// run of digits.
func phpPretty(method string) string {
	name := strings.TrimLeft(strings.TrimPrefix(method, "test"), "_")
	if name == "" {
		return ""
	}
	name = strings.ToUpper(name[:1]) + name[1:]
	if strings.Contains(name, "_") {
		return strings.TrimSpace(strings.ReplaceAll(name, "_", " "))
	}
	var b strings.Builder
	wasDigit := false
	for i := 0; i < len(name); i++ {
		c := name[i]
		switch {
		case i > 0 && c >= 'A' && c <= 'Z':
			b.WriteByte(' ')
			b.WriteByte(c + 'a' - 'A')
			wasDigit = false
		default:
			digit := c >= '0' && c <= '9'
			if digit && !wasDigit && i > 0 {
				b.WriteByte(' ')
			}
			wasDigit = digit
			b.WriteByte(c)
		}
	}
	return b.String()
}

// phpSuite is PHPUnit's testdox title of a test class: "Test" dropped
// from its end, a space before each capital that follows a lower-case
// letter or a digit.
func phpSuite(class string) string {
	name := strings.TrimSuffix(class, "Test")
	var b strings.Builder
	for i := 0; i < len(name); i++ {
		c := name[i]
		if i > 0 && c >= 'A' && c <= 'Z' && (unicode.IsLower(rune(name[i-1])) || unicode.IsDigit(rune(name[i-1]))) {
			b.WriteByte(' ')
		}
		b.WriteByte(c)
	}
	return b.String()
}

// phpBound are words of a test, its doc comment or attributes that tie it
// to something a copy does not have, or end it without failing.
var phpBound = []string{"depends", "Depends", "dataProvider", "DataProvider", "testdox", "TestDox", "markTestSkipped",
	"markTestIncomplete", "expectException", "getName(", "name()", "__FUNCTION__", "__METHOD__", "@test", "#[Test", "RunInSeparateProcess", "runInSeparateProcess"}

// copyable reports whether test k may be copied.
func (f *phpFile) copyable(k int) bool {
	b := f.tests[k]
	from := b.start
	// The doc comment and attributes above the method.
	for from > 0 {
		t := strings.TrimSpace(f.lines[from-1])
		if t == "" || t == "}" || t == "{" || strings.HasSuffix(t, ";") {
			break
		}
		from--
	}
	// A copy is the method alone: annotations and attributes above it
	// (@requires, @backupGlobals, #[...]) would not carry over.
	if above := strings.Join(f.lines[from:b.start], "\n"); strings.Contains(above, "@") || strings.Contains(above, "#[") {
		return false
	}
	text := strings.Join(f.lines[from:b.end+1], "\n")
	for _, w := range phpBound {
		if strings.Contains(text, w) {
			return false
		}
	}
	return !containsWord(strings.Join(f.lines[b.start+1:b.end], "\n"), b.method)
}

// phpMutation picks the change of one assertion of test k.
func (f *phpFile) phpMutation(rng *rand.Rand, k int) (jsEdit, bool) {
	b := f.tests[k]
	sts, ok := layoutStatements(f.lines, b.start+2, b.end)
	if !ok {
		return jsEdit{}, false
	}
	first := func(s jsStatement) string { return strings.TrimSpace(f.lines[s.first]) }
	isAssert := func(s jsStatement) bool {
		t := first(s)
		return strings.HasPrefix(t, "$this->assert") || strings.HasPrefix(t, "self::assert") || strings.HasPrefix(t, "static::assert")
	}
	comment := func(s jsStatement) bool {
		t := first(s)
		return strings.HasPrefix(t, "//") || strings.HasPrefix(t, "/*") || strings.HasPrefix(t, "#")
	}
	var options []jsEdit
	for k, s := range sts {
		t := first(s)
		text := strings.Join(f.lines[s.first:s.last+1], "\n")
		if strings.HasPrefix(t, "return") || jsControl(t) && (strings.Contains(text, "return") || strings.Contains(text, "break")) ||
			strings.HasPrefix(t, "goto") || strings.HasPrefix(t, "exit") || strings.HasPrefix(t, "die") {
			break
		}
		if !isAssert(s) || !strings.HasSuffix(strings.TrimSpace(f.lines[s.last]), ");") {
			continue
		}
		rest := true
		for _, o := range sts[k+1:] {
			if !isAssert(o) && !comment(o) {
				rest = false
				break
			}
		}
		if !rest {
			continue
		}
		m := phpAssert.FindStringSubmatchIndex(t)
		if m == nil {
			continue
		}
		lit := t[m[2]:m[3]]
		start := len(leadingSpace(f.lines[s.first])) + m[2]
		repl, ok := phpLiteralEdit(rng, lit)
		if ok {
			options = append(options, jsEdit{s.first, start, start + len(lit), repl})
		}
	}
	if len(options) == 0 {
		return jsEdit{}, false
	}
	return options[rng.IntN(len(options))], true
}

// phpLiteralEdit changes a literal so that it certainly differs: an
// integer one step towards zero (zero becomes one), a float plus one,
// letters added to a string, true and false swapped.
func phpLiteralEdit(rng *rand.Rand, lit string) (string, bool) {
	switch {
	case lit == "true":
		return "false", true
	case lit == "false":
		return "true", true
	case lit[0] == '\'' || lit[0] == '"':
		return lit[:len(lit)-1] + stringSuffix(rng, lit[1:len(lit)-1]) + lit[len(lit)-1:], true
	}
	digits := strings.TrimPrefix(lit, "-")
	if len(digits) > 1 && digits[0] == '0' && !strings.HasPrefix(digits, "0.") {
		return "", false // octal
	}
	v, err := strconv.ParseFloat(lit, 64)
	if err != nil || math.Abs(v) >= 1e15 {
		return "", false
	}
	switch {
	case strings.Contains(lit, "."):
		s := strconv.FormatFloat(v+1, 'f', -1, 64)
		if !strings.Contains(s, ".") {
			s += ".5"
		}
		return s, true
	case v > 0:
		return strconv.FormatFloat(v-1, 'f', -1, 64), true
	}
	return strconv.FormatFloat(v+1, 'f', -1, 64), true
}

// phpCommand reads a phpunit command: the test files it names and its
// --filter; ok is false when it is not one phpunit command over files.
func phpCommand(cmd string) (files []string, filter string, ok bool) {
	words := shellWords(cmd)
	at := -1
	for i, w := range words {
		if path.Base(w) == "phpunit" {
			if at >= 0 {
				return nil, "", false
			}
			at = i + 1
		}
	}
	if at < 0 {
		return nil, "", false
	}
	for i := at; i < len(words); i++ {
		w := words[i]
		if w == "|" || w == "&&" || w == ";" || w == "||" || w == ")" {
			break
		}
		if strings.HasPrefix(w, "-") {
			name, val, has := strings.Cut(w, "=")
			switch name {
			case "--filter":
				if !has {
					if i+1 >= len(words) {
						return nil, "", false
					}
					i++
					val = words[i]
				}
				filter = val
			case "--testdox", "--colors", "--no-coverage", "--do-not-cache-result":
			default:
				return nil, "", false
			}
			continue
		}
		if !strings.HasSuffix(w, ".php") {
			return nil, "", false // a directory or a suite: files not named
		}
		files = append(files, strings.TrimPrefix(w, "./"))
	}
	return files, filter, len(files) > 0
}

// planPHP plans PHPUnit mutant canaries for t; nil and the reason when it
// cannot.
func planPHP(t *task.Task, cmd string, src Source, rng *rand.Rand, taken map[string]bool) (*Canaries, string) {
	files, filter, ok := phpCommand(cmd)
	if !ok {
		return nil, "the test command is not one phpunit command over test files"
	}
	// --filter is a regular expression matched against the class and
	// method name; a plain word is required in the copy's method name.
	if filter != "" && strings.IndexFunc(filter, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) }) >= 0 {
		return nil, "the phpunit --filter is not a plain word"
	}
	type located struct {
		file  string
		f     *phpFile
		k     int
		f2p   bool
		suite string // the suite part of its key
	}
	parsed := map[string]*phpFile{}
	var order []string
	var tests []located
	for _, d := range parseDiff(t.TestPatch) {
		if d.Deleted || !slices.Contains(files, d.Path) {
			continue
		}
		if s, ok := src(d.Path); ok {
			parsed[d.Path] = parsePHPFile(s)
			order = append(order, d.Path)
		}
	}
	for i, name := range append(append([]string{}, t.FailToPass...), t.PassToPass...) {
		suite, title, ok := strings.Cut(name, " > ")
		if !ok {
			continue
		}
	search:
		for _, file := range order {
			f := parsed[file]
			// "None": a phpunit whose testdox header the parser does not
			// read (PHPUnit 9 prints the suite without its class).
			if f.class == "" || phpSuite(f.class) != suite && suite != "None" {
				continue
			}
			for k, b := range f.tests {
				if phpPretty(b.method) == title {
					tests = append(tests, located{file, f, k, i < len(t.FailToPass), suite})
					break search
				}
			}
		}
	}
	if len(tests) == 0 {
		return nil, "no listed test is a plain test method of a file of the test patch the command runs"
	}
	slices.SortStableFunc(tests, func(a, b located) int {
		if a.f2p == b.f2p {
			return 0
		}
		if a.f2p {
			return -1
		}
		return 1
	})
	for _, h := range tests {
		f := h.f
		if !f.copyable(h.k) {
			continue
		}
		m, ok := f.phpMutation(rng, h.k)
		if !ok {
			continue
		}
		twin := h.k
		var twins []int
		for _, o := range tests {
			if o.file == h.file && o.k != h.k && f.copyable(o.k) {
				twins = append(twins, o.k)
			}
		}
		if len(twins) > 0 {
			twin = twins[rng.IntN(len(twins))]
		}
		suite := h.suite
		exists := func(method string) bool {
			p := phpPretty(method)
			if taken[suite+" > "+p] || containsWord(f.text, method) || strings.Contains(t.TestPatch, method) {
				return true
			}
			for _, x := range f.tests {
				if strings.HasPrefix(strings.ToLower(phpPretty(x.method)), strings.ToLower(p)) || strings.HasPrefix(strings.ToLower(p), strings.ToLower(phpPretty(x.method))) {
					return true
				}
			}
			return false
		}
		mustFail, ok1 := phpStyledName(rng, f, filter, exists)
		// Neither title may begin the other: the verdict finds a key by
		// its title followed by a non-word character or the end.
		prefixed := func(n string) bool {
			a, b := strings.ToLower(phpPretty(n)), strings.ToLower(phpPretty(mustFail))
			return strings.HasPrefix(a, b) || strings.HasPrefix(b, a)
		}
		mustPass, ok2 := phpStyledName(rng, f, filter, func(n string) bool { return prefixed(n) || exists(n) })
		if !ok1 || !ok2 {
			continue
		}
		text := f.phpInsert(rng, []int{h.k, twin}, []string{f.phpCopy(h.k, mustFail, &m), f.phpCopy(twin, mustPass, nil)})
		if g := parsePHPFile(text); len(g.tests) != len(f.tests)+2 {
			continue
		}
		return &Canaries{
			File: h.file, MustFail: suite + " > " + phpPretty(mustFail), MustPass: suite + " > " + phpPretty(mustPass),
			Original: suite + " > " + phpPretty(f.tests[h.k].method), Class: f.class,
			framework: frameworkPHP, content: text, seed: rng.Uint64(),
		}, ""
	}
	return nil, "no listed test has an assertSame/assertEquals of a literal to change directly in its body, with only assertions after it"
}

// phpStyledName draws a method name: "test" and two to five words of the
// class's test names, each capitalised (testdox lower-cases all but the
// first), holding the --filter word when there is one.
func phpStyledName(rng *rand.Rand, f *phpFile, filter string, exists func(string) bool) (string, bool) {
	var pool []string
	seen := map[string]bool{}
	for _, x := range f.tests {
		for _, w := range strings.Fields(phpPretty(x.method)) {
			lw := strings.ToLower(w)
			if len(w) > 1 && !seen[lw] && strings.IndexFunc(lw, func(r rune) bool { return r < 'a' || r > 'z' }) < 0 {
				seen[lw] = true
				pool = append(pool, lw)
			}
		}
	}
	if len(pool) < 3 {
		return "", false
	}
	upper := func(w string) string { return strings.ToUpper(w[:1]) + w[1:] }
	for range 300 {
		n := 2 + rng.IntN(min(4, len(pool)-1))
		var b strings.Builder
		b.WriteString("test")
		for _, k := range rng.Perm(len(pool))[:n] {
			b.WriteString(upper(pool[k]))
		}
		if filter != "" {
			b.WriteString(upper(filter))
		}
		if name := b.String(); !exists(name) {
			return name, true
		}
	}
	return "", false
}

// phpCopy returns test k's lines under method name, with m applied when
// it is not nil.
func (f *phpFile) phpCopy(k int, name string, m *jsEdit) string {
	b := f.tests[k]
	lines := slices.Clone(f.lines[b.start : b.end+1])
	lines[0] = strings.Replace(lines[0], "function "+b.method+"(", "function "+name+"(", 1)
	if m != nil {
		i := m.line - b.start
		lines[i] = lines[i][:m.start] + m.text + lines[i][m.end:]
	}
	return strings.Join(lines, "\n")
}

// phpInsert puts each copy after a test method at or after the one it
// copies, and returns the text.
func (f *phpFile) phpInsert(rng *rand.Rand, anchors []int, copies []string) string {
	spots := make([][]int, len(anchors))
	for i, a := range anchors {
		for _, x := range f.tests {
			if x.start >= f.tests[a].start {
				spots[i] = append(spots[i], x.end)
			}
		}
	}
	return insertCopies(rng, f.lines, spots, copies)
}

// safePlanPHP is planPHP with a failure of its reading of the source a
// reason for no canaries rather than a crash of the grader.
func safePlanPHP(t *task.Task, cmd string, src Source, rng *rand.Rand, taken map[string]bool) (c *Canaries, reason string) {
	defer func() {
		if r := recover(); r != nil {
			c, reason = nil, fmt.Sprintf("planning mutants failed: %v", r)
		}
	}()
	return planPHP(t, cmd, src, rng, taken)
}
