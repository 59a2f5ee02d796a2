package harbor

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/moby/moby/client"

	"github.com/swerve-dev/swerve/internal/reward/grader"
	rharbor "github.com/swerve-dev/swerve/internal/reward/harbor"
	"github.com/swerve-dev/swerve/internal/sandbox"
	"github.com/swerve-dev/swerve/internal/sandbox/docker"
	"github.com/swerve-dev/swerve/internal/sandbox/local"
	"github.com/swerve-dev/swerve/internal/task"
	"github.com/swerve-dev/swerve/internal/testutil"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/golden")

// loadRows loads a dataset of the repository (path relative to its root).
func loadRows(t *testing.T, rel string) []task.Task {
	t.Helper()
	res, err := task.Load(context.Background(), filepath.Join(testutil.RepoRoot(t), rel), task.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return res.Tasks
}

func pick(t *testing.T, tasks []task.Task, id string) task.Task {
	t.Helper()
	for _, tk := range tasks {
		if tk.InstanceID == id {
			return tk
		}
	}
	t.Fatalf("no task %s", id)
	return task.Task{}
}

func TestConvertDirName(t *testing.T) {
	for in, want := range map[string]string{
		"django__django-11099":         "django__django-11099",
		"gabime__spdlog-3398":          "gabime__spdlog-3398",
		"org/repo:1.2":                 "org_repo_1.2",
		".hidden":                      "_hidden",
		"a b\tc":                       "a_b_c",
		"naïve":                        "na_ve",
		"pandas.95280573.pr_53652":     "pandas.95280573.pr_53652",
		"..":                           "_.",
		"":                             "",
		"//":                           "",
		"R2E-Gym/aiohttp-0123456789ab": "R2E-Gym_aiohttp-0123456789ab",
	} {
		if got := DirName(in); got != want {
			t.Errorf("DirName(%q) = %q, want %q", in, got, want)
		}
	}
}

// factoryRow is a small SWE-Factory-graded task held in memory.
func factoryRow(id string) task.Task {
	return task.Task{
		InstanceID:       id,
		Repo:             "owner/name",
		BaseCommit:       "0123456789abcdef0123456789abcdef01234567",
		ProblemStatement: "Something is broken.\n",
		Patch:            "diff --git a/a b/a\n--- a/a\n+++ b/a\n@@ -1 +1 @@\n-x\n+y\n",
		EvalScript:       "#!/bin/bash\ncd /testbed\nmake test\necho \"OMNIGRIL_EXIT_CODE=$?\"\n",
		Dockerfile:       "FROM ubuntu:22.04\nRUN git clone https://example.invalid/owner/name /testbed\n",
		Image:            "owner__name-1_swefactory_root",
		Grader:           task.GraderSWEFactory,
		Dialect:          task.DialectSWEFactory,
	}
}

func TestConvertRefusesRows(t *testing.T) {
	src := t.TempDir()
	for _, tt := range []struct {
		name   string
		edit   func(*task.Task)
		opts   Options
		reason string
	}{
		{"swebench grader", func(tk *task.Task) { tk.Grader = task.GraderSWEBench }, Options{}, "graded by swebench, which parses the test log"},
		{"swesmith grader", func(tk *task.Task) { tk.Grader = task.GraderSWESmith }, Options{}, "graded by swesmith"},
		{"r2e grader", func(tk *task.Task) { tk.Grader = task.GraderR2E }, Options{}, "graded by r2e"},
		{"harbor task", func(tk *task.Task) { tk.Grader, tk.Dialect, tk.TaskDir = task.GraderHarbor, task.DialectHarbor, "/x" }, Options{}, "a Harbor task already"},
		{"no eval script", func(tk *task.Task) { tk.EvalScript = " \n" }, Options{}, "eval_script: empty"},
		{"no marker", func(tk *task.Task) { tk.EvalScript = "#!/bin/bash\npytest\n" }, Options{}, "never prints OMNIGRIL_EXIT_CODE=<n>"},
		{"no issue", func(tk *task.Task) { tk.ProblemStatement = "\n" }, Options{}, "problem_statement: empty"},
		{"no name", func(tk *task.Task) { tk.InstanceID = "///" }, Options{}, "leaves nothing to name a directory with"},
		{"no environment", func(tk *task.Task) { tk.Dockerfile, tk.Image = "", "" }, Options{}, "no Dockerfile and no image"},
		{"source without base image", func(tk *task.Task) { tk.Dockerfile, tk.Image, tk.SourceDir = "", "", src }, Options{}, "pass a base image (--base-image)"},
		{"missing source", func(tk *task.Task) { tk.Dockerfile, tk.SourceDir = "", filepath.Join(src, "gone") }, Options{BaseImage: "base"}, "is not a directory"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tk := factoryRow("owner__name-1")
			tt.edit(&tk)
			opts := tt.opts
			opts.Config = DefaultConfig()
			_, err := Render(&tk, opts)
			ue, ok := errors.AsType[*UnsupportedError](err)
			if !ok || !strings.Contains(ue.Reason, tt.reason) || !strings.HasPrefix(err.Error(), "task "+tk.InstanceID+": cannot convert") {
				t.Errorf("err = %v; want an UnsupportedError with %q", err, tt.reason)
			}
		})
	}
}

