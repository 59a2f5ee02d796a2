package reward_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/swerve-dev/swerve/internal/reward"
	"github.com/swerve-dev/swerve/internal/sandbox"
	"github.com/swerve-dev/swerve/internal/sandbox/local"
	"github.com/swerve-dev/swerve/internal/testutil"
)

// repoBox opens a local box holding a small git repository.
func repoBox(t *testing.T) sandbox.Sandbox {
	t.Helper()
	if _, err := exec.LookPath("patch"); err != nil {
		t.Skip("no patch(1) on this host")
	}
	src := t.TempDir()
	lines := []string{}
	for i := range 30 {
		lines = append(lines, "line "+string(rune('a'+i%26))+strings.Repeat("x", i))
	}
	os.WriteFile(filepath.Join(src, "f.txt"), []byte(strings.Join(lines, "\n")+"\n"), 0o644)
	b, err := local.New(sandbox.Options{ShimPath: testutil.SwerveBinary(t)})
	if err != nil {
		t.Fatal(err)
	}
	b.TempDir = t.TempDir()
	box, err := b.Open(context.Background(), sandbox.Spec{Image: src})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { box.Close(context.Background()) })
	return box
}

const cleanPatch = `diff --git a/f.txt b/f.txt
--- a/f.txt
+++ b/f.txt
@@ -1,3 +1,3 @@
 line a
-line bx
+line B changed
 line cxx
`

// Context lines that no longer match exactly: git apply refuses, patch
// --fuzz takes it.
const fuzzyPatch = `diff --git a/f.txt b/f.txt
--- a/f.txt
+++ b/f.txt
@@ -1,3 +1,3 @@
 line a was different
-line bx
+line B fuzzed
 line cxx
`

const badPatch = `diff --git a/f.txt b/f.txt
--- a/f.txt
+++ b/f.txt
@@ -1,3 +1,3 @@
 nothing
-like this
+here
 at all
`

func TestTryApplyChain(t *testing.T) {
	tests := []struct {
		name      string
		patches   []string // applied in turn; the last one is judged
		wantOK    bool
		wantCmd   string // the command that took it, in the apply log
		wantLine2 string
	}{
		{"clean", []string{cleanPatch}, true, "$ git apply --verbose ", "line B changed"},
		{"needs fuzz", []string{fuzzyPatch}, true, "$ patch --batch --forward --fuzz=5 -p1 -i ", "line B fuzzed"},
		{"does not apply", []string{badPatch}, false, "", "line bx"},
		{"already applied", []string{cleanPatch, cleanPatch}, true, "", "line B changed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			box := repoBox(t)
			ctx := context.Background()
			var a *reward.Attempt
			for _, p := range tt.patches {
				var err error
				a, err = reward.Try(ctx, box, reward.AttemptOptions{Patch: p, Script: "sed -n 2p f.txt", Workdir: ".", EvalTimeout: time.Minute})
				if err != nil {
					t.Fatal(err)
				}
			}
			if a.ApplyFailed == tt.wantOK {
				t.Fatalf("applied %v, want %v; apply log:\n%s", !a.ApplyFailed, tt.wantOK, a.ApplyLog)
			}
			if tt.wantCmd != "" && !strings.Contains(a.ApplyLog, tt.wantCmd) {
				t.Errorf("apply log does not show %q taking the patch:\n%s", tt.wantCmd, a.ApplyLog)
			}
			res, _ := box.Exec(ctx, sandbox.ExecRequest{Cmd: []string{"sed", "-n", "2p", "f.txt"}})
			if got := strings.TrimSpace(string(res.Output)); got != tt.wantLine2 {
				t.Errorf("line 2 is %q, want %q (a failed attempt must leave the tree clean)", got, tt.wantLine2)
			}
			if tt.wantOK && strings.TrimSpace(a.Log) != tt.wantLine2 {
				t.Errorf("eval script output %q, want %q", a.Log, tt.wantLine2)
			}
		})
	}
}

func TestTryTimeout(t *testing.T) {
	box := repoBox(t)
	a, err := reward.Try(context.Background(), box, reward.AttemptOptions{Script: "echo started; sleep 60", Workdir: ".", EvalTimeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if !a.TimedOut || !strings.HasPrefix(a.Log, "started\n") || !strings.HasSuffix(a.Log, "Timeout error: 1 seconds exceeded.") {
		t.Errorf("timed-out attempt: %+v", a)
	}
}

// The applied tree holds what the patch did, whatever its format, and
// nothing the image had changed or left before it; the real index is not
// touched.
func TestTryReadsTheAppliedTree(t *testing.T) {
	tests := []struct {
		name, patch string
		want        []string // in the tree
		status      string   // in git status --porcelain after
	}{
		// A context diff, which only patch(1) applies (the failed git
		// apply attempts reset the tree first, as the harness does).
		{"context diff", "*** /dev/null\n--- b/conftest.py\n***************\n*** 0 ****\n--- 1 ----\n+ import os; os._exit(0)\n",
			[]string{"diff --git a/conftest.py b/conftest.py", "+import os; os._exit(0)"}, "?? conftest.py"},
		// git apply takes it: the image's own change stays, and is not
		// the patch's.
		{"unified diff", "diff --git a/g.py b/g.py\nnew file mode 100644\n--- /dev/null\n+++ b/g.py\n@@ -0,0 +1 @@\n+x = 1\n",
			[]string{"diff --git a/g.py b/g.py", "+x = 1"}, " M f.txt"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			box := repoBox(t)
			ctx := context.Background()
			setup := `git rev-parse --git-dir >/dev/null 2>&1 || { git init -q . && git add f.txt && git -c user.name=t -c user.email=t@t commit -qm base; } &&
echo 'image-made change' >> f.txt && echo 'left by the image' > junk.txt`
			if res, err := box.Exec(ctx, sandbox.ExecRequest{Cmd: []string{"/bin/bash", "-c", setup}}); err != nil || res.ExitCode != 0 {
				t.Fatalf("setup: %v %s", err, res.Output)
			}
			a, err := reward.Try(ctx, box, reward.AttemptOptions{Patch: tt.patch, Script: "true", Workdir: ".", EvalTimeout: time.Minute})
			if err != nil {
				t.Fatal(err)
			}
			if a.ApplyFailed {
				t.Fatalf("patch did not apply:\n%s", a.ApplyLog)
			}
			for _, want := range tt.want {
				if !strings.Contains(a.Tree, want) {
					t.Errorf("applied tree lacks %q:\n%s", want, a.Tree)
				}
			}
			for _, not := range []string{"junk.txt", "+image-made change"} {
				if strings.Contains(a.Tree, not) {
					t.Errorf("applied tree shows %q, which was there before the patch:\n%s", not, a.Tree)
				}
			}
			res, _ := box.Exec(ctx, sandbox.ExecRequest{Cmd: []string{"git", "status", "--porcelain"}})
			if got := string(res.Output); !strings.Contains(got, tt.status) || strings.Contains(got, "A ") {
				t.Errorf("git status after reading the tree (want %q, nothing staged):\n%s", tt.status, got)
			}
		})
	}
}
