package swebench

import (
	"strings"

	"github.com/swerve-dev/swerve/internal/lazyre"
	"github.com/swerve-dev/swerve/internal/task"
)

func init() { RegisterParser("parse_log_django", parseDjango) }

// djangoInterrupted matches a test whose "ok" was pushed to the next line by
// a long message django's runner prints in between; the official parser
// recognises these three forms over the whole log. Each match must start at
// a line holding its anchor text, so only those lines are tried (see
// findAnchored); the patterns are anchored at the start of the text.
var djangoInterrupted = []struct {
	anchor string
	re     *lazyre.Regexp
}{
	{"Testing against Django installed in ", lazyre.New(`(?m)\A(.*?)[\t\n\v\f\r ]\.\.\.[\t\n\v\f\r ]Testing against Django installed in ((?s:.*?)) silenced\)\.\nok$`)},
	{"Internal Server Error: /", lazyre.New(`(?m)\A(.*?)[\t\n\v\f\r ]\.\.\.[\t\n\v\f\r ]Internal Server Error: /(.*)/\nok$`)},
	{"System check identified no issues (0 silenced)\nok", lazyre.New(`(?m)\A(.*?)[\t\n\v\f\r ]\.\.\.[\t\n\v\f\r ]System check identified no issues \(0 silenced\)\nok$`)},
}

// findAnchored returns group 1 of every match of re in log, as Python's
// re.finditer with a multiline "^" would find them (leftmost first, not
// overlapping), given that a match can only start at the beginning of a line
// that contains anchor. re must be anchored with \A.
func findAnchored(log, anchor string, re *lazyre.Regexp) []string {
	var out []string
	pos := 0
	for pos < len(log) {
		i := strings.Index(log[pos:], anchor)
		if i < 0 {
			break
		}
		at := pos + i
		lineStart := max(pos, strings.LastIndexByte(log[:at], '\n')+1)
		if m := re.FindStringSubmatchIndex(log[lineStart:]); m != nil {
			out = append(out, log[lineStart+m[2]:lineStart+m[3]])
			pos = lineStart + max(m[1], 1)
			continue
		}
		nl := strings.IndexByte(log[at:], '\n')
		if nl < 0 {
			break
		}
		pos = at + nl + 1
	}
	return out
}

var djangoPassSuffixes = []string{" ... ok", " ... OK", " ...  OK"}

// parseDjango reads the verbose output of django's tests/runtests.py:
// "name ... ok|FAIL|ERROR|skipped ...", the "FAIL: name" / "ERROR: name"
// headers of the failure report, and an "ok" on a line of its own for the
// last test whose result was interrupted by other output.
func parseDjango(log string, _ *task.Task) StatusMap {
	sm := StatusMap{}
	w := WorstCopy{}
	var prev string
	havePrev := false
	// header is the status of the failure header on the line before, whose
	// next line is the test's docstring (its name in verbose output) unless
	// it is the report's rule of dashes.
	var header Status
	for raw := range strings.SplitSeq(log, "\n") {
		line := pyStrip(raw)
		if header != "" && line != "" && strings.Trim(line, "-") != "" {
			w.Note(line, header)
		}
		header = ""
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
			w.Set(sm, pyBefore(line, " ... FAIL"), Failed)
			noteUnittestLabel(w, pyBefore(line, " ... FAIL"), Failed)
		}
		if strings.HasPrefix(line, "FAIL:") {
			if f := pyFields(line); len(f) > 1 {
				w.Set(sm, f[1], Failed)
			}
			noteHeader(w, line, "FAIL:", Failed)
			header = Failed
		}
		if strings.HasSuffix(line, " ... ERROR") {
			w.Set(sm, pyBefore(line, " ... ERROR"), Error)
			noteUnittestLabel(w, pyBefore(line, " ... ERROR"), Error)
		}
		if strings.HasPrefix(line, "ERROR:") {
			if f := pyFields(line); len(f) > 1 {
				w.Set(sm, f[1], Error)
			}
			noteHeader(w, line, "ERROR:", Error)
			header = Error
		}
		if strings.HasPrefix(pyLStrip(line), "ok") && havePrev {
			sm[prev] = Passed
		}
	}
	for _, p := range djangoInterrupted {
		for _, name := range findAnchored(log, p.anchor, p.re) {
			sm[name] = Passed
		}
	}
	return w.Apply(sm)
}

// noteHeader notes the test a unittest failure header ("FAIL: <label>",
// "ERROR: <label>") names: the whole label, as verbose output spells it
// ("test_x (mod.Class.test_x)"; the harness keeps only its first word),
// and the test it belongs to when the label is a subtest's.
func noteHeader(w WorstCopy, line, prefix string, s Status) {
	label := pyStrip(strings.TrimPrefix(line, prefix))
	if label == "" {
		return
	}
	w.Note(label, s)
	noteUnittestLabel(w, label, s)
}

// subtestOf matches a subtest's label, the test's own label followed by
// its parameters: "test_x (mod.Class.test_x) (i=1)" or "... [msg]".
var subtestOf = lazyre.New(`^(\w+ \([\w.]+\)) [\[(]`)

// noteUnittestLabel notes the test a subtest belongs to: a test with a
// failed subtest has failed.
func noteUnittestLabel(w WorstCopy, label string, s Status) {
	if m := subtestOf.FindStringSubmatch(label); m != nil {
		w.Note(m[1], s)
	}
}
