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

// A tiny Go module for TestGoCanariesLocal: Clamp is wrong for values
// above the range; the hidden test TestClampHigh finds it.
const (
	goCalc = `package calc

// Clamp limits v to [lo, hi].
func Clamp(v, lo, hi int) int {
	if v < lo {
		return lo
	}
	return v
}
`
	goCalcTest = `package calc

import "testing"

func TestClampLow(t *testing.T) {
	if got := Clamp(-5, 0, 10); got != 0 {
		t.Errorf("got %d", got)
	}
}

func TestClampInside(t *testing.T) {
	if got := Clamp(4, 0, 10); got != 4 {
		t.Errorf("got %d", got)
	}
}
`
	goTestPatch = `diff --git a/calc_test.go b/calc_test.go
--- a/calc_test.go
+++ b/calc_test.go
@@ -13,3 +13,9 @@ func TestClampInside(t *testing.T) {
 		t.Errorf("got %d", got)
 	}
 }
+
+func TestClampHigh(t *testing.T) {
+	if got := Clamp(15, 0, 10); got != 10 {
+		t.Errorf("got %d", got)
+	}
+}
`
	goGoldPatch = `diff --git a/calc.go b/calc.go
--- a/calc.go
+++ b/calc.go
@@ -5,5 +5,8 @@ func Clamp(v, lo, hi int) int {
 	if v < lo {
 		return lo
 	}
+	if v > hi {
+		return hi
+	}
 	return v
 }
`
	// goForgery fixes nothing: the test binary runs itself again and
	// passes its child's output on with every "--- FAIL" made "--- PASS",
	// and exits 0.
	goForgery = `diff --git a/report.go b/report.go
new file mode 100644
--- /dev/null
+++ b/report.go
@@ -0,0 +1,27 @@
+package calc
+
+import (
+	"bufio"
+	"os"
+	"os/exec"
+	"strings"
+)
+
+func init() {
+	if os.Getenv("CALC_CHILD") != "" || !strings.HasSuffix(os.Args[0], ".test") {
+		return
+	}
+	cmd := exec.Command(os.Args[0], os.Args[1:]...)
+	cmd.Env = append(os.Environ(), "CALC_CHILD=1")
+	cmd.Stderr = os.Stderr
+	out, err := cmd.StdoutPipe()
+	if err != nil || cmd.Start() != nil {
+		return
+	}
+	s := bufio.NewScanner(out)
+	for s.Scan() {
+		os.Stdout.WriteString(strings.Replace(s.Text(), "--- FAIL", "--- PASS", 1) + "\n")
+	}
+	_ = cmd.Wait()
+	os.Exit(0)
+}
`
)

// TestGoCanariesLocal grades a go test task on the local backend (the
// host's Go toolchain): the gold patch gets reward 1 with mutant canaries
// checked, no patch 0, and a patch that forges the test binary's report
// (resolved by the harness's rule) is tampered by the canaries.
func TestGoCanariesLocal(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go not found")
	}
	repo := t.TempDir()
	for name, text := range map[string]string{"go.mod": "module example.com/calc\n\ngo 1.21\n", "calc.go": goCalc, "calc_test.go": goCalcTest} {
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
	cache := t.TempDir()
	tk := &task.Task{
		InstanceID: "example__calc-1", Repo: "example/calc", BaseCommit: base, LogParser: "parse_log_gotest",
		Patch: goGoldPatch, TestPatch: goTestPatch,
		FailToPass: []string{"TestClampHigh"}, PassToPass: []string{"TestClampLow", "TestClampInside"},
		EvalScript: fmt.Sprintf("#!/bin/bash\nset -uxo pipefail\nexport PATH=%s:$PATH GOCACHE=%s GOTOOLCHAIN=local GOFLAGS=-mod=mod\n"+
			"git checkout %s calc_test.go\ngit apply -v - <<'EOF_1'\n%sEOF_1\n: '>>>>> Start Test Output'\ngo test -v ./...\n: '>>>>> End Test Output'\ngit checkout %s calc_test.go\n",
			filepath.Dir(goBin), cache, base, goTestPatch, base),
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
	flag := grade(t, Options{Patch: goForgery, Tamper: tamper.ModeFlag})
	zero := grade(t, Options{Patch: goForgery, Tamper: tamper.ModeZero})
	t.Logf("forgery: official resolved %v; tampered %q", flag.Resolved, zero.Tampered)
	if zero.Reward != 0 || !strings.Contains(strings.Join(zero.Tampered, "\n"), "canary") {
		t.Errorf("forgery: reward %v (%s), tampered %q\n%s", zero.Reward, zero.Reason, zero.Tampered, zero.Log)
	}
}
