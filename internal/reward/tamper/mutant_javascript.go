package tamper

import (
	"fmt"
	"math"
	"math/rand/v2"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode"

	"github.com/swerve-dev/swerve/internal/lazyre"
	"github.com/swerve-dev/swerve/internal/reward/swebench"
	"github.com/swerve-dev/swerve/internal/task"
)

// Mutant canaries for JavaScript and TypeScript test files run by jest,
// vitest, karma (mocha in a browser) and mocha's TAP reporter
// (parse_log_jest, parse_log_immutable_js, parse_log_vitest,
// parse_log_karma, parse_log_tap). There is no JavaScript parser here, and
// test files hold JSX and TypeScript, so the file is read by its layout,
// which every one of these repositories keeps with a formatter: a test is
// a line `it('title', () => {` (or test(...), an async or function()
// callback without parameters) whose body ends at the first line as
// indented as it, which must be `});` (or `})`); its describe blocks are the lines
// of the same form above it, each indented less than the one it holds,
// up to the top of the file (a test inside anything else, a loop or a
// helper, is not copied). A copy is the test's lines as they are, its
// title replaced; the must-fail copy also has the expected literal of one
// assertion changed:
//
//   - expect(ACTUAL).toBe / toEqual / toStrictEqual(LIT), chai's
//     expect(ACTUAL).to.equal / to.eql / to.deep.equal(LIT), and node's or
//     chai's assert.equal / strictEqual / deepEqual / deepStrictEqual(
//     ACTUAL, LIT), where LIT is a string, number or boolean literal and the
//     last argument;
//   - the assertion is a statement directly in the test's body; nothing
//     before it in the body can end the test early (a return, a skip), and
//     nothing after it but other assertions, so a failing copy skips no
//     clean-up the original does.
//
// The copies go into the same describe block, after a test of that block
// at or after the one they copy, with a title drawn from the words of the
// file's titles that the command's name filter (jest -t, vitest -t, mocha
// -g) still selects. Like Go's, the injector is a shell script that
// writes the whole file.

const frameworkJS = "js"

// jsCommand is what the plan needs of a JavaScript test command line.
type jsCommand struct {
	runner string   // "jest", "vitest", "karma", "mocha"
	paths  []string // which files run (see runs)
	filter string   // the name filter ("" for none)
}

// parseJSCommand reads the test command for the runner the log parser
// implies; ok is false when it is not one command this plan understands.
func parseJSCommand(parser, cmd string) (jsCommand, bool) {
	c := jsCommand{}
	words := shellWords(cmd)
	var starts []string
	switch parser {
	case "parse_log_jest", "parse_log_immutable_js":
		c.runner, starts = "jest", []string{"jest", "test"}
	case "parse_log_vitest":
		c.runner, starts = "vitest", []string{"vitest", "test"}
	case "parse_log_karma":
		c.runner, starts = "karma", []string{"karma"}
	case "parse_log_tap":
		c.runner, starts = "mocha", []string{"mocha"}
	default:
		return c, false
	}
	at := -1
	for i, w := range words {
		if slices.Contains(starts, w) {
			if at >= 0 {
				return c, false // two test commands
			}
			at = i + 1
		}
	}
	if at < 0 {
		return c, false
	}
	withValue := map[string]bool{"-t": true, "--testNamePattern": true, "-g": true, "--grep": true, "-R": true, "--reporter": true,
		"-c": true, "--config": true, "--timeout": true, "--fgrep": true, "-f": true, "--browsers": true}
	for i := at; i < len(words); i++ {
		w := words[i]
		if w == "|" || w == "&&" || w == ";" || w == "||" || w == ")" {
			break
		}
		if strings.HasPrefix(w, "-") {
			name, val, has := strings.Cut(w, "=")
			if !has && withValue[name] {
				if i+1 >= len(words) {
					return c, false
				}
				i++
				val = words[i]
			}
			switch {
			case name == "-t" || name == "--testNamePattern":
				if c.runner != "jest" && c.runner != "vitest" {
					return c, false
				}
				c.filter = val
			case name == "-g" || name == "--grep" || name == "--fgrep":
				if c.runner == "karma" {
					c.paths = append(c.paths, val) // preact's karma.conf.js reads --grep as a file
				} else if c.runner == "mocha" {
					c.filter = val
				}
			case name == "-f" || name == "-i" || name == "--invert":
				return c, false
			}
			continue
		}
		if c.runner == "karma" {
			continue // "start", the configuration file
		}
		c.paths = append(c.paths, w)
	}
	if c.filter != "" && c.runner != "mocha" {
		if _, err := regexp.Compile(c.filter); err != nil {
			return c, false
		}
	}
	return c, true
}

