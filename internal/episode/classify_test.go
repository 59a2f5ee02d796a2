package episode_test

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

	"github.com/swerve-dev/swerve/internal/episode"
	"github.com/swerve-dev/swerve/internal/llm"
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
		phase episode.Phase
		err   error
		kind  episode.ErrorKind
		infra bool
	}{
		{"nil", episode.PhaseGrade, nil, "", false},
		// Opening a box.
		{"open: image missing", episode.PhaseOpen, wrap(fmt.Errorf("docker: image x is not present and --pull is never: %w", sandbox.ErrNotFound)), episode.KindImage, true},
		{"open: no engine", episode.PhaseOpen, wrap(sandbox.ErrUnavailable), episode.KindEngine, true},
		{"open: engine call timed out", episode.PhaseOpen, wrap(sandbox.ErrTimeout), episode.KindEngine, true},
		{"open: anything else", episode.PhaseOpen, errors.New("container create: conflict"), episode.KindBox, true},
		{"open: disk full", episode.PhaseOpen, wrap(&fs.PathError{Op: "write", Path: "/var/lib/docker/x", Err: syscall.ENOSPC}), episode.KindDisk, true},
		{"open: disk full in words", episode.PhaseOpen, errors.New("Error response from daemon: write /var/lib/docker/tmp: no space left on device"), episode.KindDisk, true},
		{"open: quota", episode.PhaseOpen, &os.PathError{Op: "mkdir", Path: "/tmp/box", Err: syscall.EDQUOT}, episode.KindDisk, true},
		// Preparing the agent's box, before the model acts.
		{"setup: not a git work tree", episode.PhaseSetup, errors.New("prepare repository in /testbed: exit 128: fatal: not a git repository"), episode.KindTask, true},
		{"setup: box died", episode.PhaseSetup, fmt.Errorf("prepare repository: %w", sandbox.ErrClosed), episode.KindBox, true},
		// In the agent's box, after the model acted.
		{"box: killed container", episode.PhaseBox, fmt.Errorf("%w: the helper closed its stream", sandbox.ErrClosed), episode.KindBox, true},
		{"box: engine gone", episode.PhaseBox, sandbox.ErrUnavailable, episode.KindEngine, true},
		{"box: git broken by the model", episode.PhaseBox, errors.New("take patch: git exited 128: fatal: not a git repository"), "", false},
		{"box: patch too big", episode.PhaseBox, errors.New("take patch: the diff is 70000000 bytes, over the 67108864 limit"), "", false},
		{"box: taking the patch outlasted its deadline", episode.PhaseBox, fmt.Errorf("take patch: %w", context.DeadlineExceeded), "", false},
		{"open: an engine call's deadline", episode.PhaseOpen, fmt.Errorf("%w: %w", sandbox.ErrTimeout, context.DeadlineExceeded), episode.KindEngine, true},
		// Model calls.
		{"model: context overflow", episode.PhaseModel, fmt.Errorf("openai: %w", llm.ErrContextWindow), "", false},
		{"model: script exhausted", episode.PhaseModel, fmt.Errorf("replay/x: all 3 replies used: %w", llm.ErrExhausted), "", false},
		{"model: 503 after retries", episode.PhaseModel, api(503), episode.KindLLM, true},
		{"model: 429 after retries", episode.PhaseModel, api(429), episode.KindLLM, true},
		{"model: 500", episode.PhaseModel, api(500), episode.KindLLM, true},
		{"model: 401 bad key", episode.PhaseModel, api(401), episode.KindLLM, true},
		{"model: 403", episode.PhaseModel, api(403), episode.KindLLM, true},
		{"model: 404 unknown model", episode.PhaseModel, api(404), episode.KindLLM, true},
		{"model: 400 refused request", episode.PhaseModel, api(400), "", false},
		{"model: 422 refused request", episode.PhaseModel, api(422), "", false},
		{"model: connection refused", episode.PhaseModel, fmt.Errorf("openai: giving up after 4 attempts: %w", transport), episode.KindLLM, true},
		{"model: attempt timeouts", episode.PhaseModel, fmt.Errorf("anthropic: giving up after 4 attempts: attempt timed out after 10m0s: %w", context.DeadlineExceeded), episode.KindLLM, true},
		{"model: unreadable reply", episode.PhaseModel, errors.New("openai: reply has no choices"), episode.KindLLM, true},
		// The sandbox sentinels never name the model's failures.
		{"model: not a sandbox error", episode.PhaseModel, fmt.Errorf("proxy: %w", sandbox.ErrClosed), episode.KindLLM, true},
		// Grading.
		{"grade: box died", episode.PhaseGrade, fmt.Errorf("task x: run eval script: %w", sandbox.ErrClosed), episode.KindBox, true},
		{"grade: grader failure", episode.PhaseGrade, errors.New("task x: eval_script: empty; swebench grading runs the dataset's eval script"), episode.KindGrader, true},
		{"grade: disk full", episode.PhaseGrade, fmt.Errorf("write log: %w", syscall.ENOSPC), episode.KindDisk, true},
		{"grade same: box died", episode.PhaseGradeSame, fmt.Errorf("task x: %w", sandbox.ErrClosed), episode.KindBox, true},
		{"grade same: the model's box is broken", episode.PhaseGradeSame, errors.New("task x: /testbed is not a git repository: fatal"), "", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			kind, infra := episode.Classify(tc.phase, tc.err)
			if kind != tc.kind || infra != tc.infra {
				t.Errorf("Classify(%v) = %q, %v; want %q, %v", tc.err, kind, infra, tc.kind, tc.infra)
			}
		})
	}
}
