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

// A tiny mocha project for TestJSCanariesLocal: sum subtracts; the hidden
// tests the test patch adds find it.
const (
	jsSum = `'use strict';

module.exports = function sum(a, b) {
  return a - b;
};
`
	jsSumTest = `'use strict';

const assert = require('assert');
const sum = require('../lib/sum');

describe('sum', () => {
  it('returns a number', () => {
    assert.strictEqual(typeof sum(2, 2), 'number');
  });
});
`
	jsTestPatch = `diff --git a/test/sum.js b/test/sum.js
--- a/test/sum.js
+++ b/test/sum.js
@@ -7,4 +7,13 @@ describe('sum', () => {
   it('returns a number', () => {
     assert.strictEqual(typeof sum(2, 2), 'number');
   });
+
+  it('adds two small numbers', () => {
+    const got = sum(1, 2);
+    assert.strictEqual(got, 3);
+  });
+
+  it('adds a number to zero', () => {
+    assert.strictEqual(sum(0, 5), 5);
+  });
 });
`
	jsGoldPatch = `diff --git a/lib/sum.js b/lib/sum.js
--- a/lib/sum.js
+++ b/lib/sum.js
@@ -1,5 +1,5 @@
 'use strict';
 
 module.exports = function sum(a, b) {
-  return a - b;
+  return a + b;
 };
`
	// jsLie fixes nothing: node's assert.strictEqual holds for anything.
	jsLie = `diff --git a/lib/sum.js b/lib/sum.js
--- a/lib/sum.js
+++ b/lib/sum.js
@@ -1,5 +1,7 @@
 'use strict';
 
+require('assert').strictEqual = function () {};
+
 module.exports = function sum(a, b) {
   return a - b;
 };
`
)

// TestJSCanariesLocal grades a mocha task (parse_log_tap) on the local
// backend with the host's mocha (SWERVE_MOCHA, else PATH): the gold patch
// gets reward 1 with mutant canaries checked, no patch 0, and a patch that
// rigs assert.strictEqual (resolved by the harness's rule) is tampered by
// the canaries.
func TestJSCanariesLocal(t *testing.T) {
	t.Setenv(tamper.ExtraCanariesEnv, "js") // not on by default yet
	mocha := os.Getenv("SWERVE_MOCHA")
	if mocha == "" {
		mocha, _ = exec.LookPath("mocha")
	}
	if mocha == "" {
		t.Skip("no mocha (set SWERVE_MOCHA or install Debian's mocha)")
	}
	repo := t.TempDir()
	for name, text := range map[string]string{"lib/sum.js": jsSum, "test/sum.js": jsSumTest} {
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
	tk := &task.Task{
		InstanceID: "example__sum-1", Repo: "example/sum", BaseCommit: base, LogParser: "parse_log_tap",
		Patch: jsGoldPatch, TestPatch: jsTestPatch,
		FailToPass: []string{"sum adds two small numbers", "sum adds a number to zero"}, PassToPass: []string{"sum returns a number"},
		// Debian's mocha finds its modules in /usr/share/nodejs, which a
		// node from elsewhere does not search.
		EvalScript: fmt.Sprintf("#!/bin/bash\nset -uxo pipefail\nexport PATH=%s:$PATH NODE_PATH=/usr/share/nodejs\n"+
			"git checkout %s test/sum.js\ngit apply -v - <<'EOF_1'\n%sEOF_1\n: '>>>>> Start Test Output'\n(mocha -R tap test/sum.js) | cat\n: '>>>>> End Test Output'\ngit checkout %s test/sum.js\n",
			filepath.Dir(mocha), base, jsTestPatch, base),
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
	flag := grade(t, Options{Patch: jsLie, Tamper: tamper.ModeFlag})
	zero := grade(t, Options{Patch: jsLie, Tamper: tamper.ModeZero})
	t.Logf("lie: official resolved %v; tampered %q", flag.Resolved, zero.Tampered)
	if !flag.Resolved || zero.Reward != 0 || !strings.Contains(strings.Join(zero.Tampered, "\n"), "canary") {
		t.Errorf("lie: resolved %v, reward %v (%s), tampered %q\n%s", flag.Resolved, zero.Reward, zero.Reason, zero.Tampered, zero.Log)
	}
}
