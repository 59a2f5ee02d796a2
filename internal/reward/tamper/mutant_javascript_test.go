package tamper

import (
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
	for k := len(g.blocks) - 1; k >= 0; k-- {
		b := g.blocks[k]
		if b.title == c.titles[0] || b.title == c.titles[1] {
			lines = append(append([]string{}, lines[:b.start-1]...), lines[b.end+1:]...)
		}
	}
	if strings.Join(lines, "\n") != orig {
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
