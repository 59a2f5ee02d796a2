package leaktest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/swerve-dev/swerve/internal/testutil"
)

// TestScriptBuildsTheSameImage: scripts/leak-image.sh, which CI runs to
// hand the image to the backends that take it from Docker, writes the same
// Dockerfile as Dockerfile and names the image the way Image does.
func TestScriptBuildsTheSameImage(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(testutil.RepoRoot(t), "scripts", "leak-image.sh"))
	if err != nil {
		t.Fatal(err)
	}
	script := string(b)
	df := strings.ReplaceAll(strings.TrimPrefix(Dockerfile("%s"), "FROM %s"), "\n", `\n`)
	if !strings.Contains(script, `'FROM %s`+df+`'`) {
		t.Errorf("scripts/leak-image.sh does not write Dockerfile's recipe %q", Dockerfile("BASE"))
	}
	if !strings.Contains(script, "recipe=internal/episode/leaktest/testdata/plant.sh") || !strings.Contains(script, `swerve-test-leaks:$(sha256sum "$recipe" | cut -c1-12)`) {
		t.Errorf("scripts/leak-image.sh does not name the image by plant.sh's hash as Image does (%s)", Image())
	}
}

// TestPlant: plant.sh makes every kind's repository, HEAD at BaseCommit.
func TestPlant(t *testing.T) {
	if testing.Short() {
		t.Skip("makes a 20000-commit history")
	}
	dir := t.TempDir()
	Plant(t, dir)
	for _, k := range append(Kinds, Big) {
		if _, err := os.Stat(filepath.Join(dir, k, ".git")); err != nil {
			t.Errorf("%s: %v", k, err)
		}
	}
	head, err := os.ReadFile(filepath.Join(dir, "none", ".git", "refs", "heads", "main"))
	if err != nil || strings.TrimSpace(string(head)) != BaseCommit {
		t.Errorf("HEAD of none: %q %v, want %s", head, err, BaseCommit)
	}
}
