package history_test

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/swerve-dev/swerve/internal/reward/history"
	"github.com/swerve-dev/swerve/internal/sandbox"
	"github.com/swerve-dev/swerve/internal/task"
)

// hostBox is a fake box whose commands run on the host.
type hostBox struct{ dir string }

func (b hostBox) ID() string { return "host" }
func (b hostBox) Exec(ctx context.Context, req sandbox.ExecRequest) (sandbox.ExecResult, error) {
	cmd := exec.CommandContext(ctx, req.Cmd[0], req.Cmd[1:]...)
	cmd.Dir = b.dir
	if req.Cwd != "" {
		cmd.Dir = req.Cwd
	}
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return sandbox.ExecResult{Output: out, ExitCode: ee.ExitCode()}, nil
	}
	return sandbox.ExecResult{Output: out}, err
}
func (b hostBox) WriteFile(context.Context, string, []byte, fs.FileMode) error { return nil }
func (b hostBox) ReadFile(_ context.Context, p string) ([]byte, error) {
	if !filepath.IsAbs(p) {
		p = filepath.Join(b.dir, p)
	}
	data, err := os.ReadFile(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, sandbox.ErrNotFound
	}
	return data, err
}
func (b hostBox) Close(context.Context) error { return nil }

func git(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=a", "GIT_AUTHOR_EMAIL=a@x", "GIT_COMMITTER_NAME=a", "GIT_COMMITTER_EMAIL=a@x",
		"GIT_CONFIG_NOSYSTEM=1", "HOME="+dir)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

func write(t *testing.T, dir, name, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// commitAt commits everything with both dates set to day d of 2024.
func commitAt(t *testing.T, dir string, d int, msg string) string {
	t.Helper()
	date := "2024-01-" + twoDigits(d) + "T00:00:00Z"
	cmd := exec.Command("git", "-c", "user.name=a", "-c", "user.email=a@x", "commit", "-qam", msg)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_DATE="+date, "GIT_COMMITTER_DATE="+date, "HOME="+dir)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("commit: %v\n%s", err, out)
	}
	return git(t, dir, "rev-parse", "HEAD")
}

func twoDigits(n int) string {
	s := "0" + string(rune('0'+n%10))
	if n >= 10 {
		s = string(rune('0'+n/10)) + string(rune('0'+n%10))
	}
	return s
}

const fixed = "def add(a, b):\n    return a + b\n"

// repo makes a repository with two commits of history (tagged v1 and v2),
// then the fix, and leaves HEAD and the work tree at the base commit (v2)
// on branch main; plant then hides the fix somewhere. It returns the
// directory, the base commit and the fix commit.
func repo(t *testing.T, plant func(t *testing.T, dir, base, fix string)) (string, string, string) {
	t.Helper()
	dir := t.TempDir()
	git(t, dir, "init", "-q", "-b", "main")
	write(t, dir, "calc.py", "def add(a, b):\n    return a\n")
	git(t, dir, "add", "-A")
	commitAt(t, dir, 1, "one")
	git(t, dir, "tag", "v1")
	write(t, dir, "README", "calc\n")
	git(t, dir, "add", "-A")
	base := commitAt(t, dir, 2, "two")
	git(t, dir, "tag", "-a", "-m", "release two", "v2")
	git(t, dir, "checkout", "-q", "-b", "fix")
	write(t, dir, "calc.py", fixed)
	fix := commitAt(t, dir, 3, "the fix")
	git(t, dir, "checkout", "-q", "main")
	if plant != nil {
		plant(t, dir, base, fix)
	}
	return dir, base, fix
}

