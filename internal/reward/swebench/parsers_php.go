package swebench

import (
	"github.com/swerve-dev/swerve/internal/task"
)

func init() { RegisterParser("parse_log_phpunit", parsePHPUnit) }

var (
	phpunitSuite = mlLazy(`^(\w.+) \(.+\)$`)
	phpunitTest  = mlLazy(`^\s*([✔✘↩])\s*(.*)$`)
)

// parsePHPUnit reads phpunit --testdox output: a "Suite Name (Class\Name)"
// header, then "✔ test", "✘ test" or "↩ test" lines, recorded as
// "Suite Name > test". Lines are not trimmed, so whatever follows the name
// (a duration, trailing spaces) stays in the key; a test before any header
// is filed under "None", Python's rendering of the unset suite.
func parsePHPUnit(log string, _ *task.Task) StatusMap {
	sm, w := StatusMap{}, WorstCopy{}
	suite := "None"
	for _, line := range mlLines(log) {
		if m := phpunitSuite.FindStringSubmatch(line); m != nil {
			suite = m[1]
			continue
		}
		m := phpunitTest.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		name := suite + " > " + m[2]
		switch m[1] {
		case "✔":
			w.Set(sm, name, Passed)
		case "✘":
			w.Set(sm, name, Failed)
		case "↩":
			w.Set(sm, name, Skipped)
		}
	}
	return w.Apply(sm)
}
