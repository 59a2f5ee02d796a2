package tamper

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"math"
	"math/rand/v2"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode"

	"github.com/swerve-dev/swerve/internal/lazyre"
	"github.com/swerve-dev/swerve/internal/task"
)

// Mutant canaries for `go test` (parse_log_gotest). The test file is read
// with the standard library's Go parser; a listed top-level test
// (`func TestX(t *testing.T)`, listed as "TestX" itself: a test listed
// only by a subtest may fail as a whole) is copied into its own file under
// a name in the file's own style, once with one assertion changed so that
// it fails (must fail) and once as it is (must pass). The assertions it
// changes sit directly in the test's body, before anything that may end
// the test early (a return, a skip):
//
//   - testify or gotest.tools: assert.Equal(t, A, B) and its kin with a
//     literal A or B (the literal changed), assert.True/False, Nil/NotNil,
//     NoError/Error, Empty/NotEmpty, Contains/NotContains, Equal/NotEqual
//     (turned into their opposite);
//   - quicktest: c.Assert(x, qt.Equals, LIT) (the literal changed);
//   - plain Go: `if COND { t.Errorf(...) }` whose block holds only t's
//     Error/Fatal/Fail/Log calls with literal and name arguments, which
//     cannot panic when the copy runs them (the literal of `x != LIT`
//     changed, else COND negated).
//
// Since Go compiles a package's test files together, a copy that does not
// compile takes every test of the package down with it; so every change
// keeps the literal's kind and range (an integer moves towards zero by one
// or from zero to one), and the names are checked against every file of
// the package directory (read through Source with the directory's path
// and a trailing slash, which lists it as `git show <rev>:<dir>/` does).
// The whole changed file is computed here; the injector is a shell script
// that writes it (Go images need not have Python).

const frameworkGo = "gotest"

// goCommand is what the plan needs of a `go test` command line.
type goCommand struct {
	pkgs []string       // package patterns ("./x", "./x/...", ".")
	run  *regexp.Regexp // -run's first element, nil when there is none
}

// parseGoCommand reads the test command of a go test eval script; ok is
// false when it is not one go test command this plan understands.
func parseGoCommand(cmd string) (goCommand, bool) {
	words := shellWords(cmd)
	var g goCommand
	at := -1
	for i := 0; i+1 < len(words); i++ {
		if words[i] == "go" && words[i+1] == "test" {
			if at >= 0 {
				return g, false // two go test commands
			}
			at = i + 2
		}
	}
	if at < 0 {
		return g, false
	}
	withValue := map[string]bool{"-run": true, "-timeout": true, "-tags": true, "-count": true, "-p": true,
		"-parallel": true, "-cpu": true, "-coverprofile": true, "-covermode": true, "-coverpkg": true, "-bench": true,
		"-benchtime": true, "-ldflags": true, "-gcflags": true, "-mod": true, "-o": true, "-exec": true}
	for i := at; i < len(words); i++ {
		w := words[i]
		if w == "|" || w == "&&" || w == ";" || w == "||" || w == ")" {
			break
		}
		if strings.HasPrefix(w, "-") {
			name, val, has := strings.Cut(strings.TrimPrefix(w, "-"), "=")
			name = "-" + strings.TrimPrefix(name, "-")
			if name == "-skip" || name == "-list" || name == "-shuffle" {
				return g, false
			}
			if !has && withValue[name] {
				if i+1 >= len(words) {
					return g, false
				}
				i++
				val = words[i]
			}
			if name == "-run" {
				re, err := regexp.Compile(goRunTop(val))
				if err != nil {
					return g, false
				}
				g.run = re
			}
			continue
		}
		if w != "." && !strings.HasPrefix(w, "./") {
			return g, false // an import path: no directory to read
		}
		g.pkgs = append(g.pkgs, w)
	}
	if len(g.pkgs) == 0 {
		g.pkgs = []string{"."}
	}
	return g, true
}

// goRunTop is the first element of a -run pattern (go test splits it at
// slashes outside brackets and parentheses: the first element is matched
// against top-level test names).
func goRunTop(pat string) string {
	depth := 0
	for i := 0; i < len(pat); i++ {
		switch pat[i] {
		case '\\':
			i++
		case '[', '(':
			depth++
		case ']', ')':
			depth--
		case '/':
			if depth == 0 {
				return pat[:i]
			}
		}
	}
	return pat
}

