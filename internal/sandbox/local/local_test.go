package local

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/swerve-dev/swerve/internal/sandbox"
	"github.com/swerve-dev/swerve/internal/sandbox/sandboxtest"
	"github.com/swerve-dev/swerve/internal/testutil"
)

func newTestBackend(t *testing.T) *Backend {
	t.Helper()
	b, err := New(sandbox.Options{ShimPath: testutil.SwerveBinary(t), RunID: "test"})
	if err != nil {
		t.Fatal(err)
	}
	b.TempDir = t.TempDir()
	return b
}

// leaks reports box directories and processes left under the backend's
// temp dir.
func leaks(b *Backend) func(context.Context) ([]string, error) {
	return func(ctx context.Context) ([]string, error) {
		var out []string
		left, err := Leftovers(ctx, b.TempDir, true)
		if err != nil {
			return nil, err
		}
		for _, l := range left {
			out = append(out, "box directory "+l.Dir)
		}
		for _, pid := range processesUnder(b.TempDir) {
			cmd, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
			out = append(out, fmt.Sprintf("process %d (%q)", pid, cmd))
		}
		return out, nil
	}
}

func TestConformance(t *testing.T) {
	b := newTestBackend(t)
	sandboxtest.Run(t, sandboxtest.Harness{
		Backend: b,
		Spec:    func(testing.TB) sandbox.Spec { return sandbox.Spec{} },
		Leaks:   leaks(b),
	})
}

func TestOpenCopiesSource(t *testing.T) {
	src := t.TempDir()
	os.MkdirAll(filepath.Join(src, "pkg"), 0o755)
	os.WriteFile(filepath.Join(src, "pkg", "run.sh"), []byte("#!/bin/sh\necho from-source\n"), 0o755)
	os.Symlink("pkg/run.sh", filepath.Join(src, "link"))
	b := newTestBackend(t)
	ctx := context.Background()
	box, err := b.Open(ctx, sandbox.Spec{Image: src})
	if err != nil {
		t.Fatal(err)
	}
	defer box.Close(ctx)
	res, err := box.Exec(ctx, sandbox.ExecRequest{Cmd: sandbox.Bash("./link && readlink link && touch new")})
	if err != nil || res.ExitCode != 0 || string(res.Output) != "from-source\npkg/run.sh\n" {
		t.Fatalf("exec in copy: %+v %q %v", res, res.Output, err)
	}
	if _, err := os.Stat(filepath.Join(src, "new")); err == nil {
		t.Error("a file created in the box appeared in the source directory")
	}
}

func TestOpenMissingSource(t *testing.T) {
	b := newTestBackend(t)
	_, err := b.Open(context.Background(), sandbox.Spec{Image: filepath.Join(t.TempDir(), "nope")})
	if err == nil {
		t.Fatal("Open of a missing source directory succeeded")
	}
	if left, _ := leaks(b)(context.Background()); len(left) > 0 {
		t.Errorf("failed Open left %v", left)
	}
}

func TestLeftoversOfDeadOwner(t *testing.T) {
	dir := t.TempDir()
	box := filepath.Join(dir, dirPrefix+"x")
	os.MkdirAll(filepath.Join(box, "work"), 0o755)
	// pid 2^22+1 is above the kernel's pid_max: never a live process.
	os.WriteFile(filepath.Join(box, ".owner"), []byte("pid=4194305\nrun=r1\n"), 0o644)
	left, err := Leftovers(context.Background(), dir, false)
	if err != nil || len(left) != 1 || left[0].RunID != "r1" {
		t.Fatalf("Leftovers = %+v, %v; want the one dead box", left, err)
	}
	if err := left[0].Remove(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(box); !os.IsNotExist(err) {
		t.Errorf("box directory still there after Remove: %v", err)
	}
}

func TestOpenMakesGitRepo(t *testing.T) {
	src := t.TempDir()
	os.WriteFile(filepath.Join(src, "a.py"), []byte("x = 1\n"), 0o644)
	b := newTestBackend(t)
	ctx := context.Background()
	box, err := b.Open(ctx, sandbox.Spec{Image: src})
	if err != nil {
		t.Fatal(err)
	}
	defer box.Close(ctx)
	res, err := box.Exec(ctx, sandbox.ExecRequest{Cmd: sandbox.Bash("git status --porcelain && git ls-files")})
	if err != nil || res.ExitCode != 0 || string(res.Output) != "a.py\n" {
		t.Errorf("git in the copy: exit %d, %q, %v; want a clean repository tracking a.py", res.ExitCode, res.Output, err)
	}
	if _, err := os.Stat(filepath.Join(src, ".git")); err == nil {
		t.Error("git init touched the source directory")
	}
}
