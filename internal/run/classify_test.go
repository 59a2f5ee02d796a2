package run_test

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/url"
	"os"
	"syscall"
	"testing"

	"github.com/swerve-dev/swerve/internal/llm"
	"github.com/swerve-dev/swerve/internal/run"
	"github.com/swerve-dev/swerve/internal/sandbox"
)

func TestClassify(t *testing.T) {
	wrap := func(err error) error { return fmt.Errorf("task x: open box: %w", err) }
	api := func(status int) error {
		return fmt.Errorf("openai: giving up after 4 attempts: %w", &llm.APIError{Provider: "openai", StatusCode: status})
	}
	transport := &url.Error{Op: "Post", URL: "https://api.example/v1/chat/completions", Err: &net.OpError{Op: "dial", Err: syscall.ECONNREFUSED}}
	tests := []struct {
		name  string
		phase run.Phase
		err   error
		kind  run.ErrorKind
		infra bool
	}{
		{"nil", run.PhaseGrade, nil, "", false},
		// Opening a box.
		{"open: image missing", run.PhaseOpen, wrap(fmt.Errorf("docker: image x is not present and --pull is never: %w", sandbox.ErrNotFound)), run.KindImage, true},
		{"open: no engine", run.PhaseOpen, wrap(sandbox.ErrUnavailable), run.KindEngine, true},
		{"open: engine call timed out", run.PhaseOpen, wrap(sandbox.ErrTimeout), run.KindEngine, true},
		{"open: anything else", run.PhaseOpen, errors.New("container create: conflict"), run.KindBox, true},
		{"open: disk full", run.PhaseOpen, wrap(&fs.PathError{Op: "write", Path: "/var/lib/docker/x", Err: syscall.ENOSPC}), run.KindDisk, true},
		{"open: disk full in words", run.PhaseOpen, errors.New("Error response from daemon: write /var/lib/docker/tmp: no space left on device"), run.KindDisk, true},
		{"open: quota", run.PhaseOpen, &os.PathError{Op: "mkdir", Path: "/tmp/box", Err: syscall.EDQUOT}, run.KindDisk, true},
		// Preparing the agent's box, before the model acts.
		{"setup: not a git work tree", run.PhaseSetup, errors.New("prepare repository in /testbed: exit 128: fatal: not a git repository"), run.KindTask, true},
		{"setup: box died", run.PhaseSetup, fmt.Errorf("prepare repository: %w", sandbox.ErrClosed), run.KindBox, true},
		// In the agent's box, after the model acted.
		{"box: killed container", run.PhaseBox, fmt.Errorf("%w: the helper closed its stream", sandbox.ErrClosed), run.KindBox, true},
		{"box: engine gone", run.PhaseBox, sandbox.ErrUnavailable, run.KindEngine, true},
		{"box: git broken by the model", run.PhaseBox, errors.New("take patch: git exited 128: fatal: not a git repository"), "", false},
		{"box: patch too big", run.PhaseBox, errors.New("take patch: the diff is 70000000 bytes, over the 67108864 limit"), "", false},
		{"box: taking the patch outlasted its deadline", run.PhaseBox, fmt.Errorf("take patch: %w", context.DeadlineExceeded), "", false},
		{"open: an engine call's deadline", run.PhaseOpen, fmt.Errorf("%w: %w", sandbox.ErrTimeout, context.DeadlineExceeded), run.KindEngine, true},
		// Model calls.
		{"model: context overflow", run.PhaseModel, fmt.Errorf("openai: %w", llm.ErrContextWindow), "", false},
		{"model: script exhausted", run.PhaseModel, fmt.Errorf("replay/x: all 3 replies used: %w", llm.ErrExhausted), "", false},
		{"model: 503 after retries", run.PhaseModel, api(503), run.KindLLM, true},
		{"model: 429 after retries", run.PhaseModel, api(429), run.KindLLM, true},
		{"model: 500", run.PhaseModel, api(500), run.KindLLM, true},
		{"model: 401 bad key", run.PhaseModel, api(401), run.KindLLM, true},
		{"model: 403", run.PhaseModel, api(403), run.KindLLM, true},
		{"model: 404 unknown model", run.PhaseModel, api(404), run.KindLLM, true},
		{"model: 400 refused request", run.PhaseModel, api(400), "", false},
		{"model: 422 refused request", run.PhaseModel, api(422), "", false},
		{"model: connection refused", run.PhaseModel, fmt.Errorf("openai: giving up after 4 attempts: %w", transport), run.KindLLM, true},
		{"model: attempt timeouts", run.PhaseModel, fmt.Errorf("anthropic: giving up after 4 attempts: attempt timed out after 10m0s: %w", context.DeadlineExceeded), run.KindLLM, true},
		{"model: unreadable reply", run.PhaseModel, errors.New("openai: reply has no choices"), run.KindLLM, true},
		// The sandbox sentinels never name the model's failures.
		{"model: not a sandbox error", run.PhaseModel, fmt.Errorf("proxy: %w", sandbox.ErrClosed), run.KindLLM, true},
		// Grading.
		{"grade: box died", run.PhaseGrade, fmt.Errorf("task x: run eval script: %w", sandbox.ErrClosed), run.KindBox, true},
		{"grade: grader failure", run.PhaseGrade, errors.New("task x: eval_script: empty; swebench grading runs the dataset's eval script"), run.KindGrader, true},
		{"grade: disk full", run.PhaseGrade, fmt.Errorf("write log: %w", syscall.ENOSPC), run.KindDisk, true},
		{"grade same: box died", run.PhaseGradeSame, fmt.Errorf("task x: %w", sandbox.ErrClosed), run.KindBox, true},
		{"grade same: the model's box is broken", run.PhaseGradeSame, errors.New("task x: /testbed is not a git repository: fatal"), "", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			kind, infra := run.Classify(tc.phase, tc.err)
			if kind != tc.kind || infra != tc.infra {
				t.Errorf("Classify(%v) = %q, %v; want %q, %v", tc.err, kind, infra, tc.kind, tc.infra)
			}
		})
	}
}