// runs reports whether the command runs the tests of directory dir
// ("." for the repository's root).
func (g goCommand) runs(dir string) bool {
	for _, p := range g.pkgs {
		if p == "." {
			p = ""
		}
		p = strings.TrimPrefix(p, "./")
		if rest, ok := strings.CutSuffix(p, "..."); ok {
			rest = strings.TrimSuffix(rest, "/")
			if rest == "" || dir == rest || strings.HasPrefix(dir, rest+"/") {
				return true
			}
			continue
		}
		p = strings.TrimSuffix(p, "/")
		if p == "" {
			p = "."
		}
		if p == dir {
			return true
		}
	}
	return false
}

// selects reports whether -run lets top-level test name run.
func (g goCommand) selects(name string) bool { return g.run == nil || g.run.MatchString(name) }

// shellWords splits a command line into words as a shell would for the
// simple lines eval scripts hold: quotes removed, parentheses and pipes
// words of their own.
func shellWords(s string) []string {
	var out []string
	var cur strings.Builder
	in := false
	flush := func() {
		if in {
			out = append(out, cur.String())
			cur.Reset()
			in = false
		}
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '\'':
			j := strings.IndexByte(s[i+1:], '\'')
			if j < 0 {
				j = len(s) - i - 1
			}
			cur.WriteString(s[i+1 : i+1+j])
			in = true
			i += j + 1
		case c == '"':
			i++
			for ; i < len(s) && s[i] != '"'; i++ {
				if s[i] == '\\' && i+1 < len(s) && strings.IndexByte("\"\\$`", s[i+1]) >= 0 {
					i++
				}
				cur.WriteByte(s[i])
			}
			in = true
		case c == ' ' || c == '\t' || c == '\n':
			flush()
		case c == '(' || c == ')' || c == '|' || c == ';' || c == '&':
			flush()
			w := string(c)
			if (c == '|' || c == '&') && i+1 < len(s) && s[i+1] == c {
				w += string(c)
				i++
			}
			out = append(out, w)
		case c == '\\' && i+1 < len(s):
			i++
			cur.WriteByte(s[i])
			in = true
		default:
			cur.WriteByte(c)
			in = true
		}
	}
	flush()
	return out
}

// goTest is one listed top-level test located in a file.
type goTest struct {
	file, fn, name string
	f2p            bool
}

// goFile is a parsed test file.
type goFile struct {
	text  string
	fset  *token.FileSet
	file  *ast.File
	funcs map[string]*ast.FuncDecl // top-level tests by name
}

func parseGoFile(text string) (*goFile, bool) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "x_test.go", text, parser.ParseComments|parser.SkipObjectResolution)
	if err != nil {
		return nil, false
	}
	g := &goFile{text: text, fset: fset, file: f, funcs: map[string]*ast.FuncDecl{}}
	for _, d := range f.Decls {
		fd, ok := d.(*ast.FuncDecl)
		if ok && fd.Recv == nil && fd.Body != nil && testParam(fd) != "" && strings.HasPrefix(fd.Name.Name, "Test") {
			g.funcs[fd.Name.Name] = fd
		}
	}
	return g, true
}

// testParam is the name of a test function's *testing.T parameter ("" when
// fd is not func(x *<pkg>.T)).
func testParam(fd *ast.FuncDecl) string {
	ps := fd.Type.Params.List
	if len(ps) != 1 || len(ps[0].Names) != 1 || fd.Type.Results != nil || fd.Type.TypeParams != nil {
		return ""
	}
	star, ok := ps[0].Type.(*ast.StarExpr)
	if !ok {
		return ""
	}
	sel, ok := star.X.(*ast.SelectorExpr)
	if !ok || sel.Sel.Name != "T" {
		return ""
	}
	if x, ok := sel.X.(*ast.Ident); !ok || x.Name != "testing" {
		return ""
	}
	return ps[0].Names[0].Name
}

