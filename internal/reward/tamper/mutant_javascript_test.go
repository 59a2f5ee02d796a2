package tamper

import (
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/swerve-dev/swerve/internal/reward/swebench"
	"github.com/swerve-dev/swerve/internal/task"
)

// jsParsers are the log parsers of SWE-bench Multilingual's JavaScript
// rows, with how many rows each has.
var jsParsers = map[string]int{"parse_log_jest": 10, "parse_log_immutable_js": 2, "parse_log_vitest": 5, "parse_log_karma": 17, "parse_log_tap": 9}

// TestJSCanariesMultilingual plans JavaScript canaries for every row of
// SWE-bench Multilingual whose parser is a JavaScript one, reading test
// files as the eval script sees them: from git mirrors of the
// repositories at the row's base commit (SWERVE_GIT_MIRRORS, as for Go;
// rows without one read only the files their test patch creates). Every
// injected file must hold the original's lines plus the two copies, and
// parse with node --check where the original does; each row's outcome is
// reported.
func TestJSCanariesMultilingual(t *testing.T) {
	t.Setenv(ExtraCanariesEnv, frameworkJS) // not on by default yet
	tasks := loadShared(t, "multilingual-test")
	mirrors := os.Getenv("SWERVE_GIT_MIRRORS")
	node, _ := exec.LookPath("node")
	planned, rows := 0, map[string]int{}
	reasons := map[string]int{}
	for i := range tasks {
		tk := &tasks[i]
		if _, ok := jsParsers[tk.LogParser]; !ok {
			continue
		}
		rows[tk.LogParser]++
		gitDir := mirrorDir(mirrors, tk.Repo)
		src := mirrorSource(tk, gitDir)
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
		orig, _ := src(c.File)
		checkJSInjected(t, tk.InstanceID, orig, c, node)
		t.Logf("%s: mutants of %q in %s: %q (must fail), %q (must pass)", tk.InstanceID, c.Original, c.File, c.MustFail, c.MustPass)
	}
	t.Logf("JavaScript canaries planned for %d of %d rows %v", planned, sum(rows), rows)
	for why, n := range reasons {
		t.Logf("  %d: %s", n, why)
	}
	for p, n := range jsParsers {
		if rows[p] != n {
			t.Errorf("%d %s rows, want %d", rows[p], p, n)
		}
	}
}

