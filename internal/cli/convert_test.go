package cli

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/swerve-dev/swerve/internal/testutil"
)

func TestConvertHarborCLI(t *testing.T) {
	root := testutil.RepoRoot(t)
	sample := filepath.Join(root, "examples", "sample", "sample_transferred.json")
	out := filepath.Join(t.TempDir(), "harbor")
	args := []string{"convert", "harbor", "--input", sample, "--out-dir", out, "--base-image", "swerve-test-base:bookworm", "--eval_timeout", "90", "--memory-mb", "2048"}

	stdout, stderr, err := execTasksCLI(t, args...)
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	want := filepath.Join(out, "sample__calc-1") + "\tsource\n"
	if !strings.Contains(stdout, "sample__calc-1\t"+want) || !strings.HasSuffix(stdout, "swerve convert harbor: wrote 2 of 2 tasks to "+out+"\n") {
		t.Errorf("stdout:\n%s", stdout)
	}
	conf, err := os.ReadFile(filepath.Join(out, "sample__calc-2", "task.toml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"[verifier]\ntimeout_sec = 90.0\n", "memory_mb = 2048\n", "instance_id = 'sample__calc-2'\n"} {
		if !strings.Contains(string(conf), s) {
			t.Errorf("task.toml lacks %q:\n%s", s, conf)
		}
	}
	for _, f := range []string{"instruction.md", "environment/Dockerfile", "environment/repo/calc.py", "tests/test.sh", "tests/eval.sh", "tests/test.patch", "solution/solve.sh"} {
		if _, err := os.Stat(filepath.Join(out, "sample__calc-1", f)); err != nil {
			t.Error(err)
		}
	}

	// Again: refused without --force, replaced with it.
	if _, _, err := execTasksCLI(t, args...); err == nil || !strings.Contains(err.Error(), "exists already (and 1 more); pass --force") {
		t.Errorf("second run without --force: %v", err)
	}
	stdout, _, err = execTasksCLI(t, append(args, "--force", "--instance_ids", "sample__calc-2")...)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(stdout, "\tsource (replaced)\n") || !strings.Contains(stdout, "wrote 1 of 1 tasks") {
		t.Errorf("--force stdout:\n%s", stdout)
	}

	// The demo tasks: two are graded by swebench and cannot convert.
	demo := filepath.Join(root, "internal", "demo", "tasks", "tasks.jsonl")
	_, _, err = execTasksCLI(t, "convert", "harbor", "--input", demo, "--out-dir", t.TempDir())
	if err == nil || !strings.Contains(err.Error(), "3 tasks cannot be converted") || !strings.Contains(err.Error(), "demo__textstats-1: graded by swebench") || !strings.Contains(err.Error(), "demo__intervals-1") {
		t.Errorf("demo tasks: %v", err)
	}
	stdout, stderr, err = execTasksCLI(t, "convert", "harbor", "--input", demo, "--out-dir", t.TempDir(), "--skip-unsupported", "--base-image", "b", "--json")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(stderr, "left out 2 tasks that cannot become Harbor tasks:\n  demo__textstats-1: graded by swebench") ||
		!strings.Contains(stdout, `"instance_id":"demo__semver-1"`) || !strings.Contains(stdout, `{"skipped":[{"instance_id":"demo__textstats-1"`) {
		t.Errorf("--skip-unsupported --json:\nstdout:\n%s\nstderr:\n%s", stdout, stderr)
	}
	_, _, err = execTasksCLI(t, "convert", "harbor", "--input", demo, "--out-dir", t.TempDir(), "--instance_ids", "demo__semver-1")
	if err == nil || !strings.Contains(err.Error(), "task demo__semver-1: cannot convert to a Harbor task: no Dockerfile and no image, only a host repository") {
		t.Errorf("source row without --base-image: %v", err)
	}

	if _, _, err := execTasksCLI(t, "convert", "harbor", "--out-dir", out); err == nil || !strings.Contains(err.Error(), "--input is required") {
		t.Errorf("no input: %v", err)
	}
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"--out-dir", ""}, "--out-dir: name the directory"},
		{[]string{"--strict-marker=false"}, "--strict-marker=false: swerve has no lenient mode"},
		{[]string{"-j", "0"}, `invalid argument "0" for "-j, --jobs" flag: 0: must be at least 1`},
		{[]string{"--limit", "-1"}, "--limit: want 0 (all) or more, got -1"},
	} {
		args := append([]string{"convert", "harbor", "--input", sample, "--base-image", "b"}, tt.args...)
		if _, _, err := execTasksCLI(t, args...); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%v: %v; want %q", tt.args, err, tt.want)
		}
	}
	// Upstream's flags: --limit, --no-solution, --strict-marker, -j; the
	// default --out-dir is ./harbor_tasks.
	t.Chdir(t.TempDir())
	stdout, _, err = execTasksCLI(t, "convert", "harbor", "--input", sample, "--base-image", "b", "--limit", "1", "--no-solution", "--strict-marker", "-j", "2")
	if err != nil || !strings.HasSuffix(stdout, "swerve convert harbor: wrote 1 of 1 tasks to harbor_tasks, no solution/ (--no-solution)\n") {
		t.Errorf("--limit 1 --no-solution: %v\n%s", err, stdout)
	}
	if _, err := os.Stat(filepath.Join("harbor_tasks", "sample__calc-1", "solution")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("--no-solution wrote solution/ (%v)", err)
	}
	if _, _, err := execTasksCLI(t, "convert", "harbor", "--input", sample, "--out-dir", t.TempDir(), "--cpus", "0"); err == nil || err.Error() != "convert harbor: cpus must be positive (got 0)" {
		t.Errorf("--cpus 0: %v", err)
	}
	stdout, _, err = execTasksCLI(t, "convert")
	if err != nil || !strings.Contains(stdout, "harbor") || !strings.Contains(stdout, "Available Commands") {
		t.Errorf("convert alone: %v\n%s", err, stdout)
	}
	stdout, _, err = execTasksCLI(t, "convert", "harbor", "--help")
	if err != nil || !strings.Contains(stdout, "swerve convert harbor --input") || !strings.Contains(stdout, "--skip-unsupported") {
		t.Errorf("convert harbor --help: %v\n%s", err, stdout)
	}
}
