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
