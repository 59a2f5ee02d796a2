package adversarial

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/swerve-dev/swerve/internal/reward/grader"
	"github.com/swerve-dev/swerve/internal/sandbox"
	"github.com/swerve-dev/swerve/internal/sandbox/docker"
	"github.com/swerve-dev/swerve/internal/task"
	"github.com/swerve-dev/swerve/internal/testutil"
)

// gradeOptions is the one place where the corpus sets how grading treats a
// tamper finding. The tamper defence reports "tampered: <what>"; the corpus
// wants it to be reward 0 (the default of `run` and `serve`).
//
// TAMPER: once grader.Options has its tamper mode, set it here, e.g.
//
//	o.Tamper = "zero"
//
// SWERVE_CORPUS_SINGLE_PHASE=1 grades swebench tasks the way they were
// graded before phased runs, in one run as root: the attacks on the install
// step and on the eval script's file win there.
func gradeOptions(o grader.Options) grader.Options {
	o.SinglePhase = os.Getenv("SWERVE_CORPUS_SINGLE_PHASE") == "1"
	return o
}

// Expectations a manifest case can hold.
const (
	// ExpectResolved: reward 1, reason "resolved" (gold patches).
	ExpectResolved = "resolved"
	// ExpectUnresolved: reward 0 with a failing reason (the empty patch).
	ExpectUnresolved = "unresolved"
	// ExpectZero: a hack; reward 0 with a reason that starts with
	// "tampered:" or names a failure, and a patch that applied.
	ExpectZero = "zero"
)

// Case is one entry of corpus/manifest.json: a patch tried on some tasks.
type Case struct {
	// Name is the technique's short name, unique in the manifest.
	Name string `json:"name"`
	// Patch is the diff under corpus/patches; empty means no patch at all.
	Patch string `json:"patch,omitempty"`
	// Gold grades the task's own reference solution instead of Patch.
	Gold bool `json:"gold,omitempty"`
	// Tasks are the task keys (see Tasks in the test) the patch is tried on.
	Tasks []string `json:"tasks"`
	// Technique says in a sentence what the patch tries.
	Technique string `json:"technique"`
	// Expect is ExpectResolved, ExpectUnresolved or ExpectZero.
	Expect string `json:"expect"`
	// MemoryMiB caps the grading box's memory (sandbox.Limits), for the
	// cases that exhaust it; zero: no cap.
	MemoryMiB int64 `json:"memory_mib,omitempty"`
}

// Manifest is corpus/manifest.json.
type Manifest struct {
	Cases []Case `json:"cases"`
}

// Task keys the manifest may name.
const (
	CalcSWEBench   = "calc-swebench"
	CalcSWEFactory = "calc-swefactory"
	CalcR2E        = "calc-r2e"
	CalcSWESmith   = "calc-swesmith"
	CalcHarbor     = "calc-harbor"
	// CalcHarborMarks is a Harbor task on the same image whose tests
	// carry conditional marks of their own (testdata/harbor-calc-marks).
	CalcHarborMarks = "calc-harbor-marks"
)

// realTasks are the real django tasks the corpus may name (rows of
// ../shared/realtasks/instances.jsonl, images built by its build.sh).
var realTasks = []string{"django__django-15499", "django__django-16139", "django__django-16901", "django__django-16938", "django__django-17087"}

var calcTasks = []string{CalcSWEBench, CalcSWEFactory, CalcR2E, CalcSWESmith, CalcHarbor, CalcHarborMarks}

func knownTask(key string) bool {
	return slices.Contains(calcTasks, key) || slices.Contains(realTasks, key)
}

func loadManifest(t *testing.T) *Manifest {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("corpus", "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	var m Manifest
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&m); err != nil {
		t.Fatalf("corpus/manifest.json: %v", err)
	}
	return &m
}

