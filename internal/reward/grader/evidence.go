package grader

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/swerve-dev/swerve/internal/fsutil"
	"github.com/swerve-dev/swerve/internal/lazyre"
	"github.com/swerve-dev/swerve/internal/sandbox"
	"github.com/swerve-dev/swerve/internal/task"
)

// FewerTestsReason starts the reason of a grade whose run produced fewer
// test results than the task's gold patch's run on the same image.
const FewerTestsReason = "fewer tests ran than the gold patch's run: "

// What Outcome.TestsBaseline says when no comparison was made.
const (
	// TestsBaselineGold: this grade is a gold run; its count was kept.
	TestsBaselineGold = "gold run (kept)"
	// TestsBaselineUnknown: no gold run of the task on this image is
	// known yet (validate, grade --gold or grade --baseline records one).
	TestsBaselineUnknown = "unknown"
)

// testCount is how many distinct tests a run produced results for (in
// all), and how many result lines it has per group (a test's name without
// its parameters, see testGroup; tests that share a name, as django's
// docstring names do, count once per copy). It is what a gold run leaves
// on disk and what every other grade is held to.
type testCount struct {
	Total  int            `json:"total"`
	Groups map[string]int `json:"groups,omitempty"`
	// Skips are, for a Harbor task, the tests ("file::test") the gold run
	// skipped or xfailed under a condition of their own marks: the only
	// such skips another run may have. SkipsKept says the record holds
	// them (a record from before they were kept does not).
	Skips     []string `json:"cond_skips,omitempty"`
	SkipsKept bool     `json:"cond_skips_kept,omitempty"`
}

// countTests counts a parsed log's tests: copies maps each name to the
// labels of its result lines (see swebench.Copies; one, itself, where the
// grader reads no copies). The canaries are left out (skip says which
// names are theirs), whether a canary's result is filed under its own
// name or, under a docstring it copied, beside the original's: their
// names and originals are drawn anew for every run, and a gold run
// without canaries must count the same as one with them.
func countTests(copies map[string][]string, skip func(string) bool) testCount {
	c := testCount{Groups: map[string]int{}}
	for n, labels := range copies {
		if skip != nil && skip(n) {
			continue
		}
		k := 0
		for _, l := range labels {
			if skip == nil || !skip(l) {
				k++
			}
		}
		if k == 0 {
			continue
		}
		c.Total++
		c.Groups[testGroup(n)] += k
	}
	return c
}

// djangoName is a unittest-style name, "test_x (module.Class)", with
// whatever django appends for a subtest after it.
var djangoName = lazyre.New(`^(\S+ \([^()\s]+\))`)

// testGroup is a test's name without its parameters: pytest's "[…]" and
// what follows a unittest name (a subtest's "(x=1)", a docstring).
// Parameter ids may differ between honest runs (ids made from values);
// the number of tests per group does not. Names are kept whole otherwise,
// so that a patch cannot pay for tests it made vanish with tests it made
// up under other names.
func testGroup(name string) string {
	if m := djangoName.FindStringSubmatch(name); m != nil {
		return m[1]
	}
	if i := strings.IndexByte(name, '['); i > 0 {
		return name[:i]
	}
	return name
}

// canaryNames says whether a name is one of the canaries', whatever form
// the parser gave its key ("fn (mod.Class)", "path::fn", "fn").
func canaryNames(fns ...string) func(string) bool {
	var res []*regexp.Regexp
	for _, fn := range fns {
		if fn != "" {
			res = append(res, regexp.MustCompile(`(^|\W)`+regexp.QuoteMeta(fn)+`($|\W)`))
		}
	}
	return func(name string) bool {
		for _, re := range res {
			if re.MatchString(name) {
				return true
			}
		}
		return false
	}
}

// fewerTests compares a run's count with the gold run's: "" when the run
// has at least as many distinct tests in all, and as many result lines in
// every group the gold run had, else the reason for a 0. Groups are compared when both counts
// have them (a grader that counts only a total is held to the total).
func fewerTests(got, gold testCount) string {
	if got.Total < gold.Total {
		return fmt.Sprintf("%s%d < %d", FewerTestsReason, got.Total, gold.Total)
	}
	if len(got.Groups) == 0 || len(gold.Groups) == 0 {
		return ""
	}
	for _, g := range slices.Sorted(maps.Keys(gold.Groups)) {
		if n := got.Groups[g]; n < gold.Groups[g] {
			return fmt.Sprintf("%s%d < %d results of %s", FewerTestsReason, n, gold.Groups[g], g)
		}
	}
	return ""
}

// testsKey names a gold run's count: the task, the image's content id,
// the grader and what decides which tests run (eval script, test patch,
// tests, the gold patch itself, the Harbor task directory). The tamper
// mode and the timeout do not: canaries are not counted, and a run that
// timed out is not kept.
func testsKey(t *task.Task, g task.Grader, imageID string) string {
	h := sha256.New()
	for _, s := range []string{"tests/1", t.InstanceID, t.Image, imageID, string(g), t.EvalScript, t.Patch, t.TestPatch, t.TaskDir,
		strings.Join(t.FailToPass, "\n"), strings.Join(t.PassToPass, "\n"), expected(t)} {
		fmt.Fprintf(h, "%d:%s\n", len(s), s)
	}
	return "tests-" + hex.EncodeToString(h.Sum(nil))
}

