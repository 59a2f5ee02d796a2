package adversarial

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/swerve-dev/swerve/internal/sandbox"
	"github.com/swerve-dev/swerve/internal/sandbox/docker"
	"github.com/swerve-dev/swerve/internal/task"
	"github.com/swerve-dev/swerve/internal/testutil"
)

// calcImage is the tag of the small tasks' image, built from testdata/calc
// on the test base image (layers cached between runs). buildCalcTasks tags
// it with a digest of testdata/calc, so that worktrees with different
// versions of the repository do not build over each other's image.
var calcImage = "swerve-test-adversarial-calc:latest"

// dirDigest is a short digest of the names and contents of the files
// under dir.
func dirDigest(t *testing.T, dir string) string {
	t.Helper()
	h := sha256.New()
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		fmt.Fprintf(h, "%s\x00%d\x00", filepath.ToSlash(p), len(b))
		h.Write(b)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(h.Sum(nil))[:12]
}

func readTestdata(t *testing.T, rel string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", filepath.FromSlash(rel)))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// buildCalcTasks builds the calc image and returns the small tasks, one per
// grader kind, all on the same repository: calc.add subtracts, and the
// hidden tests check that it adds.
func buildCalcTasks(t *testing.T, b *docker.Backend) map[string]*task.Task {
	t.Helper()
	ctx := context.Background()
	base := testutil.TestImage()
	if ok, err := b.ImageExists(ctx, base); err != nil || !ok {
		testutil.SkipOrFail(t, "the test base image %s is missing (scripts/test-image.sh): %v", base, err)
	}
	calcImage = "swerve-test-adversarial-calc:" + dirDigest(t, filepath.Join("testdata", "calc"))
	dockerfile := strings.Replace(readTestdata(t, "calc/Dockerfile"), "FROM swerve-test-base:bookworm", "FROM "+base, 1)
	var log bytes.Buffer
	if err := b.Build(ctx, docker.BuildOptions{ContextDir: filepath.Join("testdata", "calc"), Dockerfile: dockerfile, Tags: []string{calcImage}, Progress: &log}); err != nil {
		t.Fatalf("build %s: %v\n%s", calcImage, err, log.String())
	}
	box, err := b.Open(ctx, sandbox.Spec{Image: calcImage, Pull: sandbox.PullNever, Workdir: "/testbed"})
	if err != nil {
		t.Fatal(err)
	}
	res, err := box.Exec(ctx, sandbox.ExecRequest{Cmd: []string{"git", "rev-parse", "HEAD"}, Timeout: time.Minute})
	box.Close(context.WithoutCancel(ctx))
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("git rev-parse HEAD in %s: %v %s", calcImage, err, res.Output)
	}
	head := strings.TrimSpace(string(res.Output))

	gold := readPatch(t, "calc/gold.diff")
	sbTests := readTestdata(t, "calc/test_patch_swebench.diff")
	sfTests := readTestdata(t, "calc/test_patch_swefactory.diff")
	tasks := map[string]*task.Task{
		// SWE-bench with pytest, the eval script written the way the
		// harness writes them (reset the test files, apply the test patch,
		// run the tests between the markers, print the exit code).
		CalcSWEBench: {
			InstanceID: CalcSWEBench, Repo: "calc/calc", BaseCommit: head, Image: calcImage,
			Patch: gold, TestPatch: sbTests, LogParser: "parse_log_pytest", Grader: task.GraderSWEBench,
			FailToPass: []string{"tests/test_add.py::test_add"},
			PassToPass: []string{"tests/test_ops.py::test_mul", "tests/test_ops.py::test_add_zero"},
			EvalScript: withInstall(harnessScript(head, sbTests, []string{"tests/test_add.py"},
				"pytest -rA tests/test_add.py tests/test_ops.py"), head, "python3 setup.py"),
		},
		// SWE-Factory: the same shape, verdict from OMNIGRIL_EXIT_CODE.
		CalcSWEFactory: {
			InstanceID: CalcSWEFactory, Repo: "calc/calc", BaseCommit: head, Image: calcImage,
			Patch: gold, TestPatch: sfTests, Grader: task.GraderSWEFactory,
			FailToPass: []string{"tests/test_ops.py::test_add_big", "tests/test_ops.py::test_add_pair"},
			PassToPass: []string{"tests/test_ops.py::test_mul", "tests/test_ops.py::test_add_zero"},
			EvalScript: factoryScript(head, sfTests, []string{"tests/test_ops.py"}, "python3 -m pytest -rA tests/test_ops.py"),
		},
		// R2E-Gym: no eval script; the image's run_tests.sh over /r2e_tests.
		CalcR2E: {
			InstanceID: CalcR2E, Repo: "calc", BaseCommit: head, Image: calcImage, Patch: gold, Grader: task.GraderR2E,
			ExpectedOutput: map[string]string{"test_add": "PASSED", "test_mul": "PASSED"},
		},
		// SWE-smith: the image's HEAD is the bug commit; the tests are in
		// the repository and reset before the run.
		CalcSWESmith: {
			InstanceID: "acme__calc." + head[:8] + ".adv", Repo: "swesmith/acme__calc." + head[:8], BaseCommit: head, Image: calcImage,
			Patch: gold, Grader: task.GraderSWESmith,
			FailToPass: []string{"tests/test_ops.py::test_add_pair"},
			PassToPass: []string{"tests/test_ops.py::test_mul", "tests/test_ops.py::test_add_zero"},
		},
	}
	for key, dir := range map[string]string{CalcHarbor: "harbor-calc", CalcHarborMarks: "harbor-calc-marks"} {
		res, err := task.Load(ctx, filepath.Join("testdata", dir), task.LoadOptions{})
		if err != nil {
			t.Fatal(err)
		}
		hb := res.Tasks[0]
		hb.InstanceID, hb.Image = key, calcImage
		tasks[key] = &hb
	}
	return tasks
}

