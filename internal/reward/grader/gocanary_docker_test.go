package grader

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/swerve-dev/swerve/internal/reward/tamper"
	"github.com/swerve-dev/swerve/internal/sandbox"
	"github.com/swerve-dev/swerve/internal/task"
	"github.com/swerve-dev/swerve/internal/testutil"
)

// goTestImage builds (once) the test base image with the host's Go
// toolchain at /usr/local/go, offline: the toolchain is copied in from
// GOROOT. It skips when there is no docker CLI or no base image.
func goTestImage(t *testing.T) string {
	t.Helper()
	docker, err := exec.LookPath("docker")
	if err != nil {
		testutil.SkipOrFail(t, "no docker CLI to build the go test image")
	}
	name := "swerve-test-go:" + strings.TrimPrefix(runtime.Version(), "go")
	if exec.Command(docker, "image", "inspect", name).Run() == nil {
		return name
	}
	ctxDir := t.TempDir()
	df := fmt.Sprintf("FROM %s\nCOPY go /usr/local/go\n", testutil.TestImage())
	if err := os.WriteFile(filepath.Join(ctxDir, "Dockerfile"), []byte(df), 0o644); err != nil {
		t.Fatal(err)
	}
	// The build context: the Dockerfile and GOROOT under the name go.
	cmd := exec.Command("bash", "-c", `tar -c -C "$1" Dockerfile -C "$(dirname "$2")" --transform "s|^$(basename "$2")|go|" "$(basename "$2")" | "$3" build -q -t "$4" -`,
		"sh", ctxDir, runtime.GOROOT(), docker, name)
	if out, err := cmd.CombinedOutput(); err != nil {
		testutil.SkipOrFail(t, "build %s: %v: %s", name, err, out)
	}
	return name
}

// TestGoCanariesDocker grades the Go task of TestGoCanariesLocal in
// phased Docker runs (the patch's code unprivileged, the shell injector
// as root in the apply phase): the gold patch gets 1 with mutant canaries
// checked, no patch 0, and the forged go test report is tampered.
func TestGoCanariesDocker(t *testing.T) {
	b := dockerBackend(t)
	image := goTestImage(t)
	files := map[string]string{"go.mod": "module example.com/calc\n\ngo 1.21\n", "calc.go": goCalc, "calc_test.go": goCalcTest}
	var base string
	grade := func(t *testing.T, tk *task.Task, opts Options) *Outcome {
		t.Helper()
		ctx := context.Background()
		box, err := b.Open(ctx, sandbox.Spec{Image: image, Pull: sandbox.PullNever})
		if err != nil {
			testutil.SkipOrFail(t, "cannot open a box of %s: %v", image, err)
		}
		defer box.Close(ctx)
		for name, text := range files {
			if err := box.WriteFile(ctx, "/testbed/"+name, []byte(text), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		// A fixed author and date: the same base commit in every box.
		head := mustExec(t, box, "/testbed", "git init -q && git add -A && GIT_AUTHOR_DATE=2000-01-01T00:00:00Z GIT_COMMITTER_DATE=2000-01-01T00:00:00Z git -c user.name=t -c user.email=t@t commit -qm base && git rev-parse HEAD")
		if base == "" {
			base = strings.TrimSpace(head)
			return nil
		}
		out, err := Grade(ctx, box, tk, opts)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	grade(t, nil, Options{}) // learns the base commit
	tk := &task.Task{
		InstanceID: "example__calc-1", Repo: "example/calc", BaseCommit: base, LogParser: "parse_log_gotest",
		Patch: goGoldPatch, TestPatch: goTestPatch,
		FailToPass: []string{"TestClampHigh"}, PassToPass: []string{"TestClampLow", "TestClampInside"},
		EvalScript: strings.Join([]string{
			"#!/bin/bash", "set -uxo pipefail", "cd /testbed",
			"export PATH=/usr/local/go/bin:$PATH GOCACHE=/tmp/gocache GOTOOLCHAIN=local GOFLAGS=-mod=mod",
			"git config --global --add safe.directory /testbed",
			"git -c core.fileMode=false diff " + base,
			"git checkout " + base + " calc_test.go",
			"git apply -v - <<'EOF_1'", strings.TrimSuffix(goTestPatch, "\n"), "EOF_1",
			": '>>>>> Start Test Output'", "go test -v ./...", ": '>>>>> End Test Output'",
			"git checkout " + base + " calc_test.go", "",
		}, "\n"),
	}
	gold := grade(t, tk, Options{Gold: true, Tamper: tamper.ModeZero})
	t.Logf("gold: reward %v (%s), phases %q, canaries %q (%s)", gold.Reward, gold.Reason, gold.Phases, gold.Canaries, gold.CanaryKind)
	if gold.Reward != 1 || len(gold.Tampered) > 0 || gold.Canaries != "checked" || !strings.HasPrefix(gold.CanaryKind, "mutants of ") || gold.Phases != "phased" {
		t.Errorf("gold: reward %v (%s), tampered %q, canaries %q (%s), phases %q\n%s", gold.Reward, gold.Reason, gold.Tampered, gold.Canaries, gold.CanaryKind, gold.Phases, gold.Log)
	}
	if empty := grade(t, tk, Options{Tamper: tamper.ModeZero}); empty.Reward != 0 || len(empty.Tampered) > 0 {
		t.Errorf("empty: reward %v (%s), tampered %q", empty.Reward, empty.Reason, empty.Tampered)
	}
	flag := grade(t, tk, Options{Patch: goForgery, Tamper: tamper.ModeFlag})
	zero := grade(t, tk, Options{Patch: goForgery, Tamper: tamper.ModeZero})
	t.Logf("forgery: official resolved %v; tampered %q", flag.Resolved, zero.Tampered)
	if zero.Reward != 0 || !strings.Contains(strings.Join(zero.Tampered, "\n"), "canary") {
		t.Errorf("forgery: reward %v (%s), tampered %q\n%s", zero.Reward, zero.Reason, zero.Tampered, zero.Log)
	}
}
