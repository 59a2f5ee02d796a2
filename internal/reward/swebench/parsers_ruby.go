package swebench

import (
	"strings"

	"github.com/swerve-dev/swerve/internal/lazyre"
	"github.com/swerve-dev/swerve/internal/task"
)

func init() {
	RegisterParser("parse_log_minitest", parseMinitest)
	RegisterParser("parse_log_cucumber", parseCucumber)
	RegisterParser("parse_log_ruby_unit", parseRubyUnit)
	RegisterParser("parse_log_rspec_transformed_json", parseRSpecTransformedJSON)
	RegisterParser("parse_log_jekyll", parseJekyll)
}

var (
	minitestResult   = mlLazy(`^(.+)\. .*=.*(\.|F|E).*$`)
	minitestHeader   = lazyre.New(`^\s*\d+\) (Failure|Error):$`)
	minitestLocation = lazyre.New(`\s*\[[^\[\]]*\]$`)
)

// parseMinitest reads minitest --verbose lines "name. = 0.01 s = ." as
// upstream does: the name runs to the last ". " that has an "=" and a
// result mark after it, and the mark is the last '.', 'F' or 'E' of the
// line. Errors count as failures.
func parseMinitest(log string, _ *task.Task) StatusMap {
	sm, w := StatusMap{}, WorstCopy{}
	afterHeader := false
	for _, line := range mlLines(log) {
		// "  1) Failure:" and "  2) Error:" open a failed test's report; the
		// next line names it: "name.  [file:line]:" or "name. :".
		if afterHeader {
			name := strings.TrimSuffix(pyStrip(line), ":")
			name = pyStrip(minitestLocation.ReplaceAllString(name, ""))
			w.Note(strings.TrimSuffix(name, "."), Failed)
		}
		afterHeader = minitestHeader.MatchString(line)
		m := minitestResult.FindStringSubmatch(pyStrip(line))
		if m == nil {
			continue
		}
		if m[2] == "." {
			w.Set(sm, m[1], Passed)
		} else {
			w.Set(sm, m[1], Failed)
		}
	}
	return w.Apply(sm)
}

var cucumberResult = mlLazy(`^(.*) \.+(\.|F)`)

// parseCucumber reads "name ....F"-style progress lines: the name is what
// precedes the last run of dots that ends in '.' or 'F'.
func parseCucumber(log string, _ *task.Task) StatusMap {
	sm, w := StatusMap{}, WorstCopy{}
	for _, line := range mlLines(log) {
		m := cucumberResult.FindStringSubmatch(pyStrip(line))
		if m == nil {
			continue
		}
		if m[2] == "." {
			w.Set(sm, m[1], Passed)
		} else {
			w.Set(sm, m[1], Failed)
		}
	}
	return w.Apply(sm)
}

// rubyUnitResult is upstream's `^\s*(?:test: )?(.+):\s+(\.|E\b|F\b|O\b)`.
// RE2 has no \b: a letter mark must be followed by a non-word character or
// the end of the line, which this pattern consumes instead of asserting. As
// nothing follows in the pattern, the same lines match with the same groups.
var rubyUnitResult = mlLazy(`^\s*(?:test: )?(.+):\s+(?:(\.)|([EFO])(?:\W|$))`)

// parseRubyUnit reads test-unit's verbose output, "test_name: .", "test:
// description: F" and so on, the name running to the last colon that a mark
// follows. E and F are failures, O (omitted) a skip.
func parseRubyUnit(log string, _ *task.Task) StatusMap {
	sm, w := StatusMap{}, WorstCopy{}
	for _, line := range mlLines(log) {
		m := rubyUnitResult.FindStringSubmatch(pyStrip(line))
		if m == nil {
			continue
		}
		switch m[2] + m[3] {
		case ".":
			w.Set(sm, m[1], Passed)
		case "E", "F":
			w.Set(sm, m[1], Failed)
		case "O":
			w.Set(sm, m[1], Skipped)
		}
	}
	return w.Apply(sm)
}

var rspecResult = mlLazy(`^(.+) - (passed|failed)`)

// parseRSpecTransformedJSON reads "full description - passed" lines, which
// the harness's eval scripts make from rspec's JSON report with jq. The match
// is not anchored at the end: the status is the last " - passed" or
// " - failed" on the line, and anything after it is ignored. Pending tests
// are not recognised (upstream's pattern has no "pending").
func parseRSpecTransformedJSON(log string, _ *task.Task) StatusMap {
	sm, w := StatusMap{}, WorstCopy{}
	for _, line := range mlLines(log) {
		m := rspecResult.FindStringSubmatch(pyStrip(line))
		if m == nil {
			continue
		}
		if m[2] == "passed" {
			w.Set(sm, m[1], Passed)
		} else {
			w.Set(sm, m[1], Failed)
		}
	}
	return w.Apply(sm)
}

// parseJekyll picks the parser by the pull-request number in the instance
// id (the second "-"-separated field): jekyll's instances ran minitest or
// cucumber. Upstream raises for any other instance; swerve returns no
// results, so the log is graded as one without tests.
func parseJekyll(log string, t *task.Task) StatusMap {
	fields := strings.Split(t.InstanceID, "-")
	if len(fields) < 2 {
		return nil
	}
	switch fields[1] {
	case "9141", "8047", "8167":
		return parseMinitest(log, t)
	case "8761", "8771":
		return parseCucumber(log, t)
	}
	return nil
}
