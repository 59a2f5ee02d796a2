package history_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/swerve-dev/swerve/internal/reward/history"
	"github.com/swerve-dev/swerve/internal/sandbox"
	"github.com/swerve-dev/swerve/internal/sandbox/docker"
	"github.com/swerve-dev/swerve/internal/task"
	"github.com/swerve-dev/swerve/internal/testutil"
)

// TestCopyCheckCostDocker measures the search for copies of the project
// outside git that an agent's box preparation makes: once per image (a
// fresh CopyChecks each run: the whole search and comparison), and per box
// once the answer is kept (a second box of the same image: a lookup). It
// runs on the first real django task's image with SWERVE_REALTASKS=1 (a
// full SWE-bench environment), else on the test base image; medians of
// five runs each.
func TestCopyCheckCostDocker(t *testing.T) {
	if !testutil.DockerRequired() {
		t.Skip("Docker tests need SWERVE_DOCKER_TESTS=1")
	}
	ctx := context.Background()
	if err := docker.Probe(ctx); err != nil {
		testutil.SkipOrFail(t, "no container engine: %v", err)
	}
	b, err := docker.New(ctx, docker.Config{Options: sandbox.Options{ShimPath: testutil.SwerveBinary(t), RunID: fmt.Sprintf("test-copies-%d", os.Getpid())}})
	if err != nil {
		t.Fatal(err)
	}
	tk := &task.Task{InstanceID: "calc-copies", Repo: "calc/calc", Image: testutil.TestImage(), Version: "1.0",
		Patch: "diff --git a/calc.py b/calc.py\n--- a/calc.py\n+++ b/calc.py\n@@ -1 +1 @@\n-    return a - b\n+    return a + b\n"}
	if os.Getenv("SWERVE_REALTASKS") == "1" {
		res, err := task.Load(ctx, filepath.Join(testutil.SharedDir(t), "realtasks", "instances.jsonl"), task.LoadOptions{})
		if err != nil || len(res.Tasks) == 0 {
			t.Fatalf("real tasks: %v", err)
		}
		tk = &res.Tasks[0]
	}
	if ok, _ := b.ImageExists(ctx, tk.Image); !ok {
		testutil.SkipOrFail(t, "image %s missing", tk.Image)
	}
	box, err := b.Open(ctx, sandbox.Spec{Image: tk.Image, Pull: sandbox.PullNever, Workdir: "/testbed"})
	if err != nil {
		t.Fatal(err)
	}
	defer box.Close(context.WithoutCancel(ctx))
	var last *history.CopyCheck
	once := figure(t, 5, func() error {
		c, err := (&history.CopyChecks{}).Check(ctx, box, tk, "/testbed")
		last = c
		return err
	})
	if last == nil || last.Cached || last.NotChecked != "" || len(last.Checked) == 0 {
		t.Fatalf("uncached check: %+v", last)
	}
	kept := &history.CopyChecks{Dir: t.TempDir()}
	if _, err := kept.Check(ctx, box, tk, "/testbed"); err != nil {
		t.Fatal(err)
	}
	second, err := b.Open(ctx, sandbox.Spec{Image: tk.Image, Pull: sandbox.PullNever, Workdir: "/testbed"})
	if err != nil {
		t.Fatal(err)
	}
	defer second.Close(context.WithoutCancel(ctx))
	perBox := figure(t, 5, func() error {
		c, err := kept.Check(ctx, second, tk, "/testbed")
		if err == nil && !c.Cached {
			err = fmt.Errorf("a second box of %s searched again", tk.Image)
		}
		return err
	})
	// Another process: the answer is read from the disk.
	fromDisk := figure(t, 5, func() error {
		c, err := (&history.CopyChecks{Dir: kept.Dir}).Check(ctx, second, tk, "/testbed")
		if err == nil && !c.Cached {
			err = fmt.Errorf("another process searched %s again", tk.Image)
		}
		return err
	})
	t.Logf("image %s (task %s): the search once per image %.0f ms (median of 5), per box once kept %.3f ms in the process, %.3f ms from the disk; found %d copies; %s",
		tk.Image, tk.InstanceID, once, perBox, fromDisk, len(last.Copies), last.Summary())
}
