package swebench

import (
	"regexp"
	"strings"

	"github.com/swerve-dev/swerve/internal/task"
)

func init() { RegisterParser("parse_log_django", parseDjango) }

// djangoInterrupted matches a test whose "ok" was pushed to the next line by
// a long message django's runner prints in between; the official parser
// recognises these three forms over the whole log.
var djangoInterrupted = []*regexp.Regexp{
	regexp.MustCompile(`(?m)^(.*?)[\t\n\v\f\r ]\.\.\.[\t\n\v\f\r ]Testing against Django installed in ((?s:.*?)) silenced\)\.\nok$`),
	regexp.MustCompile(`(?m)^(.*?)[\t\n\v\f\r ]\.\.\.[\t\n\v\f\r ]Internal Server Error: /(.*)/\nok$`),
	regexp.MustCompile(`(?m)^(.*?)[\t\n\v\f\r ]\.\.\.[\t\n\v\f\r ]System check identified no issues \(0 silenced\)\nok$`),
}

var djangoPassSuffixes = []string{" ... ok", " ... OK", " ...  OK"}

// parseDjango reads the verbose output of django's tests/runtests.py:
// "name ... ok|FAIL|ERROR|skipped ...", the "FAIL: name" / "ERROR: name"
// headers of the failure report, and an "ok" on a line of its own for the
// last test whose result was interrupted by other output.
func parseDjango(log string, _ *task.Task) StatusMap {
	sm := StatusMap{}
	var prev string
	havePrev := false
	for raw := range strings.SplitSeq(log, "\n") {
		line := pyStrip(raw)
		if strings.Contains(line, "--version is equivalent to version") {
			sm["--version is equivalent to version"] = Passed
		}
		if strings.Contains(line, " ... ") {
			prev, havePrev = pyBefore(line, " ... "), true
		}
		for _, suffix := range djangoPassSuffixes {
			if !strings.HasSuffix(line, suffix) {
				continue
			}
			// Upstream special-cases one instance (django__django-7188) whose
			// migration output shares the test's line.
			if strings.HasPrefix(line, "Applying sites.0002_alter_domain_unique...test_no_migrations") {
				_, after, _ := strings.Cut(line, "...")
				line = pyStrip(after)
			}
			sm[line[:strings.LastIndex(line, suffix)]] = Passed
			break
		}
		if strings.Contains(line, " ... skipped") {
			sm[pyBefore(line, " ... skipped")] = Skipped
		}
		if strings.HasSuffix(line, " ... FAIL") {
			sm[pyBefore(line, " ... FAIL")] = Failed
		}
		if strings.HasPrefix(line, "FAIL:") {
			if f := pyFields(line); len(f) > 1 {
				sm[f[1]] = Failed
			}
		}
		if strings.HasSuffix(line, " ... ERROR") {
			sm[pyBefore(line, " ... ERROR")] = Error
		}
		if strings.HasPrefix(line, "ERROR:") {
			if f := pyFields(line); len(f) > 1 {
				sm[f[1]] = Error
			}
		}
		if strings.HasPrefix(pyLStrip(line), "ok") && havePrev {
			sm[prev] = Passed
		}
	}
	for _, re := range djangoInterrupted {
		for _, m := range re.FindAllStringSubmatch(log, -1) {
			sm[m[1]] = Passed
		}
	}
	return sm
}
