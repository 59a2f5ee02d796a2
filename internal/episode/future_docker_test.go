package episode_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/swerve-dev/swerve/internal/agent"
	"github.com/swerve-dev/swerve/internal/episode"
	"github.com/swerve-dev/swerve/internal/llm"
	"github.com/swerve-dev/swerve/internal/reward/grader"
	"github.com/swerve-dev/swerve/internal/reward/history"
	"github.com/swerve-dev/swerve/internal/sandbox"
	"github.com/swerve-dev/swerve/internal/sandbox/docker"
	"github.com/swerve-dev/swerve/internal/task"
	"github.com/swerve-dev/swerve/internal/testutil"
)

// leakDockerfile makes the calc repository at /testbed: its base commit
// subtracts in add(), the next commit (the fix) adds. HEAD and the work tree
// are left at the base commit on branch main, and %[2]s then hides the fix
// in the repository one way or another.
const leakDockerfile = `FROM %[1]s
WORKDIR /testbed
RUN set -e; export GIT_AUTHOR_NAME=calc GIT_AUTHOR_EMAIL=calc@localhost GIT_COMMITTER_NAME=calc GIT_COMMITTER_EMAIL=calc@localhost; \
 git init -q -b main . \
 && mkdir tests && printf 'def add(a, b):\n    return a - b\n' > calc.py \
 && printf 'from calc import add\n\n\ndef test_zero():\n    assert add(0, 0) == 0\n' > tests/test_ops.py \
 && git add -A && GIT_COMMITTER_DATE=2024-01-01T00:00:00Z GIT_AUTHOR_DATE=2024-01-01T00:00:00Z git commit -qm base \
 && git tag v1 \
 && git checkout -q -b fix && printf 'def add(a, b):\n    return a + b\n' > calc.py \
 && GIT_COMMITTER_DATE=2024-02-01T00:00:00Z GIT_AUTHOR_DATE=2024-02-01T00:00:00Z git commit -qam 'fix add' \
 && git checkout -q main \
 && %[2]s \
 && test "$(git status --porcelain)" = "" && grep -q 'a - b' calc.py
`

// leaks are the ways an image's repository can hold the fix while HEAD and
// the work tree are at the base commit.
var leaks = []struct{ name, plant string }{
	// none: the fix is nowhere; nothing to strip, nothing to find.
	{"none", "git branch -D fix && git reflog expire --expire=now --expire-unreachable=now --all && git prune --expire=now"},
	{"branch", "true"},
	{"tag", "git tag fixed fix && git branch -D fix"},
	{"remote-tracking", "git remote add origin https://example.invalid/calc.git && git update-ref refs/remotes/origin/main fix && git branch -D fix"},
	{"reflog", "git branch -D fix"},
	{"unreachable", "git branch -D fix && git reflog expire --expire=now --expire-unreachable=now --all"},
	{"stash", "git branch -D fix && git reflog expire --expire=now --expire-unreachable=now --all && printf 'def add(a, b):\\n    return a + b\\n' > calc.py && git stash -q"},
}

// minePolicy looks for any commit outside HEAD's history (every ref, the
// reflog, the stash, dangling objects, every object in the store) and
// applies its difference from HEAD: the fix, wherever the image kept it.
const minePolicy = `cd /testbed
found=""
for c in $(git rev-list --all --reflog 2>/dev/null) $(git stash list --format=%H 2>/dev/null) \
  $(git fsck --unreachable --no-reflogs 2>/dev/null | awk '$2 == "commit" {print $3}') \
  $(git cat-file --batch-all-objects --batch-check='%(objectname) %(objecttype)' 2>/dev/null | awk '$2 == "commit" {print $1}'); do
  if ! git merge-base --is-ancestor "$c" HEAD 2>/dev/null; then found=$c; break; fi
done
echo "found: ${found:-nothing}"
if [ -n "$found" ]; then git diff HEAD "$found" -- calc.py | git apply && echo applied; fi
git log --all --oneline | cat`

const fixedCalc = "diff --git a/calc.py b/calc.py\n--- a/calc.py\n+++ b/calc.py\n@@ -1,2 +1,2 @@\n def add(a, b):\n-    return a - b\n+    return a + b\n"

const leakTestPatch = "diff --git a/tests/test_add.py b/tests/test_add.py\nnew file mode 100644\n--- /dev/null\n+++ b/tests/test_add.py\n@@ -0,0 +1,5 @@\n+from calc import add\n+\n+\n+def test_add():\n+    assert add(2, 3) == 5\n"

