package reward

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// CanRun passes for a command whose file and #! interpreter can be run,
// and fails for one whose interpreter cannot, or that is missing.
func TestCanRun(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string, mode os.FileMode) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), mode); err != nil {
			t.Fatal(err)
		}
		return p
	}
	interp := write("interp", "#!/bin/sh\nexit 0\n", 0o755)
	noexec := write("noexec", "#!/bin/sh\nexit 0\n", 0o644)
	tests := []struct {
		name string
		word string
		ok   bool
	}{
		{"a binary on PATH", "sh", true},
		{"a script whose interpreter runs", write("good", "#!"+interp+" -x\n", 0o755), true},
		{"a script whose interpreter cannot run", write("bad", "#!"+noexec+"\n", 0o755), false},
		{"a file that cannot run", noexec, false},
		{"missing", filepath.Join(dir, "missing"), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := exec.Command("/bin/bash", "-c", CanRun(tt.word)).CombinedOutput()
			if (err == nil) != tt.ok {
				t.Errorf("CanRun(%s): %v %q, want ok %v", tt.word, err, out, tt.ok)
			}
			if !tt.ok && !strings.Contains(string(out), "cannot run") {
				t.Errorf("no reason printed: %q", out)
			}
		})
	}
}

// The grant gives the grading user the directories that hold tracked
// files, and nothing else: a .venv the repository ignores stays root's.
func TestUserGrantScript(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("needs root to chown")
	}
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	dir := t.TempDir()
	for _, f := range []string{"a/b/c.py", "top.py", ".venv/lib/x.py"} {
		p := filepath.Join(dir, f)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	git := "cd " + dir + " && git init -q && git add a top.py && git -c user.name=t -c user.email=t@t commit -qm x"
	if out, err := exec.Command("/bin/bash", "-c", git).CombinedOutput(); err != nil {
		t.Fatalf("%v %s", err, out)
	}
	// Only the grant's last line: the passwd and home lines are the box's.
	lines := strings.Split(strings.TrimSpace(userGrantScript(dir, filepath.Join(dir, "home"))), "\n")
	if out, err := exec.Command("/bin/bash", "-c", lines[len(lines)-1]).CombinedOutput(); err != nil {
		t.Fatalf("%v %s", err, out)
	}
	out, err := exec.Command("/bin/bash", "-c", "cd "+dir+" && stat -c '%n %u' a a/b .venv .venv/lib top.py").CombinedOutput()
	if err != nil {
		t.Fatal(err)
	}
	uid, _, _ := strings.Cut(GradingUser, ":")
	want := "a " + uid + "\na/b " + uid + "\n.venv 0\n.venv/lib 0\ntop.py 0\n"
	if string(out) != want {
		t.Errorf("owners:\n%s\nwant:\n%s", out, want)
	}
}
