package swesmith

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/swerve-dev/swerve/internal/lazyre"
	"github.com/swerve-dev/swerve/internal/reward/swebench"
	"github.com/swerve-dev/swerve/internal/task"
)

// SWE-smith's log parsers (swesmith/harness/log_parsers.py). Its pytest
// parser is not SWE-bench's: it reads the verbose per-test lines
// ("path::test PASSED [ 10%]"), the name first and the status after it,
// which is what its test command (pytest --verbose) prints. Go test logs
// are read by SWE-bench's gotest parser, which is the same rule.

// statusOrder is the order SWE-smith tries statuses in (SWE-bench's
// TestStatus enumeration).
var statusOrder = []swebench.Status{swebench.Failed, swebench.Passed, swebench.Skipped, swebench.Error, swebench.XFail}

// repoParsers are the repositories whose profile names a parser other than
// the pytest one.
var repoParsers = map[string]string{
	"gin-gonic/gin":        "gotest",
	"hips/autograd":        "autograd",
	"paramiko/paramiko":    "paramiko",
	"python/mypy":          "mypy",
	"tornadoweb/tornado":   "tornado",
	"un33k/python-slugify": "python_slugify",
}

// Parsers by the name SWE-smith gives them (without the parse_log_ prefix).
var parsers = map[string]swebench.Parser{
	"pytest":         parsePytest,
	"autograd":       parseAutograd,
	"paramiko":       parseParamiko,
	"mypy":           parseMypy,
	"tornado":        parseTornado,
	"python_slugify": parseSlugify,
}

// parserFor picks the task's parser: the row's own log_parser when it names
// one swerve has (SWE-smith's names first, then SWE-bench's registry), else
// the one SWE-smith uses for the repository, else the pytest one.
func parserFor(t *task.Task, repo string) (swebench.Parser, string, error) {
	if name := t.LogParser; name != "" {
		if p, ok := parsers[strings.TrimPrefix(name, "parse_log_")]; ok {
			return p, name, nil
		}
		p, err := swebench.LookupParser(name)
		if err != nil {
			return nil, "", err
		}
		return p, name, nil
	}
	name := repoParsers[strings.ToLower(repo)]
	if name == "" {
		name = "pytest"
	}
	if name == "gotest" {
		p, err := swebench.LookupParser("parse_log_gotest")
		return p, "parse_log_gotest", err
	}
	return parsers[name], "parse_log_" + name, nil
}

// pyIsSpace is Python's str.isspace for one character (also what \s
// matches in a str pattern).
func pyIsSpace(r rune) bool {
	return unicode.IsSpace(r) || (r >= 0x1c && r <= 0x1f)
}

// pySpaceClass is Python's \s (str patterns) spelled out for RE2, to use
// inside a character class.
const pySpaceClass = `\t-\r\x1c-\x20\x{85}\x{a0}\x{1680}\x{2000}-\x{200a}\x{2028}\x{2029}\x{202f}\x{205f}\x{3000}`

// pyFields is Python's str.split() with no argument.
func pyFields(s string) []string { return strings.FieldsFunc(s, pyIsSpace) }

// parsePytest: a line that starts with a name (no whitespace in it),
// then whitespace, then a status word, records that status for the name.
func parsePytest(log string, _ *task.Task) swebench.StatusMap {
	sm, w := swebench.StatusMap{}, swebench.WorstCopy{}
	for _, line := range strings.Split(log, "\n") {
		end := strings.IndexFunc(line, pyIsSpace)
		if end <= 0 {
			continue
		}
		// pytest's short summary ("FAILED path::test - message", on by
		// default) names every failed or errored test once more.
		for _, s := range []swebench.Status{swebench.Failed, swebench.Error} {
			if name, ok := statusThenName(line, s); ok {
				w.Note(name, s)
			}
		}
		rest := strings.TrimLeftFunc(line[end:], pyIsSpace)
		for _, s := range statusOrder {
			if strings.HasPrefix(rest, string(s)) {
				w.Set(sm, line[:end], s)
			}
		}
	}
	return w.Apply(sm)
}

// statusThenName matches "<STATUS><one space><name>" at the start of s and
// returns the name (the run of non-space characters after the space).
func statusThenName(s string, status swebench.Status) (string, bool) {
	rest, ok := strings.CutPrefix(s, string(status))
	if !ok {
		return "", false
	}
	r, size := utf8.DecodeRuneInString(rest)
	if size == 0 || !pyIsSpace(r) {
		return "", false
	}
	rest = rest[size:]
	end := strings.IndexFunc(rest, pyIsSpace)
	if end < 0 {
		end = len(rest)
	}
	if end == 0 {
		return "", false
	}
	return rest[:end], true
}