func sum(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

// checkJSInjected checks an injected file: it is the original with two
// tests added, the copies read back as tests, and it parses with node
// --check wherever the original does (node reads neither JSX nor
// TypeScript).
func checkJSInjected(t *testing.T, id, orig string, c *Canaries, node string) {
	t.Helper()
	g := parseJSFile(c.content)
	f := parseJSFile(orig)
	if len(g.blocks) != len(f.blocks)+2 {
		t.Errorf("%s: %d blocks after injection, want %d", id, len(g.blocks), len(f.blocks)+2)
	}
	// Removing the copies gives the original back.
	lines := g.lines
	old := map[string]bool{}
	for _, b := range f.blocks {
		old[b.title] = true
	}
	copies := 0
	for k := len(g.blocks) - 1; k >= 0; k-- {
		b := g.blocks[k]
		if !old[b.title] {
			copies++
			if !strings.HasSuffix(c.MustFail, b.title) && !strings.HasSuffix(c.MustPass, b.title) {
				t.Errorf("%s: copy %q is neither canary", id, b.title)
			}
			lines = append(append([]string{}, lines[:b.start-1]...), lines[b.end+1:]...)
		}
	}
	if copies != 2 || strings.Join(lines, "\n") != orig {
		t.Errorf("%s: the injected file is not the original plus two tests", id)
	}
	if node == "" || !strings.HasSuffix(c.File, ".js") {
		return
	}
	dir := t.TempDir()
	check := func(text string) error {
		p := filepath.Join(dir, "x.js")
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return exec.Command(node, "--check", p).Run()
	}
	if check(orig) == nil {
		if err := check(c.content); err != nil {
			t.Errorf("%s: node --check fails on the injected file: %v", id, err)
		}
	}
}

// TestJSCanariesMochaRun runs a small mocha project (testdata/canary/js/
// mocha: a buggy sum, its test file as a test patch creating it, a gold
// fix and a lie) with mocha's TAP reporter, as parse_log_tap's rows run:
// mocha from SWERVE_MOCHA, else the first on PATH (Debian's package
// "mocha"). The lie fixes nothing but makes node's assert.strictEqual hold
// for anything: the harness's rule resolves it, and without canaries
// nothing tells it from the gold patch. With canaries (the injector run
// as the eval script runs it), the gold patch is resolved with no
// finding, the lie is rejected, the unfixed code is not resolved.
func TestJSCanariesMochaRun(t *testing.T) {
	t.Setenv(ExtraCanariesEnv, frameworkJS) // not on by default yet
	mocha := os.Getenv("SWERVE_MOCHA")
	if mocha == "" {
		mocha, _ = exec.LookPath("mocha")
	}
	if mocha == "" {
		t.Skip("no mocha (set SWERVE_MOCHA or install Debian's mocha)")
	}
	proj := filepath.Join("testdata", "canary", "js", "mocha")
	testFile, err := os.ReadFile(filepath.Join(proj, "test", "sum.js"))
	if err != nil {
		t.Fatal(err)
	}
	const cmd = "(npx mocha -R tap test/sum.js) | cat"
	tk := &task.Task{
		InstanceID: "demo__sum-1", LogParser: "parse_log_tap",
		EvalScript: "#!/bin/bash\n: '>>>>> Start Test Output'\n" + cmd + "\n: '>>>>> End Test Output'\n",
		TestPatch:  newFileDiffForTest("test/sum.js", string(testFile)),
		FailToPass: []string{"sum adds two small numbers", "sum adds a number to zero"},
		PassToPass: []string{"sum returns a number"},
	}
	parse, err := swebench.LookupParser(tk.LogParser)
	if err != nil {
		t.Fatal(err)
	}
	// run sets up the project with lib (a file of proj), the canaries'
	// injector when c is not nil, runs mocha and returns the results.
	run := func(lib string, c *Canaries) swebench.StatusMap {
		dir := t.TempDir()
		for _, f := range []struct{ from, to string }{{lib, "lib/sum.js"}, {"test/sum.js", "test/sum.js"}} {
			b, err := os.ReadFile(filepath.Join(proj, f.from))
			if err != nil {
				t.Fatal(err)
			}
			if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, f.to)), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, f.to), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		if c != nil {
			if err := os.WriteFile(filepath.Join(dir, ".inj"), c.Injector(), 0o644); err != nil {
				t.Fatal(err)
			}
			sh := exec.Command("/bin/sh", ".inj")
			sh.Dir = dir
			if out, err := sh.CombinedOutput(); err != nil {
				t.Fatalf("injector: %v: %s", err, out)
			}
		}
		m := exec.Command(mocha, "-R", "tap", "test/sum.js")
		m.Dir = dir
		// Debian's mocha finds its modules in Debian's node directory,
		// which a node from elsewhere (NodeSource's) does not search.
		m.Env = append(os.Environ(), "NODE_PATH="+strings.TrimPrefix(os.Getenv("NODE_PATH")+":/usr/share/nodejs", ":"))
		out, _ := m.CombinedOutput() // failing tests exit non-zero
		return parse(string(out), tk)
	}
	resolved := func(sm swebench.StatusMap) bool {
		for _, n := range append(append([]string{}, tk.FailToPass...), tk.PassToPass...) {
			if sm[n] != swebench.Passed {
				return false
			}
		}
		return true
	}
	// Without canaries the lie is resolved like the gold patch.
	if !resolved(run("gold.js", nil)) || !resolved(run("lie.js", nil)) || resolved(run("lib/sum.js", nil)) {
		t.Fatal("without canaries: gold and lie must resolve, the unfixed code must not")
	}
	src := func(f string) (string, bool) {
		if f == "test/sum.js" {
			return string(testFile), true
		}
		return "", false
	}
	for seed := range uint64(2) {
		c := PlanCanariesSeeded(tk, src, seed, 5)
		if !c.Available() {
			t.Fatalf("seed %d: %s", seed, c.Unavailable)
		}
		for _, tc := range []struct {
			lib      string
			resolved bool
			findings bool
		}{{"gold.js", true, false}, {"lie.js", true, true}, {"lib/sum.js", false, false}} {
			sm := run(tc.lib, c)
			if resolved(sm) != tc.resolved {
				t.Errorf("seed %d, %s: resolved %v, want %v (%v)", seed, tc.lib, resolved(sm), tc.resolved, sm)
			}
			got := c.Verify(sm, resolved(sm))
			if (len(got) > 0) != tc.findings {
				t.Errorf("seed %d, %s: findings %v, want some: %v (%v)", seed, tc.lib, got, tc.findings, sm)
			}
			t.Logf("seed %d, %s: canaries %q / %q, findings %v", seed, tc.lib, c.MustFail, c.MustPass, got)
		}
	}
}

