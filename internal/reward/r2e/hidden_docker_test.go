package r2e_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/swerve-dev/swerve/internal/reward"
	"github.com/swerve-dev/swerve/internal/reward/grader"
	"github.com/swerve-dev/swerve/internal/reward/r2e"
	"github.com/swerve-dev/swerve/internal/sandbox"
	"github.com/swerve-dev/swerve/internal/sandbox/docker"
	"github.com/swerve-dev/swerve/internal/task"
	"github.com/swerve-dev/swerve/internal/testutil"
)

// r2eImage is an R2E-Gym-style image on the test base: the repository at
// /testbed with run_tests.sh (untracked), the hidden tests at /r2e_tests.
const r2eDockerfile = `FROM %s
RUN mkdir -p /testbed /r2e_tests && cd /testbed && git init -q \
 && printf 'def add(a, b):\n    return a - b\n' > calc.py \
 && git add calc.py && git -c user.name=t -c user.email=t@t commit -qm base \
 && printf 'PYTHONPATH=. python3 -W ignore -m pytest -p no:cacheprovider -rA r2e_tests\n' > run_tests.sh \
 && printf 'from calc import add\n\n\ndef test_add():\n    assert add(2, 2) == 4\n\n\ndef test_zero():\n    assert add(0, 0) == 0\n' > /r2e_tests/test_calc.py
WORKDIR /testbed
`

const r2eImage = "swerve-test-r2e-hidden:latest"

func r2eBackend(t *testing.T) *docker.Backend {
	t.Helper()
	ctx := context.Background()
	if err := docker.Probe(ctx); err != nil {
		testutil.SkipOrFail(t, "no container engine: %v", err)
	}
	b, err := docker.New(ctx, docker.Config{Options: sandbox.Options{ShimPath: testutil.SwerveBinary(t), RunID: fmt.Sprintf("test-r2e-hidden-%d", os.Getpid())}})
	if err != nil {
		t.Fatal(err)
	}
	if ok, _ := b.ImageExists(ctx, testutil.TestImage()); !ok {
		testutil.SkipOrFail(t, "test image %s missing (build it with scripts/test-image.sh)", testutil.TestImage())
	}
	if err := b.Build(ctx, docker.BuildOptions{ContextDir: t.TempDir(), Dockerfile: fmt.Sprintf(r2eDockerfile, testutil.TestImage()), Tags: []string{r2eImage}}); err != nil {
		t.Fatal(err)
	}
	return b
}