// parseParamiko: lines "<STATUS> <name>" (pytest -rA's summary).
func parseParamiko(log string, _ *task.Task) swebench.StatusMap {
	sm, w := swebench.StatusMap{}, swebench.WorstCopy{}
	for _, line := range strings.Split(log, "\n") {
		for _, s := range statusOrder {
			if name, ok := statusThenName(line, s); ok {
				w.Set(sm, name, s)
			}
		}
	}
	return w.Apply(sm)
}

// gwWorker matches pytest-xdist's "[gwN] " prefix (one digit, any script).
var gwWorker = lazyre.New(`^\[gw\p{Nd}\][` + pySpaceClass + `]`)

// parseAutograd: lines "[gwN] <STATUS> <name>" (pytest-xdist, verbose).
func parseAutograd(log string, _ *task.Task) swebench.StatusMap {
	sm, w := swebench.StatusMap{}, swebench.WorstCopy{}
	for _, line := range strings.Split(log, "\n") {
		loc := gwWorker.FindStringIndex(line)
		if loc == nil {
			continue
		}
		for _, s := range statusOrder {
			if name, ok := statusThenName(line[loc[1]:], s); ok {
				w.Set(sm, name, s)
			}
		}
	}
	return w.Apply(sm)
}

// parseMypy: a line mentioning PASSED (else FAILED) records it for the
// line's last word.
func parseMypy(log string, _ *task.Task) swebench.StatusMap {
	sm, w := swebench.StatusMap{}, swebench.WorstCopy{}
	for _, line := range strings.Split(log, "\n") {
		for _, s := range []swebench.Status{swebench.Passed, swebench.Failed} {
			if strings.Contains(line, string(s)) {
				f := pyFields(line)
				w.Set(sm, f[len(f)-1], s)
				break
			}
		}
	}
	return w.Apply(sm)
}

// parseTornado reads unittest's verbose lines as tornado's runner prints
// them: "name ... ok", "name ... skipped <why>", and "FAIL: / ERROR: name
// (module)" headers, both recorded as FAILED.
func parseTornado(log string, _ *task.Task) swebench.StatusMap {
	sm, w := swebench.StatusMap{}, swebench.WorstCopy{}
	for _, line := range strings.Split(log, "\n") {
		switch {
		case strings.HasSuffix(line, "... ok"):
			name, _, _ := strings.Cut(line, " ... ")
			w.Set(sm, name, swebench.Passed)
		case strings.Contains(line, " ... skipped "):
			name, _, _ := strings.Cut(line, " ... ")
			w.Set(sm, name, swebench.Skipped)
		case strings.HasPrefix(line, "ERROR:") || strings.HasPrefix(line, "FAIL:"):
			f := pyFields(line)
			f = f[1:min(3, len(f))]
			w.Set(sm, strings.Join(f, " "), swebench.Failed)
		}
	}
	return w.Apply(sm)
}

// slugifyName is python-slugify's test-name pattern: "name ... <result>".
const slugifyName = `^([a-zA-Z0-9_\-,.\(\)'` + pySpaceClass + `]+)[` + pySpaceClass + `]\.{3}[` + pySpaceClass + `]`

var slugifyResults = []struct {
	re     *lazyre.Regexp
	status swebench.Status
}{
	{lazyre.New(slugifyName + `ok$`), swebench.Passed},
	{lazyre.New(slugifyName + `FAIL$`), swebench.Failed},
	{lazyre.New(slugifyName + `ERROR$`), swebench.Error},
}

// subtestOf matches a unittest subtest's label, its test's label and the
// subtest's parameters.
var subtestOf = lazyre.New(`^(\w+ \([\w.]+\)) [\[(]`)

// parseSlugify reads unittest's verbose lines "name ... ok|FAIL|ERROR".
func parseSlugify(log string, _ *task.Task) swebench.StatusMap {
	sm, w := swebench.StatusMap{}, swebench.WorstCopy{}
	for _, line := range strings.Split(log, "\n") {
		// unittest's "FAIL: <label>" / "ERROR: <label>" headers, which
		// upstream does not read, name the failed tests too (and a
		// subtest's label starts with its test's).
		for _, h := range []struct {
			prefix string
			status swebench.Status
		}{{"FAIL:", swebench.Failed}, {"ERROR:", swebench.Error}} {
			if label, ok := strings.CutPrefix(line, h.prefix); ok {
				label = strings.TrimFunc(label, pyIsSpace)
				w.Note(label, h.status)
				if m := subtestOf.FindStringSubmatch(label); m != nil {
					w.Note(m[1], h.status)
				}
			}
		}
		for _, r := range slugifyResults {
			if m := r.re.FindStringSubmatch(line); m != nil {
				w.Set(sm, m[1], r.status)
				break
			}
		}
	}
	return w.Apply(sm)
}
