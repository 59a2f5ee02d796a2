package e2blocal_test

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/swerve-dev/swerve/internal/testutil"
)

// sdkDir installs the official E2B JS SDK (npm e2b, the version
// testdata/sdk/package-lock.json pins) once into a cache outside the work
// tree, keyed by the lock file, with testdata/sdk/check.mjs next to it.
func sdkDir(t *testing.T) string {
	t.Helper()
	for _, tool := range []string{"node", "npm"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("SWERVE_E2B_TESTS=1 but %s is not installed (Debian: nodejs, npm): %v", tool, err)
		}
	}
	lock, err := os.ReadFile("testdata/sdk/package-lock.json")
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(lock)
	cache := os.Getenv("SWERVE_CI_CACHE")
	if cache == "" {
		home, _ := os.UserHomeDir()
		cache = filepath.Join(home, ".cache", "swerve-ci")
	}
	dir := filepath.Join(cache, "e2b-sdk-"+hex.EncodeToString(sum[:6]))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"package.json", "package-lock.json", "check.mjs"} {
		data, err := os.ReadFile(filepath.Join("testdata/sdk", f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "e2b", "package.json")); err != nil {
		cmd := exec.Command("npm", "ci", "--no-audit", "--no-fund", "--loglevel=error")
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("npm ci in %s: %v\n%s", dir, err, out)
		}
	}
	return dir
}

// TestOfficialSDK runs the unmodified E2B JS SDK against the local plane:
// what real E2B clients expect of the REST API and of envd is what the
// plane (and so the e2b backend tested through it) must serve.
func TestOfficialSDK(t *testing.T) {
	srv := startPlane(t, map[string]string{"sdk-base": testutil.TestImage()})
	dir := sdkDir(t)
	cmd := exec.Command("node", "check.mjs")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(),
		"E2B_API_KEY="+srv.APIKey(),
		"E2B_API_URL="+srv.URL,
		"E2B_SANDBOX_URL="+srv.URL,
		"E2B_DOMAIN=e2b.local",
		"SDK_TEMPLATE=sdk-base",
	)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	start := time.Now()
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node check.mjs: %v\n%s%s", err, out, stderr.String())
	}
	t.Logf("the SDK's checks took %v", time.Since(start).Round(time.Millisecond))
	var got struct {
		SandboxID       string      `json:"sandboxId"`
		Listed          []string    `json:"listed"`
		ExitCode        int         `json:"exitCode"`
		Stdout          string      `json:"stdout"`
		Stderr          string      `json:"stderr"`
		Chunks          [][2]string `json:"chunks"`
		ReadBack        string      `json:"readBack"`
		EndAfterStart   float64     `json:"endAfterStart"`
		ListedAfterKill []string    `json:"listedAfterKill"`
		RunError        string      `json:"runError"`
		FirstRunError   string      `json:"firstRunError"`
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("SDK output %q: %v", out, err)
	}
	if got.FirstRunError != "" {
		t.Logf("the first command's stream was cut (%s); the second run is judged", got.FirstRunError)
	}
	if got.SandboxID == "" || !slices.Contains(got.Listed, got.SandboxID) {
		t.Errorf("created %q, listed %v", got.SandboxID, got.Listed)
	}
	if got.ExitCode != 3 || got.Stdout != "one\ntwo\n" || got.Stderr != "err\n" {
		t.Errorf("command: exit %d, stdout %q, stderr %q, error %q", got.ExitCode, got.Stdout, got.Stderr, got.RunError)
	}
	if len(got.Chunks) < 2 || got.Chunks[0] != [2]string{"stdout", "one\n"} {
		t.Errorf("streamed chunks %q: want \"one\\n\" first, on its own (the command sleeps after it)", got.Chunks)
	}
	if got.ReadBack != "written by the E2B SDK\n" {
		t.Errorf("file read back %q", got.ReadBack)
	}
	if got.EndAfterStart < 90_000 || got.EndAfterStart > 125_000 {
		t.Errorf("after setTimeout(120s) the sandbox ends in %.0f ms", got.EndAfterStart)
	}
	if len(got.ListedAfterKill) != 0 {
		t.Errorf("listed after kill: %v", got.ListedAfterKill)
	}
	if n := srv.Running(); n != 0 {
		t.Errorf("%d sandboxes running after the SDK killed its own", n)
	}
}
