package tamper

import (
	"fmt"
	"go/parser"
	"go/token"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/swerve-dev/swerve/internal/reward/swebench"
	"github.com/swerve-dev/swerve/internal/task"
)

func TestParseGoCommand(t *testing.T) {
	for _, tc := range []struct {
		cmd      string
		ok       bool
		runs     map[string]bool
		selected map[string]bool
	}{
		{`(go test -v ./caddyconfig/caddyfile) | cat`, true, map[string]bool{"caddyconfig/caddyfile": true, "caddyconfig": false}, map[string]bool{"TestAnything": true}},
		{`(go test -v . -run "^TestContext.*Bind") | cat`, true, map[string]bool{".": true, "binding": false}, map[string]bool{"TestContextBindHeader": true, "TestXContextBind": false}},
		{`(go test -v ./hugolib/... -run "^TestGetPage[^/]") | cat`, true, map[string]bool{"hugolib": true, "hugolib/x": true, "tpl": false}, map[string]bool{"TestGetPageX": true, "TestGetPage": false}},
		{`(go test -v ./... -run "^Test.*Reader") | cat`, true, map[string]bool{".": true, "render": true}, map[string]bool{"TestReaderRender": true}},
		{`(go test . -v -run "TestMethodNotAllowedNoRoute") | cat`, true, map[string]bool{".": true}, map[string]bool{"TestMethodNotAllowedNoRouteX": true, "TestMethod": false}},
		{`(go test -v ./internal/command -run "^TestFmt/sub") | cat`, true, map[string]bool{"internal/command": true}, map[string]bool{"TestFmtX": true}},
		{`(go test -v ./promql ./model/labels -run "^(TestRangeQuery|TestLabels)") | cat`, true, map[string]bool{"promql": true, "model/labels": true, "model": false}, map[string]bool{"TestLabelsX": true, "TestRange": false}},
		{`go test ./a && go test ./b`, false, nil, nil},
		{`go test github.com/x/y`, false, nil, nil},
		{`go test -skip TestX ./a`, false, nil, nil},
		{`cargo test`, false, nil, nil},
	} {
		g, ok := parseGoCommand(tc.cmd)
		if ok != tc.ok {
			t.Errorf("%s: ok %v, want %v", tc.cmd, ok, tc.ok)
			continue
		}
		for dir, want := range tc.runs {
			if got := g.runs(dir); got != want {
				t.Errorf("%s: runs(%q) = %v, want %v", tc.cmd, dir, got, want)
			}
		}
		for name, want := range tc.selected {
			if got := g.selects(name); got != want {
				t.Errorf("%s: selects(%q) = %v, want %v", tc.cmd, name, got, want)
			}
		}
	}
}

const goSample = `package demo

import (
	"testing"

	"github.com/stretchr/testify/assert"
	qt "github.com/frankban/quicktest"
)

func TestPlain(t *testing.T) {
	t.Parallel()
	if got := Add(1, 2); got != 3 {
		t.Errorf("got %d", got)
	}
}

func TestTestify(t *testing.T) {
	x := Name()
	assert.Equal(t, "demo", x)
}

func TestQuick(t *testing.T) {
	c := qt.New(t)
	c.Assert(Add(2, 2), qt.Equals, 4)
}

func TestOnlyNegatable(t *testing.T) {
	if !Ok() {
		t.Fatal("not ok")
	}
	assert.True(t, Ok())
}

func TestEarlyReturn(t *testing.T) {
	if Short() {
		return
	}
	assert.Equal(t, 1, One())
}

func TestGolden(t *testing.T) {
	assert.Equal(t, read(t.Name()), "x")
}

func TestPanickyBlock(t *testing.T) {
	err := Do()
	if err != nil {
		t.Fatalf("do: %v", err.Error())
	}
}

func TestUnderIf(t *testing.T) {
	if Cond() {
		assert.Equal(t, 1, One())
	}
}
`