// The agent's box of an R2E-Gym task has no hidden tests anywhere the image
// kept them, and grading runs the image's tests even when the patch brings
// its own r2e_tests/.
func TestHiddenTestsDocker(t *testing.T) {
	b := r2eBackend(t)
	ctx := context.Background()
	tk := &task.Task{InstanceID: "calc-r2e", Repo: "calc", Image: r2eImage, Grader: task.GraderR2E, Dialect: task.DialectR2E,
		ExpectedOutput: map[string]string{"test_add": "PASSED", "test_zero": "PASSED"}}
	open := func(t *testing.T) sandbox.Sandbox {
		box, err := b.Open(ctx, sandbox.Spec{Image: r2eImage, Pull: sandbox.PullNever})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { box.Close(context.Background()) })
		return box
	}

	t.Run("agent box", func(t *testing.T) {
		box := open(t)
		// R2E-Gym's own set-up: tests moved to /root and linked back.
		setup := "cp -r /r2e_tests /root/r2e_tests && ln -s /root/r2e_tests r2e_tests && ls /r2e_tests /root/r2e_tests r2e_tests >/dev/null && echo visible"
		if res, err := box.Exec(ctx, sandbox.ExecRequest{Cmd: sandbox.Bash(setup)}); err != nil || string(res.Output) != "visible\n" {
			t.Fatalf("set-up: %q, %v", res.Output, err)
		}
		if err := grader.HideTests(ctx, box, tk, "", "/testbed"); err != nil {
			t.Fatal(err)
		}
		for _, p := range []string{"/r2e_tests", "/root/r2e_tests", "/testbed/r2e_tests", "/run_tests.sh"} {
			res, err := box.Exec(ctx, sandbox.ExecRequest{Cmd: []string{"ls", p}})
			if err != nil || res.ExitCode == 0 {
				t.Errorf("ls %s in the agent's box: exit %d, %q, %v; want it gone", p, res.ExitCode, res.Output, err)
			}
		}
		res, err := box.Exec(ctx, sandbox.ExecRequest{Cmd: sandbox.Bash("grep -rl 'def test_add' / --include='*.py' 2>/dev/null | grep -v '^/proc' || true")})
		if err != nil || strings.TrimSpace(string(res.Output)) != "" {
			t.Errorf("the hidden test is still readable at %q (%v)", res.Output, err)
		}
	})

	fix := "diff --git a/calc.py b/calc.py\n--- a/calc.py\n+++ b/calc.py\n@@ -1,2 +1,2 @@\n def add(a, b):\n-    return a - b\n+    return a + b\n"
	fake := "diff --git a/r2e_tests/test_calc.py b/r2e_tests/test_calc.py\nnew file mode 100644\n--- /dev/null\n+++ b/r2e_tests/test_calc.py\n@@ -0,0 +1,6 @@\n+def test_add():\n+    pass\n+\n+\n+def test_zero():\n+    pass\n"
	// A pytest plugin (an entry point in a dist-info directory on
	// sys.path) that rewrites the hidden tests before pytest collects
	// them: as root it wins; as the grading user the tests are root's
	// and read-only.
	plugin, err := os.ReadFile("testdata/plugin-rewrite.diff")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, patch string
		canaries    bool
		want        float64
	}{
		{"gold", fix, false, 1},
		{"empty", "", false, 0},
		{"own r2e_tests", fake, false, 0},
		{"own r2e_tests and the fix", fix + fake, false, 1},
		{"plugin rewrites the hidden tests", string(plugin), false, 0},
		{"gold with canaries", fix, true, 1},
		{"empty with canaries", "", true, 0},
	} {
		t.Run("grade "+tc.name, func(t *testing.T) {
			box := open(t)
			rr, err := r2e.Run(ctx, box, tk, r2e.RunOptions{RunOptions: reward.RunOptions{Patch: tc.patch}, Canaries: tc.canaries})
			if err != nil {
				t.Fatal(err)
			}
			if rr.Result.Reward != tc.want {
				t.Errorf("reward %v (%s), want %v\nlog:\n%s", rr.Result.Reward, rr.Result.Reason, tc.want, rr.Log)
			}
			if rr.Phases != "phased" {
				t.Errorf("phases %q, want phased", rr.Phases)
			}
			// The grading user cannot read the image's originals (to find
			// the canaries by comparing) nor write the copy that ran.
			probe := "cat /r2e_tests/test_calc.py >/dev/null 2>&1 && echo read-original; { echo x >> /testbed/r2e_tests/test_calc.py; } 2>/dev/null && echo wrote-copy; rm -f /testbed/r2e_tests 2>/dev/null && echo removed-link; true"
			if res, err := box.Exec(ctx, sandbox.ExecRequest{Cmd: []string{"/bin/bash", "-c", probe}, User: reward.GradingUser}); err != nil || strings.TrimSpace(string(res.Output)) != "" {
				t.Errorf("as the grading user after the run: %q, %v", res.Output, err)
			}
			if !tc.canaries {
				return
			}
			if !rr.Canaries.Available() || rr.Canaries.Original == "" {
				t.Fatalf("canaries %q (%s), want mutants", rr.Canaries.Unavailable, rr.Canaries.Template)
			}
			if got := rr.Canaries.Verify(rr.CanaryStatus, rr.Result.Resolved); len(got) > 0 || len(rr.CanaryStatus) != 2 {
				t.Errorf("canaries %v: %v, want both behaving\nlog:\n%s", rr.CanaryStatus, got, rr.Log)
			}
		})
	}
}