// runs reports whether the command runs test file f.
func (c jsCommand) runs(f string) bool {
	if len(c.paths) == 0 {
		return c.runner != "mocha"
	}
	for _, p := range c.paths {
		switch c.runner {
		case "jest":
			// jest matches its path patterns as regular expressions.
			if re, err := regexp.Compile(p); err == nil && re.MatchString(f) || strings.Contains(f, p) {
				return true
			}
		case "mocha":
			if strings.TrimPrefix(p, "./") == f {
				return true
			}
		default:
			if strings.Contains(f, strings.TrimPrefix(p, "./")) {
				return true
			}
		}
	}
	return false
}

// selects reports whether the name filter lets a test whose describe
// titles and own title are chain run. (jest matches its pattern without
// regard to case; requiring a match with case is the stricter test.)
func (c jsCommand) selects(chain []string) bool {
	if c.filter == "" {
		return true
	}
	full := strings.Join(chain, " ")
	if c.runner == "mocha" {
		return strings.Contains(full, c.filter)
	}
	re, err := regexp.Compile(c.filter)
	return err == nil && re.MatchString(full)
}

// key is the name the runner's log parser gives a test.
func (c jsCommand) key(file string, chain []string) string {
	switch c.runner {
	case "jest":
		return chain[len(chain)-1]
	case "vitest":
		return file + " > " + strings.Join(chain, " > ")
	case "karma":
		return strings.Join(chain, " > ")
	}
	return strings.Join(chain, " ")
}

// jsOpener matches a describe or test line: indentation, the function,
// the quote and the title, and the callback.
var jsOpener = lazyre.New(`^([ \t]*)(describe|context|it|test)\((?:'((?:[^'\\\n]|\\.)*)'|"((?:[^"\\\n]|\\.)*)"), (?:async )?(?:\(\) =>|function ?\(\)) \{$`)

// jsFocus matches jasmine's focused tests and blocks.
var jsFocus = lazyre.New(`(^|[^\w.$])(fit|fdescribe)\(`)

// jsBlock is one describe or test call of a file.
type jsBlock struct {
	start, end int // the opener line and the closing `});` line
	indent     string
	kind       string // "describe" or "test"
	title      string
	quote      byte
	parent     int // the enclosing describe block, -1 at the top
}

// jsFile is a test file read by its layout.
type jsFile struct {
	text   string
	lines  []string
	blocks []jsBlock
	at     map[int]int // opener line -> block
}

func leadingSpace(l string) string { return l[:len(l)-len(strings.TrimLeft(l, " \t"))] }