func TestConvertEnvironment(t *testing.T) {
	src := t.TempDir()
	base := Options{Config: DefaultConfig()}
	withBase := base
	withBase.BaseImage = "swerve-test-base:bookworm"
	for _, tt := range []struct {
		name       string
		edit       func(*task.Task)
		opts       Options
		env        string
		dockerfile string
		source     string
	}{
		{"row's Dockerfile", func(*task.Task) {}, base, EnvDockerfile, "FROM ubuntu:22.04\nRUN git clone https://example.invalid/owner/name /testbed\n", ""},
		{"row's Dockerfile before the base image", func(tk *task.Task) { tk.SourceDir = src }, withBase, EnvDockerfile, "FROM ubuntu:22.04\nRUN git clone https://example.invalid/owner/name /testbed\n", ""},
		{"image only", func(tk *task.Task) { tk.Dockerfile = "" }, base, EnvImage, "FROM owner__name-1_swefactory_root\n", ""},
		{"image named by the row, with a source", func(tk *task.Task) {
			tk.Dockerfile, tk.SourceDir, tk.Raw = "", src, json.RawMessage(`{"docker_image":"owner__name-1_swefactory_root"}`)
		}, base, EnvImage, "FROM owner__name-1_swefactory_root\n", ""},
		{"source on the base image", func(tk *task.Task) { tk.Dockerfile, tk.Image, tk.SourceDir = "", "", src }, withBase, EnvSource, sourceDockerfile("swerve-test-base:bookworm"), src},
		{"the loader's image guess is not used for a source", func(tk *task.Task) { tk.Dockerfile, tk.SourceDir = "", src }, withBase, EnvSource, sourceDockerfile("swerve-test-base:bookworm"), src},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tk := factoryRow("owner__name-1")
			tt.edit(&tk)
			r, err := Render(&tk, tt.opts)
			if err != nil {
				t.Fatal(err)
			}
			if r.Env != tt.env || r.SourceDir != tt.source {
				t.Errorf("env %q source %q; want %q %q", r.Env, r.SourceDir, tt.env, tt.source)
			}
			got := ""
			for _, f := range r.Files {
				if f.Path == "environment/Dockerfile" {
					got = string(f.Data)
				}
			}
			if got != tt.dockerfile {
				t.Errorf("Dockerfile:\n%s\nwant:\n%s", got, tt.dockerfile)
			}
		})
	}
	t.Run("the loader's image guess without a base image", func(t *testing.T) {
		tk := factoryRow("owner__name-1")
		tk.Dockerfile, tk.SourceDir = "", src
		if _, err := Render(&tk, base); err == nil || !strings.Contains(err.Error(), "--base-image") {
			t.Errorf("err = %v", err)
		}
	})
	t.Run("no gold patch, no solution", func(t *testing.T) {
		tk := factoryRow("owner__name-1")
		tk.Patch = ""
		r, err := Render(&tk, base)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range r.Files {
			if strings.HasPrefix(f.Path, "solution/") {
				t.Errorf("%s written without a gold patch", f.Path)
			}
		}
		if r.Solution {
			t.Error("Solution set")
		}
	})
}

