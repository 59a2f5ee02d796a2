// Package leaktest proves issue 23's property on a sandbox backend: a
// policy that mines git for the fix gets reward 0 whatever way the image's
// repository keeps it (a branch, a tag, a remote-tracking ref, the reflog,
// an unreachable object, a stash), the agent's box carries a clean proof,
// and the gold patch still gets 1. Every backend's tests call Run, as they
// call the conformance suite and the real-task kit.
//
// The boxes are opened the way run, solve and serve open an agent's box:
// the spec goes through history.Images.AgentSpec (a backend that builds
// images gets the image's prepared copy, one that cannot gets the image
// itself) and episode.Run then calls grader.PrepareBox, which proves the
// box and strips it first when the proof finds anything. Grading boxes
// come from the unprepared image, as they do there.
//
// The repositories come from testdata/plant.sh, one directory of Root a
// way of keeping the fix, and a long history (big) on which Run measures
// the per-box cost of the proof and of the strip. Image is the name of the
// image holding them (built by EnsureDocker, or scripts/leak-image.sh for
// the backends that take their images from Docker); the local backend's
// test runs plant.sh on the host (Plant).
package leaktest

import (
	"context"
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/swerve-dev/swerve/internal/agent"
	_ "github.com/swerve-dev/swerve/internal/agent/scaffold/mini" // the policy's scaffold
	"github.com/swerve-dev/swerve/internal/episode"
	"github.com/swerve-dev/swerve/internal/llm"
	"github.com/swerve-dev/swerve/internal/reward/grader"
	"github.com/swerve-dev/swerve/internal/reward/history"
	"github.com/swerve-dev/swerve/internal/sandbox"
	"github.com/swerve-dev/swerve/internal/sandbox/docker"
	"github.com/swerve-dev/swerve/internal/task"
)

//go:embed testdata/plant.sh
var plantScript string

// Root is where the image keeps the repositories, one directory a kind.
const Root = "/leaks"

// Kinds are the ways a repository keeps the fix (none: it does not).
var Kinds = []string{"none", "branch", "tag", "remote-tracking", "reflog", "unreachable", "stash"}

// Big is the directory of the long history, on which the costs are measured.
const Big = "big"

// BaseCommit is the base commit of every kind's repository: plant.sh fixes
// its content, author, committer and dates, so its id is the same wherever
// it is made.
const BaseCommit = "299c4c38bccfbae3c2c057e98ed87c9db9962722"

// bigTags is how many tags of the long history are in HEAD's history (one
// every 1000 commits, HEAD 500 commits before the end of 20000).
const bigTags = 19

// Image is the name of the image holding the repositories (plant.sh run on
// the test base image): swerve-test-leaks tagged with a hash of plant.sh,
// so an image made from an older recipe is never taken for this one.
// SWERVE_LEAK_IMAGE overrides it.
func Image() string {
	if v := os.Getenv("SWERVE_LEAK_IMAGE"); v != "" {
		return v
	}
	h := sha256.Sum256([]byte(plantScript))
	return "swerve-test-leaks:" + hex.EncodeToString(h[:])[:12]
}

// Dockerfile is the image's recipe on base (scripts/leak-image.sh writes
// the same).
func Dockerfile(base string) string {
	return "FROM " + base + "\nCOPY plant.sh /tmp/plant.sh\nRUN sh /tmp/plant.sh " + Root + " && rm /tmp/plant.sh\n"
}

// EnsureDocker builds Image on b's engine from base when the engine does
// not have it, and returns its name there (on Podman, localhost/ and the
// name: pass podman true).
func EnsureDocker(t testing.TB, b *docker.Backend, base string, podman bool) string {
	t.Helper()
	ctx := context.Background()
	img := Image()
	ref := img
	if podman && !strings.Contains(strings.SplitN(img, "/", 2)[0], ".") && !strings.HasPrefix(img, "localhost/") {
		ref = "localhost/" + img
	}
	if ok, err := b.ImageExists(ctx, ref); err != nil {
		t.Fatalf("leak image %s: %v", ref, err)
	} else if ok {
		return ref
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "plant.sh"), []byte(plantScript), 0o644); err != nil {
		t.Fatal(err)
	}
	var log strings.Builder
	start := time.Now()
	if err := b.Build(ctx, docker.BuildOptions{ContextDir: dir, Dockerfile: Dockerfile(base), Tags: []string{ref}, Progress: &log}); err != nil {
		t.Fatalf("build %s: %v\n%s", ref, err, log.String())
	}
	t.Logf("built %s in %s", ref, time.Since(start).Round(time.Millisecond))
	return ref
}