// goldTests returns the gold run's count kept under key.
func (b *Baseline) goldTests(key string) (testCount, bool) {
	b.mu.Lock()
	c, ok := b.tests[key]
	b.mu.Unlock()
	if ok {
		return c, true
	}
	if b.Dir == "" {
		return testCount{}, false
	}
	data, err := os.ReadFile(filepath.Join(b.Dir, key+".json"))
	if err != nil || json.Unmarshal(data, &c) != nil {
		return testCount{}, false
	}
	b.mu.Lock()
	if b.tests == nil {
		b.tests = map[string]testCount{}
	}
	b.tests[key] = c
	b.mu.Unlock()
	return c, true
}

// keepGoldTests keeps a gold run's count under key: the smallest seen,
// in all and per group, so that a gold run that counts a few less (a test
// that is collected only sometimes) lowers the bar rather than makes a
// later gold run a 0. On disk best effort, as Baseline's answers are.
func (b *Baseline) keepGoldTests(key string, c testCount) {
	if old, ok := b.goldTests(key); ok {
		c = minCount(old, c)
	}
	b.mu.Lock()
	if b.tests == nil {
		b.tests = map[string]testCount{}
	}
	b.tests[key] = c
	b.mu.Unlock()
	if b.Dir == "" {
		return
	}
	data, err := json.Marshal(c)
	if err != nil || os.MkdirAll(b.Dir, 0o755) != nil {
		return
	}
	_ = fsutil.WriteFileAtomic(filepath.Join(b.Dir, key+".json"), data, false)
}

// minCount is the smaller of two counts, in all and per group (a group
// one of them lacks counts 0).
func minCount(a, b testCount) testCount {
	out := testCount{Total: min(a.Total, b.Total), SkipsKept: a.SkipsKept || b.SkipsKept}
	// A test one gold run skipped under its condition may be skipped: the
	// condition is the environment's, whatever the code does.
	for _, s := range append(append([]string{}, a.Skips...), b.Skips...) {
		if !slices.Contains(out.Skips, s) {
			out.Skips = append(out.Skips, s)
		}
	}
	slices.Sort(out.Skips)
	if a.Groups == nil || b.Groups == nil {
		return out
	}
	out.Groups = map[string]int{}
	for g, n := range a.Groups {
		if m := b.Groups[g]; m > 0 {
			out.Groups[g] = min(n, m)
		}
	}
	return out
}

// goldSkips is the gold run's conditional skips of t on box's image (see
// testCount.Skips), and whether they are known.
func goldSkips(box sandbox.Sandbox, t *task.Task, g task.Grader, opts Options) (map[string]bool, bool) {
	b := opts.Baseline
	if b == nil {
		b = DefaultBaseline()
	}
	ii, ok := box.(sandbox.ImageIdentity)
	if !ok || ii.ImageID() == "" {
		return nil, false
	}
	c, ok := b.goldTests(testsKey(t, g, ii.ImageID()))
	if !ok || !c.SkipsKept {
		return nil, false
	}
	out := map[string]bool{}
	for _, s := range c.Skips {
		out[s] = true
	}
	return out, true
}

// expected renders R2E-Gym's expected statuses in a stable order.
func expected(t *task.Task) string {
	var b strings.Builder
	for _, k := range slices.Sorted(maps.Keys(t.ExpectedOutput)) {
		fmt.Fprintf(&b, "%s=%s\n", k, t.ExpectedOutput[k])
	}
	return b.String()
}

// LearnGold makes sure the gold run's test count of t on the image that
// open opens is known, grading the task's gold solution in a fresh box
// when it is not (grade --baseline; validate and grade --gold keep it as
// they go). Opening a box to read its image's content id is the whole
// cost when the count is known; a gold run, when it is not. Calls for one
// task run one at a time, so that many grades at once cost one gold run.
// A box that does not name its image has nothing to key a count by: no
// run, no error.
func (b *Baseline) LearnGold(ctx context.Context, t *task.Task, opts Options, open Opener) error {
	g, err := Choose(t, opts.Force)
	if err != nil {
		return err
	}
	if t.Patch == "" && g != task.GraderHarbor {
		return fmt.Errorf("task %s: no gold patch to learn the test count from", t.InstanceID)
	}
	e := b.entry("learn-gold\n" + t.InstanceID + "\n" + t.Image)
	e.mu.Lock()
	defer e.mu.Unlock()
	box, workdir, err := open(ctx, t)
	if err != nil {
		return fmt.Errorf("open a box: %w", err)
	}
	defer box.Close(context.WithoutCancel(ctx))
	ii, ok := box.(sandbox.ImageIdentity)
	if !ok || ii.ImageID() == "" {
		return nil
	}
	if _, ok := b.goldTests(testsKey(t, g, ii.ImageID())); ok {
		return nil
	}
	ref := opts
	ref.Patch, ref.Gold, ref.Workdir, ref.Baseline = "", true, workdir, b
	out, err := Grade(ctx, box, t, ref)
	if err != nil {
		return fmt.Errorf("task %s: gold run: %w", t.InstanceID, err)
	}
	if !out.Resolved {
		return fmt.Errorf("task %s: gold run did not resolve (%s): no test count kept", t.InstanceID, out.Reason)
	}
	return nil
}
