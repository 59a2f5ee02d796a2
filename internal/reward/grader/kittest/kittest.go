// Package kittest runs the five real SWE-bench Verified django tasks of
// ../shared/realtasks on a sandbox backend: each task's gold patch must get
// reward 1 and an empty patch reward 0, graded by the same grader run and
// serve use. Every backend's test calls it after the conformance suite, so
// "passes conformance" also means "grades real tasks right".
//
//	func TestKit(t *testing.T) {
//		kittest.Run(t, kittest.Harness{Backend: b, Spec: func(t testing.TB, tk *task.Task) sandbox.Spec {
//			return sandbox.Spec{Image: tk.Image, Task: tk.InstanceID, Pull: sandbox.PullNever}
//		}})
//	}
//
// The tasks come from ../shared/realtasks/instances.jsonl (the dataset's
// rows unchanged), so no parquet reader is needed; the images are the ones
// ../shared/realtasks/build.sh makes, under the harness's names, which a
// backend maps to its own form (a .sif, a template, an image imported into
// a cluster's runtime).
package kittest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/swerve-dev/swerve/internal/reward/grader"
	"github.com/swerve-dev/swerve/internal/sandbox"
	"github.com/swerve-dev/swerve/internal/task"
	"github.com/swerve-dev/swerve/internal/testutil"
)

// IDs are the kit's five tasks.
var IDs = []string{"django__django-15499", "django__django-16139", "django__django-16901", "django__django-16938", "django__django-17087"}

// Harness is what a backend hands Run.
type Harness struct {
	// Backend opens the grading boxes.
	Backend sandbox.Backend
	// Spec returns the spec of a fresh box for tk; nil means tk's image,
	// named task and PullNever.
	Spec func(t testing.TB, tk *task.Task) sandbox.Spec
	// Parallel is how many boxes may be open at once; 0 means 2 (each
	// django box runs a real test suite, on a small machine).
	Parallel int
	// IDs limits the run to these tasks; nil means all five.
	IDs []string
}

// Tasks loads the kit's tasks from ../shared/realtasks/instances.jsonl,
// skipping the test (failing it under CI) when the kit is not there.
func Tasks(t testing.TB) map[string]*task.Task {
	t.Helper()
	path := filepath.Join(testutil.SharedDir(t), "realtasks", "instances.jsonl")
	if _, err := os.Stat(path); err != nil {
		testutil.SkipOrFail(t, "real-task kit not found: %v", err)
	}
	res, err := task.Load(context.Background(), path, task.LoadOptions{})
	if err != nil {
		t.Fatalf("load %s: %v", path, err)
	}
	out := map[string]*task.Task{}
	for i := range res.Tasks {
		out[res.Tasks[i].InstanceID] = &res.Tasks[i]
	}
	for _, id := range IDs {
		if out[id] == nil {
			t.Fatalf("%s: no task %s", path, id)
		}
	}
	return out
}

// Run grades each kit task twice on h.Backend, in fresh boxes: the gold
// patch must give reward 1 and an empty patch reward 0. An error (a box
// that does not open, a grader that cannot run) fails the test: it is
// never a reward.
func Run(t *testing.T, h Harness) {
	t.Helper()
	tasks := Tasks(t)
	ids := h.IDs
	if ids == nil {
		ids = IDs
	}
	par := h.Parallel
	if par <= 0 {
		par = 2
	}
	sem := make(chan struct{}, par)
	t.Run("kit", func(t *testing.T) {
		for _, id := range ids {
			tk := tasks[id]
			if tk == nil {
				t.Fatalf("no kit task %s", id)
			}
			for _, gold := range []bool{true, false} {
				name := id + map[bool]string{true: "/gold", false: "/empty"}[gold]
				t.Run(name, func(t *testing.T) {
					t.Parallel()
					sem <- struct{}{}
					defer func() { <-sem }()
					want := map[bool]float64{true: 1, false: 0}[gold]
					out, took, err := grade(t, h, tk, gold)
					if err != nil {
						t.Fatalf("%s: %v", name, err)
					}
					if out.Reward != want {
						t.Fatalf("%s: reward %v (%s), want %v", name, out.Reward, out.Reason, want)
					}
					t.Logf("%s: reward %v in %v", name, out.Reward, took.Round(time.Millisecond))
				})
			}
		}
	})
}

func grade(t *testing.T, h Harness, tk *task.Task, gold bool) (*grader.Outcome, time.Duration, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	spec := sandbox.Spec{Image: tk.Image, Task: tk.InstanceID, Pull: sandbox.PullNever}
	if h.Spec != nil {
		spec = h.Spec(t, tk)
	}
	start := time.Now()
	box, err := h.Backend.Open(ctx, spec)
	if err != nil {
		return nil, 0, fmt.Errorf("open: %w", err)
	}
	defer box.Close(context.WithoutCancel(ctx))
	out, err := grader.Grade(ctx, box, tk, grader.Options{Gold: gold})
	if err != nil {
		return nil, 0, fmt.Errorf("grade: %w", err)
	}
	return out, time.Since(start), nil
}