// TestGoMutation checks which assertion of each test the mutation
// changes, and that none is found where a changed copy might not run.
func TestGoMutation(t *testing.T) {
	gf, ok := parseGoFile(goSample)
	if !ok {
		t.Fatal("sample does not parse")
	}
	for _, tc := range []struct {
		fn     string
		negate bool
		want   string // the changed text, "" for none
	}{
		{"TestPlain", false, "2"},
		{"TestPlain", true, "!(got != 3)"},
		{"TestTestify", false, `"demo`}, // a prefix: letters are added
		{"TestQuick", false, "3"},
		{"TestOnlyNegatable", false, ""},
		{"TestOnlyNegatable", true, "!(!Ok())"},
		{"TestEarlyReturn", false, ""},
		{"TestEarlyReturn", true, ""},
		{"TestUnderIf", false, ""},
		{"TestPanickyBlock", true, ""}, // err.Error() would panic in the copy
	} {
		rng := rand.New(rand.NewPCG(1, 2))
		m, ok := goMutation(rng, gf, gf.funcs[tc.fn], tc.negate)
		if tc.want == "" {
			if ok {
				t.Errorf("%s negate=%v: changed %q, want no change", tc.fn, tc.negate, m.text)
			}
			continue
		}
		if !ok || !strings.HasPrefix(m.text, tc.want) || m.text == goSample[m.start:m.end] {
			t.Errorf("%s negate=%v: got %q (ok %v), want %q", tc.fn, tc.negate, m.text, ok, tc.want)
		}
	}
	if !goNameBound(gf, gf.funcs["TestGolden"]) || goNameBound(gf, gf.funcs["TestPlain"]) {
		t.Error("goNameBound: TestGolden must be name-bound, TestPlain not")
	}
	for body, want := range map[string]bool{`http.ListenAndServe("localhost:8080", nil)`: true, `net.Listen("tcp", ":9080")`: true,
		`net.Listen("tcp", "127.0.0.1:0")`: false, `get("http://127.0.0.1:2019/config")`: true, `x := "a:b"`: false} {
		if got := goFixedPort.MatchString(body); got != want {
			t.Errorf("goFixedPort(%s) = %v, want %v", body, got, want)
		}
	}
}

func TestGoLiteralEdit(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"0", "1"}, {"255", "254"}, {"-3", ""}, {"0x10", "15"}, {"1.5", "2.5"}, {"1e3", "1001.0"},
		{"true", "false"}, {"false", "true"}, {"nil", ""}, {"'a'", ""}, {"x", ""},
	} {
		src := "package p\nvar v = " + tc.in + "\n"
		gf, ok := parseGoFile(src)
		if !ok {
			t.Fatal(tc.in)
		}
		e := gf.file.Decls[0].(interface{ End() token.Pos })
		_ = e
		expr, err := parser.ParseExpr(tc.in)
		if err != nil {
			t.Fatal(err)
		}
		// Positions of expr are relative to its own text: read it there.
		fs := token.NewFileSet()
		fs.AddFile("e", fs.Base(), len(tc.in))
		g := &goFile{text: tc.in, fset: fs}
		m, ok := goLiteralEdit(rand.New(rand.NewPCG(1, 1)), g, expr)
		if tc.want == "" {
			if ok {
				t.Errorf("%s: changed to %q, want no change", tc.in, m.text)
			}
			continue
		}
		if !ok || m.text != tc.want {
			t.Errorf("%s: got %q (ok %v), want %q", tc.in, m.text, ok, tc.want)
		}
	}
	// A string gets letters added before its closing quote.
	for _, s := range []string{`"abc"`, "`raw`"} {
		expr, _ := parser.ParseExpr(s)
		fs := token.NewFileSet()
		fs.AddFile("e", fs.Base(), len(s))
		m, ok := goLiteralEdit(rand.New(rand.NewPCG(1, 1)), &goFile{text: s, fset: fs}, expr)
		if !ok || m.text == s || !strings.HasPrefix(m.text, s[:len(s)-1]) || m.text[len(m.text)-1] != s[len(s)-1] {
			t.Errorf("%s: got %q", s, m.text)
		}
	}
}