func TestStripAndProve(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git on PATH")
	}
	ctx := context.Background()
	cases := []struct {
		name  string
		plant func(t *testing.T, dir, base, fix string)
		// want is a word of the first proof's findings.
		want string
	}{
		{"branch", func(t *testing.T, dir, base, fix string) {}, "ref refs/heads/fix"},
		{"tag", func(t *testing.T, dir, base, fix string) {
			git(t, dir, "tag", "v3", fix)
			git(t, dir, "branch", "-D", "fix")
		}, "1 commits reachable from refs but not from HEAD"},
		{"remote-tracking", func(t *testing.T, dir, base, fix string) {
			git(t, dir, "update-ref", "refs/remotes/origin/main", fix)
			git(t, dir, "branch", "-D", "fix")
		}, "refs/remotes/origin/main"},
		{"remote", func(t *testing.T, dir, base, fix string) {
			git(t, dir, "remote", "add", "origin", "https://example.invalid/calc.git")
			git(t, dir, "update-ref", "refs/remotes/origin/fix", fix)
			git(t, dir, "branch", "-D", "fix")
		}, "remote origin"},
		{"reflog only", func(t *testing.T, dir, base, fix string) {
			git(t, dir, "branch", "-D", "fix")
		}, "reflog"},
		{"unreachable only, loose", func(t *testing.T, dir, base, fix string) {
			git(t, dir, "branch", "-D", "fix")
			git(t, dir, "reflog", "expire", "--expire=now", "--expire-unreachable=now", "--all")
		}, "not reachable"},
		{"unreachable only, packed", func(t *testing.T, dir, base, fix string) {
			git(t, dir, "repack", "-a", "-d", "-q")
			git(t, dir, "branch", "-D", "fix")
			git(t, dir, "reflog", "expire", "--expire=now", "--expire-unreachable=now", "--all")
		}, "not reachable"},
		{"stash", func(t *testing.T, dir, base, fix string) {
			git(t, dir, "branch", "-D", "fix")
			git(t, dir, "reflog", "expire", "--expire=now", "--expire-unreachable=now", "--all")
			write(t, dir, "calc.py", fixed)
			git(t, dir, "-c", "user.name=a", "-c", "user.email=a@x", "stash", "-q")
		}, "refs/stash"},
		{"replace and notes", func(t *testing.T, dir, base, fix string) {
			git(t, dir, "-c", "user.name=a", "-c", "user.email=a@x", "notes", "add", "-m", "see "+fix, base)
			git(t, dir, "update-ref", "refs/replace/"+base, fix)
			git(t, dir, "branch", "-D", "fix")
		}, "refs/notes/commits"},
		{"orig head", func(t *testing.T, dir, base, fix string) {
			git(t, dir, "update-ref", "ORIG_HEAD", fix)
			git(t, dir, "branch", "-D", "fix")
		}, "ORIG_HEAD"},
		{"packed refs", func(t *testing.T, dir, base, fix string) {
			git(t, dir, "pack-refs", "--all")
		}, "ref refs/heads/fix"},
		{"detached head", func(t *testing.T, dir, base, fix string) {
			git(t, dir, "checkout", "-q", "--detach", base)
		}, "ref refs/heads/fix"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir, base, fix := repo(t, tc.plant)
			branch, _ := exec.Command("git", "-C", dir, "symbolic-ref", "-q", "HEAD").Output()
			box := hostBox{dir: dir}
			tk := &task.Task{InstanceID: "calc-1", BaseCommit: base}
			p, err := history.Prove(ctx, box, tk, dir)
			if err != nil {
				t.Fatal(err)
			}
			if p.Clean || !strings.Contains(strings.Join(p.Findings, "\n"), tc.want) {
				t.Fatalf("before the strip: clean %v, findings %q; want one naming %q", p.Clean, p.Findings, tc.want)
			}
			if err := p.Err(tk.InstanceID); !errors.Is(err, history.ErrNotClean) || !strings.Contains(err.Error(), "task calc-1") {
				t.Errorf("Err = %v", err)
			}
			p, err = history.Secure(ctx, box, tk, dir)
			if err != nil {
				t.Fatal(err)
			}
			if !p.Clean || !p.Stripped || p.Err(tk.InstanceID) != nil {
				t.Fatalf("after the strip: %+v", p)
			}
			if p.Head != base {
				t.Errorf("HEAD %s, want %s", p.Head, base)
			}
			if got, _ := exec.Command("git", "-C", dir, "symbolic-ref", "-q", "HEAD").Output(); string(got) != string(branch) {
				t.Errorf("HEAD's branch %q, want %q", got, branch)
			}
			if err := exec.Command("git", "-C", dir, "cat-file", "-e", fix).Run(); err == nil {
				t.Errorf("the fix %s is still in the object store", fix)
			}
			if err := exec.Command("git", "-C", dir, "cat-file", "-e", history.BlobID([]byte(fixed))).Run(); err == nil {
				t.Errorf("the fixed file's blob is still in the object store")
			}
			// The history before HEAD stays, and so do the tags in it.
			if got := git(t, dir, "log", "--format=%s", "HEAD"); got != "two\none" {
				t.Errorf("git log = %q", got)
			}
			if got := git(t, dir, "tag", "--list"); got != "v1\nv2" {
				t.Errorf("tags = %q", got)
			}
			if got := git(t, dir, "status", "--porcelain"); got != "" {
				t.Errorf("git status = %q", got)
			}
			if p.Tags != 2 || p.Objects != p.Reachable || p.Objects == 0 {
				t.Errorf("tags %d objects %d reachable %d", p.Tags, p.Objects, p.Reachable)
			}
			// A second proof of the same state: same fingerprint, no strip.
			again, err := history.Secure(ctx, box, tk, dir)
			if err != nil || !again.Clean || again.Stripped || again.Fingerprint != p.Fingerprint {
				t.Errorf("second proof %+v, %v; want clean, not stripped, fingerprint %s", again, err, p.Fingerprint)
			}
		})
	}
}

