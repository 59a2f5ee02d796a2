package local

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
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
	testutil.HostPython(t) // local boxes run the host's tools, and the suite needs python3
	b := newTestBackend(t)
	sandboxtest.Run(t, sandboxtest.Harness{
		Backend: b,
		Spec:    func(testing.TB) sandbox.Spec { return sandbox.Spec{} },
		Leaks:   leaks(b),
		// See the package doc: local boxes isolate almost nothing.
		NetworkNotIsolated: "local boxes are host processes on the host's own network",
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

// TestLeftoversKilledBeforeOwner: an owner killed between making the
// directory and writing .owner (or with .owner cut short, as older
// versions could leave it) leaves a directory gc still finds, by the pid
// in its name; one whose owner lives is not listed.
func TestLeftoversKilledBeforeOwner(t *testing.T) {
	for _, owner := range []string{"", "empty", "garbage"} {
		t.Run("owner="+owner, func(t *testing.T) {
			dir := t.TempDir()
			dead := filepath.Join(dir, dirPrefix+"4194305-123")
			alive := filepath.Join(dir, dirPrefix+strconv.Itoa(os.Getpid())+"-456")
			for _, d := range []string{dead, alive} {
				if err := os.MkdirAll(d, 0o755); err != nil {
					t.Fatal(err)
				}
			}
			switch owner {
			case "empty":
				os.WriteFile(filepath.Join(dead, ".owner"), nil, 0o644)
			case "garbage":
				os.WriteFile(filepath.Join(dead, ".owner"), []byte("pi"), 0o644)
			}
			left, err := Leftovers(context.Background(), dir, false)
			if err != nil || len(left) != 1 || left[0].Dir != dead || !left[0].Unclaimed || left[0].OwnerPID != 4194305 {
				t.Fatalf("Leftovers = %+v, %v; want only the dead owner's directory, unclaimed", left, err)
			}
		})
	}
}

// TestCollector: as a sandbox.Collector the backend lists the dead
// owners' box directories of its TempDir, those of another run left out
// under LeftoverOptions.RunID but unclaimed ones kept, and Remove deletes
// one and refuses a path that is not a box directory.
func TestCollector(t *testing.T) {
	dir := t.TempDir()
	mk := func(name, owner string) string {
		d := filepath.Join(dir, name)
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		if owner != "" {
			os.WriteFile(filepath.Join(d, ".owner"), []byte(owner), 0o644)
		}
		return d
	}
	r1 := mk(dirPrefix+"4194305-1", "pid=4194305\nrun=r1\n")
	r2 := mk(dirPrefix+"4194305-2", "pid=4194305\nrun=r2\n")
	unclaimed := mk(dirPrefix+"4194305-3", "")
	live := mk(dirPrefix+strconv.Itoa(os.Getpid())+"-4", "pid="+strconv.Itoa(os.Getpid())+"\nrun=r1\n")
	b := &Backend{TempDir: dir}
	var c sandbox.Collector = b
	for _, tt := range []struct {
		name string
		opts sandbox.LeftoverOptions
		want []string
	}{
		{"dead owners", sandbox.LeftoverOptions{}, []string{r1, r2, unclaimed}},
		{"all", sandbox.LeftoverOptions{All: true}, []string{r1, r2, unclaimed, live}},
		{"one run", sandbox.LeftoverOptions{RunID: "r1"}, []string{r1, unclaimed}},
		{"one run, all", sandbox.LeftoverOptions{RunID: "r1", All: true}, []string{r1, unclaimed, live}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			left, err := c.Leftovers(context.Background(), tt.opts)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, l := range left {
				got = append(got, l.ID)
			}
			slices.Sort(got)
			want := slices.Sorted(slices.Values(tt.want))
			if !slices.Equal(got, want) {
				t.Errorf("Leftovers(%+v) = %v, want %v", tt.opts, got, want)
			}
		})
	}
	if err := c.Remove(context.Background(), sandbox.Leftover{ID: r2}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(r2); !os.IsNotExist(err) {
		t.Errorf("%s still there after Remove (%v)", r2, err)
	}
	if err := c.Remove(context.Background(), sandbox.Leftover{ID: dir}); err == nil {
		t.Errorf("Remove(%s) = nil, want a refusal: not a box directory", dir)
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

func TestEnvScrubbed(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "sk-fake-secret")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "fake-aws")
	t.Setenv("LANG", "C.UTF-8")
	t.Setenv("TERM", "xterm")
	b := newTestBackend(t)
	ctx := context.Background()
	box, err := b.Open(ctx, sandbox.Spec{Env: []string{"TASK_VAR=from-spec"}})
	if err != nil {
		t.Fatal(err)
	}
	defer box.Close(ctx)
	res, err := box.Exec(ctx, sandbox.ExecRequest{Cmd: []string{"env"}})
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("env: %+v %v", res, err)
	}
	env := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(res.Output)), "\n") {
		k, v, _ := strings.Cut(line, "=")
		env[k] = v
	}
	for _, k := range []string{"OPENAI_API_KEY", "AWS_SECRET_ACCESS_KEY"} {
		if _, ok := env[k]; ok {
			t.Errorf("the box sees the host's %s", k)
		}
	}
	// PATH is the host's, after the box's own bin directory when the host
	// has a python3 (its one interpreter; see python.go).
	wantPath := os.Getenv("PATH")
	if _, err := os.Stat(filepath.Join(box.ID(), "bin", "python3")); err == nil {
		wantPath = filepath.Join(box.ID(), "bin") + ":" + wantPath
	}
	for k, want := range map[string]string{"LANG": "C.UTF-8", "TERM": "xterm", "TASK_VAR": "from-spec", "PATH": wantPath} {
		if env[k] != want {
			t.Errorf("box %s = %q, want %q", k, env[k], want)
		}
	}
	if !strings.HasPrefix(env["HOME"], box.ID()) {
		t.Errorf("box HOME = %q, want a directory in the box %s", env["HOME"], box.ID())
	}
	// Whatever the helper adds for itself is fine; the host's other
	// variables are not.
	for k := range env {
		switch {
		case k == "OPENAI_API_KEY", strings.HasPrefix(k, "GO"), k == "USER", k == "SHELL":
			t.Errorf("the box sees the host's %s", k)
		}
	}
}

func TestBoxEnv(t *testing.T) {
	tests := []struct {
		name string
		host []string
		want []string
	}{
		{"keeps only the allowed", []string{"PATH=/bin", "OPENAI_API_KEY=x", "LANG=C", "LC_ALL=C", "TERM=dumb", "HOME=/root", "GITHUB_TOKEN=y"}, []string{"PATH=/bin", "LANG=C", "LC_ALL=C", "TERM=dumb"}},
		{"no PATH gets a default", []string{"SECRET=1"}, []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := boxEnv(tt.host); !slices.Equal(got, tt.want) {
				t.Errorf("boxEnv = %q, want %q", got, tt.want)
			}
		})
	}
}