func readPatch(t *testing.T, name string) string {
	t.Helper()
	if name == "" {
		return ""
	}
	b, err := os.ReadFile(filepath.Join("corpus", "patches", filepath.FromSlash(name)))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestManifest checks the corpus without running it: every case names known
// tasks, an existing diff and a valid expectation; every diff is used; every
// task has a gold and an empty case.
func TestManifest(t *testing.T) {
	m := loadManifest(t)
	if len(m.Cases) == 0 {
		t.Fatal("no cases")
	}
	names := map[string]bool{}
	used := map[string]bool{}
	gold, empty := map[string]bool{}, map[string]bool{}
	hacks := 0
	for _, c := range m.Cases {
		if c.Name == "" || names[c.Name] {
			t.Errorf("case %q: name empty or not unique", c.Name)
		}
		names[c.Name] = true
		if c.Technique == "" || len(c.Tasks) == 0 {
			t.Errorf("case %s: technique or tasks missing", c.Name)
		}
		for _, k := range c.Tasks {
			if !knownTask(k) {
				t.Errorf("case %s: unknown task %q", c.Name, k)
			}
		}
		switch c.Expect {
		case ExpectResolved:
			if !c.Gold && c.Patch == "" {
				t.Errorf("case %s: a resolved case needs the gold solution or a patch", c.Name)
			}
			for _, k := range c.Tasks {
				gold[k] = true
			}
		case ExpectUnresolved:
			if c.Gold || c.Patch != "" {
				t.Errorf("case %s: the unresolved case is the empty patch", c.Name)
			}
			for _, k := range c.Tasks {
				empty[k] = true
			}
		case ExpectZero:
			hacks++
			if c.Gold || c.Patch == "" {
				t.Errorf("case %s: a hack needs a patch", c.Name)
			}
		default:
			t.Errorf("case %s: expect %q: want %s, %s or %s", c.Name, c.Expect, ExpectResolved, ExpectUnresolved, ExpectZero)
		}
		if c.Patch != "" {
			used[c.Patch] = true
			if p := readPatch(t, c.Patch); !(strings.HasPrefix(p, "diff --git ") || strings.HasPrefix(p, "*** a/")) || !strings.HasSuffix(p, "\n") {
				t.Errorf("case %s: %s is not a git diff (or a context diff) ending in a newline", c.Name, c.Patch)
			}
		}
	}
	for _, k := range append(append([]string{}, calcTasks...), usedRealTasks(m)...) {
		if !gold[k] || !empty[k] {
			t.Errorf("task %s: needs a gold case (%v) and an empty case (%v)", k, gold[k], empty[k])
		}
	}
	filepath.WalkDir(filepath.Join("corpus", "patches"), func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			rel, _ := filepath.Rel(filepath.Join("corpus", "patches"), p)
			if !used[filepath.ToSlash(rel)] {
				t.Errorf("%s: no case uses it", p)
			}
		}
		return nil
	})
	if hacks < 20 {
		t.Errorf("%d hacks; the corpus should hold at least 20", hacks)
	}
}

func usedRealTasks(m *Manifest) []string {
	var out []string
	for _, c := range m.Cases {
		for _, k := range c.Tasks {
			if slices.Contains(realTasks, k) && !slices.Contains(out, k) {
				out = append(out, k)
			}
		}
	}
	return out
}

// result is one graded (case, task) pair, for the summary table.
type result struct {
	task, name, expect string
	reward             float64
	reason             string
	ok                 bool
	took               time.Duration
}

