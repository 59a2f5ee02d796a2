package history_test

import (
	"archive/zip"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/swerve-dev/swerve/internal/reward/history"
	"github.com/swerve-dev/swerve/internal/task"
)

// wheel writes a wheel holding the given files.
func wheel(t *testing.T, p string, files map[string]string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	zw := zip.NewWriter(f)
	for name, content := range files {
		w, err := zw.Create(name)
		if err != nil {
			t.Fatal(err)
		}
		w.Write([]byte(content))
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	f.Close()
}

const goldPatch = `diff --git a/calc/ops.py b/calc/ops.py
--- a/calc/ops.py
+++ b/calc/ops.py
@@ -1,2 +1,2 @@
 def add(a, b):
-    return a
+    return a + b  # fixed
`

// The audit says what it looked at beyond git, and flags a copy of the
// project outside the repository that holds the fix (a wheel in pip's
// cache whose calc/ops.py has the gold patch's added line) or is a later
// version; a copy at the base's content and version is listed, not flagged.
func TestAuditCopies(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		name, file, content string
		fix, newer          bool
	}{
		{"wheel in pip's cache with the fix", "root/.cache/pip/wheels/ab/cd/calc-1.0.1-py3-none-any.whl", "def add(a, b):\n    return a + b  # fixed\n", true, false},
		{"newer wheel elsewhere", "opt/dist/calc-1.1.0-py3-none-any.whl", "def add(a, b):\n    return a\n", false, true},
		{"wheel at the base", "root/.cache/pip/wheels/ab/cd/calc-1.0.0-py3-none-any.whl", "def add(a, b):\n    return a\n", false, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			repoDir := filepath.Join(root, "testbed")
			os.MkdirAll(repoDir, 0o755)
			git(t, repoDir, "init", "-q", "-b", "main")
			write(t, repoDir, "calc/ops.py", "def add(a, b):\n    return a\n")
			git(t, repoDir, "add", "-A")
			head := commitAt(t, repoDir, 1, "one")
			git(t, repoDir, "reflog", "expire", "--expire=now", "--all")
			wheel(t, filepath.Join(root, tc.file), map[string]string{"calc/ops.py": tc.content, "calc-x.dist-info/METADATA": "Name: calc\n"})
			tk := &task.Task{InstanceID: "calc-1", Repo: "acme/calc", BaseCommit: head, Patch: goldPatch, Version: "1.0"}
			a, err := history.AuditBoxAt(ctx, hostBox{dir: repoDir}, tk, repoDir, root)
			if err != nil {
				t.Fatal(err)
			}
			checked := strings.Join(a.Checked, "\n")
			for _, want := range []string{"archives calc-*.whl", "installed site-packages/calc", "gold patch's added lines"} {
				if !strings.Contains(checked, want) {
					t.Errorf("checked %q; want a line with %q", a.Checked, want)
				}
			}
			if strings.HasPrefix(tc.file, "root/.cache/pip") && !strings.Contains(checked, "cache /root/.cache/pip") {
				t.Errorf("checked %q; want pip's cache named", a.Checked)
			}
			if len(a.Copies) != 1 || !strings.Contains(a.Copies[0], "calc-1.") {
				t.Errorf("copies %q; want the wheel", a.Copies)
			}
			if got := len(a.WithFix) > 0; got != tc.fix {
				t.Errorf("with the fix: %q; want %v", a.WithFix, tc.fix)
			}
			if got := len(a.NewerCopies) > 0; got != tc.newer {
				t.Errorf("newer: %q; want %v", a.NewerCopies, tc.newer)
			}
		})
	}
}

