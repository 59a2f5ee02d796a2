package harbor

import (
	"fmt"
	"strings"

	"github.com/swerve-dev/swerve/internal/reward/tamper"
	"github.com/swerve-dev/swerve/internal/task"
)

// Mutant canaries for a Harbor task: the swebench grader's (package
// tamper), planned on the pytest file test.sh runs as if that file were a
// test patch's new file whose every test is a FAIL_TO_PASS test. They are
// inserted into the file in the box and checked in a second run of test.sh
// (see Run), after the first gave its verdict: a must-fail copy that fails
// makes pytest, and so test.sh, fail, and the reward file of that run is
// not read. Only a run whose verdict is already 1 is run again.

// planCanaries plans canaries for f (nil when it cannot carry them, with
// the reason in Unavailable).
func planCanaries(id string, f pytestFile) *tamper.Canaries {
	pseudo := &task.Task{
		InstanceID: id,
		LogParser:  "parse_log_pytest",
		EvalScript: ": '>>>>> Start Test Output'\npytest -rA " + f.Rel + "\n: '>>>>> End Test Output'\n",
		TestPatch:  newFileDiff(f.Rel, f.Source),
	}
	for _, t := range f.Tests {
		pseudo.FailToPass = append(pseudo.FailToPass, f.Rel+"::"+t)
	}
	return tamper.PlanCanaries(pseudo, func(file string) (string, bool) {
		if file == f.Rel {
			return f.Source, true
		}
		return "", false
	})
}

// newFileDiff is a git diff that creates file with text.
func newFileDiff(file, text string) string {
	lines := strings.SplitAfter(text, "\n")
	if n := len(lines); n > 0 && lines[n-1] == "" {
		lines = lines[:n-1]
	}
	var b strings.Builder
	fmt.Fprintf(&b, "diff --git a/%[1]s b/%[1]s\nnew file mode 100644\n--- /dev/null\n+++ b/%[1]s\n@@ -0,0 +1,%[2]d @@\n", file, len(lines))
	for _, l := range lines {
		b.WriteString("+" + strings.TrimSuffix(l, "\n") + "\n")
	}
	return b.String()
}