func TestConvertTaskTOML(t *testing.T) {
	tk := factoryRow("owner__name-1")
	tk.Language = "cpp"
	tk.Raw = json.RawMessage(`{"difficulty":"15 min - 1 hour"}`)
	c := DefaultConfig()
	c.VerifierTimeout, c.CPUs, c.AuthorName = 90*time.Second, 4, "Jane \"J\" O'Neil"
	b, err := taskTOML(&tk, c)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for p, data := range map[string]string{
		"task.toml": string(b), "instruction.md": "x", "tests/test.sh": "", "environment/Dockerfile": "FROM x\n",
	} {
		os.MkdirAll(filepath.Dir(filepath.Join(dir, p)), 0o755)
		os.WriteFile(filepath.Join(dir, p), []byte(data), 0o644)
	}
	// Read back the way swerve reads Harbor tasks.
	res, err := task.Load(context.Background(), dir, task.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(res.Tasks[0].Raw, &got); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"version": "1.0",
		"metadata": map[string]any{
			"author_name": "Jane \"J\" O'Neil", "author_email": "unknown", "difficulty": "medium",
			"category": "software-engineering", "tags": []any{"swe", "swefactory", "cpp"},
			"instance_id": "owner__name-1", "repo": "owner/name", "base_commit": tk.BaseCommit,
		},
		"verifier":    map[string]any{"timeout_sec": 90.0},
		"agent":       map[string]any{"timeout_sec": 3600.0},
		"environment": map[string]any{"build_timeout_sec": 1800.0, "cpus": 4.0, "memory_mb": 4096.0, "storage_mb": 10240.0},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("task.toml (-want +got):\n%s\n%s", d, b)
	}
	if rharbor.VerifierTimeout(&res.Tasks[0]) != 90*time.Second {
		t.Errorf("the harbor grader reads a verifier timeout of %v", rharbor.VerifierTimeout(&res.Tasks[0]))
	}
	c.MemoryMB = 0
	if _, err := taskTOML(&tk, c); err == nil || !strings.Contains(err.Error(), "memory_mb must be positive") {
		t.Errorf("zero memory: %v", err)
	}
}

func TestConvertHeredocDelimiter(t *testing.T) {
	// A diff line never equals the delimiter (diff lines start with ' ',
	// '+', '-' or a header word), but a row's patch may be anything.
	if got := heredocDelimiter("a\n EOF_SWERVE_GOLD_PATCH\n", "EOF_SWERVE_GOLD_PATCH"); got != "EOF_SWERVE_GOLD_PATCH" {
		t.Errorf("delimiter %q", got)
	}
	if got := heredocDelimiter("a\nEOF_SWERVE_GOLD_PATCH\nEOF_SWERVE_GOLD_PATCH_1\n", "EOF_SWERVE_GOLD_PATCH"); got != "EOF_SWERVE_GOLD_PATCH_2" {
		t.Errorf("delimiter %q", got)
	}
	if s := solveScript("x", "EOF_SWERVE_GOLD_PATCH\n"); !strings.Contains(s, "<<'EOF_SWERVE_GOLD_PATCH_1'\nEOF_SWERVE_GOLD_PATCH\nEOF_SWERVE_GOLD_PATCH_1\n") {
		t.Errorf("solve.sh does not use a fresh delimiter:\n%s", s)
	}

	// solve.sh applies, byte for byte, a diff holding $ signs, backquotes,
	// backslashes, a file without a final newline, and no newline after
	// the diff itself, in a git repository on the host.
	dir := t.TempDir()
	const before, after = "$HOME `x` \\n\nold\nEOF_SWERVE_GOLD_PATCH", "$HOME `x` \\n\nnew\nEOF_SWERVE_GOLD_PATCH"
	if err := os.WriteFile(filepath.Join(dir, "f"), []byte(before), 0o644); err != nil {
		t.Fatal(err)
	}
	gitRun(t, dir, "init", "-q")
	gitRun(t, dir, "add", "-A")
	gitRun(t, dir, "-c", "user.name=t", "-c", "user.email=t@t", "-c", "commit.gpgsign=false", "commit", "-q", "-m", "x")
	os.WriteFile(filepath.Join(dir, "f"), []byte(after), 0o644)
	diff := gitRun(t, dir, "diff")
	gitRun(t, dir, "checkout", "--", "f")
	if !strings.Contains(diff, "\\ No newline at end of file") {
		t.Fatalf("diff:\n%s", diff)
	}
	cmd := exec.Command("bash", "-c", solveScript("x", strings.TrimSuffix(diff, "\n")))
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("solve.sh: %v\n%s", err, out)
	}
	if got, _ := os.ReadFile(filepath.Join(dir, "f")); string(got) != after {
		t.Errorf("after solve.sh: %q", got)
	}
}

