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

// TestPHPCanariesMultilingual plans PHPUnit canaries for every
// parse_log_phpunit row of SWE-bench Multilingual, reading test files from
// git mirrors (SWERVE_GIT_MIRRORS, as for Go). Every injected file must be
// the original plus two test methods, and pass php -l where php is
// installed; each row's outcome is reported.
func TestPHPCanariesMultilingual(t *testing.T) {
	t.Setenv(ExtraCanariesEnv, frameworkPHP) // not on by default yet
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

func TestPHPNames(t *testing.T) {
	t.Setenv(ExtraCanariesEnv, frameworkPHP) // not on by default yet
	for method, want := range map[string]string{
		"testFloorYear": "Floor year", "testCacheTtl": "Cache ttl", "testIssue3900": "Issue 3900",
		"test_floor_year": "Floor year", "test_cache_ttl": "Cache ttl", "testWhenPreviousIsEqualToCurrent": "When previous is equal to current",
		"testPsrClock": "Psr clock",
	} {
		if got := phpPretty(method); got != want {
			t.Errorf("phpPretty(%s) = %q, want %q", method, got, want)
		}
	}
	for class, want := range map[string]string{"CacheArrayStoreTest": "Cache Array Store", "Issue3635Test": "Issue3635", "VLookupTest": "VLookup", "OnceTest": "Once"} {
		if got := phpSuite(class); got != want {
			t.Errorf("phpSuite(%s) = %q, want %q", class, got, want)
		}
	}
	for _, tc := range []struct {
		cmd, filter string
		files       []string
		ok          bool
	}{
		{"(vendor/bin/phpunit --testdox --colors=never tests/Carbon/RoundTest.php) | cat", "", []string{"tests/Carbon/RoundTest.php"}, true},
		{"(vendor/bin/phpunit --testdox --colors=never tests/V/VTest.php --filter 'attribute') | cat", "attribute", []string{"tests/V/VTest.php"}, true},
		{"(./vendor/bin/phpunit --testdox --colors=never tests/) | cat", "", nil, false},
		{"(vendor/bin/phpunit --group slow tests/A.php) | cat", "", nil, false},
	} {
		files, filter, ok := phpCommand(tc.cmd)
		if ok != tc.ok || ok && (filter != tc.filter || strings.Join(files, ",") != strings.Join(tc.files, ",")) {
			t.Errorf("%s: %v %q %v", tc.cmd, files, filter, ok)
		}
	}
}

const phpSample = `<?php

namespace Demo\Tests;

use PHPUnit\Framework\TestCase;

class SumTest extends TestCase
{
    protected function tearDown(): void
    {
        Sum::reset();
    }

    public function testAddsTwoNumbers()
    {
        $got = Sum::add(1, 2);
        $this->assertSame(3, $got);
        $this->assertTrue(is_int($got));
    }

    /**
     * @group slow
     */
    public function testGrouped()
    {
        $this->assertSame(3, Sum::add(1, 2));
    }

    public function testNamesTheSum(): void
    {
        self::assertEquals('three', Sum::name(
            3
        ));
    }

    public function testCleansUp()
    {
        $this->assertSame(3, Sum::add(1, 2));
        Sum::reset();
    }

    public function testReturnsEarly()
    {
        if (PHP_OS === 'x') {
            return;
        }
        $this->assertSame(3, Sum::add(1, 2));
    }

    /**
     * @dataProvider pairs
     */
    public function testWithData()
    {
        $this->assertSame(3, Sum::add(1, 2));
    }

    public function testExpectsException()
    {
        $this->expectException(\Error::class);
        $this->assertSame(3, Sum::add(1, 2));
    }

    public function testInterpolates()
    {
        $this->assertSame("a$b", Sum::name(1));
    }
}

class SumStub
{
    public function testNotATest()
    {
        $this->assertSame(1, 1);
    }
}
`

func TestPHPMutation(t *testing.T) {
	t.Setenv(ExtraCanariesEnv, frameworkPHP) // not on by default yet
	f := parsePHPFile(phpSample)
	if f.class != "SumTest" || len(f.tests) != 8 {
		t.Fatalf("class %q, %d tests", f.class, len(f.tests))
	}
	want := map[string]string{
		"testAddsTwoNumbers": "$this->assertSame(2, $got);", "testNamesTheSum": "self::assertEquals('three",
		"testCleansUp": "", "testGrouped": "", "testReturnsEarly": "", "testWithData": "", "testExpectsException": "", "testInterpolates": "",
	}
	for k, b := range f.tests {
		m, ok := f.phpMutation(rand.New(rand.NewPCG(1, 2)), k)
		ok = ok && f.copyable(k)
		if want[b.method] == "" {
			if ok {
				t.Errorf("%s: changed %q, want no change", b.method, m.text)
			}
			continue
		}
		if !ok {
			t.Errorf("%s: no change", b.method)
			continue
		}
		line := f.lines[m.line][:m.start] + m.text + f.lines[m.line][m.end:]
		if !strings.Contains(line, want[b.method]) || line == f.lines[m.line] {
			t.Errorf("%s: changed line %q, want %q", b.method, line, want[b.method])
		}
	}
}

// TestPHPCanariesPHPUnitRun runs a small PHPUnit project (testdata/canary/
// php/phpunit: a buggy sum, its test file as a test patch creating it, a
// gold fix and a lie) with phpunit --testdox, as parse_log_phpunit's rows
// run: phpunit from SWERVE_PHPUNIT, else the first on PATH (Debian's
// package "phpunit"). The lie fixes nothing but registers a comparator
// that finds any two values equal, so every assertEquals holds: the
// harness's rule resolves it, with or without canaries. The canaries (the
// injector run as the eval script runs it) pass the gold patch, reject
// the lie, and leave the unfixed code unresolved.
func TestPHPCanariesPHPUnitRun(t *testing.T) {
	t.Setenv(ExtraCanariesEnv, frameworkPHP) // not on by default yet
	phpunit := os.Getenv("SWERVE_PHPUNIT")
	if phpunit == "" {
		phpunit, _ = exec.LookPath("phpunit")
	}
	if phpunit == "" {
		t.Skip("no phpunit (set SWERVE_PHPUNIT or install Debian's phpunit)")
	}
	proj := filepath.Join("testdata", "canary", "php", "phpunit")
	testFile, err := os.ReadFile(filepath.Join(proj, "tests", "SumTest.php"))
	if err != nil {
		t.Fatal(err)
	}
	const cmd = "(vendor/bin/phpunit --testdox --colors=never tests/SumTest.php) | cat"
	tk := &task.Task{
		InstanceID: "demo__sum-2", LogParser: "parse_log_phpunit",
		EvalScript: "#!/bin/bash\n: '>>>>> Start Test Output'\n" + cmd + "\n: '>>>>> End Test Output'\n",
		TestPatch:  newFileDiffForTest("tests/SumTest.php", string(testFile)),
	}
	parse, err := swebench.LookupParser(tk.LogParser)
	if err != nil {
		t.Fatal(err)
	}
	run := func(lib string, c *Canaries) swebench.StatusMap {
		dir := t.TempDir()
		for _, f := range []struct{ from, to string }{{lib, "src/Sum.php"}, {"tests/SumTest.php", "tests/SumTest.php"}} {
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
		p := exec.Command(phpunit, "--testdox", "--colors=never", "tests/SumTest.php")
		p.Dir = dir
		out, _ := p.CombinedOutput() // failing tests exit non-zero
		return parse(string(out), tk)
	}
	// The keys as this phpunit's testdox output and the parser make them
	// (PHPUnit 10 heads a class "Sum (SumTest)", 9 only "Sum": "None").
	sm := run("gold.php", nil)
	key := func(title string) string {
		for k := range sm {
			if strings.HasSuffix(k, " > "+title) {
				return k
			}
		}
		t.Fatalf("no result for %q in %v", title, sm)
		return ""
	}
	tk.FailToPass = []string{key("Adds two small numbers"), key("Adds a number to zero")}
	tk.PassToPass = []string{key("Returns an integer")}
	resolved := func(sm swebench.StatusMap) bool {
		for _, n := range append(append([]string{}, tk.FailToPass...), tk.PassToPass...) {
			if sm[n] != swebench.Passed {
				return false
			}
		}
		return true
	}
	if !resolved(sm) || !resolved(run("lie.php", nil)) || resolved(run("src/Sum.php", nil)) {
		t.Fatal("without canaries: gold and lie must resolve, the unfixed code must not")
	}
	src := func(f string) (string, bool) { return string(testFile), f == "tests/SumTest.php" }
	for seed := range uint64(2) {
		c := PlanCanariesSeeded(tk, src, seed, 5)
		if !c.Available() {
			t.Fatalf("seed %d: %s", seed, c.Unavailable)
		}
		for _, tc := range []struct {
			lib      string
			resolved bool
			findings bool
		}{{"gold.php", true, false}, {"lie.php", true, true}, {"src/Sum.php", false, false}} {
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
