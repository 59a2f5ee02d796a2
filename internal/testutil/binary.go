package testutil

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
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
// returns its path. Backends run it inside boxes as the shim; a test binary
// cannot stand in for it (it is built with -race, so dynamically linked).
func SwerveBinary(t testing.TB) string {
	t.Helper()
	binOnce.Do(func() {
		base := filepath.Join(os.TempDir(), "swerve-testbin")
		removeStale(base)
		dir := filepath.Join(base, strconv.Itoa(os.Getpid()))
		if binErr = os.MkdirAll(dir, 0o755); binErr != nil {
			return
		}
		binPath = filepath.Join(dir, "swerve")
		cmd := exec.Command("go", "build", "-trimpath", "-o", binPath, "./cmd/swerve")
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

// HostPytest makes sure /usr/bin/python3 has pytest, which the sample
// tasks' tests run with on the local backend, and puts /usr/bin first on
// PATH for the rest of the test. Without it the test skips with a one-line
// reason, or fails where the tools are mandatory (CI, or
// SWERVE_DOCKER_TESTS=1).
func HostPytest(t testing.TB) {
	t.Helper()
	if out, err := exec.Command("/usr/bin/python3", "-m", "pytest", "--version").CombinedOutput(); err != nil {
		msg := fmt.Sprintf("/usr/bin/python3 has no pytest (apt-get install python3-pytest): %v: %s", err, out)
		if os.Getenv("CI") != "" || DockerRequired() {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	t.Setenv("PATH", "/usr/bin:"+os.Getenv("PATH"))
}
