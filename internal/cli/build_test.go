package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/swerve-dev/swerve/internal/build"
	"github.com/swerve-dev/swerve/internal/sandbox/docker"
	"github.com/swerve-dev/swerve/internal/testutil"
)

func TestBuildModel(t *testing.T) {
	replayFile := filepath.Join(t.TempDir(), "r.json")
	if err := os.WriteFile(replayFile, []byte(`["hi"]`), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, model string
		env         map[string]string
		baseURL     string
		want        string // resolved name; "" for an error
		errHas      string
	}{
		{name: "bare name, OpenRouter key", model: "google/gemini-2.5-flash", env: map[string]string{"OPENROUTER_API_KEY": "k", "OPENAI_API_KEY": "o"}, want: "openrouter/google/gemini-2.5-flash"},
		{name: "bare name, OpenAI key", model: "gpt-4.1-mini", env: map[string]string{"OPENAI_API_KEY": "o"}, want: "openai/gpt-4.1-mini"},
		{name: "bare name, base URL", model: "qwen", baseURL: "http://localhost:8000/v1", env: map[string]string{"OPENROUTER_API_KEY": "k"}, want: "openai/qwen"},
		{name: "openai prefix with its key", model: "openai/gpt-4o", env: map[string]string{"OPENAI_API_KEY": "o", "OPENROUTER_API_KEY": "k"}, want: "openai/gpt-4o"},
		{name: "openai prefix, only OpenRouter's key", model: "openai/gpt-4o", env: map[string]string{"OPENROUTER_API_KEY": "k"}, want: "openrouter/openai/gpt-4o"},
		{name: "explicit openrouter", model: "openrouter/anthropic/claude-sonnet-4", env: map[string]string{"OPENROUTER_API_KEY": "k"}, want: "openrouter/anthropic/claude-sonnet-4"},
		{name: "anthropic with its key", model: "anthropic/claude-sonnet-4", env: map[string]string{"ANTHROPIC_API_KEY": "a"}, want: "anthropic/claude-sonnet-4"},
		{name: "no key at all", model: "gpt-4.1-mini", errHas: "OPENAI_API_KEY"},
		{name: "openrouter without key", model: "openrouter/x", errHas: "OPENROUTER_API_KEY"},
		{name: "replay file", model: "replay/" + replayFile, want: "replay/" + replayFile},
		{name: "replay missing", model: "replay/" + replayFile + ".nope", errHas: "no such file"},
		{name: "oracle", model: "oracle/gold", errHas: "replay/<file>"},
		{name: "empty", model: "", errHas: "--max-iterations 1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			getenv := func(k string) string { return tc.env[k] }
			got, _, _, err := buildModel(tc.model, tc.baseURL, "", getenv)
			if tc.want == "" {
				if err == nil || !strings.Contains(err.Error(), tc.errHas) {
					t.Fatalf("got %q, %v; want an error with %q", got, err, tc.errHas)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("got %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}

// clearModelEnv unsets every variable a model name could take a key or
// endpoint from.
func clearModelEnv(t *testing.T) {
	for _, k := range []string{"OPENAI_API_KEY", "OPENROUTER_API_KEY", "ANTHROPIC_API_KEY", "LLM_BASE_URL", "OPENAI_BASE_URL", "OPENROUTER_API_BASE_URL", "HOSTED_VLLM_API_BASE"} {
		t.Setenv(k, "")
	}
}

func TestBuildCmdChecksKeyFirst(t *testing.T) {
	clearModelEnv(t)
	out := filepath.Join(t.TempDir(), "out")
	input := filepath.Join(testutil.RepoRoot(t), "internal", "build", "testdata", "instances.json")
	_, _, err := execTasksCLI(t, "build", "--input", input, "--output", out, "--model_name", "gpt-4.1-mini")
	if err == nil || !strings.Contains(err.Error(), "OPENROUTER_API_KEY") || !strings.Contains(err.Error(), "OPENAI_API_KEY") {
		t.Fatalf("error %v; want one naming the keys", err)
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("the output directory was made before the key check: %v", err)
	}
	// No repair, no model: the key is not needed (the missing input is
	// what fails next).
	_, _, err = execTasksCLI(t, "build", "--input", filepath.Join(t.TempDir(), "none.json"), "--output", out, "--max_iterations", "1")
	if err == nil || !strings.Contains(err.Error(), "--input") {
		t.Fatalf("error %v; want one about --input", err)
	}
	_, _, err = execTasksCLI(t, "build", "--input", input, "--output", out, "--max-iterations", "0")
	if err == nil || !strings.Contains(err.Error(), "--max-iterations") {
		t.Fatalf("error %v; want one about --max-iterations", err)
	}
}

// TestBuildCmdOtherBackend: build makes docker images only; naming a
// backend whose images are the user's is one line saying so, before
// anything else is checked or made.
func TestBuildCmdOtherBackend(t *testing.T) {
	for _, backend := range []string{"k8s", "e2b"} {
		_, _, err := execTasksCLI(t, "build", "--backend", backend)
		if err == nil || !strings.Contains(err.Error(), "--backend "+backend) || !strings.Contains(err.Error(), "the user's") || strings.Contains(err.Error(), "\n") {
			t.Errorf("build --backend %s: error %v; want one line saying the images are the user's", backend, err)
		}
	}
}

// buildCLIRepoCache makes the calc repository of internal/build/testdata
// (fixed author and date, so the commit the rows check out) and a mirror
// of it at <cache>/swerve-test/calc.git.
func buildCLIRepoCache(t *testing.T, root string) string {
	t.Helper()
	work := filepath.Join(t.TempDir(), "calc")
	if err := os.CopyFS(work, os.DirFS(filepath.Join(root, "internal", "build", "testdata", "repo", "calc"))); err != nil {
		t.Fatal(err)
	}
	cache := t.TempDir()
	mirror := filepath.Join(cache, "swerve-test", "calc.git")
	env := append(os.Environ(),
		"GIT_AUTHOR_NAME=swerve", "GIT_AUTHOR_EMAIL=swerve@example.com",
		"GIT_COMMITTER_NAME=swerve", "GIT_COMMITTER_EMAIL=swerve@example.com",
		"GIT_AUTHOR_DATE=2025-01-01T00:00:00Z", "GIT_COMMITTER_DATE=2025-01-01T00:00:00Z",
		"GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
	for _, args := range [][]string{
		{"-C", work, "init", "-q", "--initial-branch=main"},
		{"-C", work, "add", "-A"},
		{"-C", work, "commit", "-q", "-m", "calc: add and mul"},
		{"init", "-q", "--bare", "--initial-branch=main", mirror},
		{"-C", work, "push", "-q", mirror, "main"},
	} {
		cmd := exec.Command("git", args...)
		cmd.Env = env
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	return cache
}

// TestBuildCmdDocker runs swerve build and then swerve run --run_golden
// through the command line, in process: the instance that works at once and
// the one a replayed model repairs in two iterations (replay/<dir>, one
// file per instance), cloned from a repo cache in the <owner>/<name>.git
// layout.
func TestBuildCmdDocker(t *testing.T) {
	ctx := context.Background()
	if err := docker.Probe(ctx); err != nil {
		testutil.SkipOrFail(t, "no container engine: %v", err)
	}
	eng, err := docker.New(ctx, docker.Config{})
	if err != nil {
		t.Fatal(err)
	}
	if ok, err := eng.ImageExists(ctx, testutil.TestImage()); err != nil || !ok {
		testutil.SkipOrFail(t, "the test base image %s is missing (%v)", testutil.TestImage(), err)
	}
	t.Setenv("SWERVE_SHIM_BINARY", testutil.SwerveBinary(t))
	clearModelEnv(t)
	root := testutil.RepoRoot(t)
	cache := buildCLIRepoCache(t, root)
	tmp := t.TempDir()

	// Two of the testdata rows under ids of their own, so that their
	// images do not collide with internal/build's tests running alongside.
	swap := func(b []byte) []byte {
		b = bytes.ReplaceAll(b, []byte("swerve-test-base:bookworm"), []byte(testutil.TestImage()))
		return bytes.ReplaceAll(b, []byte("swerve-test__calc-"), []byte("swerve-cli__calc-"))
	}
	data, err := os.ReadFile(filepath.Join(root, "internal", "build", "testdata", "instances.json"))
	if err != nil {
		t.Fatal(err)
	}
	var rows []json.RawMessage
	if err := json.Unmarshal(swap(data), &rows); err != nil {
		t.Fatal(err)
	}
	data, _ = json.Marshal(rows[:2])
	input := filepath.Join(tmp, "cli_rows.json")
	if err := os.WriteFile(input, data, 0o644); err != nil {
		t.Fatal(err)
	}
	replies := filepath.Join(tmp, "replies")
	if err := os.MkdirAll(replies, 0o755); err != nil {
		t.Fatal(err)
	}
	data, err = os.ReadFile(filepath.Join(root, "internal", "build", "testdata", "replies", "swerve-test__calc-2.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(replies, "swerve-cli__calc-2.json"), swap(data), 0o644); err != nil {
		t.Fatal(err)
	}

	out := filepath.Join(tmp, "out")
	args := []string{"build", "--input", input, "--output", out, "--max-iterations", "3", "--eval-timeout", "60",
		"--max-workers", "2", "--model_name", "replay/" + replies, "--repo-cache", cache}
	stdout, stderr, err := execTasksCLI(t, args...)
	if err != nil {
		t.Fatalf("build: %v\nstdout:\n%s\nstderr:\n%s", err, stdout, stderr)
	}
	for _, want := range []string{"✓ swerve-cli__calc-1 proven at attempt 1", "✓ swerve-cli__calc-2 proven at attempt 3", "proven        2 / 2 (100.0%)", "cli_rows_transferred.json"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
	var main build.SummaryMain
	data, err = os.ReadFile(filepath.Join(out, "summary_main.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &main); err != nil || main.Total != 2 || main.Succeeded != 2 {
		t.Fatalf("summary_main.json: %s (%v)", data, err)
	}
	st, err := build.ReadStatus(filepath.Join(out, "swerve-cli__calc-2"))
	if err != nil || st.Model.Calls != 2 || !st.Model.Offline || st.FinalIteration == nil || *st.FinalIteration != 2 || st.TotalIterations != 3 {
		t.Fatalf("status of the repaired instance: %+v, %v", st, err)
	}

	// Rerun with --skip-existing: both are kept.
	_, stderr, err = execTasksCLI(t, append(args, "--skip-existing")...)
	if err != nil || !strings.Contains(stderr, "0 built, 2 kept from before") {
		t.Fatalf("rerun: %v\n%s", err, stderr)
	}

	// Stage 2 with the gold patch on the transferred rows.
	traj := filepath.Join(tmp, "golden")
	stdout, stderr, err = execTasksCLI(t, "run", "--dataset", filepath.Join(out, "cli_rows_transferred.json"), "--run_golden",
		"--traj_dir", traj, "--exp_name", "golden", "--backend", "docker", "--pull", "never", "--max_workers", "2")
	if err != nil {
		t.Fatalf("run --run_golden: %v\nstdout:\n%s\nstderr:\n%s", err, stdout, stderr)
	}
	var rs struct {
		Total   int `json:"total"`
		Reward1 struct {
			Count int `json:"count"`
		} `json:"reward_1"`
	}
	data, err = os.ReadFile(filepath.Join(traj, "reward_summary.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &rs); err != nil || rs.Total != 2 || rs.Reward1.Count != 2 {
		t.Fatalf("reward_summary.json: %s (%v); want reward 1 for both rows", data, err)
	}
}

// TestBuildSummaryShortensFailures: an interrupted build of many rows lists
// every row not proven in <stem>_failed.json; the terminal gets the first
// twenty and a count.
func TestBuildSummaryShortensFailures(t *testing.T) {
	for _, tt := range []struct {
		failed    int
		lines     int
		moreCount string
	}{
		{3, 3, ""},
		{20, 20, ""},
		{25, 21, "… and 5 more (all in out/in_failed.json)"},
	} {
		s := &build.Summary{}
		s.FailedFile = "out/in_failed.json"
		for i := range tt.failed {
			s.Main.FailedInstances = append(s.Main.FailedInstances, build.FailedSummary{InstanceID: fmt.Sprintf("o__r-%d", i), Reason: build.ReasonNotRun})
		}
		var b strings.Builder
		printBuildSummary(&b, s, "out")
		got := strings.Count(b.String(), "\nfailed ")
		if got != tt.lines || !strings.Contains(b.String(), tt.moreCount) {
			t.Errorf("%d failed: %d failed lines; want %d with %q:\n%s", tt.failed, got, tt.lines, tt.moreCount, b.String())
		}
	}
}

// TestBuildExitsNonZeroWhenNothingProven: a build that proved nothing
// exits 1 with a line saying so; one that proved anything exits 0.
func TestBuildExitsNonZeroWhenNothingProven(t *testing.T) {
	for _, tt := range []struct {
		total, succeeded int
		code             int
	}{
		{2, 0, 1},
		{2, 1, 0},
		{2, 2, 0},
		{0, 0, 0},
	} {
		s := &build.Summary{}
		s.Main.Total, s.Main.Succeeded = tt.total, tt.succeeded
		var b strings.Builder
		err := nothingProven(&b, s)
		code := 0
		if ee, ok := err.(exitError); ok {
			code = ee.code
		} else if err != nil {
			code = -1
		}
		if code != tt.code || (code != 0) != strings.Contains(b.String(), "proved none") {
			t.Errorf("%d of %d proven: exit %d (%v), stderr %q; want exit %d", tt.succeeded, tt.total, code, err, b.String(), tt.code)
		}
	}
}