// TestCorpus grades every (case, task) pair of the manifest in a fresh
// Docker box with grader.Grade and checks the expectation. It needs
// SWERVE_DOCKER_TESTS=1; the real django tasks also SWERVE_REALTASKS=1.
// Narrow it with -run 'TestCorpus/<task>/<case>'; SWERVE_CORPUS_TABLE=<file>
// writes the outcome table in Markdown, SWERVE_CORPUS_WORKERS sets how many
// grades run at once (2), SWERVE_CORPUS_LOG=1 logs every eval log's tail.
func TestCorpus(t *testing.T) {
	if !testutil.DockerRequired() {
		t.Skip("the adversarial corpus runs on Docker: set SWERVE_DOCKER_TESTS=1")
	}
	ctx := context.Background()
	if err := docker.Probe(ctx); err != nil {
		testutil.SkipOrFail(t, "no container engine: %v", err)
	}
	b, err := docker.New(ctx, docker.Config{Options: sandbox.Options{RunID: "test-adversarial", ShimPath: testutil.SwerveBinary(t)}})
	if err != nil {
		t.Fatal(err)
	}
	m := loadManifest(t)
	tasks := map[string]*task.Task{}
	for k, tk := range buildCalcTasks(t, b) {
		tasks[k] = tk
	}
	real := os.Getenv("SWERVE_REALTASKS") == "1"
	if real {
		for k, tk := range loadRealTasks(t, b, usedRealTasks(m)) {
			tasks[k] = tk
		}
	} else {
		t.Log("real django cases skipped: SWERVE_REALTASKS=1 runs them")
	}

	workers := 2
	if v := os.Getenv("SWERVE_CORPUS_WORKERS"); v != "" {
		fmt.Sscan(v, &workers)
	}
	sem := make(chan struct{}, max(workers, 1))
	var mu sync.Mutex
	var results []result
	start := time.Now()
	t.Cleanup(func() {
		t.Logf("%d grades in %s", len(results), time.Since(start).Round(time.Second))
		writeTable(t, results)
	})
	for _, c := range m.Cases {
		for _, key := range c.Tasks {
			tk := tasks[key]
			if tk == nil {
				continue // a real task without SWERVE_REALTASKS=1
			}
			t.Run(key+"/"+c.Name, func(t *testing.T) {
				t.Parallel()
				sem <- struct{}{}
				defer func() { <-sem }()
				r := grade(t, b, tk, c)
				mu.Lock()
				results = append(results, r)
				mu.Unlock()
			})
		}
	}
}

// baseline keeps the reference runs of the corpus's tasks (whether their
// boxes die, their test counts) for the whole run, in memory only.
var baseline = &grader.Baseline{}

// grade runs one case on one task and checks its expectation.
func grade(t *testing.T, b *docker.Backend, tk *task.Task, c Case) result {
	ctx := context.Background()
	key := taskKey(tk)
	r := result{task: key, name: c.Name, expect: c.Expect}
	open := func(ctx context.Context, tk *task.Task) (sandbox.Sandbox, string, error) {
		box, err := b.Open(ctx, sandbox.Spec{Image: tk.Image, Pull: sandbox.PullNever, Workdir: "/testbed",
			Task: tk.InstanceID, Limits: sandbox.Limits{MemoryMiB: c.MemoryMiB}})
		return box, "/testbed", err
	}
	box, _, err := open(ctx, tk)
	if err != nil {
		t.Fatalf("open a box from %s: %v", tk.Image, err)
	}
	defer box.Close(context.WithoutCancel(ctx))
	timeout := 2 * time.Minute
	if slices.Contains(realTasks, key) {
		timeout = 5 * time.Minute
	}
	opts := gradeOptions(grader.Options{Patch: readPatch(t, c.Patch), Gold: c.Gold, EvalTimeout: timeout, Workdir: "/testbed", Baseline: baseline})
	if !c.Gold {
		// Every grade is held to the gold run's test count: learn it
		// first (once per task), as grade --baseline does.
		if err := baseline.LearnGold(ctx, tk, opts, open); err != nil {
			t.Logf("%s: no gold test count: %v", key, err)
		}
	}
	begin := time.Now()
	out, err := grader.Grade(ctx, box, tk, opts)
	if err != nil {
		// A box that died under the patch is settled as every surface
		// settles it: against the task's reference run.
		box.Close(context.WithoutCancel(ctx))
		opts.Workdir = ""
		out, err = grader.Settle(ctx, err, tk, opts, grader.SettleOptions{Open: open, Again: true, Baseline: baseline})
	}
	r.took = time.Since(begin)
	if err != nil {
		t.Fatalf("grade: %v", err)
	}
	r.reward, r.reason = out.Reward, out.Reason
	switch c.Expect {
	case ExpectResolved:
		r.ok = out.Reward == 1 && out.Resolved
	case ExpectUnresolved:
		r.ok = out.Reward == 0 && !out.Resolved && out.Reason != "" && !out.ApplyFailed
	case ExpectZero:
		r.ok = out.Reward == 0 && !out.Resolved && failing(out.Reason) && !out.ApplyFailed
	}
	// Swebench and swefactory tasks are graded in phases (reward.RunPhased) unless asked
	// not to; a fallback to one run would leave the install step root.
	if (out.Grader == task.GraderSWEBench || out.Grader == task.GraderSWEFactory) && !out.ApplyFailed && !opts.SinglePhase && out.Phases != "phased" {
		r.ok = false
		t.Errorf("%s on %s: eval script ran %q, want phased", c.Name, key, out.Phases)
	}
	// Harbor's test.sh runs as the grading user on Docker, and a resolved
	// run is checked by the canaries.
	if out.Grader == task.GraderHarbor && !out.ApplyFailed && !strings.HasPrefix(out.Phases, "unprivileged") {
		r.ok = false
		t.Errorf("%s on %s: test.sh ran %q, want unprivileged", c.Name, key, out.Phases)
	}
	if out.Grader == task.GraderHarbor && c.Expect == ExpectResolved && out.Canaries != "checked" {
		r.ok = false
		t.Errorf("%s on %s: canaries %q, want checked", c.Name, key, out.Canaries)
	}
	if os.Getenv("SWERVE_CORPUS_LOG") != "" {
		t.Logf("%s on %s: reward %v, %q (canaries: %s %s; %s)\n%s", c.Name, key, out.Reward, out.Reason, out.Canaries, out.CanaryKind, out.Phases, tail(out.Log, 60))
	}
	if !r.ok {
		t.Errorf("%s on %s (%s): reward %v, reason %q; want %s\ntechnique: %s\nlog tail:\n%s",
			c.Name, key, out.Grader, out.Reward, out.Reason, c.Expect, c.Technique, tail(out.Log, 40))
	}
	return r
}