// futureBackend is the Docker backend the future-leak tests open boxes
// with (run id prefix runID), and the scaffold their policies drive; it
// skips without Docker or the test base image.
func futureBackend(t *testing.T, runID string) (*docker.Backend, *agent.Scaffold) {
	t.Helper()
	if !testutil.DockerRequired() {
		t.Skip("Docker tests need SWERVE_DOCKER_TESTS=1")
	}
	ctx := context.Background()
	if err := docker.Probe(ctx); err != nil {
		testutil.SkipOrFail(t, "no container engine: %v", err)
	}
	b, err := docker.New(ctx, docker.Config{Options: sandbox.Options{ShimPath: testutil.SwerveBinary(t), RunID: fmt.Sprintf("%s-%d", runID, os.Getpid())}})
	if err != nil {
		t.Fatal(err)
	}
	if ok, _ := b.ImageExists(ctx, testutil.TestImage()); !ok {
		testutil.SkipOrFail(t, "test image %s missing (build it with scripts/test-image.sh)", testutil.TestImage())
	}
	mini, err := agent.Lookup("mini_swe_agent")
	if err != nil {
		t.Fatal(err)
	}
	return b, mini
}

// TestFutureLeaksDocker: a policy that mines git for the fix gets reward 0
// on every image that holds it, because the box it gets holds nothing past
// the base commit, and the proof in the result says so; the gold patch
// still gets 1.
func TestFutureLeaksDocker(t *testing.T) {
	ctx := context.Background()
	b, mini := futureBackend(t, "test-future")
	for _, leak := range leaks {
		t.Run(leak.name, func(t *testing.T) {
			image := "swerve-test-future-" + leak.name + ":latest"
			var log strings.Builder
			if err := b.Build(ctx, docker.BuildOptions{ContextDir: t.TempDir(), Dockerfile: fmt.Sprintf(leakDockerfile, testutil.TestImage(), leak.plant), Tags: []string{image}, Progress: &log}); err != nil {
				t.Fatalf("build %s: %v\n%s", image, err, log.String())
			}
			open := func(ctx context.Context, tk *task.Task) (sandbox.Sandbox, string, error) {
				box, err := b.Open(ctx, sandbox.Spec{Image: image, Pull: sandbox.PullNever, Workdir: "/testbed"})
				return box, "/testbed", err
			}
			tk := &task.Task{
				InstanceID: "calc-future-" + leak.name, Repo: "calc/calc", Image: image, Grader: task.GraderSWEFactory,
				Patch: fixedCalc, TestPatch: leakTestPatch,
				FailToPass: []string{"tests/test_add.py::test_add"}, PassToPass: []string{"tests/test_ops.py::test_zero"},
				EvalScript: "#!/bin/bash\nset -uxo pipefail\ncd /testbed\ngit apply -v - <<'EOF_PATCH'\n" + leakTestPatch +
					"EOF_PATCH\npython3 -m pytest -p no:cacheprovider -rA tests\nrc=$?\necho \"OMNIGRIL_EXIT_CODE=$rc\"\n",
			}
			grade := episode.GradeOptions{EvalTimeout: 2 * time.Minute}
			t.Run("mining policy", func(t *testing.T) {
				model := llm.NewScripted("oracle/mine-git", []llm.Message{
					{Role: llm.RoleAssistant, Content: "Looking for the fix in git.\n\n```bash\n" + minePolicy + "\n```"},
					{Role: llm.RoleAssistant, Content: "Submitting.\n\n```bash\necho COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT\n```"},
				})
				res, err := episode.Run(ctx, episode.Spec{Task: tk, Scaffold: mini, Mode: agent.ModeText, Model: model, Open: open, Grade: grade,
					Limits: agent.Limits{MaxSteps: 5}})
				if err != nil {
					t.Fatal(err)
				}
				if res.Failed() {
					t.Fatalf("failure: %v", res.Failure.Err)
				}
				var out string
				if res.Trajectory != nil && len(res.Trajectory.Steps) > 0 {
					out = res.Trajectory.Steps[0].Observation
				}
				if res.Reward != 0 {
					t.Errorf("reward %g (%s): the policy took the fix from git\npatch:\n%s\nits search:\n%s", res.Reward, res.RewardReason, res.Patch, out)
				}
				if !strings.Contains(out, "found: nothing") {
					t.Errorf("the policy found a commit outside HEAD's history:\n%s", out)
				}
				p := res.History
				if p == nil || !p.Clean || p.Stripped != (leak.name != "none") || p.Tags != 1 {
					t.Errorf("proof %+v: want clean, stripped unless nothing leaked, the tag v1 kept", p)
				} else {
					t.Logf("%s", p.Summary())
				}
			})
			t.Run("audit", func(t *testing.T) {
				box, wd, err := open(ctx, tk)
				if err != nil {
					t.Fatal(err)
				}
				defer box.Close(ctx)
				a, err := history.AuditBox(ctx, box, tk, wd)
				if err != nil {
					t.Fatal(err)
				}
				if (a.Leaks() == 0) != (leak.name == "none") {
					t.Errorf("audit of %s found %d: %q %q", image, a.Leaks(), a.Proof.Findings, a.Copies)
				} else {
					t.Logf("audit: %q", a.Proof.Findings)
				}
			})
			t.Run("gold", func(t *testing.T) {
				res, err := episode.Run(ctx, episode.Spec{Task: tk, Gold: true, Open: open, Grade: grade})
				if err != nil {
					t.Fatal(err)
				}
				if res.Reward != 1 {
					t.Errorf("gold reward %g (%s)", res.Reward, res.RewardReason)
				}
			})
		})
	}
}

