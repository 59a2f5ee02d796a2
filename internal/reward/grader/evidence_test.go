package grader

import (
	"strings"
	"testing"

	"github.com/swerve-dev/swerve/internal/sandbox"
	"github.com/swerve-dev/swerve/internal/task"
)

func TestTestGroup(t *testing.T) {
	for name, want := range map[string]string{
		"tests/t.py::test_x[a-1]":                        "tests/t.py::test_x",
		"tests/t.py::TestC::test_y[obj0]":                "tests/t.py::TestC::test_y",
		"tests/t.py::test_z":                             "tests/t.py::test_z",
		"test_a (m.tests.A.test_a)":                      "test_a (m.tests.A.test_a)",
		"test_a (m.tests.A.test_a) (value=<object 0x1>)": "test_a (m.tests.A.test_a)",
		"test_a (m.tests.A)":                             "test_a (m.tests.A)",
		"Basic serialization works.":                     "Basic serialization works.",
	} {
		if got := testGroup(name); got != want {
			t.Errorf("testGroup(%q) = %q, want %q", name, got, want)
		}
	}
}

func TestCountTests(t *testing.T) {
	copies := map[string][]string{
		"t.py::test_x[1]": {"t.py::test_x[1]"}, "t.py::test_x[2]": {"t.py::test_x[2]"}, "t.py::test_y": {"t.py::test_y"},
		// Three classes run a test with this docstring, and a canary
		// copied it (django files its result under the docstring).
		"Shared docstring.":    {"test_s (m.A.test_s)", "test_s (m.B.test_s)", "test_quiet_owl (m.A.test_quiet_owl)", "test_s (m.C.test_s)"},
		"t.py::test_brave_fox": {"t.py::test_brave_fox"}, // the other canary
	}
	got := countTests(copies, canaryNames("test_quiet_owl", "test_brave_fox"))
	want := testCount{Total: 4, Groups: map[string]int{"t.py::test_x": 2, "t.py::test_y": 1, "Shared docstring.": 3}}
	if got.Total != want.Total || len(got.Groups) != len(want.Groups) {
		t.Fatalf("countTests = %+v, want %+v", got, want)
	}
	for g, n := range want.Groups {
		if got.Groups[g] != n {
			t.Errorf("group %s: %d, want %d", g, got.Groups[g], n)
		}
	}
}

func TestFewerTests(t *testing.T) {
	gold := testCount{Total: 4, Groups: map[string]int{"a::x": 2, "a::y": 1, "Doc.": 3}}
	tests := []struct {
		name string
		got  testCount
		want string
	}{
		{"the gold run itself", gold, ""},
		{"more tests", testCount{Total: 6, Groups: map[string]int{"a::x": 3, "a::y": 1, "Doc.": 3, "a::z": 1}}, ""},
		{"parameter ids differ, as many", testCount{Total: 4, Groups: map[string]int{"a::x": 2, "a::y": 1, "Doc.": 3}}, ""},
		{"one test fewer", testCount{Total: 3, Groups: map[string]int{"a::x": 1, "a::y": 1, "Doc.": 3}}, FewerTestsReason + "3 < 4"},
		{"a test gone, another made up", testCount{Total: 4, Groups: map[string]int{"a::x": 2, "Doc.": 3, "a::fake": 1}}, FewerTestsReason + "0 < 1 results of a::y"},
		{"one copy of a shared name hidden", testCount{Total: 4, Groups: map[string]int{"a::x": 2, "a::y": 1, "Doc.": 2}}, FewerTestsReason + "2 < 3 results of Doc."},
		{"a total-only count", testCount{Total: 4}, ""},
		{"a total-only count, fewer", testCount{Total: 2}, FewerTestsReason + "2 < 4"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := fewerTests(tc.got, gold); got != tc.want {
				t.Errorf("fewerTests = %q, want %q", got, tc.want)
			}
		})
	}
}

// TestGoldTestsStore: a gold count is kept on disk under its key, read
// back by another process's Baseline, lowered (never raised) by a later
// gold run, and keyed by what changes the tests that run.
func TestGoldTestsStore(t *testing.T) {
	dir := t.TempDir()
	tk := &task.Task{InstanceID: "a__b-1", Image: "img", EvalScript: "pytest\n", Patch: "diff", TestPatch: "tp"}
	key := testsKey(tk, task.GraderSWEBench, "sha256:1")
	b := &Baseline{Dir: dir}
	if _, ok := b.goldTests(key); ok {
		t.Fatal("a count before any gold run")
	}
	b.keepGoldTests(key, testCount{Total: 5, Groups: map[string]int{"x": 3, "y": 2}})
	b.keepGoldTests(key, testCount{Total: 4, Groups: map[string]int{"x": 4}})
	got, ok := (&Baseline{Dir: dir}).goldTests(key)
	if !ok || got.Total != 4 || got.Groups["x"] != 3 || len(got.Groups) != 1 {
		t.Errorf("kept %+v, %v; want total 4, x 3 (the smaller of each)", got, ok)
	}
	if _, ok := (&Baseline{}).goldTests(key); ok {
		t.Error("a Baseline without a directory read the disk")
	}
	for name, other := range map[string]func(*task.Task){
		"image":      func(*task.Task) {},
		"test patch": func(c *task.Task) { c.TestPatch = "tp2" },
		"eval":       func(c *task.Task) { c.EvalScript = "pytest -x\n" },
		"gold":       func(c *task.Task) { c.Patch = "diff2" },
		"lists":      func(c *task.Task) { c.PassToPass = []string{"t"} },
	} {
		c := *tk
		other(&c)
		id := "sha256:1"
		if name == "image" {
			id = "sha256:2"
		}
		if testsKey(&c, task.GraderSWEBench, id) == key {
			t.Errorf("another %s gives the same key", name)
		}
	}
}