func TestProveClean(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	git(t, dir, "init", "-q", "-b", "main")
	write(t, dir, "calc.py", "x = 1\n")
	git(t, dir, "add", "-A")
	head := commitAt(t, dir, 1, "one")
	git(t, dir, "reflog", "expire", "--expire=now", "--all")
	p, err := history.Prove(ctx, hostBox{dir: dir}, &task.Task{InstanceID: "t"}, dir)
	if err != nil {
		t.Fatal(err)
	}
	if !p.Clean || p.Head != head || p.Branch != "refs/heads/main" || p.Objects != 3 || p.Reachable != 3 {
		t.Errorf("proof %+v", p)
	}
	// Not a repository: nothing to prove.
	p, err = history.Prove(ctx, hostBox{dir: t.TempDir()}, &task.Task{InstanceID: "t"}, t.TempDir())
	if err != nil || !p.Clean || !p.NoRepo {
		t.Errorf("no repository: %+v, %v", p, err)
	}
}

const testPatch = `diff --git a/tests/test_add.py b/tests/test_add.py
new file mode 100644
index 0000000..1111111
--- /dev/null
+++ b/tests/test_add.py
@@ -0,0 +1,4 @@
+from calc import add
+
+def test_add():
+    assert add(2, 3) == 5
diff --git a/tests/test_ops.py b/tests/test_ops.py
index 2222222..3333333 100644
--- a/tests/test_ops.py
+++ b/tests/test_ops.py
@@ -1,1 +1,2 @@
 x = 1
+y = 2
`

const testAdd = "from calc import add\n\ndef test_add():\n    assert add(2, 3) == 5\n"

func TestHiddenTests(t *testing.T) {
	got := history.HiddenTests(&task.Task{TestPatch: testPatch})
	if len(got) != 1 || got[0].Path != "tests/test_add.py" || got[0].Blob != history.BlobID([]byte(testAdd)) {
		t.Fatalf("HiddenTests = %+v", got)
	}
	// The blob id is git's own.
	dir := t.TempDir()
	write(t, dir, "f", testAdd)
	if want := git(t, dir, "hash-object", "f"); got[0].Blob != want {
		t.Errorf("blob %s, git says %s", got[0].Blob, want)
	}

	ctx := context.Background()
	cases := []struct {
		name  string
		plant func(t *testing.T, dir string)
		want  string
	}{
		{"absent", func(t *testing.T, dir string) {}, ""},
		{"in the work tree", func(t *testing.T, dir string) {
			write(t, dir, "tests/test_add.py", "anything\n")
		}, "hidden test file in the work tree: tests/test_add.py"},
		{"in a dangling blob", func(t *testing.T, dir string) {
			write(t, filepath.Join(dir, ".."), "hidden.py", testAdd)
			git(t, dir, "hash-object", "-w", "../hidden.py")
		}, "hidden test content among the git objects: blob " + history.BlobID([]byte(testAdd))},
		{"a changed file's new content in a dangling blob", func(t *testing.T, dir string) {
			write(t, filepath.Join(dir, ".."), "ops.py", "x = 1\ny = 2\n")
			git(t, dir, "hash-object", "-w", "../ops.py")
		}, "hidden test content among the git objects: blob " + history.BlobID([]byte("x = 1\ny = 2\n"))},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			dir := filepath.Join(root, "repo")
			if err := os.Mkdir(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			git(t, dir, "init", "-q", "-b", "main")
			write(t, dir, "tests/test_ops.py", "x = 1\n")
			git(t, dir, "add", "-A")
			commitAt(t, dir, 1, "one")
			git(t, dir, "reflog", "expire", "--expire=now", "--all")
			tc.plant(t, dir)
			p, err := history.Prove(ctx, hostBox{dir: dir}, &task.Task{InstanceID: "t", TestPatch: testPatch}, dir)
			if err != nil {
				t.Fatal(err)
			}
			found := strings.Join(p.Findings, "\n")
			if tc.want == "" && !p.Clean || tc.want != "" && !strings.Contains(found, tc.want) {
				t.Errorf("findings %q, want %q", p.Findings, tc.want)
			}
		})
	}
}

