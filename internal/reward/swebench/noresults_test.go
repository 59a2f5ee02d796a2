package swebench

import "testing"

// TestNoResults: a test section without results says why when the test
// command could not start, naming the interpreter or program, and stays
// the bare reason otherwise.
func TestNoResults(t *testing.T) {
	for _, c := range []struct{ section, want string }{
		{"", "no test results in the log"},
		{"+ python3 -m pytest -rA tests/test_calc.py\n/root/.pyenv/versions/3.11.7/bin/python3: No module named pytest\n",
			"no test results in the log: the test command did not start (/root/.pyenv/versions/3.11.7/bin/python3: No module named pytest)"},
		{"+ pytest -rA\n/eval.sh: line 12: pytest: command not found\n",
			"no test results in the log: the test command did not start (/eval.sh: line 12: pytest: command not found)"},
		{"+ ./tests/runtests.py\n/eval.sh: line 9: ./tests/runtests.py: No such file or directory\n",
			"no test results in the log: the test command did not start (/eval.sh: line 9: ./tests/runtests.py: No such file or directory)"},
		{"python3: can't open file '/testbed/tests/runtests.py': [Errno 2] No such file or directory\n",
			"no test results in the log: the test command did not start (python3: can't open file '/testbed/tests/runtests.py': [Errno 2] No such file or directory)"},
		{"Traceback (most recent call last):\nSyntaxError: invalid syntax\n", "no test results in the log"},
	} {
		if got := NoResults(c.section); got != c.want {
			t.Errorf("NoResults(%q)\n got %q\nwant %q", c.section, got, c.want)
		}
	}
}