// planGo plans Go mutant canaries for t; nil and the reason when it cannot.
func planGo(t *task.Task, cmd string, src Source, rng *rand.Rand, taken map[string]bool) (*Canaries, string) {
	g, ok := parseGoCommand(cmd)
	if !ok {
		return nil, "the test command is not one go test command over package directories"
	}
	// Every file is read once (the grader reads each through the box).
	type cached struct {
		text string
		ok   bool
	}
	cache := map[string]cached{}
	inner := src
	src = func(f string) (string, bool) {
		if r, ok := cache[f]; ok {
			return r.text, r.ok
		}
		text, ok := inner(f)
		cache[f] = cached{text, ok}
		return text, ok
	}
	listed := map[string]bool{}
	for _, n := range append(append([]string{}, t.FailToPass...), t.PassToPass...) {
		listed[n] = true
	}
	files := map[string]*goFile{}
	var candidates []string
	for _, f := range parseDiff(t.TestPatch) {
		if !f.Deleted && strings.HasSuffix(f.Path, "_test.go") && g.runs(path.Dir(f.Path)) {
			candidates = append(candidates, f.Path)
		}
	}
	read := func(file string) *goFile {
		if gf, ok := files[file]; ok {
			return gf
		}
		var gf *goFile
		if s, ok := src(file); ok {
			gf, _ = parseGoFile(s)
		}
		files[file] = gf
		return gf
	}
	var tests []goTest
	for i, name := range append(append([]string{}, t.FailToPass...), t.PassToPass...) {
		if strings.Contains(name, "/") || !listed[name] {
			continue // a subtest: its parent may fail as a whole
		}
		for _, file := range candidates {
			if gf := read(file); gf != nil && gf.funcs[name] != nil {
				tests = append(tests, goTest{file: file, fn: name, name: name, f2p: i < len(t.FailToPass)})
				break
			}
		}
	}
	if len(tests) == 0 {
		return nil, "no listed top-level test is defined in a test file of the test patch the command runs"
	}
	for _, pass := range []struct{ f2p, negate bool }{{true, false}, {true, true}, {false, false}, {false, true}} {
		for _, h := range tests {
			if h.f2p != pass.f2p {
				continue
			}
			if c := goMutantOf(t, g, h, tests, files[h.file], pass.negate, src, rng, taken); c != nil {
				return c, ""
			}
		}
	}
	return nil, "no listed test has an assertion to change directly in its body"
}

// goMutantOf plans the canaries from test h, or returns nil.
func goMutantOf(t *task.Task, g goCommand, h goTest, tests []goTest, gf *goFile, negate bool, src Source, rng *rand.Rand, taken map[string]bool) *Canaries {
	fd := gf.funcs[h.fn]
	if goNameBound(gf, fd) {
		return nil
	}
	m, ok := goMutation(rng, gf, fd, negate)
	if !ok {
		return nil
	}
	twin := fd
	var twins []*ast.FuncDecl
	for _, o := range tests {
		if o.file == h.file && o.fn != h.fn {
			if od := gf.funcs[o.fn]; od != nil && !goNameBound(gf, od) && !goMaySkip(od) {
				twins = append(twins, od)
			}
		}
	}
	if len(twins) > 0 {
		twin = twins[rng.IntN(len(twins))]
	}
	siblings, ok := goPackageTexts(src, path.Dir(h.file), h.file)
	if !ok {
		return nil
	}
	exists := func(n string) bool {
		if taken[n] || containsWord(gf.text, n) || strings.Contains(t.TestPatch, n) {
			return true
		}
		for _, s := range siblings {
			if containsWord(s, n) {
				return true
			}
		}
		return false
	}
	var names []string
	for n := range gf.funcs {
		names = append(names, n)
	}
	slices.Sort(names)
	mustFail, ok1 := goStyledName(rng, names, h.fn, g, exists)
	mustPass, ok2 := goStyledName(rng, names, twin.Name.Name, g, func(n string) bool { return n == mustFail || exists(n) })
	if !ok1 || !ok2 {
		return nil
	}
	fail := goCopy(gf, fd, mustFail, &m)
	pass := goCopy(gf, twin, mustPass, nil)
	text := goInsert(rng, gf, []string{fail, pass})
	if _, ok := parseGoFile(text); !ok {
		return nil
	}
	return &Canaries{
		File: h.file, MustFail: mustFail, MustPass: mustPass, Original: h.name,
		framework: frameworkGo, content: text, seed: rng.Uint64(),
	}
}

// goPackageTexts reads the other Go files of directory dir (listed by
// reading dir + "/"); ok is false when the directory cannot be listed.
func goPackageTexts(src Source, dir, self string) ([]string, bool) {
	ls := dir + "/"
	if dir == "." {
		ls = ""
	}
	listing, ok := src(ls)
	if !ok {
		return nil, false
	}
	var out []string
	for _, l := range strings.Split(listing, "\n") {
		l = strings.TrimSpace(l)
		if !strings.HasSuffix(l, ".go") || strings.Contains(l, " ") {
			continue
		}
		f := path.Join(dir, l)
		if f == self {
			continue
		}
		if s, ok := src(f); ok {
			out = append(out, s)
		}
	}
	return out, true
}

