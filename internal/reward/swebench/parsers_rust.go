package swebench

import (
	"github.com/swerve-dev/swerve/internal/task"
)

func init() { RegisterParser("parse_log_cargo", parseCargo) }

var cargoResult = mlLazy(`^test\s+(\S+)\s+\.\.\.\s+(\w+)$`)

// parseCargo reads the "test path::name ... ok" lines of cargo test. Only
// "ok" and "FAILED" are recorded: ignored tests, and results whose name
// holds a space (doc tests: "src/lib.rs - f (line 3)"), are left out, as
// upstream leaves them.
func parseCargo(log string, _ *task.Task) StatusMap {
	sm := StatusMap{}
	for _, line := range mlLines(log) {
		m := cargoResult.FindStringSubmatch(pyStrip(line))
		if m == nil {
			continue
		}
		switch m[2] {
		case "ok":
			sm[m[1]] = Passed
		case "FAILED":
			sm[m[1]] = Failed
		}
	}
	return sm
}