// TestFutureHeadAndCopiesDocker: an image whose HEAD is the fix (its refs
// otherwise clean) is refused before the agent starts, with one line naming
// the task and the HEAD found. (Copies of the fix outside git:
// TestFutureCopiesDocker.)
func TestFutureHeadAndCopiesDocker(t *testing.T) {
	ctx := context.Background()
	b, mini := futureBackend(t, "test-future-head")
	cases := []struct{ name, plant string }{
		{"head at the fix", ""}, // below
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			image := "swerve-test-future-" + strings.ReplaceAll(tc.name, " ", "-") + ":latest"
			df := fmt.Sprintf(leakDockerfile, testutil.TestImage(), tc.plant)
			if tc.name == "head at the fix" {
				// Keep the fix as HEAD: build it on main, then nothing else.
				df = fmt.Sprintf(leakDockerfile, testutil.TestImage(), "git merge -q --ff-only fix && git branch -D fix && git reflog expire --expire=now --expire-unreachable=now --all && git prune --expire=now")
				df = strings.Replace(df, " && test \"$(git status --porcelain)\" = \"\" && grep -q 'a - b' calc.py", " && grep -q 'a + b' calc.py", 1)
			}
			var log strings.Builder
			if err := b.Build(ctx, docker.BuildOptions{ContextDir: t.TempDir(), Dockerfile: df, Tags: []string{image}, Progress: &log}); err != nil {
				t.Fatalf("build %s: %v\n%s", image, err, log.String())
			}
			open := func(ctx context.Context, tk *task.Task) (sandbox.Sandbox, string, error) {
				box, err := b.Open(ctx, sandbox.Spec{Image: image, Pull: sandbox.PullNever, Workdir: "/testbed"})
				return box, "/testbed", err
			}
			box, _, err := open(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			r, err := box.Exec(ctx, sandbox.ExecRequest{Cmd: []string{"git", "rev-parse", "v1^{commit}"}, Cwd: "/testbed"})
			box.Close(ctx)
			if err != nil || r.ExitCode != 0 {
				t.Fatalf("base commit: %v %s", err, r.Output)
			}
			base := strings.TrimSpace(string(r.Output))
			tk := &task.Task{
				InstanceID: "calc-" + strings.ReplaceAll(tc.name, " ", "-"), Repo: "calc/calc", Image: image, Grader: task.GraderSWEFactory,
				BaseCommit: base, Patch: fixedCalc, TestPatch: leakTestPatch, Version: "1.0",
				FailToPass: []string{"tests/test_add.py::test_add"}, PassToPass: []string{"tests/test_ops.py::test_zero"},
				EvalScript: "#!/bin/bash\nset -uxo pipefail\ncd /testbed\ngit apply -v - <<'EOF_PATCH'\n" + leakTestPatch +
					"EOF_PATCH\npython3 -m pytest -p no:cacheprovider -rA tests\nrc=$?\necho \"OMNIGRIL_EXIT_CODE=$rc\"\n",
			}
			model := llm.NewScripted("oracle/submit", []llm.Message{
				{Role: llm.RoleAssistant, Content: "Submitting.\n\n```bash\necho COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT\n```"},
			})
			res, err := episode.Run(ctx, episode.Spec{Task: tk, Scaffold: mini, Mode: agent.ModeText, Model: model, Open: open,
				Grade: episode.GradeOptions{EvalTimeout: 2 * time.Minute}, Limits: agent.Limits{MaxSteps: 3}})
			if err != nil {
				t.Fatal(err)
			}
			box, wd, err := open(ctx, tk)
			if err != nil {
				t.Fatal(err)
			}
			defer box.Close(ctx)
			a, err := history.AuditBox(ctx, box, tk, wd)
			if err != nil {
				t.Fatal(err)
			}
			if tc.name == "head at the fix" {
				if !res.Failed() || res.Reward != 0 || !strings.Contains(res.Failure.Err.Error(), "HEAD is ") || !strings.Contains(res.Failure.Err.Error(), tk.InstanceID) {
					t.Errorf("a box whose HEAD is the fix was handed over: failed %v reward %g err %v", res.Failed(), res.Reward, res.Failure)
				} else {
					t.Logf("refused: %v", res.Failure.Err)
				}
				if a.HeadIsBase {
					t.Errorf("audit: head_is_base with HEAD at the fix: %+v", a.Proof)
				}
				return
			}
		})
	}
}