// goNameBound reports whether a test may find files or results by its own
// name (golden files, snapshots, t.Name()), so that a copy may not pass
// where it does, or shares state a copy running beside it would disturb.
func goNameBound(gf *goFile, fd *ast.FuncDecl) bool {
	body := gf.text[gf.fset.Position(fd.Pos()).Offset:gf.fset.Position(fd.End()).Offset]
	for _, w := range []string{".Name()", "golden", "Golden", "snapshot", "Snapshot", "runtime.Caller", "flag."} {
		if strings.Contains(body, w) {
			return true
		}
	}
	// A fixed port: a copy would find it taken if the original (or a copy
	// before it) left a listener behind.
	if goFixedPort.MatchString(body) {
		return true
	}
	// The function's own name spelled in a string (a fixture directory).
	return strings.Contains(body, `"`+fd.Name.Name) || strings.Contains(body, strings.TrimPrefix(fd.Name.Name, "Test")+`"`)
}

// goMaySkip reports whether a test calls a Skip method anywhere.
func goMaySkip(fd *ast.FuncDecl) bool {
	skip := false
	ast.Inspect(fd.Body, func(n ast.Node) bool {
		if sel, ok := n.(*ast.SelectorExpr); ok && strings.HasPrefix(sel.Sel.Name, "Skip") {
			skip = true
		}
		return !skip
	})
	return skip
}

var goFixedPort = lazyre.New(`"[^"\s]*:[1-9][0-9]{1,4}["/]`)

// goEdit replaces bytes [start, end) of the file.
type goEdit struct {
	start, end int
	text       string
}

// goOpposites are testify / gotest.tools assertions and the ones that fail
// wherever they pass.
var goOpposites = map[string]string{}

func init() {
	for _, p := range [][2]string{{"True", "False"}, {"Nil", "NotNil"}, {"NoError", "Error"}, {"Empty", "NotEmpty"},
		{"Contains", "NotContains"}, {"Equal", "NotEqual"}, {"Zero", "NotZero"}} {
		goOpposites[p[0]], goOpposites[p[1]] = p[1], p[0]
	}
}

// goEqualities are the assertions of two equal values whose literal
// argument, changed, certainly makes a passing one fail.
var goEqualities = map[string]bool{"Equal": true, "Equalf": true, "EqualValues": true, "EqualValuesf": true, "Exactly": true, "Exactlyf": true, "DeepEqual": true}

// goAssertPkgs are the import paths whose assert functions take (t,
// expected, actual, ...).
var goAssertPkgs = map[string]bool{
	"github.com/stretchr/testify/assert": true, "github.com/stretchr/testify/require": true,
	"gotest.tools/v3/assert": true, "gotest.tools/assert": true,
}

// goImportNames maps the local names of f's imports to their paths.
func goImportNames(f *ast.File) map[string]string {
	out := map[string]string{}
	for _, im := range f.Imports {
		p, err := strconv.Unquote(im.Path.Value)
		if err != nil {
			continue
		}
		name := path.Base(p)
		if p == "github.com/frankban/quicktest" {
			name = "quicktest"
		}
		if im.Name != nil {
			name = im.Name.Name
		}
		out[name] = p
	}
	return out
}

// goMutation picks a change of one assertion directly in fd's body that
// certainly fails where the original passes (see the comment at the top).
func goMutation(rng *rand.Rand, gf *goFile, fd *ast.FuncDecl, negate bool) (goEdit, bool) {
	tname := testParam(fd)
	imports := goImportNames(gf.file)
	for _, st := range fd.Body.List {
		if goMayLeave(st) {
			break
		}
		// The first assertion that can be changed: the one nearest the
		// test's start is the least likely to sit behind anything.
		if options := goStmtEdits(rng, gf, st, tname, imports, negate); len(options) > 0 {
			return options[rng.IntN(len(options))], true
		}
	}
	return goEdit{}, false
}

