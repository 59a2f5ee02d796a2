package tamper

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestPHPCanariesMultilingual plans PHPUnit canaries for every
// parse_log_phpunit row of SWE-bench Multilingual, reading test files from
// git mirrors (SWERVE_GIT_MIRRORS, as for Go). Every injected file must be
// the original plus two test methods, and pass php -l where php is
// installed; each row's outcome is reported.
func TestPHPCanariesMultilingual(t *testing.T) {
	tasks := loadShared(t, "multilingual-test")
	mirrors := os.Getenv("SWERVE_GIT_MIRRORS")
	php, _ := exec.LookPath("php")
	planned, rows := 0, 0
	reasons := map[string]int{}
	for i := range tasks {
		tk := &tasks[i]
		if tk.LogParser != "parse_log_phpunit" {
			continue
		}
		rows++
		gitDir := mirrorDir(mirrors, tk.Repo)
		src := mirrorSource(tk, gitDir)
		c := PlanCanariesSeeded(tk, src, uint64(i), 13)
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
		checkPHPInjected(t, tk.InstanceID, orig, c, php)
		t.Logf("%s: mutants of %q in %s: %q (must fail), %q (must pass)", tk.InstanceID, c.Original, c.File, c.MustFail, c.MustPass)
	}
	t.Logf("PHPUnit canaries planned for %d of %d parse_log_phpunit rows", planned, rows)
	for why, n := range reasons {
		t.Logf("  %d: %s", n, why)
	}
	if rows != 43 {
		t.Errorf("%d parse_log_phpunit rows, want 43", rows)
	}
}

// checkPHPInjected checks an injected file: the original with two test
// methods added, named as the canaries' keys say, passing php -l.
func checkPHPInjected(t *testing.T, id, orig string, c *Canaries, php string) {
	t.Helper()
	g, f := parsePHPFile(c.content), parsePHPFile(orig)
	if len(g.tests) != len(f.tests)+2 {
		t.Errorf("%s: %d tests after injection, want %d", id, len(g.tests), len(f.tests)+2)
	}
	lines := g.lines
	names := 0
	for k := len(g.tests) - 1; k >= 0; k-- {
		b := g.tests[k]
		key := phpSuite(g.class) + " > " + phpPretty(b.method)
		if key == c.MustFail || key == c.MustPass {
			names++
			lines = append(append([]string{}, lines[:b.start-1]...), lines[b.end+1:]...)
		}
	}
	if names != 2 || strings.Join(lines, "\n") != orig {
		t.Errorf("%s: the injected file is not the original plus the two canaries", id)
	}
	if php == "" {
		return
	}
	p := filepath.Join(t.TempDir(), "x.php")
	if err := os.WriteFile(p, []byte(c.content), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(php, "-l", p).CombinedOutput(); err != nil {
		t.Errorf("%s: php -l: %v: %s", id, err, out)
	}
}