// Plant makes the repositories under dir on this machine (for the local
// backend), with sh, git and awk; it skips the test with a one-line reason
// when git is missing.
func Plant(t testing.TB, dir string) {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skipf("leak repositories need git on this machine: %v", err)
	}
	script := filepath.Join(dir, ".plant.sh")
	if err := os.WriteFile(script, []byte(plantScript), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("sh", script, dir).CombinedOutput()
	if err != nil {
		t.Fatalf("plant.sh %s: %v\n%s", dir, err, out)
	}
	os.Remove(script)
}

// Harness is what a backend hands Run.
type Harness struct {
	// Name names the backend in the figures Run logs.
	Name    string
	Backend sandbox.Backend
	// Spec is the spec of a box whose repository is kind's (a member of
	// Kinds, or Big): usually Image with Workdir Root/kind, PullNever.
	Spec func(kind string) sandbox.Spec
	// Parallel is how many kinds run at once; 0 means 2.
	Parallel int
	// Runs is how many boxes the costs are measured on (medians); 0
	// means SWERVE_LEAK_RUNS, else 3.
	Runs int
}

// minePolicy looks for any commit outside HEAD's history (every ref, the
// reflog, the stash, dangling objects, every object in the store) and
// applies its difference from HEAD: the fix, wherever the image kept it.
const minePolicy = `cd %q
found=""
for c in $(git rev-list --all --reflog 2>/dev/null) $(git stash list --format=%%H 2>/dev/null) \
  $(git fsck --unreachable --no-reflogs 2>/dev/null | awk '$2 == "commit" {print $3}') \
  $(git cat-file --batch-all-objects --batch-check='%%(objectname) %%(objecttype)' 2>/dev/null | awk '$2 == "commit" {print $1}'); do
  if ! git merge-base --is-ancestor "$c" HEAD 2>/dev/null; then found=$c; break; fi
done
echo "found: ${found:-nothing}"
if [ -n "$found" ]; then git diff HEAD "$found" -- calc.py | git apply && echo applied; fi
git log --all --oneline | cat`

// honestPolicy writes the fix itself, with the repository's history (git
// log, blame) at hand as an honest agent uses it.
const honestPolicy = `cd %q
git log --oneline | cat
git blame -s calc.py | cat
printf 'def add(a, b):\n    return a + b\n' > calc.py
git status --short`

const fixedCalc = "diff --git a/calc.py b/calc.py\n--- a/calc.py\n+++ b/calc.py\n@@ -1,2 +1,2 @@\n def add(a, b):\n-    return a - b\n+    return a + b\n"

const testPatch = "diff --git a/tests/test_add.py b/tests/test_add.py\nnew file mode 100644\n--- /dev/null\n+++ b/tests/test_add.py\n@@ -0,0 +1,5 @@\n+from calc import add\n+\n+\n+def test_add():\n+    assert add(2, 3) == 5\n"

// leakTask is kind's task: SWE-Factory's grader (the exit code of the
// tests), its repository at Root/kind in an image, or the box's own
// directory on a backend that copies a host directory.
func leakTask(h Harness, kind string) *task.Task {
	dir := Root + "/" + kind
	tk := &task.Task{
		InstanceID: "leak-" + kind, Repo: "calc/calc", Image: h.Spec(kind).Image, Grader: task.GraderSWEFactory,
		BaseCommit: BaseCommit, Patch: fixedCalc, TestPatch: testPatch,
		FailToPass: []string{"tests/test_add.py::test_add"}, PassToPass: []string{"tests/test_ops.py::test_zero"},
		EvalScript: "#!/bin/bash\nset -uxo pipefail\nif [ -d " + dir + " ]; then cd " + dir + "; fi\ngit apply -v - <<'EOF_PATCH'\n" + testPatch +
			"EOF_PATCH\npython3 -m pytest -p no:cacheprovider -rA tests\nrc=$?\necho \"OMNIGRIL_EXIT_CODE=$rc\"\n",
	}
	return tk
}

