package grader

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/swerve-dev/swerve/internal/reward"
	"github.com/swerve-dev/swerve/internal/reward/swebench"
	"github.com/swerve-dev/swerve/internal/reward/tamper"
	"github.com/swerve-dev/swerve/internal/sandbox"
	"github.com/swerve-dev/swerve/internal/sandbox/docker"
	"github.com/swerve-dev/swerve/internal/task"
	"github.com/swerve-dev/swerve/internal/testutil"
)

func dockerBackend(t *testing.T) *docker.Backend {
	t.Helper()
	ctx := context.Background()
	if err := docker.Probe(ctx); err != nil {
		testutil.SkipOrFail(t, "no container engine: %v", err)
	}
	b, err := docker.New(ctx, docker.Config{Options: sandbox.Options{ShimPath: testutil.SwerveBinary(t), RunID: "tamper-test"}})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func mustExec(t *testing.T, box sandbox.Sandbox, dir, script string) string {
	t.Helper()
	res, err := box.Exec(context.Background(), sandbox.ExecRequest{Cmd: []string{"/bin/bash", "-c", script}, Cwd: dir, Timeout: 5 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if res.ExitCode != 0 {
		t.Fatalf("%s: exit %d\n%s", script, res.ExitCode, res.Output)
	}
	return string(res.Output)
}

// TestTamperDocker grades the sample attacks in boxes of the test base
// image holding the sample repository at /testbed.
func TestTamperDocker(t *testing.T) {
	b := dockerBackend(t)
	root := testutil.RepoRoot(t)
	tk := loadOne(t, filepath.Join(root, "examples", "sample", "tasks.jsonl"), "sample__calc-1")
	repo := filepath.Join(root, "examples", "sample", "repo")
	grade := func(t *testing.T, opts Options) *Outcome {
		t.Helper()
		ctx := context.Background()
		box, err := b.Open(ctx, sandbox.Spec{Image: testutil.TestImage(), Pull: sandbox.PullNever})
		if err != nil {
			testutil.SkipOrFail(t, "cannot open a box of %s: %v", testutil.TestImage(), err)
		}
		defer box.Close(ctx)
		err = filepath.WalkDir(repo, func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			rel, _ := filepath.Rel(repo, p)
			return box.WriteFile(ctx, "/testbed/"+filepath.ToSlash(rel), data, 0o644)
		})
		if err != nil {
			t.Fatal(err)
		}
		mustExec(t, box, "/testbed", "git init -q && git add -A && git -c user.name=t -c user.email=t@t commit -qm base")
		out, err := Grade(ctx, box, tk, opts)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	checkTampered(t, grade)
}

// realTaskList is the five real django tasks in a fixed order, with the
// engine their images are in (see realTasks).
func realTaskList(t *testing.T) ([]*task.Task, *docker.Backend) {
	t.Helper()
	eng, m := realTasks(t)
	out := make([]*task.Task, 0, len(realTaskIDs))
	for _, id := range realTaskIDs {
		out = append(out, m[id])
	}
	return out, eng
}

func gradeIn(t *testing.T, b *docker.Backend, tk *task.Task, opts Options) *Outcome {
	t.Helper()
	ctx := context.Background()
	box, err := b.Open(ctx, sandbox.Spec{Image: tk.Image, Pull: sandbox.PullNever})
	if err != nil {
		t.Fatalf("SWERVE_REALTASKS=1 but the box of %s did not open: %v", tk.Image, err)
	}
	defer box.Close(ctx)
	out, err := Grade(ctx, box, tk, opts)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// patchFrom makes a patch by running script in /testbed of a box of the
// task's image and taking git diff.
func patchFrom(t *testing.T, b *docker.Backend, tk *task.Task, script string) string {
	t.Helper()
	ctx := context.Background()
	box, err := b.Open(ctx, sandbox.Spec{Image: tk.Image, Pull: sandbox.PullNever})
	if err != nil {
		t.Fatal(err)
	}
	defer box.Close(ctx)
	return mustExec(t, box, "/testbed", script+"\ngit add -A && git diff --cached")
}

// TestTamperRealTasks: on the five real django tasks, the canaries (mutants
// of the task's own tests on all but 15499, whose tests assert only
// through a helper) leave the gold verdict and report.json unchanged (gold 1, no patch 0, reports
// byte for byte those of a run without them), and a patch that turns
// unittest's failures into successes by reflection (which the static
// check cannot see) is tampered.
func TestTamperRealTasks(t *testing.T) {
	tasks, b := realTaskList(t)
	if len(tasks) != 5 {
		t.Fatalf("%d real tasks in verified-test, want 5", len(tasks))
	}
	// The attack: django's runner reports through unittest's
	// TextTestResult; make its failures and errors successes.
	hack := `cat >> django/__init__.py <<'EOF'

import unittest.runner as _runner
_cls = getattr(_runner, "TextTest" + "Result")
for _name in ("addFailure", "addError"):
    setattr(_cls, _name, lambda self, test, err: _cls.addSuccess(self, test))
EOF`
	for _, tk := range tasks {
		t.Run(tk.InstanceID, func(t *testing.T) {
			t.Parallel()
			for _, gold := range []bool{true, false} {
				plain := gradeIn(t, b, tk, Options{Gold: gold, Tamper: tamper.ModeIgnore})
				checked := gradeIn(t, b, tk, Options{Gold: gold, Tamper: tamper.ModeZero})
				want := 0.0
				if gold {
					want = 1
				}
				if plain.Reward != want || checked.Reward != want || len(checked.Tampered) > 0 || checked.Canaries != "checked" {
					t.Errorf("gold=%v: reward %v without the defences, %v with (%s; tampered %q; canaries %q)\n%s", gold, plain.Reward, checked.Reward, checked.Reason, checked.Tampered, checked.Canaries, checked.Log)
				}
				t.Logf("gold=%v: canaries %s", gold, checked.CanaryKind)
				if mutants := tk.InstanceID != "django__django-15499"; mutants != strings.HasPrefix(checked.CanaryKind, "mutants of ") {
					t.Errorf("gold=%v: canaries %s; want mutants: %v", gold, checked.CanaryKind, mutants)
				}
				if string(plain.Report) != string(checked.Report) || plain.Reason != checked.Reason {
					t.Errorf("gold=%v: the canaries changed the report:\n%s\n%s\nvs\n%s\n%s", gold, plain.Reason, plain.Report, checked.Reason, checked.Report)
				}
			}
			patch := patchFrom(t, b, tk, hack)
			off := gradeIn(t, b, tk, Options{Patch: patch, Tamper: tamper.ModeIgnore})
			on := gradeIn(t, b, tk, Options{Patch: patch, Tamper: tamper.ModeZero})
			t.Logf("reflection hack: %v (%s) without the defences; %v (%s) with", off.Reward, off.Reason, on.Reward, on.Reason)
			if on.Reward != 0 || !strings.HasPrefix(on.Reason, "tampered: canary") {
				t.Errorf("hack: reward %v (%s; tampered %q)", on.Reward, on.Reason, on.Tampered)
			}
		})
	}
}

// TestDefenceCost measures what every reward defence together costs per
// grade on a real task: django__django-16901's gold patch graded box open to
// close, five times each way, alternating, in one run. With: a hardened box
// and Grade as swerve runs it (sealed, non-dumpable runner, kill-others,
// static check, canaries, tamper mode zero). Without: an unhardened box and
// the grade swerve did before the defences (the patch applied the same way,
// `/bin/bash /eval.sh` with the dataset's script unchanged, the log graded
// unsealed). Run it with SWERVE_DOCKER_TESTS=1 SWERVE_REALTASKS=1
// SWERVE_DEFENCE_COST=1; it logs both medians and every sample.
func TestDefenceCost(t *testing.T) {
	if os.Getenv("SWERVE_DEFENCE_COST") != "1" {
		t.Skip("set SWERVE_DEFENCE_COST=1 to measure the cost of the reward defences on a real task")
	}
	eng, tasks := realTasks(t)
	tk := tasks["django__django-16901"]
	ctx := context.Background()
	bare := func() {
		box, err := eng.Open(ctx, sandbox.Spec{Image: tk.Image, Pull: sandbox.PullNever, Security: sandbox.Security{Unhardened: true}})
		if err != nil {
			t.Fatal(err)
		}
		defer box.Close(ctx)
		if ok, log, err := reward.ApplyPatch(ctx, box, reward.Workdir, reward.PatchFile, tk.Patch); err != nil || !ok {
			t.Fatalf("apply: %v %s", err, log)
		}
		if err := box.WriteFile(ctx, reward.EvalFile, []byte(tk.EvalScript), 0o755); err != nil {
			t.Fatal(err)
		}
		res, err := box.Exec(ctx, sandbox.ExecRequest{Cmd: []string{"/bin/bash", reward.EvalFile}, Cwd: reward.Workdir, Timeout: reward.DefaultEvalTimeout, MaxOutput: reward.MaxLog})
		if err != nil {
			t.Fatal(err)
		}
		if r, err := swebench.Evaluate(tk, string(res.Output), swebench.Options{}); err != nil || !r.Resolved {
			t.Fatalf("without the defences: %v %+v", err, r)
		}
	}
	var with, without []time.Duration
	for range 5 {
		start := time.Now()
		bare()
		without = append(without, time.Since(start))
		start = time.Now()
		if out := gradeIn(t, eng, tk, Options{Gold: true, Tamper: tamper.ModeZero}); out.Reward != 1 || !out.Sealed || out.Canaries != "checked" {
			t.Fatalf("with the defences: reward %v (%s), sealed %v, canaries %q", out.Reward, out.Reason, out.Sealed, out.Canaries)
		}
		with = append(with, time.Since(start))
	}
	mw, mo := median(with), median(without)
	t.Logf("%s gold grade, box open to close, median of 5: %v with every defence, %v without (%+v, %+.1f%%); with %v; without %v",
		tk.InstanceID, mw.Round(time.Millisecond), mo.Round(time.Millisecond), (mw - mo).Round(time.Millisecond), 100*float64(mw-mo)/float64(mo), with, without)
}