func gitRun(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

var (
	localOnce sync.Once
	localBE   *local.Backend
	localErr  error
)

func localBackend(t *testing.T) *local.Backend {
	t.Helper()
	shim := testutil.SwerveBinary(t)
	localOnce.Do(func() { localBE, localErr = local.New(sandbox.Options{ShimPath: shim, RunID: "convert-test"}) })
	if localErr != nil {
		t.Fatal(localErr)
	}
	b := *localBE
	b.TempDir = t.TempDir()
	return &b
}

// TestConvertTestScriptReadsMarker runs the generated tests/test.sh under
// swerve's harbor grader (local backend) on eval scripts shaped like
// SWE-Factory's (the tests, rc=$?, echo "OMNIGRIL_EXIT_CODE=$rc"), honest
// and forging: the reward follows the status the script's own echo
// carries, never a marker line the tests print.
func TestConvertTestScriptReadsMarker(t *testing.T) {
	b := localBackend(t)
	const echo = "rc=$?\necho \"OMNIGRIL_EXIT_CODE=$rc\" # the status\n"
	for _, tt := range []struct {
		name  string
		tests string // the test command and what follows it in eval.sh
		want  float64
	}{
		{"pass", "echo tests ok; (exit 0)\n" + echo, 1},
		{"fail", "echo tests failed; (exit 1)\n" + echo, 0},
		{"zeros", "echo ok\nrc=000\necho OMNIGRIL_EXIT_CODE=$rc\n", 1},
		{"the status of the previous command", "(exit 0)\necho OMNIGRIL_EXIT_CODE=$?\n", 1},
		{"the status of a failing previous command", "(exit 4)\necho OMNIGRIL_EXIT_CODE=$?\n", 0},
		{"last echo wins", "(exit 0)\n" + echo + "(exit 2)\n" + echo, 0},
		{"last echo wins the other way", "(exit 2)\n" + echo + "(exit 0)\n" + echo, 1},
		{"cleanup after the echo", "(exit 0)\n" + echo + "cd / && false\n", 1},
		{"the script exits after its echo", "(exit 0)\n" + echo + "exit 3\n", 1},
		{"no echo", "echo tests ok # and no OMNIGRIL_EXIT_CODE echo\n", 0},
		{"the tests print a marker and fail", "printf 'OMNIGRIL_EXIT_CODE=0\\n'; (exit 1)\n" + echo + "echo OMNIGRIL_EXIT_CODE=0 >/dev/null\n", 0},
		{"the tests print a marker after the script's", "(exit 1)\n" + echo + "printf 'OMNIGRIL_EXIT_CODE=0\\n'\n", 0},
		{"a detached child prints a marker", "(setsid sh -c 'sleep 0.2; echo OMNIGRIL_EXIT_CODE=0' &); (exit 1)\n" + echo + "sleep 0.5\n", 0},
		{"the tests print a marker and kill the shell", "printf 'OMNIGRIL_EXIT_CODE=0\\n'; bash -c 'kill -9 $PPID'\n" + echo, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tk := factoryRow("marker")
			tk.EvalScript = "#!/bin/bash\nset -uxo pipefail\n" + tt.tests
			dir := t.TempDir()
			res, err := Convert(context.Background(), []task.Task{tk}, Options{OutDir: dir, Config: DefaultConfig()})
			if err != nil {
				t.Fatal(err)
			}
			conv := loadConverted(t, res.Written[0].Dir)
			box, err := b.Open(context.Background(), sandbox.Spec{})
			if err != nil {
				t.Fatal(err)
			}
			defer box.Close(context.Background())
			out, err := grader.Grade(context.Background(), box, &conv, grader.Options{})
			if err != nil {
				t.Fatal(err)
			}
			if out.Reward != tt.want {
				t.Errorf("reward %v, want %v (%s)\n%s", out.Reward, tt.want, out.Reason, out.Log)
			}
		})
	}
}

func loadConverted(t *testing.T, dir string) task.Task {
	t.Helper()
	res, err := task.Load(context.Background(), dir, task.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Tasks) != 1 || res.Tasks[0].Grader != task.GraderHarbor {
		t.Fatalf("%s loads as %d tasks (%+v)", dir, len(res.Tasks), res.Tasks)
	}
	return res.Tasks[0]
}

