package local

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// PythonEnv names the interpreter local boxes run for python, python3,
// pip and pytest, whichever way a command is written. Unset, the first
// python3 on PATH that can import pytest is chosen, else the first python3.
const PythonEnv = "SWERVE_LOCAL_PYTHON"

// Python is the interpreter a local box runs, and how it was chosen.
type Python struct {
	// Path is the interpreter (as found on PATH or given), empty when the
	// host has none.
	Path string
	// Why says how it was chosen, for messages: "SWERVE_LOCAL_PYTHON",
	// "the first python3 on PATH with pytest", ...
	Why string
}

// choosePython picks the interpreter local boxes run. A machine's first
// python3 is often a pyenv or conda one without the task's test runner
// while another one on PATH has it; the verdict must not depend on which
// comes first, so the one that can run the tests wins, and the choice is
// the same for a command given as arguments and one given as a line for
// bash (see Backend.Open).
func choosePython(ctx context.Context, pathEnv, override string) (Python, error) {
	if override != "" {
		p, err := exec.LookPath(override)
		if err != nil {
			return Python{}, fmt.Errorf("local: %s=%s: %w", PythonEnv, override, err)
		}
		abs, err := filepath.Abs(p)
		if err != nil {
			return Python{}, fmt.Errorf("local: %s=%s: %w", PythonEnv, override, err)
		}
		return Python{Path: abs, Why: PythonEnv}, nil
	}
	var found []string
	seen := map[string]bool{}
	for _, dir := range filepath.SplitList(pathEnv) {
		if dir == "" || !filepath.IsAbs(dir) {
			continue // a relative PATH entry would depend on the box's directory
		}
		p := filepath.Join(dir, "python3")
		if fi, err := os.Stat(p); err != nil || fi.IsDir() || fi.Mode()&0o111 == 0 {
			continue
		}
		real, err := filepath.EvalSymlinks(p)
		if err != nil || seen[real] {
			continue
		}
		seen[real] = true
		found = append(found, p)
	}
	if len(found) == 0 {
		return Python{Why: "no python3 on PATH"}, nil
	}
	for i, p := range found {
		if hasPytest(ctx, p) {
			why := "the first python3 on PATH"
			if i > 0 {
				why = "the first python3 on PATH with pytest"
			}
			return Python{Path: p, Why: why}, nil
		}
	}
	return Python{Path: found[0], Why: "the first python3 on PATH (none has pytest)"}, nil
}

// hasPytest says whether python can import pytest, without the user's
// site directory or startup file getting a say.
func hasPytest(ctx context.Context, python string) bool {
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, python, "-c", "import pytest")
	cmd.Env = append(boxEnv(os.Environ()), "HOME="+os.TempDir(), "PYTHONDONTWRITEBYTECODE=1")
	cmd.Dir = os.TempDir()
	return cmd.Run() == nil
}

// pythonChoice caches choosePython per PATH and override: probing costs
// a few interpreter starts, paid once per process.
var pythonChoice struct {
	sync.Mutex
	m map[string]Python
}

func cachedPython(ctx context.Context, pathEnv, override string) (Python, error) {
	key := pathEnv + "\x00" + override
	pythonChoice.Lock()
	defer pythonChoice.Unlock()
	if p, ok := pythonChoice.m[key]; ok {
		return p, nil
	}
	p, err := choosePython(ctx, pathEnv, override)
	if err != nil {
		return Python{}, err
	}
	if pythonChoice.m == nil {
		pythonChoice.m = map[string]Python{}
	}
	pythonChoice.m[key] = p
	return p, nil
}

// writeBin fills a box's bin directory (first on its PATH) with small
// scripts that run python's interpreter for python, python3, pip, pip3
// and pytest. Scripts rather than links: a virtual environment's python
// finds its pyvenv.cfg from the path it was started by.
func writeBin(dir string, py Python) error {
	if py.Path == "" {
		return nil
	}
	if err := os.Mkdir(dir, 0o755); err != nil {
		return err
	}
	q := shellQuote(py.Path)
	scripts := map[string]string{
		"python":  "exec " + q + ` "$@"`,
		"python3": "exec " + q + ` "$@"`,
		"pip":     "exec " + q + ` -m pip "$@"`,
		"pip3":    "exec " + q + ` -m pip "$@"`,
		"pytest":  "exec " + q + ` -m pytest "$@"`,
	}
	var errs []error
	for name, body := range scripts {
		text := "#!/bin/sh\n# swerve's local box: " + py.Why + "\n" + body + "\n"
		errs = append(errs, os.WriteFile(filepath.Join(dir, name), []byte(text), 0o755))
	}
	return errors.Join(errs...)
}

// profile is the box's ~/.profile: login shells (bash -lc, as string
// commands run) get the box's PATH back after /etc/profile, which on
// Debian and Ubuntu resets it, so a command finds the same program
// whether it is given as arguments or as a line for bash.
func profile(pathEnv string) []byte {
	return []byte("# swerve's local box: the same PATH for login shells as for commands given as arguments\nPATH=" + shellQuote(pathEnv) + "\nexport PATH\n")
}

func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// envValue is the last value of key in env (the one exec uses).
func envValue(env []string, key string) string {
	v := ""
	for _, kv := range env {
		if k, val, ok := strings.Cut(kv, "="); ok && k == key {
			v = val
		}
	}
	return v
}

// dedupeEnv keeps the last value of each variable, in first-seen order:
// what exec would use, with nothing shadowed left for a reader to trust.
func dedupeEnv(env []string) []string {
	last := map[string]int{}
	for i, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		last[k] = i
	}
	out := make([]string, 0, len(last))
	for i, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		if last[k] == i {
			out = append(out, kv)
		}
	}
	return out
}