func TestProjectName(t *testing.T) {
	for _, tc := range []struct{ repo, want string }{
		{"django/django", "django"},
		{"psf/requests", "requests"},
		{"swesmith/pallets__flask.bc098406", "flask"},
		{"calc", "calc"},
		{"", ""},
		{"x/$(boom)", ""},
	} {
		if got := history.ProjectName(&task.Task{Repo: tc.repo}); got != tc.want {
			t.Errorf("ProjectName(%q) = %q, want %q", tc.repo, got, tc.want)
		}
	}
}

// The content a test patch gives a changed file is computed as git computes
// it (git is the oracle): several hunks, an insertion, a last line without
// a newline.
func TestChangedBlobMatchesGit(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	git(t, dir, "init", "-q", "-b", "main")
	var pre strings.Builder
	for i := range 40 {
		pre.WriteString("line " + strconv.Itoa(i) + "\n")
	}
	pre.WriteString("last")
	write(t, dir, "tests/t.py", pre.String())
	git(t, dir, "add", "-A")
	commitAt(t, dir, 1, "one")
	post := strings.Replace(pre.String(), "line 3\n", "line three\nline 3.5\n", 1)
	post = strings.Replace(post, "line 30\n", "", 1)
	post = strings.Replace(post, "last", "last\nafter last\n", 1)
	write(t, dir, "tests/t.py", post)
	patch := git(t, dir, "diff") + "\n"
	want := git(t, dir, "hash-object", "-w", "tests/t.py")
	git(t, dir, "checkout", "--", "tests/t.py")
	git(t, dir, "reflog", "expire", "--expire=now", "--all")
	p, err := history.Prove(ctx, hostBox{dir: dir}, &task.Task{InstanceID: "t", TestPatch: patch}, dir)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(p.Findings, "hidden test content among the git objects: blob "+want) {
		t.Errorf("findings %q; want the blob git made, %s", p.Findings, want)
	}
}

// A repository whose git directory is shared (a worktree of another
// checkout) is not stripped: that would strip the other checkout too. The
// box is then refused.
func TestStripLeavesSharedGitDirs(t *testing.T) {
	ctx := context.Background()
	main, base, _ := repo(t, nil)
	wt := filepath.Join(t.TempDir(), "wt")
	git(t, main, "worktree", "add", "-q", "--detach", wt, base)
	tk := &task.Task{InstanceID: "shared"}
	p, err := history.Secure(ctx, hostBox{dir: wt}, tk, wt)
	if err == nil {
		t.Fatalf("Secure stripped a worktree: %+v", p)
	}
	if got := git(t, main, "branch", "--list", "fix"); !strings.Contains(got, "fix") {
		t.Errorf("the other checkout lost its branch fix: %q", got)
	}
}

// A created test file whose last line has no line end: its blob id is
// git's (the content comes from tamper.ApplyTestPatch, the one applier).
func TestHiddenTestsNoNewline(t *testing.T) {
	dir := t.TempDir()
	git(t, dir, "init", "-q", "-b", "main")
	write(t, dir, "tests/t.py", "def test():\n    pass")
	git(t, dir, "add", "-N", "tests/t.py")
	patch := git(t, dir, "diff") + "\n"
	want := git(t, dir, "hash-object", "tests/t.py")
	got := history.HiddenTests(&task.Task{TestPatch: patch})
	if len(got) != 1 || got[0].Blob != want {
		t.Errorf("HiddenTests = %+v; git's blob is %s\n%s", got, want, patch)
	}
}

