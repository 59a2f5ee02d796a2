package build_test

// Real builds on Docker, from the local test base image (no registry, no
// network): four small instances of one tiny repository, served from a
// repo-cache mirror made here. Outputs are checked against golden files
// (go test -run TestBuildDocker -update rewrites them); then the
// transferred dataset is graded with the gold patch as swerve run
// --run_golden does.

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/swerve-dev/swerve/internal/build"
	"github.com/swerve-dev/swerve/internal/llm"
	"github.com/swerve-dev/swerve/internal/run"
	"github.com/swerve-dev/swerve/internal/sandbox"
	"github.com/swerve-dev/swerve/internal/sandbox/docker"
	"github.com/swerve-dev/swerve/internal/task"
	"github.com/swerve-dev/swerve/internal/testutil"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/golden")

// testBase is the base image the testdata Dockerfiles name.
const testBase = "swerve-test-base:bookworm"

// calcCommit is the commit makeRepoCache makes; the testdata rows check
// it out.
const calcCommit = "8f257f3f05ceae2aa022fb40c1f8127981cf64ba"

// engine returns a Docker backend running the static swerve as the shim,
// or skips (fails under SWERVE_DOCKER_TESTS=1) without an engine or the
// base image.
func engine(t *testing.T) *docker.Backend {
	t.Helper()
	ctx := context.Background()
	if err := docker.Probe(ctx); err != nil {
		testutil.SkipOrFail(t, "no container engine: %v", err)
	}
	eng, err := docker.New(ctx, docker.Config{Options: sandbox.Options{RunID: "test-build", ShimPath: testutil.SwerveBinary(t)}})
	if err != nil {
		t.Fatal(err)
	}
	ok, err := eng.ImageExists(ctx, testutil.TestImage())
	if err != nil {
		t.Fatal(err)
	}
	if !ok {
		testutil.SkipOrFail(t, "the test base image %s is missing (scripts/test-image.sh builds it)", testutil.TestImage())
	}
	return eng
}

