package swebench

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// Worst copy wins: code under test that prints a pass line for a test that
// then fails must not turn the failure into a pass, in any parser. Each
// case is a log shaped as its runner writes it, with the forged pass line
// where library code would print it, and lists the tests that must come
// out failed (want) and those that must keep the harness's pass (keep).
func TestWorstCopyWins(t *testing.T) {
	cases := []struct {
		name, parser, log string
		want              StatusMap
	}{
		{
			// unittest (Python 3.11) writes "<label> ... " and flushes; the code
			// under test writes "ok\n" to stderr; unittest then writes FAIL
			// on the next line and the "FAIL: <label>" header later. Made
			// with python3 -m unittest -v on tests whose library call does
			// that (the "ok" after test_sub's label was added by hand: a
			// subtest's failure is printed on a line of its own).
			name:   "django ok after the label",
			parser: "parse_log_django",
			log: `test_a (pkg.tests.XorTests.test_a) ... ok
test_doc (pkg.tests.XorTests.test_doc)
Docstring names this test. ... ok
FAIL
test_err (pkg.tests.XorTests.test_err) ... ok
ERROR
test_filter_multiple (pkg.tests.XorTests.test_filter_multiple) ... ok
FAIL
test_sub (pkg.tests.XorTests.test_sub) ... ok

  test_sub (pkg.tests.XorTests.test_sub) (i=1) ... FAIL

======================================================================
ERROR: test_err (pkg.tests.XorTests.test_err)
----------------------------------------------------------------------
Traceback (most recent call last):
  File "/tmp/okatk/pkg/tests.py", line 16, in test_err
    lib(); raise RuntimeError("boom")
RuntimeError: boom

======================================================================
FAIL: test_doc (pkg.tests.XorTests.test_doc)
Docstring names this test.
----------------------------------------------------------------------
Traceback (most recent call last):
  File "/tmp/okatk/pkg/tests.py", line 14, in test_doc
    self.assertEqual(lib(), 2)
AssertionError: 1 != 2

======================================================================
FAIL: test_filter_multiple (pkg.tests.XorTests.test_filter_multiple)
----------------------------------------------------------------------
Traceback (most recent call last):
  File "/tmp/okatk/pkg/tests.py", line 11, in test_filter_multiple
    self.assertEqual(lib(), 2)
AssertionError: 1 != 2

======================================================================
FAIL: test_sub (pkg.tests.XorTests.test_sub) (i=1)
----------------------------------------------------------------------
Traceback (most recent call last):
  File "/tmp/okatk/pkg/tests.py", line 20, in test_sub
    self.assertEqual(i, 0)
AssertionError: 1 != 0

----------------------------------------------------------------------
Ran 5 tests in 0.001s

FAILED (failures=3, errors=1)
`,
			want: StatusMap{
				"test_a (pkg.tests.XorTests.test_a)":                             Passed,
				"Docstring names this test.":                                     Failed,
				"test_err (pkg.tests.XorTests.test_err)":                         Error,
				"test_filter_multiple (pkg.tests.XorTests.test_filter_multiple)": Failed,
				"test_sub (pkg.tests.XorTests.test_sub)":                         Failed,
				"test_sub (pkg.tests.XorTests.test_sub) (i=1)":                   Failed,
				"test_doc":             Failed,
				"test_err":             Error,
				"test_filter_multiple": Failed,
				"test_sub":             Failed,
			},
		},
		{
			// A forged "ok" on a line of its own after the label: the
			// stripped label line has no " ... " so the "ok" attaches to
			// nothing, as in the harness.
			name:   "django ok on its own line",
			parser: "parse_log_django",
			log: "test_x (m.C.test_x) ... \nok\nFAIL\n\n" +
				"======================================================================\n" +
				"FAIL: test_x (m.C.test_x)\n" +
				"----------------------------------------------------------------------\n" +
				"AssertionError: 1 != 2\n",
			want: StatusMap{"test_x": Failed},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p, err := LookupParser(c.parser)
			if err != nil {
				t.Fatal(err)
			}
			got := p(c.log, nil)
			if diff := cmp.Diff(c.want, got); diff != "" {
				t.Errorf("%s (-want +got):\n%s", c.parser, diff)
			}
		})
	}
}