// harnessScript is an eval script in the SWE-bench harness's shape.
func harnessScript(base, testPatch string, testFiles []string, cmd string) string {
	files := strings.Join(testFiles, " ")
	return strings.Join([]string{
		"#!/bin/bash",
		"set -uxo pipefail",
		"cd /testbed",
		"git config --global --add safe.directory /testbed",
		"git status",
		"git show",
		"git -c core.fileMode=false diff " + base,
		"git checkout " + base + " " + files,
		"git apply -v - <<'EOF_114329324912'",
		strings.TrimRight(testPatch, "\n"),
		"EOF_114329324912",
		": '>>>>> Start Test Output'",
		cmd,
		"rc=$?",
		": '>>>>> End Test Output'",
		`echo ">>>>> Test Exit Code: $rc"`,
		"git checkout " + base + " " + files,
		"",
	}, "\n")
}

// withInstall adds an install step to a harness script where the harness
// puts the task's install command: after the git diff, before the test
// files are reset.
func withInstall(script, base, install string) string {
	diff := "git -c core.fileMode=false diff " + base + "\n"
	return strings.Replace(script, diff, diff+install+"\n", 1)
}

// factoryScript is an eval script in SWE-Factory's shape.
func factoryScript(base, testPatch string, testFiles []string, cmd string) string {
	files := strings.Join(testFiles, " ")
	return strings.Join([]string{
		"#!/bin/bash",
		"set -uxo pipefail",
		"cd /testbed",
		"git checkout " + base + " " + files,
		"git apply -v - <<'EOF_114329324912'",
		strings.TrimRight(testPatch, "\n"),
		"EOF_114329324912",
		cmd,
		"rc=$?",
		`echo "OMNIGRIL_EXIT_CODE=$rc"`,
		"git checkout " + base + " " + files,
		"",
	}, "\n")
}

// loadRealTasks loads the named rows of ../shared/realtasks/instances.jsonl;
// their images must exist (CI builds them with build.sh).
func loadRealTasks(t *testing.T, b *docker.Backend, ids []string) map[string]*task.Task {
	t.Helper()
	shared := testutil.SharedDir(t)
	res, err := task.Load(context.Background(), filepath.Join(shared, "realtasks", "instances.jsonl"), task.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]*task.Task{}
	for i := range res.Tasks {
		tk := &res.Tasks[i]
		for _, id := range ids {
			if tk.InstanceID != id {
				continue
			}
			if ok, err := b.ImageExists(context.Background(), tk.Image); err != nil || !ok {
				t.Fatalf("SWERVE_REALTASKS=1 but image %s is missing (../shared/realtasks/build.sh): %v", tk.Image, err)
			}
			out[id] = tk
		}
	}
	for _, id := range ids {
		if out[id] == nil {
			t.Fatalf("no row %s in realtasks/instances.jsonl", id)
		}
	}
	return out
}
