package testutil

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
)

var (
	binOnce sync.Once
	binPath string
	binErr  error
)

// SwerveBinary builds a static swerve binary once per test process and
// returns its path, built as make build builds it (static, without symbol
// table and DWARF). Backends run it inside boxes as the shim; a test binary
// cannot stand in for it (it is built with -race, so dynamically linked).
// $SWERVE_TEST_BINARY names one built already (make test builds bin/swerve
// first, so that the test packages do not each build it at once).
func SwerveBinary(t testing.TB) string {
	t.Helper()
	binOnce.Do(func() {
		if p := os.Getenv("SWERVE_TEST_BINARY"); p != "" {
			binPath = p
			if _, binErr = os.Stat(p); binErr != nil {
				binErr = fmt.Errorf("SWERVE_TEST_BINARY: %w", binErr)
			}
			return
		}
		base := filepath.Join(os.TempDir(), "swerve-testbin")
		removeStale(base)
		dir := filepath.Join(base, strconv.Itoa(os.Getpid()))
		if binErr = os.MkdirAll(dir, 0o755); binErr != nil {
			return
		}
		binPath = filepath.Join(dir, "swerve")
		cmd := exec.Command("go", "build", "-trimpath", "-ldflags=-s -w", "-o", binPath, "./cmd/swerve")
		cmd.Dir = RepoRoot(t)
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			binErr = fmt.Errorf("go build ./cmd/swerve: %v\n%s", err, out)
		}
	})
	if binErr != nil {
		t.Fatal(binErr)
	}
	return binPath
}

// removeStale deletes binaries built by test processes that are gone.
func removeStale(base string) {
	ents, _ := os.ReadDir(base)
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		if syscall.Kill(pid, 0) == syscall.ESRCH {
			os.RemoveAll(filepath.Join(base, e.Name()))
		}
	}
}

// HostPytest makes sure /usr/bin/python3 has pytest (NeedPytest) and,
// for the rest of the test, puts first on PATH a python3 that lacks it,
// as on the many machines whose first python3 is a pyenv or conda one:
// what the test grades on the local backend must not depend on which
// interpreter comes first.
func HostPytest(t testing.TB) {
	t.Helper()
	NeedPytest(t)
	t.Setenv("PATH", DecoyPython(t)+string(filepath.ListSeparator)+os.Getenv("PATH"))
}

// DecoyPython makes a directory holding a python3 that cannot import
// pytest (Debian's python3 without its site directories) and returns it.
func DecoyPython(t testing.TB) string {
	t.Helper()
	dir := t.TempDir()
	script := "#!/bin/sh\n# a first python3 without pytest, like a bare pyenv or conda one\nexec /usr/bin/python3 -S \"$@\"\n"
	if err := os.WriteFile(filepath.Join(dir, "python3"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

var (
	pytestOnce sync.Once
	pytestErr  string
)

// NeedPytest makes sure /usr/bin/python3 has pytest, which the sample
// tasks' tests run with on the local backend. Without it the test skips
// with a one-line reason, or fails where the tools are mandatory
// (Missing).
func NeedPytest(t testing.TB) {
	t.Helper()
	pytestOnce.Do(func() {
		if out, err := exec.Command("/usr/bin/python3", "-m", "pytest", "--version").CombinedOutput(); err != nil {
			pytestErr = fmt.Sprintf("needs pytest: /usr/bin/python3 -m pytest: %v%s (apt-get install python3-pytest)", err, firstLine(out))
		}
	})
	if pytestErr != "" {
		Missing(t, "%s", pytestErr)
	}
}

// HostPython makes sure python3 on PATH can run unittest, which the demo
// tasks' tests run with on the local backend. Without it the test skips
// with a one-line reason, or fails where the tools are mandatory (Missing).
func HostPython(t testing.TB) {
	t.Helper()
	if out, err := exec.Command("python3", "-c", "import unittest").CombinedOutput(); err != nil {
		Missing(t, "needs python3: python3 -c 'import unittest': %v%s (apt-get install python3)", err, firstLine(out))
	}
}

// Missing reports a tool the test needs that this machine lacks: the test
// skips with a one-line reason, or fails where every test is mandatory (CI
// set, or SWERVE_DOCKER_TESTS=1).
func Missing(t testing.TB, format string, args ...any) {
	t.Helper()
	msg := strings.ReplaceAll(fmt.Sprintf(format, args...), "\n", " ")
	if os.Getenv("CI") != "" || DockerRequired() {
		t.Fatal(msg)
	}
	t.Skip(msg)
}

// firstLine returns ": " and the first line of a command's output, or ""
// when it printed nothing.
func firstLine(out []byte) string {
	line, _, _ := strings.Cut(strings.TrimSpace(string(out)), "\n")
	if line == "" {
		return ""
	}
	return ": " + line
}