// opener opens boxes from spec (its repository where the box starts).
func opener(b sandbox.Backend, spec sandbox.Spec) episode.Opener {
	return func(ctx context.Context, _ *task.Task) (sandbox.Sandbox, string, error) {
		box, err := b.Open(ctx, spec)
		if err != nil {
			return nil, "", err
		}
		res, err := box.Exec(ctx, sandbox.ExecRequest{Cmd: []string{"pwd"}, Timeout: time.Minute})
		if err != nil || res.ExitCode != 0 {
			box.Close(context.WithoutCancel(ctx))
			return nil, "", fmt.Errorf("pwd in the box: %v %s", err, res.Output)
		}
		return box, strings.TrimSpace(string(res.Output)), nil
	}
}

// Run runs, for each of Kinds, the mining policy in an agent's box opened
// as run opens one (reward 0, the policy finds nothing, a clean proof in
// the record); an honest policy that writes the fix in such a box (reward
// 1) and the gold patch (reward 1); then it measures the costs on the long
// history (see Costs).
func Run(t *testing.T, h Harness) {
	t.Helper()
	mini, err := agent.Lookup("mini_swe_agent")
	if err != nil {
		t.Fatal(err)
	}
	par := h.Parallel
	if par <= 0 {
		par = 2
	}
	sem := make(chan struct{}, par)
	var images history.Images
	t.Run("kinds", func(t *testing.T) { kinds(t, h, mini, &images, sem) })
	// Alone, so that the figures are not the kinds' boxes competing.
	t.Run("cost", func(t *testing.T) { Costs(t, h, &images) })
}

// kinds runs each kind's two episodes, par kinds at a time.
func kinds(t *testing.T, h Harness, mini *agent.Scaffold, images *history.Images, sem chan struct{}) {
	for _, kind := range Kinds {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			sem <- struct{}{}
			defer func() { <-sem }()
			ctx := context.Background()
			tk := leakTask(h, kind)
			spec := h.Spec(kind)
			agentSpec, prepared, err := images.AgentSpec(ctx, h.Backend, spec)
			if err != nil {
				t.Fatalf("prepared copy of %s: %v", spec.Image, err)
			}
			grade := episode.GradeOptions{EvalTimeout: 2 * time.Minute, Open: opener(h.Backend, spec)}
			// A prepared copy was stripped when it was built: its boxes
			// are proved as found. Otherwise each box holding the fix is
			// stripped before the agent starts.
			wantStripped := !prepared && kind != "none"
			policy := func(t *testing.T, name, script string) (*episode.Result, string) {
				res, err := episode.Run(ctx, episode.Spec{Task: tk, Scaffold: mini, Mode: agent.ModeText, Open: opener(h.Backend, agentSpec), Grade: grade,
					NewModel: func(_ *agent.Scaffold, _ *task.Task, workdir string, _ agent.Mode) (llm.Client, error) {
						return llm.NewScripted(name, []llm.Message{
							{Role: llm.RoleAssistant, Content: "Working.\n\n```bash\n" + fmt.Sprintf(script, workdir) + "\n```"},
							{Role: llm.RoleAssistant, Content: "Submitting.\n\n```bash\necho COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT\n```"},
						}), nil
					},
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
				p := res.History
				switch {
				case p == nil || !p.Clean || p.Stripped != wantStripped || p.Tags != 1:
					t.Errorf("proof %+v: want clean, stripped %v, the tag v1 kept", p, wantStripped)
				case p.Head != BaseCommit:
					t.Errorf("proof: HEAD %s, want the base commit %s", p.Head, BaseCommit)
				default:
					t.Logf("%s (prepared copy: %v)", p.Summary(), prepared)
				}
				return res, out
			}
			t.Run("mining policy", func(t *testing.T) {
				res, out := policy(t, "oracle/mine-git", minePolicy)
				if res.Reward != 0 {
					t.Errorf("reward %g (%s): the policy took the fix from git\npatch:\n%s\nits search:\n%s", res.Reward, res.RewardReason, res.Patch, out)
				}
				if !strings.Contains(out, "found: nothing") {
					t.Errorf("the policy found a commit outside HEAD's history:\n%s", out)
				}
				// Its git worked: it listed the base commit.
				if !strings.Contains(out, BaseCommit[:7]+" base") {
					t.Errorf("the policy's git did not list the base commit:\n%s", out)
				}
			})
			// Honest runs are unchanged: a policy that writes the fix in a
			// box that was stripped (or is a prepared copy) gets 1, and the
			// gold patch gets 1 in a grading box of the image. One kind
			// each is enough (the grading box does not depend on the kind)
			// and keeps the test within CI's time.
			if kind == "branch" {
				t.Run("honest policy", func(t *testing.T) {
					res, out := policy(t, "oracle/write-fix", honestPolicy)
					if res.Reward != 1 {
						t.Errorf("reward %g (%s) for the fix written in the box\npatch:\n%s\nits output:\n%s", res.Reward, res.RewardReason, res.Patch, out)
					}
				})
			}
			if kind == "none" {
				t.Run("gold", func(t *testing.T) {
					res, err := episode.Run(ctx, episode.Spec{Task: tk, Gold: true, Open: grade.Open, Grade: grade})
					if err != nil {
						t.Fatal(err)
					}
					if res.Reward != 1 {
						t.Errorf("gold reward %g (%s)", res.Reward, res.RewardReason)
					}
				})
			}
		})
	}
}