// idBox is a box that names its image; nothing else of it is used.
type idBox struct {
	sandbox.Sandbox
	id string
}

func (b idBox) ImageID() string { return b.id }

// TestHoldToGold: gold grades keep their count, other grades are held to
// it as the tamper mode says, and a grade without a known gold count or
// image says so.
func TestHoldToGold(t *testing.T) {
	tk := &task.Task{InstanceID: "a__b-1", Image: "img", Patch: "gold"}
	gold := testCount{Total: 3, Groups: map[string]int{"a": 1, "b": 1, "c": 1}}
	fewer := testCount{Total: 2, Groups: map[string]int{"a": 1, "b": 1}}
	resolved := func() *Outcome { return &Outcome{Reward: 1, Resolved: true, Reason: "resolved"} }
	b := &Baseline{}
	box := idBox{id: "sha256:9"}

	out := resolved()
	holdToGold(box, tk, task.GraderSWEBench, Options{Baseline: b}, out, gold)
	if out.TestsBaseline != TestsBaselineUnknown || out.Reward != 1 || out.Tests != 3 {
		t.Errorf("before any gold run: %+v", out)
	}
	failed := &Outcome{Reason: "FAIL_TO_PASS failed: x"}
	holdToGold(box, tk, task.GraderSWEBench, Options{Gold: true, Baseline: b}, failed, fewer)
	if _, ok := b.goldTests(testsKey(tk, task.GraderSWEBench, box.id)); ok {
		t.Error("a gold run that did not resolve was kept")
	}
	out = resolved()
	holdToGold(box, tk, task.GraderSWEBench, Options{Gold: true, Baseline: b}, out, gold)
	if out.TestsBaseline != TestsBaselineGold || out.Reward != 1 {
		t.Errorf("gold: %+v", out)
	}
	tests := []struct {
		name     string
		opts     Options
		got      testCount
		reward   float64
		reason   string
		tampered int
	}{
		{"as many as gold", Options{}, gold, 1, "resolved", 0},
		{"fewer, zero mode", Options{}, fewer, 0, FewerTestsReason + "2 < 3", 1},
		{"fewer, flag mode", Options{Tamper: "flag"}, fewer, 1, "resolved", 1},
		{"fewer, ignore mode", Options{Tamper: "ignore"}, fewer, 1, "resolved", 0},
	}
	// A grade that is not resolved keeps its reason and gets no finding.
	out = &Outcome{Reason: "FAIL_TO_PASS failed: x"}
	holdToGold(box, tk, task.GraderSWEBench, Options{Baseline: b}, out, fewer)
	if out.Reason != "FAIL_TO_PASS failed: x" || len(out.Tampered) != 0 {
		t.Errorf("not resolved, fewer: %+v", out)
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out := resolved()
			tc.opts.Baseline = b
			holdToGold(box, tk, task.GraderSWEBench, tc.opts, out, tc.got)
			if out.Reward != tc.reward || out.Reason != tc.reason || len(out.Tampered) != tc.tampered || out.TestsBaseline != "3 (gold run)" {
				t.Errorf("got %+v", out)
			}
			if tc.tampered > 0 && !strings.HasPrefix(out.Tampered[0], FewerTestsReason) {
				t.Errorf("finding %q", out.Tampered[0])
			}
		})
	}
	// The same task on another image has no gold count; a box that does
	// not name its image is never compared.
	out = resolved()
	holdToGold(idBox{id: "sha256:10"}, tk, task.GraderSWEBench, Options{Baseline: b}, out, fewer)
	if out.Reward != 1 || out.TestsBaseline != TestsBaselineUnknown {
		t.Errorf("another image: %+v", out)
	}
	out = resolved()
	holdToGold(idBox{}, tk, task.GraderSWEBench, Options{Baseline: b}, out, fewer)
	if out.Reward != 1 || !strings.HasPrefix(out.TestsBaseline, TestsBaselineUnknown+": ") {
		t.Errorf("no image id: %+v", out)
	}
}

// TestGoldSkips: a Harbor gold run's conditional skips are kept with its
// count (the union over gold runs), read back for a later grade on the
// same image, and unknown for a record that never kept them or a box
// that does not name its image.
func TestGoldSkips(t *testing.T) {
	dir := t.TempDir()
	tk := &task.Task{InstanceID: "h-1", Image: "img", TaskDir: "/tasks/h-1", Grader: task.GraderHarbor}
	box := idBox{id: "sha256:7"}
	b := &Baseline{Dir: dir}
	opts := Options{Baseline: b}
	if _, ok := goldSkips(box, tk, task.GraderHarbor, opts); ok {
		t.Fatal("skips known before any gold run")
	}
	key := testsKey(tk, task.GraderHarbor, box.id)
	b.keepGoldTests(key, testCount{Total: 2}) // a record from before skips were kept
	if _, ok := goldSkips(box, tk, task.GraderHarbor, opts); ok {
		t.Error("a record without skips read as known")
	}
	b.keepGoldTests(key, testCount{Total: 2, Skips: []string{"t.py::test_b"}, SkipsKept: true})
	b.keepGoldTests(key, testCount{Total: 2, Skips: []string{"t.py::test_a"}, SkipsKept: true})
	got, ok := goldSkips(box, tk, task.GraderHarbor, Options{Baseline: &Baseline{Dir: dir}})
	if !ok || len(got) != 2 || !got["t.py::test_a"] || !got["t.py::test_b"] {
		t.Errorf("gold skips %v, %v; want both gold runs' skips", got, ok)
	}
	if _, ok := goldSkips(idBox{}, tk, task.GraderHarbor, opts); ok {
		t.Error("skips known for a box that does not name its image")
	}
}
