package local

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/swerve-dev/swerve/internal/sandbox"
)

// fakePython writes dir/python3: a shell script that prints name, and
// fails `-c "import pytest"` unless withPytest.
func fakePython(t *testing.T, dir, name string, withPytest bool) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	probe := "exit 1"
	if withPytest {
		probe = "exit 0"
	}
	script := "#!/bin/sh\nif [ \"$1\" = -c ] && [ \"$2\" = 'import pytest' ]; then " + probe + "; fi\necho " + name + " \"$@\"\n"
	if err := os.WriteFile(filepath.Join(dir, "python3"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
}

// TestBoxPythonSameEitherWay: with a python3 lacking pytest first on PATH
// (a pyenv or conda one) and one having it later, a local box runs the
// latter for python, python3, pip and pytest, whether the command is given
// as arguments or as a line for a login shell (whose /etc/profile may
// reset PATH); SWERVE_LOCAL_PYTHON overrides the choice; with none having
// pytest the first one is kept.
func TestBoxPythonSameEitherWay(t *testing.T) {
	root := t.TempDir()
	first, second := filepath.Join(root, "pyenv", "shims"), filepath.Join(root, "usr", "bin")
	fakePython(t, first, "first", false)
	fakePython(t, second, "second", true)
	none := filepath.Join(root, "none")
	fakePython(t, none, "nopytest", false)
	host := os.Getenv("PATH")
	// A PATH with no real python3: only the shells the cases run (and
	// id, which /etc/profile calls).
	tools := filepath.Join(root, "tools")
	os.Mkdir(tools, 0o755)
	for _, sh := range []string{"bash", "sh", "id"} {
		p, err := exec.LookPath(sh)
		if err != nil {
			t.Skip(err)
		}
		if err := os.Symlink(p, filepath.Join(tools, sh)); err != nil {
			t.Fatal(err)
		}
	}
	cases := []struct {
		name, path, override, want string
	}{
		{"first lacks pytest", first + ":" + second + ":" + host, "", "second"},
		{"first has pytest", second + ":" + first + ":" + host, "", "second"},
		{"override", first + ":" + second + ":" + host, filepath.Join(first, "python3"), "first"},
		{"none has pytest", none + ":" + first + ":" + tools, "", "nopytest"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Setenv("PATH", c.path)
			b := newTestBackend(t)
			b.Python = c.override
			ctx := context.Background()
			box, err := b.Open(ctx, sandbox.Spec{})
			if err != nil {
				t.Fatal(err)
			}
			defer box.Close(ctx)
			for _, cmd := range [][]string{
				{"python3", "x"},
				{"python", "x"},
				{"bash", "-lc", "python3 x"},
				{"sh", "-c", "python3 x"},
				{"bash", "-lc", "pytest x"},
				{"pip", "x"},
			} {
				res, err := box.Exec(ctx, sandbox.ExecRequest{Cmd: cmd})
				if err != nil {
					t.Fatal(err)
				}
				got := strings.Fields(string(res.Output))
				if res.ExitCode != 0 || len(got) == 0 || got[0] != c.want {
					t.Errorf("%q ran %q (exit %d), want %s", cmd, res.Output, res.ExitCode, c.want)
				}
			}
		})
	}
}

// TestBoxPythonOverrideMissing: a SWERVE_LOCAL_PYTHON that names nothing
// fails the box in one line naming the variable.
func TestBoxPythonOverrideMissing(t *testing.T) {
	b := newTestBackend(t)
	b.Python = filepath.Join(t.TempDir(), "no-such-python")
	_, err := b.Open(context.Background(), sandbox.Spec{})
	if err == nil || !strings.Contains(err.Error(), PythonEnv+"=") || strings.Contains(err.Error(), "\n") {
		t.Fatalf("Open = %v, want one line naming %s", err, PythonEnv)
	}
}