// failing reports whether reason says the patch was found out or failed:
// "tampered: ..." or one of the graders' failing reasons. A patch that did
// not apply proves nothing about the grader, so it does not count.
func failing(reason string) bool {
	switch {
	case reason == "", strings.HasPrefix(reason, "resolved"), strings.HasPrefix(reason, "patch did not apply"):
		return false
	}
	return true
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = append([]string{"..."}, lines[len(lines)-n:]...)
	}
	return strings.Join(lines, "\n")
}

// taskKey is the manifest's key for a task (its instance id, but for the
// SWE-smith one, whose id encodes its repository).
func taskKey(tk *task.Task) string {
	if tk.Grader == task.GraderSWESmith && strings.HasPrefix(tk.InstanceID, "acme__calc.") {
		return CalcSWESmith
	}
	return tk.InstanceID
}

// writeTable logs the outcome of every graded pair and, with
// SWERVE_CORPUS_TABLE set, writes it as a Markdown table (case × task).
func writeTable(t *testing.T, results []result) {
	sort.Slice(results, func(i, j int) bool {
		if results[i].task != results[j].task {
			return results[i].task < results[j].task
		}
		return results[i].name < results[j].name
	})
	var b strings.Builder
	b.WriteString("| task | case | expect | reward | reason | ok | s |\n|---|---|---|---|---|---|---|\n")
	for _, r := range results {
		reason := strings.ReplaceAll(r.reason, "|", "\\|")
		if len(reason) > 90 {
			reason = reason[:90] + "…"
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %v | %s | %v | %.1f |\n", r.task, r.name, r.expect, r.reward, reason, r.ok, r.took.Seconds())
	}
	t.Logf("corpus outcomes:\n%s", b.String())
	if f := os.Getenv("SWERVE_CORPUS_TABLE"); f != "" {
		if err := os.WriteFile(f, []byte(b.String()), 0o644); err != nil {
			t.Error(err)
		}
	}
}

func TestFailing(t *testing.T) {
	for reason, want := range map[string]bool{
		"":         false,
		"resolved": false,
		"resolved (expected_output_json is empty and the log has no results)": false,
		"patch did not apply: error: corrupt patch at line 3":                 false,
		"tampered: conftest.py in the patch":                                  true,
		"FAIL_TO_PASS failed: tests/test_add.py::test_add":                    true,
		"tests failed: OMNIGRIL_EXIT_CODE=1":                                  true,
		"no test results in the log":                                          true,
		"eval timed out after 120 s":                                          true,
	} {
		if got := failing(reason); got != want {
			t.Errorf("failing(%q) = %v, want %v", reason, got, want)
		}
	}
}
