package grader

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/swerve-dev/swerve/internal/reward"
	"github.com/swerve-dev/swerve/internal/reward/harbor"
	"github.com/swerve-dev/swerve/internal/reward/history"
	"github.com/swerve-dev/swerve/internal/reward/r2e"
	"github.com/swerve-dev/swerve/internal/sandbox"
	"github.com/swerve-dev/swerve/internal/task"
)

// R2ESWEBenchScript is where R2E-Gym's copies of SWE-bench images keep
// their eval script (test patch included).
const R2ESWEBenchScript = "/run_tests.sh"

// HideTests removes from an agent's box, before the agent starts, every
// place the task's grader or dialect keeps hidden tests in the image:
// R2E-Gym's /r2e_tests, /root/r2e_tests and <repo>/r2e_tests, the eval
// script at /run_tests.sh of its SWE-bench copies, and a Harbor image's
// /tests and /solution. SWE-bench, SWE-Factory, SWE-smith and NeMo Gym
// rows keep theirs outside the image (the test patch and eval script
// enter only the grading box), so nothing is removed for them. Grading
// happens in a fresh box from the image, which has them all again.
//
// Every path that opens a box for an agent calls it; with --grade_in same
// (upstream's way, grading in the agent's box) it is not called, and the
// tests are as visible as upstream leaves them.
func HideTests(ctx context.Context, box sandbox.Sandbox, t *task.Task, force, workdir string) error {
	g, err := Choose(t, force)
	if err != nil {
		return err
	}
	_, scratch := box.(sandbox.Scratch)
	if g == task.GraderR2E || t.Dialect == task.DialectR2E {
		if err := r2e.Hide(ctx, box, workdir); err != nil {
			return fmt.Errorf("task %s: %w", t.InstanceID, err)
		}
	}
	var paths []string
	if t.Dialect == task.DialectR2E && !scratch {
		paths = append(paths, R2ESWEBenchScript)
	}
	if g == task.GraderHarbor && !scratch {
		paths = append(paths, harbor.TestsDir, harbor.SolutionDir)
	}
	if len(paths) == 0 {
		return nil
	}
	if workdir == "" && !scratch {
		workdir = "/"
	}
	res, err := box.Exec(ctx, sandbox.ExecRequest{Cmd: append([]string{"rm", "-rf", "--"}, paths...), Cwd: workdir, Timeout: time.Minute})
	if err != nil {
		return fmt.Errorf("task %s: hide the hidden tests: %w", t.InstanceID, err)
	}
	if res.ExitCode != 0 {
		return fmt.Errorf("task %s: hide the hidden tests (%s): exit %d: %s", t.InstanceID, strings.Join(paths, " "), res.ExitCode, reward.LastLine(string(res.Output)))
	}
	return nil
}

// PrepareBox readies an agent's box before the agent starts: the hidden
// tests are removed (HideTests, unless hide is false: --grade_in same),
// the repository is proved to hold nothing past its base commit,
// stripped first when the proof finds anything (history.Secure), and the
// image is searched for copies of the project outside git that hold the
// fix (wheels, sdists, pip and conda caches, other site-packages), once
// per image and task: the answer is kept under the image's content id
// (DefaultCopyChecks), so later boxes of the image pay a lookup. The
// search only reads the box; the copies are compared with the gold patch
// here, outside it. The proof is returned for the task's record (its
// beyond_git says what was searched); a box it cannot prove clean is
// refused with an error wrapping history.ErrNotClean, or
// history.ErrCopyWithFix for a copy holding the fix, which names the task
// and what was found (the proof is returned with it).
func PrepareBox(ctx context.Context, box sandbox.Sandbox, t *task.Task, force, workdir string, hide bool) (*history.Proof, error) {
	if hide {
		if err := HideTests(ctx, box, t, force, workdir); err != nil {
			return nil, err
		}
	}
	p, err := history.Secure(ctx, box, t, workdir)
	if err != nil {
		return nil, fmt.Errorf("task %s: %w", t.InstanceID, err)
	}
	if err := p.Err(t.InstanceID); err != nil {
		return p, err
	}
	c, err := DefaultCopyChecks().Check(ctx, box, t, workdir)
	if err != nil {
		return nil, fmt.Errorf("task %s: %w", t.InstanceID, err)
	}
	p.WithCopies(c)
	return p, p.Err(t.InstanceID)
}

var (
	defaultCopiesMu sync.Mutex
	defaultCopies   = map[string]*history.CopyChecks{}
)

// DefaultCopyChecks is the process's history.CopyChecks for the cache
// directory in force when it is called: answers go on disk under
// $SWERVE_CACHE_DIR/copies, else the user's cache directory
// (~/.cache/swerve/copies on Linux); SWERVE_CACHE_DIR=off keeps them in
// memory only.
func DefaultCopyChecks() *history.CopyChecks {
	dir := cacheRoot()
	if dir != "" {
		dir = filepath.Join(dir, "copies")
	}
	defaultCopiesMu.Lock()
	defer defaultCopiesMu.Unlock()
	c := defaultCopies[dir]
	if c == nil {
		c = &history.CopyChecks{Dir: dir}
		defaultCopies[dir] = c
	}
	return c
}
