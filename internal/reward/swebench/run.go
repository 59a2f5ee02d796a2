package swebench

import (
	"context"
	"fmt"
	"path"
	"strings"
	"time"

	"github.com/swerve-dev/swerve/internal/sandbox"
	"github.com/swerve-dev/swerve/internal/task"
)

// Where the harness puts things in the box.
const (
	Workdir   = "/testbed"
	PatchFile = "/tmp/patch.diff"
	EvalFile  = "/eval.sh"
)

// applyCmds are tried in order until one applies the patch, the tree reset
// between attempts, as the harness does.
var applyCmds = []string{
	"git apply --verbose",
	"git apply --verbose --3way",
	"git apply --verbose --reject",
	"patch --batch --forward --fuzz=5 -p1 -i",
}

// DefaultEvalTimeout is --eval_timeout's default.
const DefaultEvalTimeout = 300 * time.Second

// RunOptions configure Run.
type RunOptions struct {
	// Patch is the diff to grade; empty means run the tests on the
	// unpatched repository (the harness's --no-patch mode).
	Patch string
	// EvalTimeout bounds the eval script; the whole process group is
	// killed when it is reached. Zero means DefaultEvalTimeout.
	EvalTimeout time.Duration
	// Workdir is the repository in the box, where the patch is applied and
	// the eval script starts; empty means Workdir (/testbed). "." is the
	// box's own working directory (the local backend's copy).
	Workdir string
}

// RunResult is a graded run.
type RunResult struct {
	*Result
	// Log is the eval script's output (what the harness keeps as
	// test_output.txt), with a timeout note appended when it timed out.
	Log string
	// ApplyLog says which apply command worked, or why none did.
	ApplyLog string
	// ApplyFailed: no apply command took the patch; nothing was run.
	ApplyFailed bool
	TimedOut    bool
	Duration    time.Duration
}

// Run applies the patch in box (which must be fresh, from the task's
// image), runs the task's eval script unchanged and grades its output. A
// patch that does not apply or tests that time out give an unresolved
// result with the reason, not an error; errors mean the box failed.
func Run(ctx context.Context, box sandbox.Sandbox, t *task.Task, opts RunOptions) (*RunResult, error) {
	if t.EvalScript == "" {
		return nil, fmt.Errorf("task %s: eval_script: empty; swebench grading runs the dataset's eval script", t.InstanceID)
	}
	timeout := opts.EvalTimeout
	if timeout <= 0 {
		timeout = DefaultEvalTimeout
	}
	start := time.Now()
	rr := &RunResult{}
	dir := opts.Workdir
	if dir == "" {
		dir = Workdir
	}
	patchFile, evalFile := PatchFile, EvalFile
	if sc, ok := box.(sandbox.Scratch); ok {
		// Absolute paths are shared with other boxes here: use the box's own.
		patchFile, evalFile = path.Join(sc.ScratchDir(), "patch.diff"), path.Join(sc.ScratchDir(), "eval.sh")
	}
	if opts.Patch != "" {
		applied, applyLog, err := applyPatch(ctx, box, dir, patchFile, opts.Patch)
		if err != nil {
			return nil, fmt.Errorf("task %s: apply patch: %w", t.InstanceID, err)
		}
		rr.ApplyLog = applyLog
		if !applied {
			rr.ApplyFailed = true
			rr.Log = ApplyPatchFail + ":\n" + applyLog
			rr.Result = &Result{InstanceID: t.InstanceID, PatchExists: true, Reason: "patch did not apply: " + lastLine(applyLog)}
			rr.Duration = time.Since(start)
			return rr, nil
		}
	}
	if err := box.WriteFile(ctx, evalFile, []byte(t.EvalScript), 0o755); err != nil {
		return nil, fmt.Errorf("task %s: %w", t.InstanceID, err)
	}
	res, err := box.Exec(ctx, sandbox.ExecRequest{Cmd: []string{"/bin/bash", evalFile}, Cwd: dir, Timeout: timeout, MaxOutput: maxLog})
	if err != nil {
		return nil, fmt.Errorf("task %s: run eval script: %w", t.InstanceID, err)
	}
	rr.Log = string(res.Output)
	rr.Duration = time.Since(start)
	if res.TimedOut {
		rr.TimedOut = true
		rr.Log += fmt.Sprintf("\n\nTimeout error: %d seconds exceeded.", int(timeout.Seconds()))
		rr.Result = &Result{InstanceID: t.InstanceID, PatchExists: true, Reason: fmt.Sprintf("eval timed out after %s", timeout)}
		rr.InfraFailureReason, rr.InfraFailure = ClassifyInfra(rr.Log)
		return rr, nil
	}
	r, err := Evaluate(t, rr.Log, Options{})
	if err != nil {
		return nil, err
	}
	rr.Result = r
	return rr, nil
}

// maxLog caps a kept eval log; beyond it the middle is elided (a log that
// big is pathological: django at depth 1 prints 35 MB of git show).
const maxLog = 64 << 20

// applyPatch tries the harness's apply commands in order. It returns
// whether one worked and what they printed.
func applyPatch(ctx context.Context, box sandbox.Sandbox, dir, patchFile, patch string) (bool, string, error) {
	if err := box.WriteFile(ctx, patchFile, []byte(patch), 0o644); err != nil {
		return false, "", err
	}
	var log strings.Builder
	for i, cmd := range applyCmds {
		if i > 0 {
			// A failed attempt (--reject especially) leaves debris behind.
			if _, err := box.Exec(ctx, sandbox.ExecRequest{Cmd: []string{"/bin/bash", "-c", "git checkout -- . ; git clean -fd"}, Cwd: dir, Timeout: time.Minute}); err != nil {
				return false, log.String(), err
			}
		}
		res, err := box.Exec(ctx, sandbox.ExecRequest{Cmd: []string{"/bin/bash", "-c", cmd + " " + patchFile}, Cwd: dir, Timeout: 5 * time.Minute})
		if err != nil {
			return false, log.String(), err
		}
		fmt.Fprintf(&log, "$ %s %s (exit %d)\n%s", cmd, patchFile, res.ExitCode, res.Output)
		if res.ExitCode == 0 {
			return true, log.String(), nil
		}
	}
	// Every command failed, yet the patch may be in place already.
	res, err := box.Exec(ctx, sandbox.ExecRequest{Cmd: []string{"/bin/bash", "-c", "git apply --check --reverse " + patchFile}, Cwd: dir, Timeout: time.Minute})
	if err != nil {
		return false, log.String(), err
	}
	return res.ExitCode == 0, log.String(), nil
}

func lastLine(s string) string {
	s = strings.TrimRight(s, "\n")
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		return s[i+1:]
	}
	return s
}