func TestParseJSCommand(t *testing.T) {
	t.Setenv(ExtraCanariesEnv, frameworkJS) // not on by default yet
	for _, tc := range []struct {
		parser, cmd string
		ok          bool
		runs        map[string]bool
		selects     map[string]bool // full names, describe titles and title joined by spaces
	}{
		{"parse_log_jest", `(yarn jest babel-parser -t "arrow" --verbose) | cat`, true,
			map[string]bool{"packages/babel-parser/test/x.js": true, "packages/babel-core/test/x.js": false}, map[string]bool{"es2015 yield arrow": true, "es2015 yield": false}},
		{"parse_log_jest", `(yarn test packages/docusaurus/src/server/__tests__/brokenLinks.test.ts --verbose) | cat`, true,
			map[string]bool{"packages/docusaurus/src/server/__tests__/brokenLinks.test.ts": true, "a.test.ts": false}, map[string]bool{"anything": true}},
		{"parse_log_vitest", `(pnpm run test packages/runtime-core/__tests__/hydration.spec.ts --no-watch --reporter=verbose -t "mismatch handling") | cat`, true,
			map[string]bool{"packages/runtime-core/__tests__/hydration.spec.ts": true}, map[string]bool{"SSR hydration mismatch handling text": true, "SSR hydration text": false}},
		{"parse_log_karma", `(COVERAGE=false BABEL_NO_MODULES=true npx karma start karma.conf.js --single-run --grep="test/browser/render.test.js") | cat`, true,
			map[string]bool{"test/browser/render.test.js": true, "compat/test/browser/render.test.js": true, "test/browser/svg.test.js": false}, map[string]bool{"render() x": true}},
		{"parse_log_tap", `(timeout 10s npx mocha -R tap test/unit/adapters/http.js -g 'timeout') | cat`, true,
			map[string]bool{"test/unit/adapters/http.js": true, "test/unit/x.js": false}, map[string]bool{"http should respect the timeout": true, "http Timeout": false}},
		{"parse_log_tap", `(npx qunit test/unit/src/math/Sphere.tests.js) | cat`, false, nil, nil},
		{"parse_log_tap", `npx mocha test/a.js && npx mocha test/b.js`, false, nil, nil},
		{"parse_log_jest", `npx jest -t "(" x.js`, false, nil, nil},
	} {
		c, ok := parseJSCommand(tc.parser, tc.cmd)
		if ok != tc.ok {
			t.Errorf("%s: ok %v, want %v", tc.cmd, ok, tc.ok)
			continue
		}
		for f, want := range tc.runs {
			if got := c.runs(f); got != want {
				t.Errorf("%s: runs(%s) = %v, want %v", tc.cmd, f, got, want)
			}
		}
		for n, want := range tc.selects {
			if got := c.selects(strings.Fields(n)); got != want {
				t.Errorf("%s: selects(%s) = %v, want %v", tc.cmd, n, got, want)
			}
		}
	}
}