// makeRepoCache turns testdata/repo/calc into a git repository with a
// fixed author and date (so its commit is always calcCommit) and pushes it
// to a bare mirror <cache>/swerve-test__calc.git.
func makeRepoCache(t *testing.T) string {
	t.Helper()
	work := filepath.Join(t.TempDir(), "calc")
	if err := os.CopyFS(work, os.DirFS("testdata/repo/calc")); err != nil {
		t.Fatal(err)
	}
	cache := t.TempDir()
	mirror := filepath.Join(cache, "swerve-test__calc.git")
	env := append(os.Environ(),
		"GIT_AUTHOR_NAME=swerve", "GIT_AUTHOR_EMAIL=swerve@example.com",
		"GIT_COMMITTER_NAME=swerve", "GIT_COMMITTER_EMAIL=swerve@example.com",
		"GIT_AUTHOR_DATE=2025-01-01T00:00:00Z", "GIT_COMMITTER_DATE=2025-01-01T00:00:00Z",
		"GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
	git := func(dir string, args ...string) string {
		t.Helper()
		cmd := exec.Command("git", args...)
		cmd.Dir, cmd.Env = dir, env
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return strings.TrimSpace(string(out))
	}
	git(work, "init", "-q", "--initial-branch=main")
	git(work, "add", "-A")
	git(work, "commit", "-q", "-m", "calc: add and mul")
	if sha := git(work, "rev-parse", "HEAD"); sha != calcCommit {
		t.Fatalf("the test repository's commit is %s, the testdata rows want %s", sha, calcCommit)
	}
	git(cache, "init", "-q", "--bare", "--initial-branch=main", mirror)
	git(work, "push", "-q", mirror, "main")
	return cache
}

// testInput copies a testdata dataset to dir, with the test base image
// swapped in when SWERVE_TEST_IMAGE names another one.
func testInput(t *testing.T, src, dir string) string {
	t.Helper()
	data, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	data = bytes.ReplaceAll(data, []byte(testBase), []byte(testutil.TestImage()))
	path := filepath.Join(dir, filepath.Base(src))
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// replayModels gives each instance the replies in testdata/replies/<id>.json.
func replayModels(t *testing.T) build.ModelFactory {
	return func(tk *task.Task) (llm.Client, error) {
		path := filepath.Join("testdata", "replies", tk.InstanceID+".json")
		data, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("no replies for %s: %w", tk.InstanceID, err)
		}
		// The replies name the base image too.
		data = bytes.ReplaceAll(data, []byte(testBase), []byte(testutil.TestImage()))
		rs, err := llm.ReadReplies(data)
		if err != nil {
			return nil, err
		}
		msgs := make([]llm.Message, len(rs))
		for i, r := range rs {
			msgs[i] = r.Message
		}
		return llm.NewScripted("replay/testdata/replies", msgs), nil
	}
}

func TestBuildDocker(t *testing.T) {
	eng := engine(t)
	ctx := context.Background()
	cache := makeRepoCache(t)
	tmp := t.TempDir()
	input := testInput(t, "testdata/instances.json", tmp)
	res, err := task.Load(ctx, input, task.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(tmp, "out")
	var events []build.Event
	opts := build.Options{
		Tasks: res.Tasks, Output: out, Stem: build.DatasetStem(input),
		InputFile:     input,
		MaxIterations: 3, EvalTimeout: 5 * time.Second, Workers: 2, RepoCache: cache,
		Engine: eng, NewModel: replayModels(t), ModelName: "replay/testdata/replies",
		Events: func(e build.Event) { events = append(events, e) },
	}
	start := time.Now()
	sum, err := build.Run(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("built 4 instances in %s", time.Since(start).Round(time.Millisecond))
	if sum.Main.Succeeded != 2 || sum.Main.Failed != 2 || sum.Ran != 4 {
		t.Errorf("summary: %+v", sum.Main)
	}
	checkGolden(t, out)

	// The repo cache made the clones offline, and the log says so.
	for _, id := range []string{"swerve-test__calc-1", "swerve-test__calc-2"} {
		dir := build.InstanceDir(out, id)
		lg, err := os.ReadFile(filepath.Join(dir, build.FileLog))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(lg), "repo cache: cloning github.com/swerve-test/calc from "+filepath.Join(cache, "swerve-test__calc.git")) {
			t.Errorf("%s: instance.log does not mention the repo cache:\n%s", id, lg)
		}
		resolved, err := os.ReadFile(filepath.Join(dir, "iteration_0", build.FileDockerfileResolved))
		if err != nil || !strings.Contains(string(resolved), "COPY .swerve-repos/swerve-test__calc.git /swerve-repos/swerve-test__calc.git\nRUN ") {
			t.Errorf("%s: Dockerfile.resolved has no COPY of the mirror (%v):\n%s", id, err, resolved)
		}
	}
	// Every repair request carries the failure and both files.
	req, err := os.ReadFile(filepath.Join(build.InstanceDir(out, "swerve-test__calc-2"), build.IterationDir(2), build.FileModelRequest))
	if err != nil {
		t.Fatal(err)
	}
	var msgs []llm.Message
	if err := json.Unmarshal(req, &msgs); err != nil {
		t.Fatal(err)
	}
	if len(msgs) != 2 || msgs[0].Role != llm.RoleSystem || !strings.Contains(msgs[1].Content, "found one at /testbed/calc") ||
		!strings.Contains(msgs[1].Content, "```dockerfile\nFROM ") || !strings.Contains(msgs[1].Content, "```bash\n#!/bin/bash") {
		t.Errorf("repair request:\n%s", req)
	}
	var kinds []string
	for _, e := range events {
		if e.Kind == build.EventDone {
			kinds = append(kinds, e.InstanceID+" "+e.Status)
		}
	}
	sort.Strings(kinds)
	if diff := cmp.Diff([]string{
		"swerve-test__calc-1 success", "swerve-test__calc-2 success", "swerve-test__calc-3 failed", "swerve-test__calc-4 failed",
	}, kinds); diff != "" {
		t.Errorf("done events (-want +got):\n%s", diff)
	}

	// Stage 2 on the transferred dataset: the gold patch gets reward 1.
	runGolden(t, eng, sum.Transferred, 2)

	// Resume: with --skip-existing, instances that succeeded are kept
	// (nothing is built); failed ones are retried, as SWE-Factory retries
	// them, and so is one whose status is not final (killed mid-run).
	before := readTree(t, out)
	st := filepath.Join(build.InstanceDir(out, "swerve-test__calc-1"), build.FileStatus)
	data, err := os.ReadFile(st)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(st, bytes.Replace(data, []byte(`"status": "success"`), []byte(`"status": "running"`), 1), 0o644); err != nil {
		t.Fatal(err)
	}
	counting := &countingEngine{Engine: eng}
	opts.Engine, opts.SkipExisting, events = counting, true, nil
	sum, err = build.Run(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	if sum.Skipped != 1 || sum.Ran != 3 || counting.builds.Load() != 4 || sum.Main.Succeeded != 2 {
		t.Errorf("resume: skipped %d, ran %d, built %d times, succeeded %d; want 1, 3, 4, 2", sum.Skipped, sum.Ran, counting.builds.Load(), sum.Main.Succeeded)
	}
	after := readTree(t, out)
	for _, name := range []string{"summary_main.json", "instances_transferred.json", "instances_failed.json"} {
		if before[name] != after[name] {
			t.Errorf("resume changed %s", name)
		}
	}
	// summary.json lists this run's instances; summary_history.jsonl has a
	// line per run.
	var ran []build.SummaryEntry
	if err := json.Unmarshal([]byte(after["summary.json"]), &ran); err != nil || len(ran) != 3 {
		t.Errorf("summary.json after the resume: %v\n%s", err, after["summary.json"])
	}
	if n := strings.Count(after["summary_history.jsonl"], "\n"); n != 2 {
		t.Errorf("summary_history.jsonl has %d lines, want 2:\n%s", n, after["summary_history.jsonl"])
	}
}

// countingEngine counts builds.
type countingEngine struct {
	build.Engine
	builds atomic.Int64 // Run builds from several workers at once
}

func (c *countingEngine) Build(ctx context.Context, opts docker.BuildOptions) error {
	c.builds.Add(1)
	return c.Engine.Build(ctx, opts)
}

// runGolden runs Stage 2 with the gold patch on dataset, as swerve run
// --run_golden does, and wants reward 1 for each of its want rows.
func runGolden(t *testing.T, eng *docker.Backend, dataset string, want int) {
	t.Helper()
	ctx := context.Background()
	res, err := task.Load(ctx, dataset, task.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Tasks) != want {
		t.Fatalf("%s has %d rows, want %d", dataset, len(res.Tasks), want)
	}
	trajDir := filepath.Join(t.TempDir(), "golden")
	sum, err := run.Run(ctx, run.Options{
		Tasks: res.Tasks, TrajDir: trajDir, ExpName: "golden", Workers: 2, RunGolden: true,
		Scaffold: "mini_swe_agent", EvalTimeout: time.Minute,
		Open: func(ctx context.Context, tk *task.Task) (sandbox.Sandbox, string, error) {
			box, err := eng.Open(ctx, sandbox.Spec{Image: tk.Image, Pull: sandbox.PullNever, Network: sandbox.NetworkNone})
			return box, "/testbed", err
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	recs, err := run.LoadRecords(trajDir)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != want || sum.Resolved != want {
		t.Errorf("run_golden: %d records, %d resolved; want %d", len(recs), sum.Resolved, want)
	}
	for id, rec := range recs {
		if rec.Reward != 1 || rec.Grader != string(task.GraderSWEFactory) {
			t.Errorf("%s: reward %g (%s, grader %s), want 1 from swefactory", id, rec.Reward, rec.RewardReason, rec.Grader)
		}
	}
}

// readTree reads every file under dir by slash path.
func readTree(t *testing.T, dir string) map[string]string {
	t.Helper()
	files := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		data, err := os.ReadFile(p)
		files[filepath.ToSlash(rel)] = string(data)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// Files whose content depends on the machine (logs, engine output, model
// prompts with test timings) are listed in the golden file list but not
// compared.
var unstable = regexp.MustCompile(`(^|/)(instance\.log|build\.log|check\.log|model_request\.json)$`)

// inputFile matches summary_history.jsonl's input_file, a temporary path.
var inputFile = regexp.MustCompile(`"input_file":"[^"]*"`)

// checkGolden compares the output tree with testdata/golden: the list of
// files, and the content of each stable file after normalising times,
// token counts and machine-specific output.
func checkGolden(t *testing.T, out string) {
	t.Helper()
	got := map[string]string{}
	var names []string
	for name, data := range readTree(t, out) {
		names = append(names, name)
		if unstable.MatchString(name) {
			continue
		}
		got[name] = normalise(t, name, data)
	}
	sort.Strings(names)
	got["FILES"] = strings.Join(names, "\n") + "\n"
	golden := filepath.Join("testdata", "golden")
	if *update {
		if err := os.RemoveAll(golden); err != nil {
			t.Fatal(err)
		}
		for name, data := range got {
			p := filepath.Join(golden, filepath.FromSlash(name))
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		return
	}
	want := readTree(t, golden)
	var keys []string
	for k := range want {
		keys = append(keys, k)
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	for _, k := range slices.Compact(keys) {
		if diff := cmp.Diff(want[k], got[k]); diff != "" {
			t.Errorf("%s differs from testdata/golden (-want +got; go test -run TestBuildDocker -update rewrites it):\n%s", k, diff)
		}
	}
}

// normalise makes a file comparable across machines and runs.
func normalise(t *testing.T, name, data string) string {
	t.Helper()
	data = strings.ReplaceAll(data, testutil.TestImage(), testBase)
	if name == build.FileSummaryHistory {
		return inputFile.ReplaceAllString(data, `"input_file":"<input>"`)
	}
	if !strings.HasSuffix(name, ".json") || strings.HasSuffix(name, "_transferred.json") || strings.HasSuffix(name, "_failed.json") {
		return data
	}
	var v any
	if err := json.Unmarshal([]byte(data), &v); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	v = scrub(v, "")
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// scrub replaces the values that vary between runs: times, durations,
// token counts (estimated from prompts that hold test output) and command
// output.
func scrub(v any, key string) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			if k == "usage" {
				if u, ok := e.(map[string]any); ok {
					for uk, uv := range u {
						if _, ok := uv.(float64); ok {
							u[uk] = 0
						}
					}
				}
				continue
			}
			x[k] = scrub(e, k)
		}
		return x
	case []any:
		for i, e := range x {
			x[i] = scrub(e, key)
		}
		return x
	case float64:
		if strings.HasSuffix(key, "seconds") || strings.HasSuffix(key, "tokens") {
			return 0
		}
	case string:
		switch key {
		case "started_at", "finished_at", "generated_at", "start_time", "end_time":
			return "<time>"
		case "output":
			return "<output>"
		}
	}
	return v
}
