package swebench

import (
	"github.com/swerve-dev/swerve/internal/task"
)

func init() {
	RegisterParser("parse_log_maven", parseMaven)
	RegisterParser("parse_log_ant", parseAnt)
	RegisterParser("parse_log_gradle_custom", parseGradleCustom)
}

var (
	mavenTestArg = mlLazy(`^.*-Dtest=(\S+).*$`)
	mavenBuild   = mlLazy(`^.*BUILD (SUCCESS|FAILURE)$`)
)

// parseMaven reads logs where every test ran in a mvn invocation of its own:
// maven does not list passing tests, so the test name comes from the
// -Dtest= argument of the xtrace'd command and its outcome from the next
// BUILD SUCCESS / BUILD FAILURE. Names and results are paired first come,
// first served; a result seen before any command waits for a later one.
func parseMaven(log string, _ *task.Task) StatusMap {
	sm, w := StatusMap{}, WorstCopy{}
	var pending, early []string
	record := func(name, result string) {
		switch result {
		case "SUCCESS":
			w.Set(sm, name, Passed)
		case "FAILURE":
			w.Set(sm, name, Failed)
		}
	}
	for _, line := range mlLines(log) {
		line = pyStrip(line)
		if m := mavenTestArg.FindStringSubmatch(line); m != nil {
			pending = append(pending, m[1])
		}
		if m := mavenBuild.FindStringSubmatch(line); m != nil {
			if len(pending) > 0 {
				record(pending[0], m[1])
				pending = pending[1:]
			} else {
				early = append(early, m[1])
			}
		}
	}
	for len(pending) > 0 && len(early) > 0 {
		record(pending[0], early[0])
		pending, early = pending[1:], early[1:]
	}
	return w.Apply(sm)
}

var antResult = mlLazy(`^\s*\[junit\]\s+\[(PASS|FAIL|ERR)\]\s+(.*)$`)

// parseAnt reads "[junit] [PASS] Class.method" lines (lombok's ant build);
// errors count as failures.
func parseAnt(log string, _ *task.Task) StatusMap {
	sm, w := StatusMap{}, WorstCopy{}
	for _, line := range mlLines(log) {
		m := antResult.FindStringSubmatch(pyStrip(line))
		if m == nil {
			continue
		}
		if m[1] == "PASS" {
			w.Set(sm, m[2], Passed)
		} else {
			w.Set(sm, m[2], Failed)
		}
	}
	return w.Apply(sm)
}

var (
	gradleFull   = mlLazy(`^([^>].+)\s+(PASSED|FAILED)$`)
	gradleName   = mlLazy(`^([^>]\S*\s+>\s+\S+)$`)
	gradleStatus = mlLazy(`^(PASSED|FAILED)$`)
)

// parseGradleCustom reads "pkg.Class > method PASSED" lines, printed by a
// gradle test logging config the harness installs. When other output splits
// a name from its status, a bare "Class > method" line is remembered until a
// line holding only PASSED or FAILED; a full line in between forgets it.
func parseGradleCustom(log string, _ *task.Task) StatusMap {
	sm, w := StatusMap{}, WorstCopy{}
	pending := ""
	for _, line := range mlLines(log) {
		line = pyStrip(line)
		if m := gradleFull.FindStringSubmatch(line); m != nil {
			w.Set(sm, m[1], gradleStatusOf(m[2]))
			pending = ""
			continue
		}
		if m := gradleName.FindStringSubmatch(line); m != nil {
			pending = m[1]
			continue
		}
		if pending != "" {
			if m := gradleStatus.FindStringSubmatch(line); m != nil {
				w.Set(sm, pending, gradleStatusOf(m[1]))
				pending = ""
			}
		}
	}
	return w.Apply(sm)
}

func gradleStatusOf(s string) Status {
	if s == "PASSED" {
		return Passed
	}
	return Failed
}
