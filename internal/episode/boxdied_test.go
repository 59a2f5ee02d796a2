package episode_test

import (
	"context"
	"fmt"
	"io/fs"
	"strings"
	"sync"
	"testing"

	"github.com/swerve-dev/swerve/internal/episode"
	"github.com/swerve-dev/swerve/internal/reward/grader"
	"github.com/swerve-dev/swerve/internal/sandbox"
	"github.com/swerve-dev/swerve/internal/task"
)

// killer marks the patches whose code kills the box in these tests.
const killer = "# KILLS THE BOX\n"

// killerPatch is a patch the fake box dies under: a new file, so that it
// applies to the sample task's repository.
const killerPatch = "diff --git a/boom.py b/boom.py\nnew file mode 100644\n--- /dev/null\n+++ b/boom.py\n@@ -0,0 +1 @@\n+" + killer

// dyingWorld decides which eval runs die, and counts them.
type dyingWorld struct {
	mu    sync.Mutex
	runs  int // eval runs started
	die   func(run int, patch string) bool
	apply bool // boxes die while a patch is applied
}

// dyingBox is a box that dies as its world says: while the eval script
// runs (the sealed run, the only command with KillOthers), or while the
// patch is applied. It remembers the patch written into it.
type dyingBox struct {
	sandbox.Sandbox
	world *dyingWorld
	patch string
}

func (b *dyingBox) WriteFile(ctx context.Context, path string, data []byte, mode fs.FileMode) error {
	if strings.HasSuffix(path, "patch.diff") {
		b.patch = string(data)
	}
	return b.Sandbox.WriteFile(ctx, path, data, mode)
}

func (b *dyingBox) Exec(ctx context.Context, req sandbox.ExecRequest) (sandbox.ExecResult, error) {
	dead := fmt.Errorf("%w: the helper closed its stream; out of memory", sandbox.ErrClosed)
	if b.world.apply && strings.Contains(strings.Join(req.Cmd, " "), "git apply") {
		return sandbox.ExecResult{}, dead
	}
	if req.KillOthers {
		b.world.mu.Lock()
		b.world.runs++
		die := b.world.die(b.world.runs, b.patch)
		b.world.mu.Unlock()
		if die {
			return sandbox.ExecResult{}, dead
		}
	}
	return b.Sandbox.Exec(ctx, req)
}

// TestGradeBoxDied: a grading box that dies while the patch's code runs is
// that patch's 0, unless the task's reference run (its gold patch) dies the
// same way; a box that dies before the patch's code could run, or one whose
// reference dies too, is an infrastructure error. The reference's answer
// is kept per task, and a death that does not happen again is a fault, not
// a 0.
func TestGradeBoxDied(t *testing.T) {
	tk := sampleTask(t)
	patchKills := func(_ int, patch string) bool { return strings.Contains(patch, killer) }
	tests := []struct {
		name   string
		patch  string
		gold   bool
		die    func(run int, patch string) bool
		apply  bool
		grades int // how many times the same patch is graded with one Baseline

		reward float64
		reason string
		kind   episode.ErrorKind // an infrastructure error of this kind
		runs   int               // eval runs in all
	}{
		{name: "the patch kills its box", patch: killerPatch, die: patchKills, grades: 1,
			reason: grader.DiedReason + "the helper closed its stream; out of memory", runs: 3},
		{name: "the reference is asked once", patch: killerPatch, die: patchKills, grades: 2,
			reason: grader.DiedReason, runs: 5},
		{name: "the gold patch dies the same way", patch: killerPatch, die: func(int, string) bool { return true }, grades: 1,
			kind: episode.KindBox, runs: 2},
		{name: "gold graded, dies every time", gold: true, die: func(int, string) bool { return true }, grades: 1,
			kind: episode.KindBox, runs: 2},
		{name: "a death that does not come again", patch: tk.Patch, die: func(run int, _ string) bool { return run == 1 }, grades: 1,
			reward: 1, reason: "resolved", runs: 3},
		{name: "the empty patch, no gold to compare", die: func(run int, _ string) bool { return run == 1 }, grades: 1,
			reward: 0, reason: "", runs: 3},
		{name: "dead while the patch is applied", patch: killerPatch, apply: true, die: patchKills, grades: 1,
			kind: episode.KindBox, runs: 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var open openCount
			world := &dyingWorld{die: tc.die, apply: tc.apply}
			inner := opener(t, &open)
			g := episode.GradeOptions{Gold: tc.gold, Baseline: &grader.Baseline{}}
			g.Open = func(ctx context.Context, tk *task.Task) (sandbox.Sandbox, string, error) {
				box, wd, err := inner(ctx, tk)
				if err != nil {
					return nil, "", err
				}
				return &dyingBox{Sandbox: box, world: world}, wd, nil
			}
			task := *tk
			if tc.name == "the empty patch, no gold to compare" {
				task.Patch = ""
			}
			for range tc.grades {
				res, err := episode.Grade(context.Background(), &task, tc.patch, g)
				if err != nil {
					t.Fatal(err)
				}
				if tc.kind != "" {
					if !res.Failed() || res.Failure.Kind != tc.kind {
						t.Fatalf("want a %s error, got reward %v (%s), failure %v", tc.kind, res.Reward, res.RewardReason, res.Failure)
					}
					continue
				}
				if res.Failed() {
					t.Fatalf("failed outside the model: %v", res.Failure)
				}
				if res.Reward != tc.reward || !strings.HasPrefix(res.RewardReason, tc.reason) {
					t.Errorf("reward %v (%s), want %v (%s...)", res.Reward, res.RewardReason, tc.reward, tc.reason)
				}
			}
			if world.runs != tc.runs {
				t.Errorf("%d eval runs, want %d", world.runs, tc.runs)
			}
			if n := open.get(); n != 0 {
				t.Errorf("%d boxes left open", n)
			}
		})
	}
}
