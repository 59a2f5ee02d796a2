// Package testutil holds helpers shared by swerve's tests: where the shared
// data lives, whether Docker tests must run, and the test image's name.
package testutil

import (
	"os"
	"path/filepath"
	"sync"
	"testing"
)

var (
	rootOnce sync.Once
	rootDir  string
)

// RepoRoot returns the directory holding go.mod.
func RepoRoot(t testing.TB) string {
	t.Helper()
	rootOnce.Do(func() {
		dir, err := os.Getwd()
		if err != nil {
			return
		}
		for {
			if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
				rootDir = dir
				return
			}
			parent := filepath.Dir(dir)
			if parent == dir {
				return
			}
			dir = parent
		}
	})
	if rootDir == "" {
		t.Fatal("testutil: cannot find the repository root (no go.mod above the test)")
	}
	return rootDir
}

// SharedDir returns the project's shared/ directory (datasets, real tasks),
// which sits beside the checkout: $SWERVE_SHARED, else <repo>/../shared.
// Without it the test is skipped, except under CI where it fails.
func SharedDir(t testing.TB) string {
	t.Helper()
	dir := os.Getenv("SWERVE_SHARED")
	if dir == "" {
		dir = filepath.Join(RepoRoot(t), "..", "shared")
	}
	if _, err := os.Stat(filepath.Join(dir, "data")); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("shared data not found at %s (set SWERVE_SHARED): %v", dir, err)
		}
		t.Skipf("shared data not found at %s (set SWERVE_SHARED)", dir)
	}
	return dir
}

// DockerRequired reports whether Docker tests are mandatory
// (SWERVE_DOCKER_TESTS=1, as CI sets it).
func DockerRequired() bool { return os.Getenv("SWERVE_DOCKER_TESTS") == "1" }

// SkipOrFail skips the test with a one-line reason, or fails it when Docker
// tests are mandatory.
func SkipOrFail(t testing.TB, format string, args ...any) {
	t.Helper()
	if DockerRequired() {
		t.Fatalf("SWERVE_DOCKER_TESTS=1 but "+format, args...)
	}
	t.Skipf(format, args...)
}

// TestImage is the base image Docker tests use: $SWERVE_TEST_IMAGE, default
// swerve-test-base:bookworm (built by scripts/test-image.sh).
func TestImage() string {
	if v := os.Getenv("SWERVE_TEST_IMAGE"); v != "" {
		return v
	}
	return "swerve-test-base:bookworm"
}