// HEAD must be the task's base commit where the dataset promises it: an
// image whose HEAD is elsewhere (a future commit checked out) is refused,
// whatever its refs. SWE-smith's HEAD is not its base_commit by design (the
// bug is checked out or rebuilt at grading), and R2E-Gym's and Harbor's
// rows promise nothing: no check there.
func TestProveHeadIsBase(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		name   string
		grader task.Grader
		// atFix checks the fix out (HEAD in the future).
		atFix bool
		short bool // base_commit abbreviated
		want  string
	}{
		{"at base", task.GraderSWEBench, false, false, ""},
		{"at base, abbreviated", task.GraderSWEBench, false, true, ""},
		{"at the fix", task.GraderSWEBench, true, false, "HEAD is "},
		{"at the fix, swe-factory", task.GraderSWEFactory, true, false, "HEAD is "},
		{"at the fix, abbreviated", task.GraderSWEBench, true, true, "HEAD is "},
		{"swe-smith: not checked", task.GraderSWESmith, true, false, ""},
		{"r2e: not checked", task.GraderR2E, true, false, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir, base, fix := repo(t, nil)
			if tc.atFix {
				git(t, dir, "checkout", "-q", "fix")
			}
			git(t, dir, "branch", "-D", map[bool]string{true: "main", false: "fix"}[tc.atFix])
			git(t, dir, "reflog", "expire", "--expire=now", "--expire-unreachable=now", "--all")
			want := base
			if tc.short {
				want = base[:10]
			}
			tk := &task.Task{InstanceID: "calc-1", BaseCommit: want, Grader: tc.grader}
			p, err := history.Secure(ctx, hostBox{dir: dir}, tk, dir)
			if err != nil {
				t.Fatal(err)
			}
			found := strings.Join(p.Findings, "\n")
			if tc.want == "" {
				if !p.Clean {
					t.Errorf("refused: %q", p.Findings)
				}
				return
			}
			err = p.Err(tk.InstanceID)
			if p.Clean || !strings.Contains(found, tc.want) || !strings.Contains(found, fix[:12]) || !errors.Is(err, history.ErrNotClean) {
				t.Errorf("proof %+v, err %v; want a refusal naming HEAD %s", p, err, fix)
			}
			if p.Stripped || !p.HeadNotBase {
				t.Errorf("stripped %v, head_not_base %v: a HEAD elsewhere is refused as found", p.Stripped, p.HeadNotBase)
			}
		})
	}
}

// A hidden test's content that is already in base_commit's history (the
// file existed before with that content, or the test patch only deletes
// lines and so restores an older version) is not the future: the proof
// notes it and stays clean. The same blob only in a dangling object or
// past HEAD is still a finding.
func TestHiddenBlobInPastHistory(t *testing.T) {
	ctx := context.Background()
	const created = "def test_old():\n    assert True\n"
	createPatch := "diff --git a/tests/test_old.py b/tests/test_old.py\nnew file mode 100644\nindex 0000000..1111111\n--- /dev/null\n+++ b/tests/test_old.py\n@@ -0,0 +1,2 @@\n+def test_old():\n+    assert True\n"
	deletePatch := "diff --git a/tests/test_ops.py b/tests/test_ops.py\nindex 2222222..3333333 100644\n--- a/tests/test_ops.py\n+++ b/tests/test_ops.py\n@@ -1,2 +1 @@\n x = 1\n-y = 2\n"
	cases := []struct {
		name, patch string
		// history makes the repository; it returns nothing.
		history func(t *testing.T, dir string)
		want    string // a finding; "" for clean with a note
	}{
		{"created file existed before base", createPatch, func(t *testing.T, dir string) {
			write(t, dir, "tests/test_old.py", created)
			git(t, dir, "add", "-A")
			commitAt(t, dir, 1, "one")
			git(t, dir, "rm", "-q", "tests/test_old.py")
			commitAt(t, dir, 2, "two")
		}, ""},
		{"patch only deletes, restoring an older version", deletePatch, func(t *testing.T, dir string) {
			write(t, dir, "tests/test_ops.py", "x = 1\n")
			git(t, dir, "add", "-A")
			commitAt(t, dir, 1, "one")
			write(t, dir, "tests/test_ops.py", "x = 1\ny = 2\n")
			commitAt(t, dir, 2, "two")
		}, ""},
		{"created file only in a dangling blob", createPatch, func(t *testing.T, dir string) {
			write(t, dir, "README", "r\n")
			git(t, dir, "add", "-A")
			commitAt(t, dir, 1, "one")
			write(t, filepath.Join(dir, ".."), "hidden.py", created)
			git(t, dir, "hash-object", "-w", "../hidden.py")
		}, "hidden test content among the git objects: blob " + history.BlobID([]byte(created))},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "repo")
			if err := os.Mkdir(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			git(t, dir, "init", "-q", "-b", "main")
			tc.history(t, dir)
			git(t, dir, "reflog", "expire", "--expire=now", "--all")
			tk := &task.Task{InstanceID: "t", TestPatch: tc.patch}
			p, err := history.Prove(ctx, hostBox{dir: dir}, tk, dir)
			if err != nil {
				t.Fatal(err)
			}
			found := strings.Join(p.Findings, "\n")
			if tc.want != "" {
				if p.Clean || !strings.Contains(found, tc.want) {
					t.Errorf("findings %q, want %q", p.Findings, tc.want)
				}
				return
			}
			if !p.Clean || p.Err("t") != nil {
				t.Errorf("a blob of base_commit's own history refused: %q", p.Findings)
			}
			if !strings.Contains(strings.Join(p.Notes, "\n"), "in base_commit's history") {
				t.Errorf("notes %q; want one saying the blob is in base_commit's history", p.Notes)
			}
		})
	}
}

