package tamper

import (
	"strings"
	"testing"

	"github.com/swerve-dev/swerve/internal/reward/swebench"
)

func TestPlanPytest(t *testing.T) {
	const hidden = "from calc import add, mul\n\n\ndef test_add():\n    assert add(2, 3) == 5\n\n\ndef test_mul():\n    assert mul(2, 3) == 6\n"
	const bare = "def test_add():\n    check()\n\n\ndef test_mul():\n    check()\n"
	src := func(text string) Source {
		return func(f string) (string, bool) { return text, f == "r2e_tests/test_hidden.py" }
	}
	tests := []struct {
		name       string
		src        Source
		first      []string
		wantKind   string // prefix of Kind()
		wantUnavai string
	}{
		{"mutant of the first test", src(hidden), []string{"r2e_tests/test_hidden.py::test_add", "r2e_tests/test_hidden.py::test_mul"}, "mutants of r2e_tests/test_hidden.py::test_", ""},
		{"no assertion to change: templates", src(bare), []string{"r2e_tests/test_hidden.py::test_add"}, "fixed templates (no listed test has an assertion to change)", ""},
		{"unreadable file: templates", nil, []string{"r2e_tests/test_hidden.py::test_add"}, "fixed templates (no test file could be read)", ""},
		{"no file in the names", src(hidden), []string{"test_add"}, "", "not available: no listed test names its file"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := PlanPytestSeeded(tt.first, nil, tt.src, 3, 4)
			if c.Unavailable != tt.wantUnavai {
				t.Fatalf("Unavailable %q, want %q", c.Unavailable, tt.wantUnavai)
			}
			if !c.Available() {
				return
			}
			if !strings.HasPrefix(c.Kind(), tt.wantKind) {
				t.Errorf("Kind %q, want %q…", c.Kind(), tt.wantKind)
			}
			if c.File != "r2e_tests/test_hidden.py" || c.MustFail == c.MustPass {
				t.Errorf("File %q, names %q %q", c.File, c.MustFail, c.MustPass)
			}
			for _, n := range tt.first {
				if c.IsCanary(n) {
					t.Errorf("IsCanary(%q) for a listed test", n)
				}
			}
			if !c.IsCanary("r2e_tests/test_hidden.py::"+c.MustFail) || !c.IsCanary("TestX."+c.MustPass) {
				t.Errorf("IsCanary misses the canaries' own names")
			}
			// The must-fail copy passing on a resolved run is a finding;
			// both behaving is none.
			ok := swebench.StatusMap{c.MustFail: swebench.Failed, c.MustPass: swebench.Passed}
			if got := c.Verify(ok, true); len(got) != 0 {
				t.Errorf("Verify(behaving) = %v", got)
			}
			bad := swebench.StatusMap{c.MustFail: swebench.Passed, c.MustPass: swebench.Passed}
			if got := c.Verify(bad, true); len(got) != 1 {
				t.Errorf("Verify(must-fail passed) = %v", got)
			}
		})
	}
}

// The injector for a mutant puts the changed copy into the file: the copy
// of test_add expects another value.
func TestPlanPytestMutantSource(t *testing.T) {
	const hidden = "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n"
	c := PlanPytestSeeded([]string{"r2e_tests/test_hidden.py::test_add"}, nil, func(string) (string, bool) { return hidden, true }, 1, 2)
	if c.Original == "" {
		t.Fatalf("no mutant: %s", c.Kind())
	}
	inj := string(c.Injector())
	if !strings.Contains(inj, "def "+c.MustFail+"():") || !strings.Contains(inj, "def "+c.MustPass+"():") {
		t.Fatalf("injector lacks the canaries:\n%s", inj)
	}
	if !strings.Contains(inj, "assert add(2, 3) == 5") {
		t.Errorf("the must-pass copy is not the original's")
	}
}
