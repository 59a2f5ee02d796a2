package cli

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/swerve-dev/swerve/internal/shim"
	"github.com/swerve-dev/swerve/internal/testutil"
)

// TestStaticHelperCheck runs commands the way the real process does, with
// the helper named by SWERVE_SHIM_BINARY set to /bin/sh, a dynamically
// linked executable: commands that would open container boxes stop before
// anything else, the others go on (and fail on their missing dataset).
func TestStaticHelperCheck(t *testing.T) {
	if err := shim.CheckStatic("/bin/sh"); !errors.Is(err, shim.ErrDynamic) {
		t.Skipf("needs a dynamically linked /bin/sh to stand in for a cgo build: %v", err)
	}
	t.Setenv("SWERVE_SHIM_BINARY", "/bin/sh")
	// Paths that do not exist, so that a command let through stops at once.
	const ds = "--dataset=/nonexistent/tasks.jsonl"
	for _, tc := range []struct {
		args    []string
		refused bool
		hint    bool // the refusal offers --backend local
	}{
		{[]string{"exec", ds, "--instance_id", "x", "--", "true"}, true, true},
		{[]string{"exec", ds, "--backend", "docker", "--instance_id", "x", "--", "true"}, true, true},
		{[]string{"exec", ds, "--backend=local", "--instance_id", "x", "--", "true"}, false, false},
		{[]string{"run", ds, "--traj_dir", "/nonexistent/run"}, true, true},
		{[]string{"solve", ds, "--instance_id", "x"}, true, true},
		{[]string{"shell", ds, "--instance_id", "x"}, true, true},
		{[]string{"validate", ds}, true, true},
		{[]string{"grade", ds, "--instance_id", "x", "--patch", "/nonexistent.diff"}, true, true},
		{[]string{"grade", ds, "--instance_id", "x", "--log", "/nonexistent.log"}, false, false},
		{[]string{"demo", "--traj_dir", "/nonexistent/demo"}, true, true},
		{[]string{"demo", "--backend", "local", "--llm_name", "nosuchprovider/x", "--traj_dir", "/nonexistent/demo"}, false, false},
		{[]string{"build", "--input", "/nonexistent.json", "--output", "/nonexistent/out"}, true, false},
		{[]string{"tasks", "ls", ds}, false, false},
	} {
		t.Run(strings.Join(tc.args[:1], " ")+"/"+strings.Join(tc.args[1:], " "), func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			root := newRoot(&stdout, &stderr, true)
			root.SetArgs(tc.args)
			err := root.Execute()
			msg := ""
			if err != nil {
				msg = err.Error()
			}
			refused := strings.Contains(msg, "is dynamically linked")
			if refused != tc.refused {
				t.Fatalf("swerve %s: error %q; want refused=%v", strings.Join(tc.args, " "), msg, tc.refused)
			}
			if !refused {
				return
			}
			if !strings.HasPrefix(msg, tc.args[0]+": this swerve (/") || !strings.Contains(msg, "rebuild it with make build") || strings.Contains(msg, "\n") {
				t.Errorf("refusal %q: want one line naming the command, the binary and the fix", msg)
			}
			if got := strings.Contains(msg, "--backend local"); got != tc.hint {
				t.Errorf("refusal %q: offers --backend local = %v, want %v", msg, got, tc.hint)
			}
			if stdout.Len() != 0 || stderr.Len() != 0 {
				t.Errorf("refused command printed %q / %q", stdout.String(), stderr.String())
			}
		})
	}
}

// TestDynamicBuildRefused builds swerve the way `go build` does where a C
// compiler is present (CGO_ENABLED=1, dynamically linked) and checks that
// `swerve demo` refuses at once, in one line naming the fix, before it
// writes or builds anything, while --version and the local backend work.
func TestDynamicBuildRefused(t *testing.T) {
	cc, err := exec.Command("go", "env", "CC").Output()
	if err != nil {
		t.Fatalf("go env CC: %v", err)
	}
	if _, err := exec.LookPath(strings.TrimSpace(string(cc))); err != nil {
		t.Skipf("needs a C compiler (%s) to make a cgo build: %v", strings.TrimSpace(string(cc)), err)
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "swerve")
	build := exec.Command("go", "build", "-o", bin, "./cmd/swerve")
	build.Dir = testutil.RepoRoot(t)
	build.Env = append(os.Environ(), "CGO_ENABLED=1")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("CGO_ENABLED=1 go build: %v\n%s", err, out)
	}
	if err := shim.CheckStatic(bin); !errors.Is(err, shim.ErrDynamic) {
		t.Skipf("CGO_ENABLED=1 go build made a static binary here, nothing to refuse: %v", err)
	}
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir, "TMPDIR=" + dir}
	swerve := func(args ...string) (string, string, int) {
		cmd := exec.Command(bin, args...)
		cmd.Dir, cmd.Env = dir, env
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		code := 0
		if ee, ok := errors.AsType[*exec.ExitError](err); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatalf("swerve %s: %v", strings.Join(args, " "), err)
		}
		return stdout.String(), stderr.String(), code
	}

	out, errOut, code := swerve("demo", "--traj_dir", "demo-out")
	want := "swerve: demo: this swerve (" + bin + ") is dynamically linked (built with cgo), but boxes run it as their in-box helper, which must be static: rebuild it with make build in the repository (or CGO_ENABLED=0 go build -o bin/swerve ./cmd/swerve), or pass --backend local\n"
	if code != 1 || out != "" || errOut != want {
		t.Errorf("swerve demo with a dynamic build: exit %d, stdout %q, stderr\n%q\nwant exit 1, nothing on stdout, stderr\n%q", code, out, errOut, want)
	}
	if _, err := os.Stat(filepath.Join(dir, "demo-out")); !os.IsNotExist(err) {
		t.Errorf("refused demo still wrote its output directory (stat: %v)", err)
	}
	if out, errOut, code := swerve("--version"); code != 0 || !strings.HasPrefix(out, "swerve ") {
		t.Errorf("swerve --version: exit %d, %q %q", code, out, errOut)
	}
	// The local backend runs the helper on this machine: the dynamic build
	// works there.
	if _, err := exec.LookPath("git"); err != nil {
		t.Skipf("the local backend needs git: %v", err)
	}
	ds := filepath.Join(testutil.RepoRoot(t), "examples", "sample", "tasks.jsonl")
	out, errOut, code = swerve("exec", "--dataset", ds, "--instance_id", "sample__calc-1", "--backend", "local", "--", "echo in-box")
	if code != 0 || out != "in-box\n" {
		t.Errorf("swerve exec --backend local with a dynamic build: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
}