// An installed distribution of a later version than the task's is flagged;
// one at the task's version (the repository's own editable install has
// such metadata) is not even listed.
func TestAuditInstalledVersion(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		dir   string
		newer bool
	}{
		{"usr/local/lib/python3.11/site-packages/Calc-2.0.0.dist-info", true},
		{"usr/local/lib/python3.11/site-packages/calc-1.0.dev20240101.dist-info", false},
		{"usr/lib/python3/dist-packages/calc-1.3.egg-info", true},
	} {
		t.Run(tc.dir, func(t *testing.T) {
			root := t.TempDir()
			repoDir := filepath.Join(root, "testbed")
			os.MkdirAll(repoDir, 0o755)
			git(t, repoDir, "init", "-q", "-b", "main")
			write(t, repoDir, "calc/ops.py", "def add(a, b):\n    return a\n")
			git(t, repoDir, "add", "-A")
			head := commitAt(t, repoDir, 1, "one")
			os.MkdirAll(filepath.Join(root, tc.dir), 0o755)
			tk := &task.Task{InstanceID: "calc-1", Repo: "acme/calc", BaseCommit: head, Patch: goldPatch, Version: "1.0"}
			a, err := history.AuditBoxAt(ctx, hostBox{dir: repoDir}, tk, repoDir, root)
			if err != nil {
				t.Fatal(err)
			}
			if got := len(a.NewerCopies) == 1 && len(a.Copies) == 1; got != tc.newer || !tc.newer && len(a.Copies) != 0 {
				t.Errorf("newer %q copies %q; want newer %v", a.NewerCopies, a.Copies, tc.newer)
			}
			if !strings.Contains(strings.Join(a.Checked, "\n"), ".dist-info") {
				t.Errorf("checked %q", a.Checked)
			}
		})
	}
}

// idBox is a hostBox that names its image's content id.
type idBox struct {
	hostBox
	id string
}

func (b idBox) ImageID() string { return b.id }

// TestCopyChecksKept: the search for copies runs once per image and task:
// a second box of the image, or another process (the disk), gets the kept
// answer without a search; another gold patch or another image is searched
// again. A copy with the fix makes the proof refuse the box in one line
// naming the task and the copy.
func TestCopyChecksKept(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	repoDir := filepath.Join(root, "testbed")
	os.MkdirAll(repoDir, 0o755)
	git(t, repoDir, "init", "-q", "-b", "main")
	write(t, repoDir, "calc/ops.py", "def add(a, b):\n    return a\n")
	git(t, repoDir, "add", "-A")
	head := commitAt(t, repoDir, 1, "one")
	const whl = "root/.cache/pip/wheels/ab/cd/calc-1.0.1-py3-none-any.whl"
	wheel(t, filepath.Join(root, whl), map[string]string{"calc/ops.py": "def add(a, b):\n    return a + b  # fixed\n"})
	tk := &task.Task{InstanceID: "calc-1", Repo: "acme/calc", BaseCommit: head, Patch: goldPatch, Version: "1.0"}
	dir := t.TempDir()
	cs := history.CopyChecksAt(dir, root)
	box := idBox{hostBox{dir: repoDir}, "sha256:1"}
	first, err := cs.Check(ctx, box, tk, repoDir)
	if err != nil {
		t.Fatal(err)
	}
	if first.Cached || len(first.WithFix) != 1 || !strings.Contains(first.WithFix[0], whl) || first.ImageID != "sha256:1" {
		t.Fatalf("first search: %+v", first)
	}
	// The copy is gone from the directory: only a kept answer still has it.
	os.Remove(filepath.Join(root, whl))
	for name, c := range map[string]*history.CopyChecks{"same process": cs, "another process": history.CopyChecksAt(dir, root)} {
		got, err := c.Check(ctx, box, tk, repoDir)
		if err != nil || !got.Cached || len(got.WithFix) != 1 {
			t.Errorf("%s: %+v, %v; want the kept answer", name, got, err)
		}
	}
	other := *tk
	other.Patch = strings.Replace(goldPatch, "# fixed", "# mended", 1)
	if got, err := cs.Check(ctx, box, &other, repoDir); err != nil || got.Cached || len(got.WithFix) != 0 {
		t.Errorf("another gold patch: %+v, %v; want a new search", got, err)
	}
	if got, err := cs.Check(ctx, idBox{hostBox{dir: repoDir}, "sha256:2"}, tk, repoDir); err != nil || got.Cached {
		t.Errorf("another image: %+v, %v; want a new search", got, err)
	}
	p := &history.Proof{Clean: true}
	p.WithCopies(first)
	err = p.Err(tk.InstanceID)
	if p.Clean || !errors.Is(err, history.ErrCopyWithFix) || !strings.Contains(err.Error(), "task calc-1: ") || !strings.Contains(err.Error(), whl) || strings.Contains(err.Error(), "\n") {
		t.Errorf("proof %+v: err %v; want a refusal naming the task and the wheel", p, err)
	}
	if !strings.Contains(p.BeyondGit, "copies of calc outside git") || !strings.Contains(p.BeyondGit, whl) {
		t.Errorf("beyond git: %q", p.BeyondGit)
	}
}
