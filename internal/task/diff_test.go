package task

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// A bug diff touching every kind of header: a modified file with two hunks,
// a new file, a deleted file, a mode change, a rename with an edit, and a
// file losing its final newline.
const bugDiff = `diff --git a/mod.py b/mod.py
index 1111111..2222222 100644
--- a/mod.py
+++ b/mod.py
@@ -1,4 +1,4 @@
 def f(x):
-    return x + 1
+    return x - 1
 
 
@@ -8,3 +8,4 @@ def g():
 def h():
     a = 1
-    return a
+    b = 2
+    return a + b
diff --git a/added.py b/added.py
new file mode 100644
index 0000000..3333333
--- /dev/null
+++ b/added.py
@@ -0,0 +1,2 @@
+# added by the bug
+X = 1
diff --git a/gone.py b/gone.py
deleted file mode 100644
index 4444444..0000000
--- a/gone.py
+++ /dev/null
@@ -1 +0,0 @@
-print("bye")
diff --git a/run.sh b/run.sh
old mode 100755
new mode 100644
diff --git a/old_name.py b/new_name.py
similarity index 80%
rename from old_name.py
rename to new_name.py
index 5555555..6666666 100644
--- a/old_name.py
+++ b/new_name.py
@@ -1,2 +1,2 @@
 A = 1
-B = 2
+B = 3
diff --git a/tail.txt b/tail.txt
index 7777777..8888888 100644
--- a/tail.txt
+++ b/tail.txt
@@ -1,2 +1,2 @@
 one
-two
+two
\ No newline at end of file
`

func TestReverseDiffApplies(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not found")
	}
	dir := t.TempDir()
	files := map[string]string{
		"mod.py":      "def f(x):\n    return x + 1\n\n\ndef g():\n    pass\n\ndef h():\n    a = 1\n    return a\n",
		"gone.py":     "print(\"bye\")\n",
		"run.sh":      "#!/bin/sh\n",
		"old_name.py": "A = 1\nB = 2\n",
		"tail.txt":    "one\ntwo\n",
	}
	for name, content := range files {
		mode := os.FileMode(0o644)
		if name == "run.sh" {
			mode = 0o755
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), mode); err != nil {
			t.Fatal(err)
		}
	}
	git := func(stdin string, args ...string) {
		t.Helper()
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		cmd.Stdin = strings.NewReader(stdin)
		cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	git("", "init", "-q")
	git("", "add", "-A")
	git("", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "base")
	git(bugDiff, "apply", "-")
	fix, err := ReverseDiff(bugDiff)
	if err != nil {
		t.Fatal(err)
	}
	git(fix, "apply", "-")
	git("", "add", "-A")
	git("", "diff", "--cached", "--exit-code", "HEAD")

	// Reversing twice gives the original back.
	again, err := ReverseDiff(fix)
	if err != nil {
		t.Fatal(err)
	}
	if again != bugDiff {
		t.Errorf("reversing twice changed the diff:\n%s", again)
	}
}

func TestReverseDiffRefuses(t *testing.T) {
	for _, tc := range []struct{ name, diff, want string }{
		{"binary", "diff --git a/x.png b/x.png\nindex 1..2 100644\nGIT binary patch\nliteral 1\n", "binary"},
		{"binary files", "diff --git a/x b/x\nBinary files a/x and b/x differ\n", "binary"},
		{"copy", "diff --git a/a b/b\ncopy from a\ncopy to b\n", "copies"},
		{"short hunk", "--- a/x\n+++ b/x\n@@ -1,3 +1,3 @@\n a\n", "shorter"},
		{"bad header", "--- a/x\n+++ b/x\n@@ -x +1 @@\n", "bad hunk header"},
	} {
		if _, err := ReverseDiff(tc.diff); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one about %q", tc.name, err, tc.want)
		}
	}
	if got, err := ReverseDiff(""); got != "" || err != nil {
		t.Errorf(`ReverseDiff("") = %q, %v`, got, err)
	}
}
