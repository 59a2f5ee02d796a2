package swebench

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// bigDjangoLog builds a django eval log the way real ones grow: the eval
// script's `git show` of a base commit that touches many files (megabytes of
// diff) before the test section, then a verbose run of n tests.
func bigDjangoLog(tb testing.TB, n int) (string, []string) {
	tb.Helper()
	real, err := os.ReadFile(filepath.Join("testdata", "reports", "django__django-16938.nopatch", "test_output.txt"))
	if err != nil {
		tb.Fatal(err)
	}
	var b strings.Builder
	b.WriteString("+ git show\ncommit 0123456789abcdef\n")
	for i := 0; b.Len() < 1_600_000; i++ {
		fmt.Fprintf(&b, "diff --git a/django/mod%d.py b/django/mod%d.py\n--- a/django/mod%d.py\n+++ b/django/mod%d.py\n@@ -1,3 +1,3 @@\n-    return value ... ok\n+    return other_value  # ... FAIL\n context line %d\n", i, i, i, i, i)
	}
	b.WriteString("+ : '" + StartTestOutput + "'\n")
	var names []string
	for i := range n {
		name := fmt.Sprintf("test_case_%d (app%d.tests.Suite%d.test_case_%d)", i, i%40, i%7, i)
		names = append(names, name)
		switch i % 50 {
		case 7:
			fmt.Fprintf(&b, "%s ... FAIL\n", name)
		case 9:
			fmt.Fprintf(&b, "%s ... skipped 'no db feature'\n", name)
		default:
			fmt.Fprintf(&b, "%s ... ok\n", name)
		}
	}
	b.Write(real) // tracebacks and the failure report, as a failing run prints them
	b.WriteString("\n+ : '" + EndTestOutput + "'\n")
	return b.String(), names
}

// BenchmarkGradeLog grades a 1.6 MB django-style log with 3,000 tests
// (target: under 20 ms per grade).
//
//	go test -run '^$' -bench GradeLog ./internal/reward/swebench
func BenchmarkGradeLog(b *testing.B) {
	log, names := bigDjangoLog(b, 3000)
	tk := loadRow(&testing.T{}, filepath.Join("testdata", "reports", "django__django-16938.nopatch", "row.json"))
	tk.FailToPass, tk.PassToPass = names[:100], names[100:]
	b.SetBytes(int64(len(log)))
	b.ReportAllocs()
	for b.Loop() {
		r, err := Evaluate(tk, log, Options{})
		if err != nil || !r.Found || r.Resolved {
			b.Fatalf("unexpected result: %+v, %v", r, err)
		}
	}
}