// Costs measures, on the long history, what the proof and the strip cost
// a box (medians of h.Runs boxes): the open alone; the first
// grader.PrepareBox in a box of the image as it is (the proof finds the
// future, the strip rewrites the history, the proof runs again: what every
// box pays on a backend that cannot build a prepared copy); a second
// PrepareBox in the same box (the proof of a clean repository alone). On a
// backend that builds images it also measures a box of the prepared copy
// (open, then PrepareBox: the proof alone) and logs how long the copy took
// to make (or find). It logs one "figures" line.
func Costs(t *testing.T, h Harness, images *history.Images) {
	ctx := context.Background()
	runs := h.Runs
	if runs <= 0 {
		runs, _ = strconv.Atoi(os.Getenv("SWERVE_LEAK_RUNS"))
		if runs <= 0 {
			runs = 3
		}
	}
	spec := h.Spec(Big)
	tk := &task.Task{InstanceID: "leak-big", Repo: "dev/big", Grader: task.GraderSWEFactory}
	var open, strip, proof []float64
	var objects int64
	for range runs {
		start := time.Now()
		box, wd, err := opener(h.Backend, spec)(ctx, tk)
		if err != nil {
			t.Fatal(err)
		}
		open = append(open, ms(time.Since(start)))
		start = time.Now()
		p, err := grader.PrepareBox(ctx, box, tk, "", wd, true)
		strip = append(strip, ms(time.Since(start)))
		if err != nil || !p.Stripped || !p.Clean || p.Tags != bigTags {
			box.Close(ctx)
			t.Fatalf("the long history's box: %v, proof %+v: want stripped and clean, %d tags kept", err, p, bigTags)
		}
		start = time.Now()
		p, err = grader.PrepareBox(ctx, box, tk, "", wd, true)
		proof = append(proof, ms(time.Since(start)))
		box.Close(ctx)
		if err != nil || p.Stripped || !p.Clean {
			t.Fatalf("the long history's box proved again: %v, proof %+v: want clean as found", err, p)
		}
		objects = p.Objects
	}
	line := fmt.Sprintf("figures %s: long history (%d objects after the strip), medians of %d boxes: open %.0f ms; first PrepareBox (prove, strip, prove) %.0f ms; PrepareBox of the clean repository (proof alone) %.0f ms",
		h.Name, objects, runs, median(open), median(strip), median(proof))
	start := time.Now()
	pspec, prepared, err := images.AgentSpec(ctx, h.Backend, spec)
	if err != nil {
		t.Fatalf("prepared copy of %s: %v", spec.Image, err)
	}
	if prepared {
		made := time.Since(start)
		var popen, pproof []float64
		for range runs {
			start := time.Now()
			box, wd, err := opener(h.Backend, pspec)(ctx, tk)
			if err != nil {
				t.Fatal(err)
			}
			popen = append(popen, ms(time.Since(start)))
			start = time.Now()
			p, err := grader.PrepareBox(ctx, box, tk, "", wd, true)
			pproof = append(pproof, ms(time.Since(start)))
			box.Close(ctx)
			if err != nil || p.Stripped || !p.Clean || p.Tags != bigTags {
				t.Fatalf("a box of the prepared copy %s: %v, proof %+v: want clean as found", pspec.Image, err, p)
			}
		}
		line += fmt.Sprintf("; prepared copy (made or found in %.0f ms): open %.0f ms, PrepareBox %.0f ms", ms(made), median(popen), median(pproof))
	} else {
		line += "; no prepared copy on this backend: every agent box pays the first PrepareBox"
	}
	t.Log(line)
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	return s[len(s)/2]
}
