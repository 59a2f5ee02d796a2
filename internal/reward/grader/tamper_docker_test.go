package grader

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

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

// TestTamperRealTasks: on the five real django tasks, the canaries leave
// the gold verdict and report.json unchanged (gold 1, no patch 0, reports
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

// TestTamperCost measures what the defences cost per grade of a real
// django task: the gold patch graded 5 times with them and 5 times
// without, alternating, in one run; it logs the medians. Run it with
// SWERVE_REALTASKS=1 SWERVE_TAMPER_COST=1.
func TestTamperCost(t *testing.T) {
	if os.Getenv("SWERVE_TAMPER_COST") != "1" {
		t.Skip("set SWERVE_TAMPER_COST=1 to measure")
	}
	tasks, b := realTaskList(t)
	var tk *task.Task
	for _, x := range tasks {
		if x.InstanceID == "django__django-16901" {
			tk = x
		}
	}
	if tk == nil {
		t.Fatal("django__django-16901 not found")
	}
	var with, without []time.Duration
	for range 5 {
		for _, mode := range []tamper.Mode{tamper.ModeIgnore, tamper.ModeZero} {
			start := time.Now()
			out := gradeIn(t, b, tk, Options{Gold: true, Tamper: mode})
			d := time.Since(start)
			if out.Reward != 1 {
				t.Fatalf("%s: gold reward %v (%s)", mode, out.Reward, out.Reason)
			}
			if mode == tamper.ModeZero {
				with = append(with, d)
			} else {
				without = append(without, d)
			}
		}
	}
	med := func(ds []time.Duration) time.Duration {
		s := slices.Clone(ds)
		slices.Sort(s)
		return s[len(s)/2]
	}
	t.Logf("%s gold grade (box open to close), median of 5: %v with the defences, %v without (%+v); with %v, without %v",
		tk.InstanceID, med(with).Round(time.Millisecond), med(without).Round(time.Millisecond), (med(with) - med(without)).Round(time.Millisecond), with, without)
}