// A submodule's git directory is a repository of its own: when it holds
// its project's future (here a branch cloned along with it), the proof
// names it and the strip removes it there too, whether git keeps that
// directory under .git/modules or in the submodule's work tree.
func TestSubmoduleFuture(t *testing.T) {
	ctx := context.Background()
	for _, absorbed := range []bool{true, false} {
		t.Run(map[bool]string{true: ".git/modules", false: "embedded .git"}[absorbed], func(t *testing.T) {
			lib := t.TempDir()
			git(t, lib, "init", "-q", "-b", "main")
			write(t, lib, "lib.py", "x = 1\n")
			git(t, lib, "add", "-A")
			commitAt(t, lib, 1, "lib one")
			git(t, lib, "checkout", "-q", "-b", "fix")
			write(t, lib, "lib.py", "x = 2  # the fix\n")
			libFix := commitAt(t, lib, 5, "lib fix")
			git(t, lib, "checkout", "-q", "main")

			dir, base, _ := repo(t, func(t *testing.T, dir, base, fix string) {
				git(t, dir, "branch", "-D", "fix")
			})
			if absorbed {
				git(t, dir, "-c", "protocol.file.allow=always", "submodule", "add", "-q", lib, "vendor/lib")
			} else {
				git(t, dir, "clone", "-q", lib, "vendor/lib")
				git(t, dir, "add", "vendor/lib")
			}
			commitAt(t, dir, 2, "vendor lib")
			head := git(t, dir, "rev-parse", "HEAD")
			git(t, dir, "reflog", "expire", "--expire=now", "--expire-unreachable=now", "--all")
			sub := filepath.Join(dir, "vendor", "lib", ".git")
			if absorbed {
				sub = filepath.Join(dir, ".git", "modules", "vendor", "lib")
			}
			if err := exec.Command("git", "--git-dir", sub, "cat-file", "-e", libFix).Run(); err != nil {
				t.Fatalf("the planted future %s is not in %s", libFix, sub)
			}
			_ = base
			tk := &task.Task{InstanceID: "sub-1", BaseCommit: head}
			p, err := history.Prove(ctx, hostBox{dir: dir}, tk, dir)
			if err != nil {
				t.Fatal(err)
			}
			if p.Clean || !strings.Contains(strings.Join(p.Findings, "\n"), "submodule ") {
				t.Fatalf("before the strip: %+v; want a finding naming the submodule", p)
			}
			p, err = history.Secure(ctx, hostBox{dir: dir}, tk, dir)
			if err != nil {
				t.Fatal(err)
			}
			if !p.Clean || !p.Stripped || p.Submodules != 1 {
				t.Fatalf("after the strip: %+v", p)
			}
			if err := exec.Command("git", "--git-dir", sub, "cat-file", "-e", libFix).Run(); err == nil {
				t.Errorf("the submodule's future %s is still in %s", libFix, sub)
			}
			if got := git(t, filepath.Join(dir, "vendor", "lib"), "log", "--format=%s"); got != "lib one" {
				t.Errorf("submodule's history = %q", got)
			}
			if got := git(t, dir, "status", "--porcelain"); got != "" {
				t.Errorf("git status = %q", got)
			}
		})
	}
}