// parseJSFile finds the describe and test blocks of text.
func parseJSFile(text string) *jsFile {
	f := &jsFile{text: text, lines: strings.Split(text, "\n"), at: map[int]int{}}
	for i, l := range f.lines {
		m := jsOpener.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		title, quote := m[3], byte('\'')
		if strings.HasPrefix(l[len(m[1])+len(m[2])+1:], `"`) {
			title, quote = m[4], '"'
		}
		if strings.Contains(title, `\`) {
			continue
		}
		end := -1
		for j := i + 1; j < len(f.lines); j++ {
			lj := f.lines[j]
			if strings.TrimSpace(lj) == "" {
				continue
			}
			ind := leadingSpace(lj)
			if len(ind) > len(m[1]) && strings.HasPrefix(ind, m[1]) {
				continue
			}
			if t := strings.TrimSpace(lj); ind == m[1] && (t == "});" || t == "})") {
				end = j
			}
			break
		}
		if end < 0 {
			continue
		}
		kind := "test"
		if m[2] == "describe" || m[2] == "context" {
			kind = "describe"
		}
		f.at[i] = len(f.blocks)
		f.blocks = append(f.blocks, jsBlock{start: i, end: end, indent: m[1], kind: kind, title: title, quote: quote, parent: -2})
	}
	for k := range f.blocks {
		f.blocks[k].parent = f.parentOf(k)
	}
	return f
}

// parentOf finds block k's enclosing block: the nearest line above it
// indented less, which must open a describe block that holds it; -1 at
// the top of the file, -2 when it is held by anything else.
func (f *jsFile) parentOf(k int) int {
	b := f.blocks[k]
	if b.indent == "" {
		return -1
	}
	for i := b.start - 1; i >= 0; i-- {
		l := f.lines[i]
		if strings.TrimSpace(l) == "" {
			continue
		}
		ind := leadingSpace(l)
		if len(ind) >= len(b.indent) {
			continue
		}
		p, ok := f.at[i]
		if !ok || f.blocks[p].kind != "describe" || f.blocks[p].end < b.end || !strings.HasPrefix(b.indent, ind) {
			return -2
		}
		return p
	}
	return -2
}

// chain is the titles of block k's describe blocks and its own; ok is
// false when something other than describe blocks holds it.
func (f *jsFile) chain(k int) ([]string, bool) {
	var out []string
	for ; k >= 0; k = f.blocks[k].parent {
		out = append([]string{f.blocks[k].title}, out...)
	}
	return out, k == -1
}

// jsStatement is one statement directly in a test's body: its lines.
type jsStatement struct{ first, last int }

// statements splits test block b's body into its statements by layout;
// ok is false when a line of the body is indented less than its first.
func (f *jsFile) statements(b jsBlock) ([]jsStatement, bool) {
	return layoutStatements(f.lines, b.start+1, b.end)
}

// layoutStatements splits lines [from, to) of a body into statements by
// their indentation, as a formatter lays them out (JavaScript and PHP
// alike): a line at the body's indent starts one, unless it only closes
// brackets; a deeper line continues the last. ok is false when a line is
// indented less than the body's first.
func layoutStatements(lines []string, from, to int) ([]jsStatement, bool) {
	body := ""
	var out []jsStatement
	for i := from; i < to; i++ {
		l := lines[i]
		if strings.TrimSpace(l) == "" {
			continue
		}
		ind := leadingSpace(l)
		if body == "" {
			body = ind
		}
		t := strings.TrimSpace(l)
		switch {
		case ind == body && len(out) > 0 && strings.IndexByte(")]}", t[0]) >= 0:
			out[len(out)-1].last = i
		case ind == body:
			out = append(out, jsStatement{i, i})
		case len(ind) > len(body) && strings.HasPrefix(ind, body) && len(out) > 0:
			out[len(out)-1].last = i
		default:
			return nil, false
		}
	}
	return out, true
}

// jsBound are words of a test that may tie it to its own title or place
// (snapshots, the running test's name) or end it without failing it.
var jsBound = []string{"napshot", "currentTestName", "this.test", "expect.getState", ".skip(", "pending(", "this.currentTest", ".title"}

// copyable reports whether test block b may be copied at all.
func (f *jsFile) copyable(b jsBlock) bool {
	text := strings.Join(f.lines[b.start+1:b.end+1], "\n")
	for _, w := range jsBound {
		if strings.Contains(text, w) {
			return false
		}
	}
	return !containsWord(text, b.title)
}

// jsAssert matches an assertion statement whose last argument is a
// literal: group 1 is the literal.
var jsAssert = lazyre.New(`(?s)^(?:expect\(.*\)\.(?:toBe|toEqual|toStrictEqual|to\.equal|to\.eql|to\.deep\.equal)|assert\.(?:equal|strictEqual|deepEqual|deepStrictEqual)\(.*,)\(?\s*('(?:[^'\\\n]|\\.)*'|"(?:[^"\\\n]|\\.)*"|-?[0-9]+(?:\.[0-9]+)?|true|false)\s*\);?$`)

// jsEdit replaces bytes [start, end) of line line.
type jsEdit struct {
	line, start, end int
	text             string
}

// jsMutation picks the change of one assertion of test b (see the top).
func (f *jsFile) jsMutation(rng *rand.Rand, b jsBlock) (jsEdit, bool) {
	sts, ok := f.statements(b)
	if !ok {
		return jsEdit{}, false
	}
	first := func(s jsStatement) string { return strings.TrimSpace(f.lines[s.first]) }
	isAssert := func(s jsStatement) bool {
		t := first(s)
		return strings.HasPrefix(t, "expect(") || strings.HasPrefix(t, "assert.") || strings.HasPrefix(t, "assert(")
	}
	comment := func(s jsStatement) bool {
		t := first(s)
		return strings.HasPrefix(t, "//") || strings.HasPrefix(t, "/*")
	}
	var options []jsEdit
	for k, s := range sts {
		t := first(s)
		if strings.HasPrefix(t, "return") || jsControl(t) && strings.Contains(f.stmtText(s), "return") {
			break
		}
		if !isAssert(s) {
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
		e, ok := f.assertEdit(rng, s)
		if ok {
			options = append(options, e)
		}
	}
	if len(options) == 0 {
		return jsEdit{}, false
	}
	return options[rng.IntN(len(options))], true
}

func jsControl(t string) bool {
	for _, kw := range []string{"if", "for", "while", "do", "switch", "try", "else"} {
		if rest, ok := strings.CutPrefix(t, kw); ok && (rest == "" || rest[0] == ' ' || rest[0] == '(' || rest[0] == '{') {
			return true
		}
	}
	return false
}

func (f *jsFile) stmtText(s jsStatement) string {
	return strings.Join(f.lines[s.first:s.last+1], "\n")
}

// assertEdit changes the literal of assertion statement s, or fails.
func (f *jsFile) assertEdit(rng *rand.Rand, s jsStatement) (jsEdit, bool) {
	// The statement's text from its first non-blank byte; the literal is
	// on its last line.
	text := strings.TrimLeft(f.stmtText(s), " \t")
	m := jsAssert.FindStringSubmatchIndex(text)
	if m == nil {
		return jsEdit{}, false
	}
	// The opening bracket of the assertion must be closed right before
	// the matcher (expect(...)) or hold the literal (assert.x(...)).
	if !jsBalanced(text[:m[2]]) {
		return jsEdit{}, false
	}
	lit := text[m[2]:m[3]]
	// The literal's line and place on it.
	full := f.stmtText(s)
	off := len(full) - len(text) + m[2]
	line := s.first + strings.Count(full[:off], "\n")
	start := off - (strings.LastIndexByte(full[:off], '\n') + 1)
	end := start + len(lit)
	if end > len(f.lines[line]) || f.lines[line][start:end] != lit {
		return jsEdit{}, false
	}
	var repl string
	switch {
	case lit == "true":
		repl = "false"
	case lit == "false":
		repl = "true"
	case lit[0] == '\'' || lit[0] == '"':
		repl = lit[:len(lit)-1] + stringSuffix(rng, lit[1:len(lit)-1]) + lit[len(lit)-1:]
	default:
		v, err := strconv.ParseFloat(lit, 64)
		if err != nil || len(strings.TrimPrefix(lit, "-")) > 1 && strings.HasPrefix(strings.TrimPrefix(lit, "-"), "0") && !strings.HasPrefix(strings.TrimPrefix(lit, "-"), "0.") || math.Abs(v) >= 1e15 {
			return jsEdit{}, false
		}
		switch {
		case strings.Contains(lit, "."):
			repl = strconv.FormatFloat(v+1, 'f', -1, 64)
			if !strings.Contains(repl, ".") {
				repl += ".5"
			}
		case v > 0:
			repl = strconv.FormatFloat(v-1, 'f', -1, 64)
		default:
			repl = strconv.FormatFloat(v+1, 'f', -1, 64)
		}
	}
	return jsEdit{line, start, end, repl}, true
}

// jsBalanced reports whether the brackets of an assertion's text before
// its literal close as expected: expect( ... ) closed once before the
// matcher's own bracket, assert.x( left open. Strings are skipped; a
// template literal or a regular expression makes it give up.
func jsBalanced(s string) bool {
	depth, closedAtZero, commas := 0, 0, 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch c {
		case '\'', '"':
			j := i + 1
			for j < len(s) && s[j] != c {
				if s[j] == '\\' || s[j] == '\n' {
					return false
				}
				j++
			}
			if j >= len(s) {
				return false
			}
			i = j
		case '`', '/':
			return false
		case ',':
			if depth == 1 {
				commas++
			}
		case '(', '[', '{':
			depth++
		case ')', ']', '}':
			depth--
			if depth < 0 {
				return false
			}
			if depth == 0 {
				closedAtZero++
			}
		}
	}
	if strings.HasPrefix(s, "expect(") {
		// expect(...).matcher( : expect's bracket closed, the matcher's open.
		return depth == 1 && closedAtZero == 1 && strings.HasSuffix(strings.TrimRight(s, " \t\n"), "(")
	}
	// assert.x(ACTUAL, : the literal is the second argument.
	return depth == 1 && closedAtZero == 0 && commas == 1
}

// jsTest is one listed test located in a file.
type jsTest struct {
	file  string
	block int
	f2p   bool
}

// planJS plans JavaScript mutant canaries for t; nil and the reason when
// it cannot.
func planJS(t *task.Task, cmd string, src Source, rng *rand.Rand, taken map[string]bool) (*Canaries, string) {
	parser := t.LogParser
	if parser == "" {
		parser = task.RepoLogParser(t.Repo)
	}
	c, ok := parseJSCommand(parser, cmd)
	if !ok {
		return nil, "the test command is not one " + parser + " command this plan reads"
	}
	files := map[string]*jsFile{}
	var order []string
	for _, d := range parseDiff(t.TestPatch) {
		if d.Deleted || !jsTestFile(d.Path) || !c.runs(d.Path) {
			continue
		}
		if s, ok := src(d.Path); ok {
			files[d.Path] = parseJSFile(s)
			order = append(order, d.Path)
		}
	}
	if len(files) == 0 {
		return nil, "no test file of the test patch the command runs could be read"
	}
	for _, file := range order {
		// A focused test (.only, fit, fdescribe) runs alone: copies
		// outside it would be missing from an honest log.
		if t := files[file].text; strings.Contains(t, ".only(") || jsFocus.MatchString(t) {
			return nil, "a test file of the test patch focuses tests (.only)"
		}
	}
	var tests []jsTest
	for i, name := range append(append([]string{}, t.FailToPass...), t.PassToPass...) {
	search:
		for _, file := range order {
			f := files[file]
			for k, b := range f.blocks {
				if b.kind != "test" {
					continue
				}
				if ch, ok := f.chain(k); ok && c.key(file, ch) == name {
					tests = append(tests, jsTest{file, k, i < len(t.FailToPass)})
					break search
				}
			}
		}
	}
	if len(tests) == 0 {
		return nil, "no listed test is an it/test call inside describe blocks only, in a test file of the test patch the command runs"
	}
	for _, f2p := range []bool{true, false} {
		for _, h := range tests {
			if h.f2p != f2p {
				continue
			}
			if cn := jsMutantOf(t, c, h, tests, files[h.file], rng, taken); cn != nil {
				return cn, ""
			}
		}
	}
	return nil, "no listed test has an assertion of a literal to change directly in its body, with only assertions after it"
}

func jsTestFile(p string) bool {
	for _, ext := range []string{".js", ".jsx", ".ts", ".tsx", ".mjs", ".cjs", ".mts", ".cts"} {
		if strings.HasSuffix(p, ext) {
			return true
		}
	}
	return false
}

// jsMutantOf plans the canaries from test h, or returns nil.
func jsMutantOf(t *task.Task, c jsCommand, h jsTest, tests []jsTest, f *jsFile, rng *rand.Rand, taken map[string]bool) *Canaries {
	b := f.blocks[h.block]
	if !f.copyable(b) {
		return nil
	}
	m, ok := f.jsMutation(rng, b)
	if !ok {
		return nil
	}
	twin := h.block
	var twins []int
	for _, o := range tests {
		if o.file == h.file && o.block != h.block && f.blocks[o.block].parent == b.parent && f.copyable(f.blocks[o.block]) {
			if _, ok := f.statements(f.blocks[o.block]); ok {
				twins = append(twins, o.block)
			}
		}
	}
	if len(twins) > 0 {
		twin = twins[rng.IntN(len(twins))]
	}
	chain, _ := f.chain(h.block)
	exists := func(n string) bool {
		if taken[n] || strings.Contains(f.text, n) || strings.Contains(t.TestPatch, n) {
			return true
		}
		for _, l := range append(append([]string{}, t.FailToPass...), t.PassToPass...) {
			if strings.HasSuffix(l, " "+n) {
				return true
			}
		}
		for _, x := range f.blocks {
			if strings.EqualFold(x.title, n) {
				return true
			}
		}
		return false
	}
	mustFail, ok1 := jsStyledName(rng, f, b.parent, chain, c, exists)
	// Neither title may end the other (karma's verdict finds a canary by
	// the end of a key).
	mustPass, ok2 := jsStyledName(rng, f, b.parent, chain, c, func(n string) bool {
		return strings.HasSuffix(n, mustFail) || strings.HasSuffix(mustFail, n) || exists(n)
	})
	if !ok1 || !ok2 {
		return nil
	}
	fail := f.copyBlock(h.block, mustFail, &m)
	pass := f.copyBlock(twin, mustPass, nil)
	text := f.insert(rng, []int{h.block, twin}, []string{fail, pass})
	// The copies must read back as tests of the same describe block.
	g := parseJSFile(text)
	found := 0
	for k, x := range g.blocks {
		if x.kind == "test" && (x.title == mustFail || x.title == mustPass) {
			if ch, ok := g.chain(k); ok && slices.Equal(ch[:len(ch)-1], chain[:len(chain)-1]) {
				found++
			}
		}
	}
	if found != 2 || len(g.blocks) != len(f.blocks)+2 {
		return nil
	}
	// Only karma's parser may file a test under another block's name; the
	// others' keys are matched whole.
	var titles [2]string
	if c.runner == "karma" {
		titles = [2]string{mustFail, mustPass}
	}
	failChain := append(slices.Clone(chain[:len(chain)-1]), mustFail)
	passChain := append(slices.Clone(chain[:len(chain)-1]), mustPass)
	return &Canaries{
		File: h.file, MustFail: c.key(h.file, failChain), MustPass: c.key(h.file, passChain), Original: c.key(h.file, chain),
		framework: frameworkJS, content: text, seed: rng.Uint64(), titles: titles,
	}
}

// copyBlock returns block k's lines with its title replaced by title and
// m applied when it is not nil.
func (f *jsFile) copyBlock(k int, title string, m *jsEdit) string {
	b := f.blocks[k]
	lines := slices.Clone(f.lines[b.start : b.end+1])
	q := string(b.quote)
	at := strings.Index(lines[0], "("+q)
	lines[0] = lines[0][:at+2] + title + lines[0][at+2+len(b.title):]
	if m != nil {
		i := m.line - b.start
		lines[i] = lines[i][:m.start] + m.text + lines[i][m.end:]
	}
	return strings.Join(lines, "\n")
}

// insert puts each copy after a test of the same describe block as the
// test it copies (anchors), at or after that test, and returns the text.
func (f *jsFile) insert(rng *rand.Rand, anchors []int, copies []string) string {
	spots := make([][]int, len(anchors))
	for i, a := range anchors {
		for _, x := range f.blocks {
			if x.kind == "test" && x.parent == f.blocks[a].parent && x.start >= f.blocks[a].start {
				spots[i] = append(spots[i], x.end)
			}
		}
	}
	return insertCopies(rng, f.lines, spots, copies)
}

// insertCopies puts copies[i] after a line drawn from spots[i] (each
// after an empty line) and returns the text: the layout-read planners'
// (JavaScript, PHP) one way of placing copies. Copies are inserted from
// the bottom up, so the line numbers drawn stay right.
func insertCopies(rng *rand.Rand, lines []string, spots [][]int, copies []string) string {
	type ins struct{ after, i int }
	picks := make([]ins, 0, len(spots))
	for i, sp := range spots {
		picks = append(picks, ins{sp[rng.IntN(len(sp))], i})
	}
	slices.SortFunc(picks, func(a, b ins) int {
		if a.after != b.after {
			return b.after - a.after
		}
		return b.i - a.i
	})
	out := slices.Clone(lines)
	for _, p := range picks {
		out = slices.Insert(out, p.after+1, append([]string{""}, strings.Split(copies[p.i], "\n")...)...)
	}
	return strings.Join(out, "\n")
}

// jsStyledName draws a title for a copy in the style of its describe
// block's tests: the first word of one of their titles, then as many
// words as that title has drawn from the words of the file's titles. The
// command's filter must select it, it must be free, and it must not end
// in a number (vitest's parser reads a trailing number as a duration).
func jsStyledName(rng *rand.Rand, f *jsFile, parent int, chain []string, c jsCommand, exists func(string) bool) (string, bool) {
	var models []string
	seen := map[string]bool{}
	var pool []string
	for _, x := range f.blocks {
		if x.kind != "test" {
			continue
		}
		if x.parent == parent {
			models = append(models, x.title)
		}
		for _, w := range strings.Fields(x.title) {
			lw := strings.ToLower(w)
			if len(w) > 1 && !seen[lw] && strings.IndexFunc(w, func(r rune) bool { return r > unicode.MaxASCII || !unicode.IsLetter(r) }) < 0 {
				seen[lw] = true
				pool = append(pool, w)
			}
		}
	}
	if len(pool) < 3 || len(models) == 0 {
		return "", false
	}
	ok := func(n string) bool {
		ch := append(slices.Clone(chain[:len(chain)-1]), n)
		return c.selects(ch) && !exists(n)
	}
	for range 300 {
		model := strings.Fields(models[rng.IntN(len(models))])
		if len(model) == 0 {
			continue
		}
		n := min(max(len(model)-1, 2), 6, len(pool))
		words := []string{model[0]}
		for _, k := range rng.Perm(len(pool))[:n] {
			words = append(words, pool[k])
		}
		if name := strings.Join(words, " "); ok(name) {
			return name, true
		}
	}
	orig := chain[len(chain)-1]
	for _, k := range rng.Perm(len(pool)) {
		if name := orig + " " + pool[k]; ok(name) {
			return name, true
		}
	}
	return "", false
}

// safePlanJS is planJS with a failure of its reading of the source a
// reason for no canaries rather than a crash of the grader.
func safePlanJS(t *task.Task, cmd string, src Source, rng *rand.Rand, taken map[string]bool) (c *Canaries, reason string) {
	defer func() {
		if r := recover(); r != nil {
			c, reason = nil, fmt.Sprintf("planning mutants failed: %v", r)
		}
	}()
	return planJS(t, cmd, src, rng, taken)
}

// jsLookup finds the result of a JavaScript canary: under its own key, or
// (title not "": karma) under any key ending in its title after a
// separator (karma's parser can file a test under a sibling block's name). A result found under several
// keys counts as its best when best is set, else as its worst.
func jsLookup(sm swebench.StatusMap, key, title string, best bool) (swebench.Status, bool) {
	var got swebench.Status
	found := false
	for k, s := range sm {
		if k != key && (title == "" || !strings.HasSuffix(k, " "+title)) {
			continue
		}
		if !found || (best && rank(s) > rank(got)) || (!best && rank(s) < rank(got)) {
			got = s
		}
		found = true
	}
	return got, found
}
