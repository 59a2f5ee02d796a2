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
		{
			// A pass line printed after pytest's own summary (at exit).
			name:   "pytest pass after the summary",
			parser: "parse_log_pytest",
			log:    "FAILED tests/t.py::test_x - assert 1 == 2\nERROR tests/t.py::test_y - RuntimeError\nPASSED tests/t.py::test_x\nPASSED tests/t.py::test_y\nPASSED tests/t.py::test_z\n",
			want:   StatusMap{"tests/t.py::test_x": Failed, "tests/t.py::test_y": Error, "tests/t.py::test_z": Passed},
		},
		{
			name:   "pytest_options pass after the summary",
			parser: "parse_log_pydicom",
			log:    "FAILED t.py::f[/tmp/a/x.dcm] - boom\nPASSED t.py::f[/tmp/b/x.dcm]\n",
			want:   StatusMap{"t.py::f[/x.dcm]": Failed},
		},
		{
			name:   "matplotlib pass after the summary",
			parser: "parse_log_matplotlib",
			log:    "FAILED t.py::c[MouseButton.LEFT] - boom\nPASSED t.py::c[MouseButton.LEFT]\n",
			want:   StatusMap{"t.py::c[1]": Failed},
		},
		{
			// Verbose result, then a forged summary line.
			name:   "pytest_v2 pass after the verbose failure",
			parser: "parse_log_astropy",
			log:    "t.py::test_x FAILED\nt.py::test_y PASSED\nPASSED t.py::test_x\n",
			want:   StatusMap{"t.py::test_x": Failed, "t.py::test_y": Passed},
		},
		{
			name:   "seaborn pass after the summary",
			parser: "parse_log_seaborn",
			log:    "FAILED t.py::test_x - boom\nt.py::test_x PASSED [100%]\n",
			want:   StatusMap{"t.py::test_x": Failed},
		},
		{
			// bin/test --verbose: "ok" printed by the code under test right
			// after the test's name, then the runner's own F and report.
			name:   "sympy ok after the name",
			parser: "parse_log_sympy",
			log: "sympy/core/tests/test_x.py[2] \ntest_a ok\ntest_b ok\nF\n\n" +
				"________________________________________________________________________________\n" +
				"_________________ sympy/core/tests/test_x.py:test_b _________________\n" +
				"AssertionError\n",
			want: StatusMap{"test_a": Passed, "test_b": Failed, "sympy/core/tests/test_x.py:test_b": Failed},
		},
		{
			// go test -v: a forged PASS line after the runner's FAIL.
			name:   "gotest pass after fail",
			parser: "parse_log_gotest",
			log:    "=== RUN   TestX\n--- FAIL: TestX (0.00s)\n--- PASS: TestX (0.00s)\n--- PASS: TestY (0.00s)\nFAIL\n",
			want:   StatusMap{"TestX": Failed, "TestY": Passed},
		},
		{
			// cargo test --nocapture: "ok" written right after libtest's
			// "test x ... ", FAILED on the next line; the report's sections and
			// list still name the test.
			name:   "cargo ok after the name",
			parser: "parse_log_cargo",
			log: "running 2 tests\ntest tests::a ... ok\ntest tests::b ... ok\nFAILED\n\nfailures:\n\n" +
				"---- tests::b stdout ----\nthread 'tests::b' panicked at src/lib.rs:4:5\n\n\nfailures:\n    tests::b\n\n" +
				"test result: FAILED. 1 passed; 1 failed; 0 ignored; 0 measured; 0 filtered out\n",
			want: StatusMap{"tests::a": Passed, "tests::b": Failed},
		},
		{
			// The same with --nocapture, where only the final list names it.
			name:   "cargo list only",
			parser: "parse_log_cargo",
			log:    "test tests::b ... ok\nFAILED\n\nfailures:\n    tests::b\n\ntest result: FAILED. 0 passed; 1 failed\n",
			want:   StatusMap{"tests::b": Failed},
		},
		{
			// --show-output: a passing test's section is not a failure.
			name:   "cargo successes section",
			parser: "parse_log_cargo",
			log:    "test tests::a ... ok\n\nsuccesses:\n\n---- tests::a stdout ----\nhello\n\n\nsuccesses:\n    tests::a\n\ntest result: ok. 1 passed\n",
			want:   StatusMap{"tests::a": Passed},
		},
		{
			// jest --verbose: a forged "✓" line after the run, and the
			// runner's "●" header for the failed test.
			name:   "jest pass after fail",
			parser: "parse_log_jest",
			log:    "  Range\n    ✕ stepped range (3 ms)\n    ✓ plain (1 ms)\n\n  ● Range › stepped range\n\n    expect(received).toEqual(expected)\n\n    ✓ stepped range\n",
			want:   StatusMap{"stepped range": Failed, "plain": Passed},
		},
		{
			name:   "jest header only",
			parser: "parse_log_jest",
			log:    "  Range\n    ✓ stepped range (3 ms)\n\n  ● Range › stepped range\n\n    expect(received).toEqual(expected)\n",
			want:   StatusMap{"stepped range": Failed},
		},
		{
			name:   "vitest pass after fail",
			parser: "parse_log_vitest",
			log:    " × a.test.ts > s > t 3ms\n ✓ a.test.ts > s > t 1ms\n",
			want:   StatusMap{"a.test.ts > s > t": Failed},
		},
		{
			name:   "tap ok after not ok",
			parser: "parse_log_tap",
			log:    "not ok 1 - adds\nok 1 - adds\nok 2 - subtracts\n",
			want:   StatusMap{"- adds": Failed, "- subtracts": Passed},
		},
		{
			name:   "phpunit pass after fail",
			parser: "parse_log_phpunit",
			log:    "Calc (Tests\\Calc)\n ✘ Adds\n ✔ Adds\n",
			want:   StatusMap{"Calc > Adds": Failed},
		},
		{
			// minitest -v: a forged result line printed at exit, and the
			// runner's "1) Failure:" report for the test.
			name:   "minitest pass after fail",
			parser: "parse_log_minitest",
			log: "T#test_: adds numbers.  = 0.00 s = F\nT#test_: adds numbers.  = 0.00 s = .\n\n" +
				"  1) Failure:\nT#test_: adds numbers.  [t.rb:3]:\nExpected: 4\n",
			want: StatusMap{"T#test_: adds numbers": Failed},
		},
		{
			name:   "minitest header only",
			parser: "parse_log_minitest",
			log:    "T#test_: adds numbers.  = 0.00 s = .\n\n  1) Error:\nT#test_: adds numbers. :\nRuntimeError: boom\n",
			want:   StatusMap{"T#test_: adds numbers": Failed},
		},
		{
			name:   "ruby_unit pass after fail",
			parser: "parse_log_ruby_unit",
			log:    "test_adds: F\ntest_adds: .\n",
			want:   StatusMap{"test_adds": Failed},
		},
		{
			name:   "rspec pass after fail",
			parser: "parse_log_rspec_transformed_json",
			log:    "Calc adds - failed\nCalc adds - passed\n",
			want:   StatusMap{"Calc adds": Failed},
		},
		{
			name:   "gradle pass after fail",
			parser: "parse_log_gradle_custom",
			log:    "pkg.CalcTest > adds FAILED\npkg.CalcTest > adds PASSED\n",
			want:   StatusMap{"pkg.CalcTest > adds": Failed},
		},
		{
			name:   "ant pass after fail",
			parser: "parse_log_ant",
			log:    "    [junit] [FAIL] CalcTest.adds\n    [junit] [PASS] CalcTest.adds\n",
			want:   StatusMap{"CalcTest.adds": Failed},
		},
		{
			name:   "googletest pass after fail",
			parser: "parse_log_googletest",
			log:    "[  FAILED  ] Calc.Adds (0 ms)\n[       OK ] Calc.Adds (0 ms)\n",
			want:   StatusMap{"Calc.Adds": Failed},
		},
		{
			name:   "karma pass after fail",
			parser: "parse_log_karma",
			log:    "Starting browser ChromeHeadless\n  Calc\n    ✖ adds\n    ✔ adds\nSUMMARY:\n",
			want:   StatusMap{"Calc > adds": Failed},
		},
		{
			// Honest: deno prints a test's name with no status before its
			// output, and again with its status after; that first line is not
			// a failure line.
			name:   "quarto status after output",
			parser: "parse_log_quarto_cli",
			log:    "[smoke] > render a ...\n------- output -------\nhi\n[smoke] > render a ... \x1b[32mok\x1b[0m (3ms)\n",
			want:   StatusMap{"[smoke] > render a": Passed},
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