// goStmtEdits are the changes of statement st that make it fail where it
// passed.
func goStmtEdits(rng *rand.Rand, gf *goFile, st ast.Stmt, tname string, imports map[string]string, negate bool) []goEdit {
	off := func(p token.Pos) int { return gf.fset.Position(p).Offset }
	var options []goEdit
	{
		switch s := st.(type) {
		case *ast.ExprStmt:
			call, ok := s.X.(*ast.CallExpr)
			if !ok || call.Ellipsis.IsValid() {
				return nil
			}
			sel, ok := call.Fun.(*ast.SelectorExpr)
			if !ok {
				return nil
			}
			x, ok := sel.X.(*ast.Ident)
			if !ok {
				return nil
			}
			switch {
			case goAssertPkgs[imports[x.Name]] && len(call.Args) >= 2 && isIdent(call.Args[0], tname):
				method := sel.Sel.Name
				if negate {
					if opp, ok := goOpposites[method]; ok && (method != "Equal" || strings.HasPrefix(imports[x.Name], "github.com/stretchr")) {
						options = append(options, goEdit{off(sel.Sel.Pos()), off(sel.Sel.End()), opp})
					}
					return options
				}
				if goEqualities[method] && len(call.Args) >= 3 {
					for _, a := range call.Args[1:3] {
						if e, ok := goLiteralEdit(rng, gf, a); ok {
							options = append(options, e)
							break
						}
					}
				}
			case imports[x.Name] == "" && (sel.Sel.Name == "Assert" || sel.Sel.Name == "Check") && len(call.Args) == 3 && goQuickEquals(call.Args[1], imports):
				if !negate {
					if e, ok := goLiteralEdit(rng, gf, call.Args[2]); ok {
						options = append(options, e)
					}
				}
			}
		case *ast.IfStmt:
			if s.Else != nil || !goFailsBlock(s.Body, tname) {
				return nil
			}
			if negate {
				return []goEdit{{off(s.Cond.Pos()), off(s.Cond.End()), "!(" + gf.text[off(s.Cond.Pos()):off(s.Cond.End())] + ")"}}
			}
			if b, ok := s.Cond.(*ast.BinaryExpr); ok && b.Op == token.NEQ {
				for _, a := range []ast.Expr{b.Y, b.X} {
					if e, ok := goLiteralEdit(rng, gf, a); ok {
						options = append(options, e)
						break
					}
				}
			}
		}
	}
	return options
}

func isIdent(e ast.Expr, name string) bool {
	id, ok := e.(*ast.Ident)
	return ok && id.Name == name
}

// goQuickEquals reports whether e is quicktest's Equals or DeepEquals.
func goQuickEquals(e ast.Expr, imports map[string]string) bool {
	sel, ok := e.(*ast.SelectorExpr)
	if !ok || (sel.Sel.Name != "Equals" && sel.Sel.Name != "DeepEquals") {
		return false
	}
	x, ok := sel.X.(*ast.Ident)
	return ok && imports[x.Name] == "github.com/frankban/quicktest"
}

// goFailsBlock reports whether a block certainly fails the test when it
// runs, and cannot panic: it holds only calls of t's Error*, Fatal*,
// Fail* and Log* methods whose arguments are literals and names, and at
// least one of them fails. (A changed copy runs the block where the
// original never did: an argument like err.Error() on a nil error would
// panic there, and a panic ends the whole test binary, honest tests and
// all. fmt recovers what formatting a value panics with.)
func goFailsBlock(b *ast.BlockStmt, tname string) bool {
	fails := false
	for _, st := range b.List {
		es, ok := st.(*ast.ExprStmt)
		if !ok {
			return false
		}
		call, ok := es.X.(*ast.CallExpr)
		if !ok || call.Ellipsis.IsValid() {
			return false
		}
		sel, ok := call.Fun.(*ast.SelectorExpr)
		if !ok || !isIdent(sel.X, tname) {
			return false
		}
		switch sel.Sel.Name {
		case "Error", "Errorf", "Fatal", "Fatalf", "Fail", "FailNow":
			fails = true
		case "Log", "Logf":
		default:
			return false
		}
		for _, a := range call.Args {
			switch a.(type) {
			case *ast.BasicLit, *ast.Ident:
			default:
				return false
			}
		}
	}
	return fails
}

// goMayLeave reports whether a statement may end the test without failing
// it, or jump past what follows: a return, goto or labelled branch at any
// depth outside function literals, a Skip call, runtime.Goexit.
func goMayLeave(st ast.Stmt) bool {
	leave := false
	ast.Inspect(st, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.FuncLit:
			return false
		case *ast.ReturnStmt:
			leave = true
		case *ast.BranchStmt:
			if n.Tok == token.GOTO || n.Label != nil {
				leave = true
			}
		case *ast.SelectorExpr:
			if strings.HasPrefix(n.Sel.Name, "Skip") || n.Sel.Name == "Goexit" {
				leave = true
			}
		}
		return !leave
	})
	return leave
}

