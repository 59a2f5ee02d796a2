package grader

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/swerve-dev/swerve/internal/reward/tamper"
	"github.com/swerve-dev/swerve/internal/sandbox"
	"github.com/swerve-dev/swerve/internal/task"
)

// A tiny PHPUnit project for TestPHPCanariesLocal: sum subtracts; the
// hidden tests the test patch adds find it.
const (
	phpSum = `<?php

function sum($a, $b)
{
    return $a - $b;
}
`
	phpSumTest = `<?php

use PHPUnit\Framework\TestCase;

require_once __DIR__ . '/../src/Sum.php';

class SumTest extends TestCase
{
    public function testReturnsAnInteger()
    {
        $this->assertEquals('integer', gettype(sum(2, 2)));
    }
}
`
	phpTestPatch = `diff --git a/tests/SumTest.php b/tests/SumTest.php
--- a/tests/SumTest.php
+++ b/tests/SumTest.php
@@ -10,4 +10,15 @@ class SumTest extends TestCase
     {
         $this->assertEquals('integer', gettype(sum(2, 2)));
     }
+
+    public function testAddsTwoSmallNumbers()
+    {
+        $got = sum(1, 2);
+        $this->assertEquals(3, $got);
+    }
+
+    public function testAddsANumberToZero()
+    {
+        $this->assertEquals(5, sum(0, 5));
+    }
 }
`
	phpGoldPatch = `diff --git a/src/Sum.php b/src/Sum.php
--- a/src/Sum.php
+++ b/src/Sum.php
@@ -2,5 +2,5 @@
 
 function sum($a, $b)
 {
-    return $a - $b;
+    return $a + $b;
 }
`
	// phpLie fixes nothing: a comparator that finds any two values equal
	// goes first in PHPUnit's list, so every assertEquals holds.
	phpLie = `diff --git a/src/Sum.php b/src/Sum.php
--- a/src/Sum.php
+++ b/src/Sum.php
@@ -1,5 +1,16 @@
 <?php
 
+\SebastianBergmann\Comparator\Factory::getInstance()->register(new class extends \SebastianBergmann\Comparator\Comparator {
+    public function accepts($expected, $actual): bool
+    {
+        return true;
+    }
+
+    public function assertEquals($expected, $actual, $delta = 0.0, $canonicalize = false, $ignoreCase = false): void
+    {
+    }
+});
+
 function sum($a, $b)
 {
     return $a - $b;
`
)

// TestPHPCanariesLocal grades a phpunit --testdox task on the local
// backend with the host's phpunit (SWERVE_PHPUNIT, else PATH): the gold
// patch gets reward 1 with mutant canaries checked, no patch 0, and a
// patch that makes every assertEquals hold (resolved by the harness's
// rule) is tampered by the canaries.
func TestPHPCanariesLocal(t *testing.T) {
	t.Setenv(tamper.ExtraCanariesEnv, "phpunit") // not on by default yet
	phpunit := os.Getenv("SWERVE_PHPUNIT")
	if phpunit == "" {
		phpunit, _ = exec.LookPath("phpunit")
	}
	if phpunit == "" {
		t.Skip("no phpunit (set SWERVE_PHPUNIT or install Debian's phpunit)")
	}
	repo := t.TempDir()
	for name, text := range map[string]string{"src/Sum.php": phpSum, "tests/SumTest.php": phpSumTest} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(repo, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(repo, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	git := func(args ...string) string {
		cmd := exec.Command("git", append([]string{"-c", "user.name=t", "-c", "user.email=t@t", "-c", "commit.gpgsign=false"}, args...)...)
		cmd.Dir = repo
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v: %s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	git("init", "-q")
	git("add", "-A")
	git("commit", "-qm", "base")
	base := git("rev-parse", "HEAD")
	// The keys as this phpunit prints its suites: PHPUnit 10 heads a class
	// "Sum (SumTest)", which the parser reads; 9 only "Sum" ("None").
	suite := "Sum"
	if out, _ := exec.Command(phpunit, "--version").Output(); strings.Contains(string(out), "PHPUnit 9.") {
		suite = "None"
	}
	tk := &task.Task{
		InstanceID: "example__sum-2", Repo: "example/sum", BaseCommit: base, LogParser: "parse_log_phpunit",
		Patch: phpGoldPatch, TestPatch: phpTestPatch,
		FailToPass: []string{suite + " > Adds two small numbers", suite + " > Adds a number to zero"}, PassToPass: []string{suite + " > Returns an integer"},
		EvalScript: fmt.Sprintf("#!/bin/bash\nset -uxo pipefail\n"+
			"git checkout %s tests/SumTest.php\ngit apply -v - <<'EOF_1'\n%sEOF_1\n: '>>>>> Start Test Output'\n(%s --testdox --colors=never tests/SumTest.php) | cat\n: '>>>>> End Test Output'\ngit checkout %s tests/SumTest.php\n",
			base, phpTestPatch, phpunit, base),
	}
	b := localBackend(t)
	grade := func(t *testing.T, opts Options) *Outcome {
		t.Helper()
		box, err := b.Open(context.Background(), sandbox.Spec{Image: repo})
		if err != nil {
			t.Fatal(err)
		}
		defer box.Close(context.Background())
		opts.Workdir = "."
		out, err := Grade(context.Background(), box, tk, opts)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	gold := grade(t, Options{Gold: true, Tamper: tamper.ModeZero})
	if gold.Reward != 1 || len(gold.Tampered) > 0 || gold.Canaries != "checked" || !strings.HasPrefix(gold.CanaryKind, "mutants of ") {
		t.Errorf("gold: reward %v (%s), tampered %q, canaries %q (%s)\n%s", gold.Reward, gold.Reason, gold.Tampered, gold.Canaries, gold.CanaryKind, gold.Log)
	}
	if empty := grade(t, Options{Tamper: tamper.ModeZero}); empty.Reward != 0 || len(empty.Tampered) > 0 {
		t.Errorf("empty: reward %v (%s), tampered %q", empty.Reward, empty.Reason, empty.Tampered)
	}
	flag := grade(t, Options{Patch: phpLie, Tamper: tamper.ModeFlag})
	zero := grade(t, Options{Patch: phpLie, Tamper: tamper.ModeZero})
	t.Logf("lie: official resolved %v; tampered %q", flag.Resolved, zero.Tampered)
	if !flag.Resolved || zero.Reward != 0 || !strings.Contains(strings.Join(zero.Tampered, "\n"), "canary") {
		t.Errorf("lie: resolved %v, reward %v (%s), tampered %q\n%s", flag.Resolved, zero.Reward, zero.Reason, zero.Tampered, zero.Log)
	}
}