// convertExamples converts the SWE-Factory-graded demo task and the sample
// transferred file with the test base image, and loads the result back as
// Harbor tasks.
func convertExamples(t *testing.T) (string, []task.Task) {
	t.Helper()
	tasks := append(loadRows(t, "internal/demo/tasks/tasks.jsonl"), loadRows(t, "examples/sample/sample_transferred.json")...)
	out := t.TempDir()
	res, err := Convert(context.Background(), tasks, Options{OutDir: out, BaseImage: testutil.TestImage(), SkipUnsupported: true, Config: DefaultConfig()})
	if err != nil {
		t.Fatal(err)
	}
	var written, skipped []string
	for _, w := range res.Written {
		written = append(written, w.InstanceID)
		if w.Env != EnvSource || !w.Solution {
			t.Errorf("%s: env %s, solution %v", w.InstanceID, w.Env, w.Solution)
		}
	}
	for _, s := range res.Skipped {
		skipped = append(skipped, s.InstanceID)
		if !strings.Contains(s.Reason, "graded by swebench") {
			t.Errorf("%s skipped for %s", s.InstanceID, s.Reason)
		}
	}
	if !slices.Equal(written, []string{"demo__semver-1", "sample__calc-1", "sample__calc-2"}) || !slices.Equal(skipped, []string{"demo__textstats-1", "demo__intervals-1"}) {
		t.Fatalf("written %v, skipped %v", written, skipped)
	}
	loaded, err := task.Load(context.Background(), out, task.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(loaded.Tasks) != 3 {
		t.Fatalf("%d tasks load back", len(loaded.Tasks))
	}
	return out, loaded.Tasks
}

// pytestPath returns a PATH whose python3 has pytest (the sample tasks run
// it), or "" with the reason.
func pytestPath() (string, string) {
	if out, err := exec.Command("/usr/bin/python3", "-m", "pytest", "--version").CombinedOutput(); err != nil {
		return "", fmt.Sprintf("/usr/bin/python3 has no pytest (apt-get install python3-pytest): %v: %s", err, out)
	}
	return "/usr/bin:" + os.Getenv("PATH"), ""
}

// TestConvertGradesLocal grades the converted tasks with swerve's harbor
// grader on the local backend, each box a copy of the task's
// environment/repo: solution/solve.sh then tests/test.sh gives reward 1,
// tests/test.sh alone 0.
func TestConvertGradesLocal(t *testing.T) {
	path, why := pytestPath()
	if path != "" {
		t.Setenv("PATH", path)
	}
	_, tasks := convertExamples(t)
	b := localBackend(t)
	grade := func(t *testing.T, tk *task.Task, gold bool) *grader.Outcome {
		t.Helper()
		box, err := b.Open(context.Background(), sandbox.Spec{Image: filepath.Join(tk.TaskDir, "environment", RepoDir)})
		if err != nil {
			t.Fatal(err)
		}
		defer box.Close(context.Background())
		out, err := grader.Grade(context.Background(), box, tk, grader.Options{Gold: gold})
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	for i := range tasks {
		tk := &tasks[i]
		t.Run(tk.InstanceID, func(t *testing.T) {
			if strings.HasPrefix(tk.InstanceID, "sample__") && path == "" {
				if os.Getenv("CI") != "" {
					t.Fatal(why)
				}
				t.Skip(why)
			}
			checkOutcomes(t, grade(t, tk, true), grade(t, tk, false))
		})
	}
}

func checkOutcomes(t *testing.T, gold, none *grader.Outcome) {
	t.Helper()
	if gold.Grader != task.GraderHarbor || gold.Reward != 1 || gold.Reason != "resolved" {
		t.Errorf("with solve.sh: %s reward %v (%s)\n%s", gold.Grader, gold.Reward, gold.Reason, gold.Log)
	}
	if none.Reward != 0 || none.Reason != "tests failed: reward 0 from reward.txt" {
		t.Errorf("without solve.sh: reward %v (%s)\n%s", none.Reward, none.Reason, none.Log)
	}
	if !strings.Contains(gold.Log, "swerve: OMNIGRIL_EXIT_CODE=0, reward 1") {
		t.Errorf("gold log lacks test.sh's verdict:\n%s", gold.Log)
	}
}

// TestConvertGradesDocker builds each converted task's
// environment/Dockerfile (FROM the local test base image, no registry)
// and grades it in containers from that image with swerve's harbor grader.
func TestConvertGradesDocker(t *testing.T) {
	ctx := context.Background()
	if err := docker.Probe(ctx); err != nil {
		testutil.SkipOrFail(t, "no container engine: %v", err)
	}
	b, err := docker.New(ctx, docker.Config{Options: sandbox.Options{ShimPath: testutil.SwerveBinary(t), RunID: fmt.Sprintf("convert-test-%d", os.Getpid())}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Client().ImageInspect(ctx, testutil.TestImage()); err != nil {
		testutil.SkipOrFail(t, "test image %s missing (build it with scripts/test-image.sh): %v", testutil.TestImage(), err)
	}
	_, tasks := convertExamples(t)
	for i := range tasks {
		tk := &tasks[i]
		t.Run(tk.InstanceID, func(t *testing.T) {
			t.Parallel()
			tag := fmt.Sprintf("swerve-convert-test-%s:%d", strings.ToLower(DirName(tk.InstanceID)), os.Getpid())
			var log bytes.Buffer
			if err := b.Build(ctx, docker.BuildOptions{ContextDir: filepath.Join(tk.TaskDir, "environment"), Dockerfile: tk.Dockerfile, Tags: []string{tag}, Progress: &log}); err != nil {
				t.Fatalf("build: %v\n%s", err, log.String())
			}
			t.Cleanup(func() {
				b.Client().ImageRemove(context.Background(), tag, client.ImageRemoveOptions{Force: true, PruneChildren: true})
			})
			grade := func(gold bool) *grader.Outcome {
				box, err := b.Open(ctx, sandbox.Spec{Image: tag, Pull: sandbox.PullNever})
				if err != nil {
					t.Fatal(err)
				}
				defer box.Close(context.Background())
				if gold {
					// The image is a clean git repository at /testbed.
					res, err := box.Exec(ctx, sandbox.ExecRequest{Cmd: sandbox.Bash("pwd && git status --porcelain"), Timeout: time.Minute})
					if err != nil || res.ExitCode != 0 || string(res.Output) != "/testbed\n" {
						t.Errorf("box state: %v, exit %d: %q", err, res.ExitCode, res.Output)
					}
				}
				out, err := grader.Grade(ctx, box, tk, grader.Options{Gold: gold})
				if err != nil {
					t.Fatal(err)
				}
				return out
			}
			checkOutcomes(t, grade(true), grade(false))
		})
	}
}

// TestConvertGolden compares the converted sample__calc-1 with
// testdata/golden (go test -run ConvertGolden -update rewrites it);
// environment/repo is compared with the sample repository itself.
func TestConvertGolden(t *testing.T) {
	root := testutil.RepoRoot(t)
	tk := pick(t, loadRows(t, "examples/sample/sample_transferred.json"), "sample__calc-1")
	out := t.TempDir()
	res, err := Convert(context.Background(), []task.Task{tk}, Options{OutDir: out, BaseImage: "swerve-test-base:bookworm", Config: DefaultConfig()})
	if err != nil {
		t.Fatal(err)
	}
	dir := res.Written[0].Dir
	got := readTree(t, dir, "environment/"+RepoDir)
	golden := filepath.Join("testdata", "golden", "sample__calc-1")
	if *update {
		os.RemoveAll(golden)
		for p, f := range got {
			dst := filepath.Join(golden, filepath.FromSlash(p))
			os.MkdirAll(filepath.Dir(dst), 0o755)
			mode := fs.FileMode(0o644)
			if f.exec {
				mode = 0o755
			}
			if err := os.WriteFile(dst, []byte(f.data), mode); err != nil {
				t.Fatal(err)
			}
			os.Chmod(dst, mode)
		}
	}
	if d := cmp.Diff(readTree(t, golden, ""), got, cmp.AllowUnexported(treeFile{})); d != "" {
		t.Errorf("converted task differs from %s (-golden +got):\n%s", golden, d)
	}
	repo := readTree(t, filepath.Join(dir, "environment", RepoDir), "")
	if d := cmp.Diff(readTree(t, filepath.Join(root, "examples", "sample", "repo"), ""), repo, cmp.AllowUnexported(treeFile{})); d != "" {
		t.Errorf("environment/repo differs from the sample repository (-want +got):\n%s", d)
	}
	if string(mustRead(t, filepath.Join(dir, "tests", "eval.sh"))) != tk.EvalScript {
		t.Error("tests/eval.sh is not the eval script byte for byte")
	}
}

type treeFile struct {
	data string
	exec bool // git keeps only this bit; the rest depends on the umask
}

// readTree reads every file under dir (skipping the subtree skip) and
// whether it is executable, keyed by slash path.
func readTree(t *testing.T, dir, skip string) map[string]treeFile {
	t.Helper()
	files := map[string]treeFile{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if skip != "" && rel == skip {
				return filepath.SkipDir
			}
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		files[rel] = treeFile{string(data), info.Mode()&0o111 != 0}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

func mustRead(t *testing.T, p string) []byte {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestConvertExistingAndCollisions(t *testing.T) {
	out := t.TempDir()
	opts := Options{OutDir: out, Config: DefaultConfig()}
	a := factoryRow("org/repo-1")
	if _, err := Convert(context.Background(), []task.Task{a}, opts); err != nil {
		t.Fatal(err)
	}
	stray := filepath.Join(out, "org_repo-1", "stray.txt")
	os.WriteFile(stray, []byte("old"), 0o644)

	// Refused, and nothing written: b would be new, but a's directory exists.
	b := factoryRow("other-2")
	_, err := Convert(context.Background(), []task.Task{b, a}, opts)
	if err == nil || !strings.Contains(err.Error(), filepath.Join(out, "org_repo-1")+" exists already; pass --force") {
		t.Errorf("err = %v", err)
	}
	if _, err := os.Stat(filepath.Join(out, "other-2")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("other-2 written although the run was refused: %v", err)
	}

	opts.Force = true
	res, err := Convert(context.Background(), []task.Task{b, a}, opts)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Written) != 2 || res.Written[0].Replaced || !res.Written[1].Replaced {
		t.Errorf("written %+v", res.Written)
	}
	if _, err := os.Stat(stray); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the replaced directory kept %s", stray)
	}
	ents, _ := os.ReadDir(out)
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	if !slices.Equal(names, []string{"org_repo-1", "other-2"}) {
		t.Errorf("out dir holds %v (temporary directories left?)", names)
	}

	_, err = Convert(context.Background(), []task.Task{factoryRow("x/y"), factoryRow("X:y")}, Options{OutDir: t.TempDir(), Config: DefaultConfig()})
	if err == nil || !strings.Contains(err.Error(), "tasks x/y and X:y would both be written to") {
		t.Errorf("collision: %v", err)
	}

	bad := factoryRow("bad-1")
	bad.Grader = task.GraderSWEBench
	bad2 := factoryRow("bad-2")
	bad2.EvalScript = "pytest\n"
	_, err = Convert(context.Background(), []task.Task{bad, factoryRow("good"), bad2}, Options{OutDir: t.TempDir(), Config: DefaultConfig()})
	if err == nil || !strings.HasPrefix(err.Error(), "2 tasks cannot be converted to Harbor tasks:\n  bad-1: graded by swebench") || !strings.Contains(err.Error(), "\n  bad-2: eval_script never prints") {
		t.Errorf("unsupported rows: %v", err)
	}
}

// TestConvertFilesAndOptions: tests/test.patch is written when the row has
// a test patch, --no-solution leaves solution/ out, instruction.md holds
// the issue and the repository section, and --jobs keeps input order.
func TestConvertFilesAndOptions(t *testing.T) {
	withTests := factoryRow("owner__name-1")
	withTests.TestPatch = "diff --git a/t b/t\n--- a/t\n+++ b/t\n@@ -1 +1 @@\n-a\n+b\n"
	for _, tt := range []struct {
		name         string
		tk           task.Task
		opts         Options
		testPatch    bool
		solution     bool
		instructions []string
	}{
		{"test patch", withTests, Options{}, true, true, []string{"Something is broken.\n\n---\n\n## Repository\n", "- repository: `owner/name`\n", "- base commit: `0123456789abcdef0123456789abcdef01234567`\n", "`/testbed`", "## What to do\n"}},
		{"no test patch", factoryRow("owner__name-1"), Options{}, false, true, []string{"Something is broken.\n"}},
		{"no solution", withTests, Options{NoSolution: true}, true, false, []string{"- task: `owner__name-1`\n"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			opts := tt.opts
			opts.Config = DefaultConfig()
			r, err := Render(&tt.tk, opts)
			if err != nil {
				t.Fatal(err)
			}
			files := map[string]string{}
			for _, f := range r.Files {
				files[f.Path] = string(f.Data)
			}
			if got, ok := files["tests/test.patch"]; ok != tt.testPatch || (ok && got != tt.tk.TestPatch) {
				t.Errorf("tests/test.patch present %v (%q); want %v, the row's test patch", ok, got, tt.testPatch)
			}
			if _, ok := files["solution/solve.sh"]; ok != tt.solution || r.Solution != tt.solution {
				t.Errorf("solution/solve.sh present %v, Solution %v; want %v", ok, r.Solution, tt.solution)
			}
			for _, want := range tt.instructions {
				if !strings.Contains(files["instruction.md"], want) {
					t.Errorf("instruction.md lacks %q:\n%s", want, files["instruction.md"])
				}
			}
		})
	}

	var tasks []task.Task
	for i := range 20 {
		tasks = append(tasks, factoryRow(fmt.Sprintf("owner__name-%02d", i)))
	}
	out := t.TempDir()
	res, err := Convert(context.Background(), tasks, Options{OutDir: out, Jobs: 4, Config: DefaultConfig()})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Written) != len(tasks) {
		t.Fatalf("wrote %d of %d", len(res.Written), len(tasks))
	}
	for i, w := range res.Written {
		if w.InstanceID != tasks[i].InstanceID {
			t.Errorf("Written[%d] = %s; want input order (%s)", i, w.InstanceID, tasks[i].InstanceID)
		}
		if _, err := os.Stat(filepath.Join(w.Dir, "task.toml")); err != nil {
			t.Error(err)
		}
	}
}

// TestConvertEvidenceLocal: a patch whose code ends pytest's session with
// a status the shell reads as 0 (pytest.exit(returncode=256), which the
// static check does not know) makes the eval script echo
// OMNIGRIL_EXIT_CODE=0 and test.sh write 1; the grader's record of the
// tests expected_tests.json names finds none of them, and the reward is 0.
func TestConvertEvidenceLocal(t *testing.T) {
	path, why := pytestPath()
	if path == "" {
		testutil.SkipOrFail(t, "%s", why)
	}
	t.Setenv("PATH", path)
	_, tasks := convertExamples(t)
	tk := pick(t, tasks, "sample__calc-1")
	if _, err := os.Stat(filepath.Join(tk.TaskDir, "tests", "expected_tests.json")); err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile(filepath.Join(tk.TaskDir, "environment", RepoDir, "calc.py"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(string(src), "\n"), "\n")
	n := len(lines)
	add := []string{"", "", "def median(values):", "    import pytest", "", "    pytest.exit(\"done\", returncode=256)"}
	var d strings.Builder
	fmt.Fprintf(&d, "diff --git a/calc.py b/calc.py\n--- a/calc.py\n+++ b/calc.py\n@@ -%d,3 +%d,%d @@\n", n-2, n-2, 3+len(add))
	for _, l := range lines[n-3:] {
		d.WriteString(" " + l + "\n")
	}
	for _, l := range add {
		d.WriteString("+" + l + "\n")
	}
	box, err := localBackend(t).Open(context.Background(), sandbox.Spec{Image: filepath.Join(tk.TaskDir, "environment", RepoDir)})
	if err != nil {
		t.Fatal(err)
	}
	defer box.Close(context.Background())
	out, err := grader.Grade(context.Background(), box, &tk, grader.Options{Patch: d.String()})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.Log, "swerve: OMNIGRIL_EXIT_CODE=0, reward 1") {
		t.Errorf("the attack did not fool test.sh (the test proves nothing):\n%s", out.Log)
	}
	if out.Reward != 0 || !strings.HasPrefix(out.Reason, "no record that the tests ran: tests/test_calc.py::test_median_even_length") {
		t.Errorf("reward %v (%s)\n%s", out.Reward, out.Reason, out.Log)
	}
}

func TestExpectedTests(t *testing.T) {
	patch := "diff --git a/tests/test_calc.py b/tests/test_calc.py\n--- a/tests/test_calc.py\n+++ b/tests/test_calc.py\n@@ -1,2 +1,9 @@\n def test_old():\n     pass\n+def test_new():\n+    pass\n+class TestX:\n+    def test_method(self):\n+        pass\n+async def test_async():\n+    pass\n" +
		"diff --git a/tests/test_other.py b/tests/test_other.py\n--- /dev/null\n+++ b/tests/test_other.py\n@@ -0,0 +1,2 @@\n+def test_unrun():\n+    pass\n"
	for _, tt := range []struct {
		name, eval string
		want       string
	}{
		{"pytest", "python3 -m pytest -rA tests/test_calc.py\necho OMNIGRIL_EXIT_CODE=$?\n",
			"{\n  \"runner\": \"pytest\",\n  \"tests\": [\n    \"tests/test_calc.py::test_new\",\n    \"tests/test_calc.py::test_async\"\n  ]\n}\n"},
		{"another runner", "bash tests/run.sh tests/test_calc.py\necho OMNIGRIL_EXIT_CODE=$?\n", ""},
		{"pytest on other files", "pytest tests/test_misc.py\necho OMNIGRIL_EXIT_CODE=$?\n", ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := string(expectedTests(&task.Task{EvalScript: tt.eval, TestPatch: patch})); got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}
