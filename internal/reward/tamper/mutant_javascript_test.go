package tamper

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
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