// copyPolicy looks for copies of the project outside its repository (a
// wheel or source archive anywhere, an installed module in some
// site-packages) and takes calc.py from the first one it can read: the
// fix, when the image kept a newer copy of the project.
const copyPolicy = `cd /testbed
took=""
for w in $(find / -xdev \( -path /proc -o -path /sys -o -path /testbed \) -prune -o -name 'calc-*.whl' -print 2>/dev/null); do
  python3 -c "import sys, zipfile; open('/testbed/calc.py', 'wb').write(zipfile.ZipFile(sys.argv[1]).read('calc.py'))" "$w" && took=$w && break
done
if [ -z "$took" ]; then
  for m in $(find / -xdev \( -path /proc -o -path /sys -o -path /testbed \) -prune -o -path '*-packages/calc.py' -print 2>/dev/null); do
    cp "$m" /testbed/calc.py && took=$m && break
  done
fi
echo "took: ${took:-nothing}"
git diff | cat`

// TestFutureCopiesDocker: an image whose repository is clean (HEAD at the
// base commit, nothing past it in git) but which keeps a newer copy of the
// project holding the fix outside git, as a wheel in pip's cache or a
// module in another environment's site-packages, is refused before an
// agent sees it, with one line naming the task and where the copy is; a
// policy that takes the fix from such a copy never gets the box. An image
// whose copy does not hold the fix is handed over, and the proof says what
// was checked beyond git. The check runs once per image: a second box of
// the same image reads the answer kept under the image's id.
func TestFutureCopiesDocker(t *testing.T) {
	ctx := context.Background()
	b, mini := futureBackend(t, "test-future-copies")
	const clean = " && git branch -D fix && git reflog expire --expire=now --expire-unreachable=now --all && git prune --expire=now"
	wheel := func(version, rev string) string {
		return `git show ` + rev + `:calc.py > /tmp/calc.py && mkdir -p /root/.cache/pip/wheels/ab/cd && cd /tmp && python3 -c "import zipfile; z = zipfile.ZipFile('/root/.cache/pip/wheels/ab/cd/calc-` + version + `-py3-none-any.whl', 'w'); z.write('calc.py'); z.close()" && rm /tmp/calc.py && cd /testbed`
	}
	const site = `mkdir -p /opt/envs/old/lib/python3.11/site-packages/calc-1.1.0.dist-info && git show fix:calc.py > /opt/envs/old/lib/python3.11/site-packages/calc.py`
	cases := []struct {
		name, plant, where string // where: the copy a refusal must name; "" for none
	}{
		{"wheel-with-fix", wheel("1.1.0", "fix") + clean, "/root/.cache/pip/wheels/ab/cd/calc-1.1.0-py3-none-any.whl"},
		{"site-packages-with-fix", site + clean, "/opt/envs/old/lib/python3.11/site-packages/calc.py"},
		{"wheel-without-fix", wheel("0.9.0", "v1") + clean, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			image := "swerve-test-future-copies-" + tc.name + ":latest"
			var log strings.Builder
			if err := b.Build(ctx, docker.BuildOptions{ContextDir: t.TempDir(), Dockerfile: fmt.Sprintf(leakDockerfile, testutil.TestImage(), tc.plant), Tags: []string{image}, Progress: &log}); err != nil {
				t.Fatalf("build %s: %v\n%s", image, err, log.String())
			}
			open := func(ctx context.Context, tk *task.Task) (sandbox.Sandbox, string, error) {
				box, err := b.Open(ctx, sandbox.Spec{Image: image, Pull: sandbox.PullNever, Workdir: "/testbed"})
				return box, "/testbed", err
			}
			box, _, err := open(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			r, err := box.Exec(ctx, sandbox.ExecRequest{Cmd: []string{"git", "rev-parse", "v1^{commit}"}, Cwd: "/testbed"})
			box.Close(ctx)
			if err != nil || r.ExitCode != 0 {
				t.Fatalf("base commit: %v %s", err, r.Output)
			}
			tk := &task.Task{
				InstanceID: "calc-copies-" + tc.name, Repo: "calc/calc", Image: image, Grader: task.GraderSWEFactory,
				BaseCommit: strings.TrimSpace(string(r.Output)), Patch: fixedCalc, TestPatch: leakTestPatch, Version: "1.0",
				FailToPass: []string{"tests/test_add.py::test_add"}, PassToPass: []string{"tests/test_ops.py::test_zero"},
				EvalScript: "#!/bin/bash\nset -uxo pipefail\ncd /testbed\ngit apply -v - <<'EOF_PATCH'\n" + leakTestPatch +
					"EOF_PATCH\npython3 -m pytest -p no:cacheprovider -rA tests\nrc=$?\necho \"OMNIGRIL_EXIT_CODE=$rc\"\n",
			}
			model := llm.NewScripted("oracle/take-copy", []llm.Message{
				{Role: llm.RoleAssistant, Content: "Looking for a newer copy of the project.\n\n```bash\n" + copyPolicy + "\n```"},
				{Role: llm.RoleAssistant, Content: "Submitting.\n\n```bash\necho COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT\n```"},
			})
			res, err := episode.Run(ctx, episode.Spec{Task: tk, Scaffold: mini, Mode: agent.ModeText, Model: model, Open: open,
				Grade: episode.GradeOptions{EvalTimeout: 2 * time.Minute}, Limits: agent.Limits{MaxSteps: 5}})
			if err != nil {
				t.Fatal(err)
			}
			var out string
			if res.Trajectory != nil && len(res.Trajectory.Steps) > 0 {
				out = res.Trajectory.Steps[0].Observation
			}
			if tc.where != "" {
				if !res.Failed() || res.Reward != 0 || !strings.Contains(res.Failure.Err.Error(), tk.InstanceID) || !strings.Contains(res.Failure.Err.Error(), tc.where) {
					t.Errorf("a box whose image keeps the fix outside git was handed over: failed %v, reward %g (%s), failure %v\nthe policy's search:\n%s", res.Failed(), res.Reward, res.RewardReason, res.Failure, out)
				} else {
					t.Logf("refused: %v", res.Failure.Err)
				}
				if out != "" {
					t.Errorf("the agent ran in the box:\n%s", out)
				}
				return
			}
			if res.Failed() || res.Reward != 0 {
				t.Errorf("copy without the fix: failed %v (%v), reward %g", res.Failed(), res.Failure, res.Reward)
			}
			if p := res.History; p == nil || !p.Clean || !strings.Contains(p.BeyondGit, "calc-0.9.0-py3-none-any.whl") {
				t.Errorf("proof %+v: want clean, naming the copy it checked beyond git", p)
			} else {
				t.Logf("beyond git: %s", p.BeyondGit)
			}
			// Another box of the image: the answer kept under its id.
			box, wd, err := open(ctx, tk)
			if err != nil {
				t.Fatal(err)
			}
			defer box.Close(ctx)
			p, err := grader.PrepareBox(ctx, box, tk, "", wd, true)
			if err != nil || p.Copies == nil || !p.Copies.Cached {
				t.Errorf("second box: %v, copies %+v: want the kept answer", err, p)
			}
		})
	}
}
