package swebench

import (
	"strings"

	"github.com/swerve-dev/swerve/internal/lazyre"
	"github.com/swerve-dev/swerve/internal/task"
)

func init() { RegisterParser("parse_log_cargo", parseCargo) }

var (
	cargoResult        = mlLazy(`^test\s+(\S+)\s+\.\.\.\s+(\w+)$`)
	cargoFailedSection = lazyre.New(`^---- (\S+) stdout ----$`)
	cargoFailedName    = lazyre.New(`^    (\S+)$`)
)

// parseCargo reads the "test path::name ... ok" lines of cargo test. Only
// "ok" and "FAILED" are recorded: ignored tests, and results whose name
// holds a space (doc tests: "src/lib.rs - f (line 3)"), are left out, as
// upstream leaves them.
func parseCargo(log string, _ *task.Task) StatusMap {
	sm, w := StatusMap{}, WorstCopy{}
	inFailures := false
	for _, line := range mlLines(log) {
		// libtest's report after the results: "failures:", one
		// "---- name stdout ----" section per failed test, then "failures:"
		// again and the failed tests' names indented by four spaces.
		// (--show-output prints passing tests' sections under
		// "successes:".)
		switch t := pyStrip(line); {
		case t == "failures:":
			inFailures = true
		case t == "successes:" || strings.HasPrefix(t, "test result:") || strings.HasPrefix(t, "running "):
			inFailures = false
		case inFailures:
			if m := cargoFailedSection.FindStringSubmatch(t); m != nil {
				w.Note(m[1], Failed)
			} else if m := cargoFailedName.FindStringSubmatch(line); m != nil {
				w.Note(m[1], Failed)
			}
		}
		m := cargoResult.FindStringSubmatch(pyStrip(line))
		if m == nil {
			continue
		}
		switch m[2] {
		case "ok":
			w.Set(sm, m[1], Passed)
		case "FAILED":
			w.Set(sm, m[1], Failed)
		}
	}
	return w.Apply(sm)
}