const jsSample = `import { expect } from 'chai';

describe('outer', () => {
	let x;

	beforeEach(() => {
		x = setup();
	});

	it('changes the last assertion', () => {
		const y = compute(x);
		expect(y).to.equal(3);
		expect(x.name).toBe('abc');
	});

	it('keeps a multi-line literal', async () => {
		await render(x);
		expect(x.innerHTML).to.equal(
			'<div>a</div>'
		);
	});

	describe('inner', function () {
		it('uses node assert', function () {
			assert.strictEqual(compute(2), 4);
		});

		it('asserts with a message', () => {
			assert.equal(compute(2), 4, 'four');
		});
	});

	it('cleans up after', () => {
		const spy = sinon.spy(console, 'log');
		expect(compute(1)).toBe(1);
		spy.restore();
	});

	it('negates', () => {
		expect(compute(1)).not.toBe(2);
		expect(compute(1)).to.not.equal(2);
	});

	it('returns early', () => {
		if (skipIt) {
			return;
		}
		expect(compute(1)).toBe(1);
	});

	it('takes done', done => {
		expect(compute(1)).toBe(1);
		done();
	});

	it('matches a snapshot', () => {
		expect(compute(1)).toBe(1);
		expect(compute(1)).toMatchSnapshot();
	});

	it('has a computed expectation', () => {
		expect(compute(1)).toBe(one + 1);
		expect(compute(1) / 2).toBe(0.5);
	});

	[1, 2].forEach(n => {
		it('is in a loop', () => {
			expect(compute(n)).toBe(1);
		});
	});
});
`

// TestJSMutation checks which tests the layout reading finds, with what
// names, and which assertion of each the mutation changes.
func TestJSMutation(t *testing.T) {
	t.Setenv(ExtraCanariesEnv, frameworkJS) // not on by default yet
	f := parseJSFile(jsSample)
	want := map[string]struct {
		chain  string // the describe titles and title, joined by " > "; "" when not located
		change string // what the changed line holds ("|" between choices), "" for no change
	}{
		"changes the last assertion": {"outer > changes the last assertion", `expect(y).to.equal(2);|expect(x.name).toBe('abc`},
		"keeps a multi-line literal": {"outer > keeps a multi-line literal", `'<div>a</div>`},
		"uses node assert":           {"outer > inner > uses node assert", "assert.strictEqual(compute(2), 3);"},
		"asserts with a message":     {"outer > inner > asserts with a message", ""},
		"cleans up after":            {"outer > cleans up after", ""},
		"negates":                    {"outer > negates", ""},
		"returns early":              {"outer > returns early", ""},
		"matches a snapshot":         {"outer > matches a snapshot", ""},
		"has a computed expectation": {"outer > has a computed expectation", ""},
		"is in a loop":               {"", ""},
	}
	seen := map[string]bool{}
	for k, b := range f.blocks {
		if b.kind != "test" {
			continue
		}
		seen[b.title] = true
		w, ok := want[b.title]
		if !ok {
			t.Errorf("unexpected test %q", b.title)
			continue
		}
		ch, located := f.chain(k)
		if got := strings.Join(ch, " > "); located != (w.chain != "") || located && got != w.chain {
			t.Errorf("%s: chain %q (located %v), want %q", b.title, got, located, w.chain)
		}
		m, ok := f.jsMutation(rand.New(rand.NewPCG(1, 2)), b)
		if w.change == "" || !located {
			if ok && located && f.copyable(b) {
				t.Errorf("%s: changed line %d to %q, want no change", b.title, m.line+1, m.text)
			}
			continue
		}
		if !ok || !f.copyable(b) {
			t.Errorf("%s: no change, want %q", b.title, w.change)
			continue
		}
		line := f.lines[m.line][:m.start] + m.text + f.lines[m.line][m.end:]
		hit := false
		for _, c := range strings.Split(w.change, "|") {
			hit = hit || strings.Contains(line, c)
		}
		if !hit || line == f.lines[m.line] {
			t.Errorf("%s: changed line %q, want it to hold %q", b.title, line, w.change)
		}
	}
	if seen["takes done"] {
		t.Error("a test taking a done callback was read as a test")
	}
}

