package lazyre

import (
	"regexp"
	"testing"
)

func TestCompilesOnFirstUseOnce(t *testing.T) {
	calls := 0
	r := Func(func() *regexp.Regexp { calls++; return regexp.MustCompile(`a(b+)`) })
	if calls != 0 {
		t.Fatalf("compiled at declaration")
	}
	for range 3 {
		if got := r.FindStringSubmatch("xabbb"); len(got) != 2 || got[1] != "bbb" {
			t.Fatalf("FindStringSubmatch = %q", got)
		}
	}
	if calls != 1 {
		t.Fatalf("compiled %d times, want 1", calls)
	}
}

func TestCompileAllReportsBadPattern(t *testing.T) {
	New(`(unclosed`)
	if err := CompileAll(); err == nil {
		t.Fatal("CompileAll accepted an invalid pattern")
	}
}