// goLiteralEdit changes literal e so that it certainly differs from what
// it was and keeps its kind and its type's range: an integer one step
// towards zero (zero becomes one), a float plus one, a string with
// letters added, true and false swapped.
func goLiteralEdit(rng *rand.Rand, gf *goFile, e ast.Expr) (goEdit, bool) {
	start, end := gf.fset.Position(e.Pos()).Offset, gf.fset.Position(e.End()).Offset
	switch l := e.(type) {
	case *ast.Ident:
		switch l.Name {
		case "true":
			return goEdit{start, end, "false"}, true
		case "false":
			return goEdit{start, end, "true"}, true
		}
	case *ast.BasicLit:
		switch l.Kind {
		case token.INT:
			v, err := strconv.ParseInt(l.Value, 0, 64)
			if err != nil {
				return goEdit{}, false
			}
			if v > 0 {
				v--
			} else {
				v++
			}
			return goEdit{start, end, strconv.FormatInt(v, 10)}, true
		case token.FLOAT:
			v, err := strconv.ParseFloat(strings.ReplaceAll(l.Value, "_", ""), 64)
			if err != nil || math.IsInf(v, 0) || math.Abs(v) >= 1e15 || strings.ContainsAny(l.Value, "xXpP") {
				return goEdit{}, false
			}
			s := strconv.FormatFloat(v+1, 'g', -1, 64)
			if !strings.ContainsAny(s, ".e") {
				s += ".0"
			}
			return goEdit{start, end, s}, true
		case token.STRING:
			q := l.Value[len(l.Value)-1:]
			body := l.Value[1 : len(l.Value)-1]
			return goEdit{start, end, l.Value[:len(l.Value)-1] + stringSuffix(rng, body) + q}, true
		}
	}
	return goEdit{}, false
}

// goCopy returns test fd's source (from its func keyword) under name, with
// m applied when it is not nil; t.Parallel() calls directly in its body are
// left out, so the copy never runs beside its original.
func goCopy(gf *goFile, fd *ast.FuncDecl, name string, m *goEdit) string {
	off := func(p token.Pos) int { return gf.fset.Position(p).Offset }
	start, end := off(fd.Pos()), off(fd.End())
	edits := []goEdit{{off(fd.Name.Pos()), off(fd.Name.End()), name}}
	if m != nil {
		edits = append(edits, *m)
	}
	tname := testParam(fd)
	for _, st := range fd.Body.List {
		es, ok := st.(*ast.ExprStmt)
		if !ok {
			continue
		}
		call, ok := es.X.(*ast.CallExpr)
		if !ok {
			continue
		}
		if sel, ok := call.Fun.(*ast.SelectorExpr); ok && isIdent(sel.X, tname) && sel.Sel.Name == "Parallel" && len(call.Args) == 0 {
			s, e := off(st.Pos()), off(st.End())
			// The whole line, when the call is alone on it.
			ls := strings.LastIndexByte(gf.text[:s], '\n') + 1
			le := strings.IndexByte(gf.text[e:], '\n')
			if strings.TrimSpace(gf.text[ls:s]) == "" && le >= 0 && strings.TrimSpace(gf.text[e:e+le]) == "" {
				s, e = ls, e+le+1
			}
			edits = append(edits, goEdit{s, e, ""})
		}
	}
	slices.SortFunc(edits, func(a, b goEdit) int { return b.start - a.start })
	text := gf.text[start:end]
	for _, ed := range edits {
		text = text[:ed.start-start] + ed.text + text[ed.end-start:]
	}
	return text
}