// TestJSCanariesPlan plans canaries on the sample for each runner's key
// and checks the injected file and the names.
func TestJSCanariesPlan(t *testing.T) {
	t.Setenv(ExtraCanariesEnv, frameworkJS) // not on by default yet
	const file = "test/outer.test.js"
	for _, tc := range []struct {
		parser, cmd, f2p, prefix string
	}{
		{"parse_log_jest", "(npx jest test/outer.test.js --verbose) | cat", "changes the last assertion", ""},
		{"parse_log_vitest", "(pnpm run test test/outer.test.js --no-watch --reporter=verbose) | cat", file + " > outer > changes the last assertion", file + " > outer > "},
		{"parse_log_karma", `(npx karma start karma.conf.js --single-run --grep="test/outer.test.js") | cat`, "outer > inner > uses node assert", "outer > inner > "},
		{"parse_log_tap", "(npx mocha -R tap test/outer.test.js -g 'outer') | cat", "outer keeps a multi-line literal", "outer "},
	} {
		tk := &task.Task{InstanceID: "demo__demo-2", LogParser: tc.parser,
			EvalScript: "#!/bin/bash\n: '>>>>> Start Test Output'\n" + tc.cmd + "\n: '>>>>> End Test Output'\n",
			TestPatch:  newFileDiffForTest(file, jsSample), FailToPass: []string{tc.f2p}}
		src := func(f string) (string, bool) { return jsSample, f == file }
		focused := func(f string) (string, bool) {
			return strings.Replace(jsSample, "it('negates'", "it.only('negates'", 1), f == file
		}
		if c := PlanCanariesSeeded(tk, focused, 1, 2); c.Available() {
			t.Fatalf("%s: canaries planned in a file with it.only", tc.parser)
		}
		for seed := range uint64(20) {
			c := PlanCanariesSeeded(tk, src, seed, 9)
			if !c.Available() {
				t.Fatalf("%s seed %d: %s", tc.parser, seed, c.Unavailable)
			}
			if c.Original != tc.f2p || !strings.HasPrefix(c.MustFail, tc.prefix) || !strings.HasPrefix(c.MustPass, tc.prefix) || c.MustFail == c.MustPass {
				t.Fatalf("%s seed %d: mutants of %q: %q / %q", tc.parser, seed, c.Original, c.MustFail, c.MustPass)
			}
			checkJSInjected(t, tc.parser, jsSample, c, "")
			if c.Python() || !strings.HasPrefix(string(c.Injector()), "cat > '"+file+"' <<'") {
				t.Fatalf("%s: injector %q", tc.parser, c.Injector())
			}
		}
	}
}

// TestJSCanariesVerify: a key ending in the canary's title counts as its
// result (karma may file it under a sibling describe block's name).
func TestJSCanariesVerify(t *testing.T) {
	t.Setenv(ExtraCanariesEnv, frameworkJS) // not on by default yet
	c := &Canaries{framework: frameworkJS, MustFail: "a > b > fail me", MustPass: "a > b > pass me", Original: "a > b > x",
		titles: [2]string{"fail me", "pass me"}}
	for _, tc := range []struct {
		name     string
		sm       swebench.StatusMap
		resolved bool
		want     int
	}{
		{"honest", swebench.StatusMap{"a > b > fail me": "FAILED", "a > b > pass me": "PASSED"}, true, 0},
		{"sibling block's name", swebench.StatusMap{"a > c > fail me": "FAILED", "a > c > pass me": "PASSED"}, true, 0},
		{"forged pass", swebench.StatusMap{"a > b > fail me": "PASSED", "a > b > pass me": "PASSED"}, true, 1},
		{"twice, one forged", swebench.StatusMap{"a > b > fail me": "FAILED", "a > c > fail me": "PASSED", "a > b > pass me": "PASSED"}, true, 1},
		{"must pass failed", swebench.StatusMap{"a > b > fail me": "FAILED", "a > b > pass me": "FAILED"}, true, 1},
		{"missing", swebench.StatusMap{"a > b > x": "PASSED"}, true, 2},
		{"a title's prefix is not it", swebench.StatusMap{"a > b > fail me not": "FAILED", "a > b > pass me": "PASSED"}, true, 1},
		{"not resolved", swebench.StatusMap{"a > b > fail me": "PASSED"}, false, 0},
	} {
		if got := c.Verify(tc.sm, tc.resolved); len(got) != tc.want {
			t.Errorf("%s: %v, want %d findings", tc.name, got, tc.want)
		}
	}
}