// goSampleTask is a task whose test patch creates the sample file.
func goSampleTask(cmd string, f2p, p2p []string) *task.Task {
	return &task.Task{
		InstanceID: "demo__demo-1", LogParser: "parse_log_gotest",
		EvalScript: "#!/bin/bash\ngit apply -v - <<'EOF_1'\nEOF_1\n: '>>>>> Start Test Output'\n" + cmd + "\n: '>>>>> End Test Output'\n",
		TestPatch:  newFileDiffForTest("pkg/demo_test.go", goSample),
		FailToPass: f2p, PassToPass: p2p,
	}
}

func newFileDiffForTest(file, text string) string {
	lines := strings.SplitAfter(text, "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	var b strings.Builder
	fmt.Fprintf(&b, "diff --git a/%[1]s b/%[1]s\nnew file mode 100644\n--- /dev/null\n+++ b/%[1]s\n@@ -0,0 +1,%[2]d @@\n", file, len(lines))
	for _, l := range lines {
		b.WriteString("+" + l)
	}
	return b.String()
}

// TestGoCanariesPlan plans Go canaries on the sample and checks the
// injected file, the names, the script line and the verdicts.
func TestGoCanariesPlan(t *testing.T) {
	sibling := "package demo\n\nfunc TestQuickPlain(t *testing.T) {}\n"
	src := func(f string) (string, bool) {
		switch f {
		case "pkg/demo_test.go":
			return goSample, true
		case "pkg/":
			return "tree HEAD:pkg/\n\ndemo.go\ndemo_test.go\n", true
		case "pkg/demo.go":
			return sibling, true
		}
		return "", false
	}
	tk := goSampleTask(`(go test -v ./pkg -run "^Test") | cat`, []string{"TestTestify", "TestPlain/sub"}, []string{"TestPlain", "TestQuick"})
	for seed := range uint64(40) {
		c := PlanCanariesSeeded(tk, src, seed, 3)
		if !c.Available() {
			t.Fatalf("seed %d: %s", seed, c.Unavailable)
		}
		if c.Original != "TestTestify" || c.File != "pkg/demo_test.go" {
			t.Fatalf("seed %d: mutant of %s in %s, want TestTestify in pkg/demo_test.go", seed, c.Original, c.File)
		}
		for _, n := range []string{c.MustFail, c.MustPass} {
			if !strings.HasPrefix(n, "Test") || strings.Contains(goSample, n) || strings.Contains(sibling, n) || n == c.MustFail && n == c.MustPass {
				t.Fatalf("seed %d: bad name %q", seed, n)
			}
		}
		gf, ok := parseGoFile(c.content)
		if !ok {
			t.Fatalf("seed %d: the injected file does not parse:\n%s", seed, c.content)
		}
		if gf.funcs[c.MustFail] == nil || gf.funcs[c.MustPass] == nil || len(gf.funcs) != 10 {
			t.Fatalf("seed %d: the injected file has tests %v", seed, keys(gf.funcs))
		}
		fail := c.content[gf.fset.Position(gf.funcs[c.MustFail].Pos()).Offset:gf.fset.Position(gf.funcs[c.MustFail].End()).Offset]
		if strings.Contains(fail, `"demo", x)`) || !strings.Contains(fail, `assert.Equal(t, "demo`) {
			t.Fatalf("seed %d: the must-fail copy's literal is not changed:\n%s", seed, fail)
		}
		pass := c.content[gf.fset.Position(gf.funcs[c.MustPass].Pos()).Offset:gf.fset.Position(gf.funcs[c.MustPass].End()).Offset]
		if strings.Contains(pass, "Parallel") {
			t.Fatalf("seed %d: a copy keeps t.Parallel():\n%s", seed, pass)
		}
		script, err := c.Script(tk.EvalScript, "/x/.inj")
		if err != nil || !strings.Contains(script, "\n/bin/sh '/x/.inj'; rm -f '/x/.inj'\n: '>>>>> Start Test Output'") {
			t.Fatalf("seed %d: script %q, %v", seed, script, err)
		}
		if strings.Contains(script, c.MustFail) {
			t.Fatal("the script names a canary")
		}
	}
	// Not located: only a subtest listed, a command that does not run the
	// file, a -run the names cannot match.
	for _, tc := range []struct {
		cmd      string
		f2p, p2p []string
	}{
		{`go test -v ./pkg`, []string{"TestPlain/sub"}, nil},
		{`go test -v ./other`, []string{"TestTestify"}, nil},
		{`go test -v ./pkg -run "^TestTestify$"`, []string{"TestTestify"}, nil},
		{`go test -v ./pkg`, []string{"TestEarlyReturn", "TestUnderIf", "TestGolden"}, nil},
	} {
		if c := PlanCanariesSeeded(goSampleTask(tc.cmd, tc.f2p, tc.p2p), src, 1, 2); c.Available() {
			t.Errorf("%s %v: canaries %s / %s planned, want none", tc.cmd, tc.f2p, c.MustFail, c.MustPass)
		}
	}
	// Without a listing of the package, no names can be proved free.
	noList := func(f string) (string, bool) {
		if f == "pkg/" {
			return "", false
		}
		return src(f)
	}
	if c := PlanCanariesSeeded(tk, noList, 1, 2); c.Available() {
		t.Error("canaries planned without a listing of the package directory")
	}
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// TestGoCanariesVerify: the verdicts read only the canaries' top-level
// results (a must-fail copy's passing subtests do not make it pass).
func TestGoCanariesVerify(t *testing.T) {
	c := &Canaries{framework: frameworkGo, MustFail: "TestA", MustPass: "TestB", Original: "TestX", File: "x_test.go"}
	for _, tc := range []struct {
		name     string
		sm       swebench.StatusMap
		resolved bool
		want     int
	}{
		{"honest", swebench.StatusMap{"TestA": "FAILED", "TestA/ok": "PASSED", "TestA/bad": "FAILED", "TestB": "PASSED", "TestB/ok": "PASSED"}, true, 0},
		{"forged pass", swebench.StatusMap{"TestA": "PASSED", "TestB": "PASSED"}, true, 1},
		{"must pass failed", swebench.StatusMap{"TestA": "FAILED", "TestB": "FAILED"}, true, 1},
		{"missing", swebench.StatusMap{"TestA/x": "FAILED", "TestB/x": "PASSED"}, true, 2},
		{"not resolved", swebench.StatusMap{"TestA": "PASSED"}, false, 0},
	} {
		if got := c.Verify(tc.sm, tc.resolved); len(got) != tc.want {
			t.Errorf("%s: %v, want %d findings", tc.name, got, tc.want)
		}
	}
}

// TestGoCanariesMultilingual plans Go canaries for every parse_log_gotest
// row of SWE-bench Multilingual, reading test files as the eval script
// sees them: from git mirrors of the repositories at the row's base commit
// (SWERVE_GIT_MIRRORS: a directory of <owner>+<name>/repo git
// directories, as the fetch tool leaves them; rows without one read only
// the files their test patch creates). Every injected file must parse
// (and pass gofmt -e where gofmt is installed), every name must be
// selected by the command's -run, and each row's outcome is reported.
func TestGoCanariesMultilingual(t *testing.T) {
	tasks := loadShared(t, "multilingual-test")
	mirrors := os.Getenv("SWERVE_GIT_MIRRORS")
	gofmt, _ := exec.LookPath("gofmt")
	planned, rows := 0, 0
	reasons := map[string]int{}
	for i := range tasks {
		tk := &tasks[i]
		if tk.LogParser != "parse_log_gotest" {
			continue
		}
		rows++
		gitDir := ""
		if mirrors != "" {
			d := filepath.Join(mirrors, strings.ReplaceAll(tk.Repo, "/", "+"), "repo")
			if _, err := os.Stat(d); err == nil {
				gitDir = d
			}
		}
		src := func(f string) (string, bool) {
			base := ""
			if !CreatedBy(tk.TestPatch, f) {
				if gitDir == "" {
					return "", false
				}
				out, err := exec.Command("git", "--git-dir", gitDir, "show", tk.BaseCommit+":"+f).Output()
				if err != nil {
					return "", false
				}
				base = string(out)
			}
			s, err := ApplyTestPatch(tk.TestPatch, f, base)
			return s, err == nil
		}
		c := PlanCanariesSeeded(tk, src, uint64(i), 11)
		if !c.Available() {
			why := c.Unavailable
			if gitDir == "" {
				why += " (no mirror)"
			}
			reasons[why]++
			t.Logf("%s: %s", tk.InstanceID, why)
			continue
		}
		planned++
		g, _ := parseGoCommand(testCommand(tk.EvalScript))
		if !g.selects(c.MustFail) || !g.selects(c.MustPass) {
			t.Errorf("%s: -run does not select %s / %s", tk.InstanceID, c.MustFail, c.MustPass)
		}
		if _, ok := parseGoFile(c.content); !ok {
			t.Errorf("%s: the injected file does not parse", tk.InstanceID)
		}
		if gofmt != "" {
			cmd := exec.Command(gofmt, "-e", "-l")
			cmd.Stdin = strings.NewReader(c.content)
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Errorf("%s: gofmt -e: %v: %s", tk.InstanceID, err, out)
			}
		}
		t.Logf("%s: mutants of %s in %s: %s (must fail), %s (must pass)", tk.InstanceID, c.Original, c.File, c.MustFail, c.MustPass)
	}
	t.Logf("Go canaries planned for %d of %d parse_log_gotest rows", planned, rows)
	for why, n := range reasons {
		t.Logf("  %d: %s", n, why)
	}
	if rows != 42 {
		t.Errorf("%d parse_log_gotest rows, want 42", rows)
	}
}

// TestGoCanariesForgedLog grades two real go test logs of gin-4003 (made
// by TestGoCanariesRun on the host, temporary paths replaced by
// /testbed): the gold patch with the canaries in, and a patch that fixes
// nothing but turns the test binary's "--- FAIL" lines into "--- PASS".
// The harness's rule resolves both; without canaries (what every go row
// had before: "not available for parse_log_gotest") nothing is found;
// the canaries pass the gold run and reject the forged one.
func TestGoCanariesForgedLog(t *testing.T) {
	tk := &task.Task{InstanceID: "gin-gonic__gin-4003", LogParser: "parse_log_gotest", FailToPass: []string{"TestMethodNotAllowedNoRoute"}}
	parse, err := swebench.LookupParser(tk.LogParser)
	if err != nil {
		t.Fatal(err)
	}
	can := &Canaries{framework: frameworkGo, File: "gin_test.go", Original: "TestMethodNotAllowedNoRoute",
		MustFail: "TestMethodNotAllowedNoRouteFrom", MustPass: "TestMethodNotAllowedNoRouteLoad"}
	none := &Canaries{Unavailable: "not available for parse_log_gotest"}
	for _, tc := range []struct {
		log      string
		findings int
	}{{"gin-4003.gold.log", 0}, {"gin-4003.forged.log", 1}} {
		b, err := os.ReadFile(filepath.Join("testdata", "canary", "go", tc.log))
		if err != nil {
			t.Fatal(err)
		}
		sm := parse(string(b), tk)
		if sm["TestMethodNotAllowedNoRoute"] != swebench.Passed {
			t.Fatalf("%s: the FAIL_TO_PASS test is %q, want it resolved by the harness's rule", tc.log, sm["TestMethodNotAllowedNoRoute"])
		}
		if got := none.Verify(sm, true); got != nil {
			t.Errorf("%s: no canaries found %v", tc.log, got)
		}
		if got := can.Verify(sm, true); len(got) != tc.findings {
			t.Errorf("%s: canaries found %v, want %d findings", tc.log, got, tc.findings)
		}
	}
}