// goInsert puts each block before a random top-level declaration of the
// file (its doc comment included) or at its end, and returns the new text.
func goInsert(rng *rand.Rand, gf *goFile, blocks []string) string {
	var spots []int
	for _, d := range gf.file.Decls {
		p := d.Pos()
		if fd, ok := d.(*ast.FuncDecl); ok && fd.Doc != nil {
			p = fd.Doc.Pos()
		}
		if gd, ok := d.(*ast.GenDecl); ok {
			if gd.Tok == token.IMPORT {
				continue
			}
			if gd.Doc != nil {
				p = gd.Doc.Pos()
			}
		}
		spots = append(spots, gf.fset.Position(p).Offset)
	}
	text := gf.text
	if !strings.HasSuffix(text, "\n") {
		text += "\n"
	}
	spots = append(spots, len(text))
	type ins struct{ at, i int }
	var picks []ins
	for i := range blocks {
		at := spots[rng.IntN(len(spots))]
		picks = append(picks, ins{at, i})
	}
	slices.SortFunc(picks, func(a, b ins) int {
		if a.at != b.at {
			return b.at - a.at
		}
		return b.i - a.i
	})
	for _, p := range picks {
		b := blocks[p.i]
		if p.at == len(text) {
			text = text + "\n" + b + "\n"
		} else {
			text = text[:p.at] + b + "\n\n" + text[p.at:]
		}
	}
	return text
}

// goNameWords splits a Go test name after "Test" into its segments (at
// underscores) and each segment into its words (at capitals).
func goNameWords(name string) [][]string {
	var out [][]string
	for _, seg := range strings.Split(strings.TrimPrefix(name, "Test"), "_") {
		var words []string
		cur := ""
		for _, r := range seg {
			if unicode.IsUpper(r) && cur != "" {
				words = append(words, cur)
				cur = ""
			}
			cur += string(r)
		}
		if cur != "" {
			words = append(words, cur)
		}
		out = append(out, words)
	}
	return out
}

// goStyledName draws a name for a copy of test orig in the style of the
// file's tests (names): a name of the file's with its last segment's words
// redrawn from the words of all their names, else orig with one of those
// words added. It must match -run and be free (exists false).
func goStyledName(rng *rand.Rand, names []string, orig string, g goCommand, exists func(string) bool) (string, bool) {
	var pool []string
	seen := map[string]bool{}
	for _, n := range names {
		for _, seg := range goNameWords(n) {
			for _, w := range seg {
				lw := strings.ToLower(w)
				if len(w) > 1 && !seen[lw] {
					seen[lw] = true
					pool = append(pool, w)
				}
			}
		}
	}
	if len(pool) < 2 {
		return "", false
	}
	upper := func(w string) string {
		r := []rune(w)
		r[0] = unicode.ToUpper(r[0])
		return string(r)
	}
	lower := func(w string) string {
		r := []rune(w)
		r[0] = unicode.ToLower(r[0])
		return string(r)
	}
	ok := func(n string) bool { return g.selects(n) && !exists(n) && token.IsIdentifier(n) }
	for range 300 {
		model := names[rng.IntN(len(names))]
		segs := goNameWords(model)
		last := segs[len(segs)-1]
		n := max(len(last), 2)
		n = min(n, len(pool))
		var s strings.Builder
		for i, k := range rng.Perm(len(pool))[:n] {
			w := upper(pool[k])
			if i == 0 && len(segs) > 1 && last != nil && unicode.IsLower([]rune(last[0])[0]) {
				w = lower(w)
			}
			s.WriteString(w)
		}
		prefix := "Test"
		if len(segs) > 1 {
			prefix = model[:strings.LastIndexByte(model, '_')+1]
		}
		if name := prefix + s.String(); ok(name) {
			return name, true
		}
	}
	for _, k := range rng.Perm(len(pool)) {
		if name := orig + upper(pool[k]); ok(name) {
			return name, true
		}
	}
	return "", false
}

// goInjector is the shell script that writes the file with the canaries
// in (run as root before the tests, then deleted).
func goInjector(file, content string, rng *rand.Rand) []byte {
	if !strings.HasSuffix(content, "\n") {
		content += "\n"
	}
	delim := ""
	for delim == "" || strings.Contains(content, delim) {
		delim = fmt.Sprintf("EOF_%016x", rng.Uint64())
	}
	return []byte("cat > " + shellQuote(file) + " <<'" + delim + "'\n" + content + delim + "\n")
}

// safePlanGo is planGo with a failure of its reading of the source a
// reason for no canaries rather than a crash of the grader.
func safePlanGo(t *task.Task, cmd string, src Source, rng *rand.Rand, taken map[string]bool) (c *Canaries, reason string) {
	defer func() {
		if r := recover(); r != nil {
			c, reason = nil, fmt.Sprintf("planning mutants failed: %v", r)
		}
	}()
	return planGo(t, cmd, src, rng, taken)
}
