package swebench

import (
	"encoding/json"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/swerve-dev/swerve/internal/lazyre"
	"github.com/swerve-dev/swerve/internal/task"
)

// The JavaScript parsers of SWE-bench's registry. Where the official parser
// raises (an unknown instance, a line its own regex then fails to match,
// malformed JSON), swerve's returns nil: no results, so the log is graded as
// one without tests, as the harness's failed evaluation would leave it.

func init() {
	RegisterParser("parse_log_jest", parseJest)
	RegisterParser("parse_log_jest_json", parseJestJSON)
	RegisterParser("parse_log_vitest", parseVitest)
	RegisterParser("parse_log_karma", parseKarma)
	RegisterParser("parse_log_tap", parseTap)
	RegisterParser("parse_log_immutable_js", parseImmutableJS)
	RegisterParser("parse_log_calypso", parseCalypso)
	RegisterParser("parse_log_chart_js", parseChartJS)
	RegisterParser("parse_log_marked", parseMarked)
	RegisterParser("parse_log_p5js", parseP5JS)
	RegisterParser("parse_log_react_pdf", parseJestSuiteLines)
	RegisterParser("parse_log_carbon", parseJestSuiteLines)
	RegisterParser("parse_log_bpmn_js", parseBpmnJS)
	RegisterParser("parse_log_eslint", parseESLint)
	RegisterParser("parse_log_grommet", parseGrommet)
	RegisterParser("parse_log_highlightjs", parseHighlightJS)
	RegisterParser("parse_log_lighthouse", parseLighthouse)
	RegisterParser("parse_log_next", parseNext)
	RegisterParser("parse_log_openlayers", parseOpenLayers)
	RegisterParser("parse_log_prismjs", parsePrismJS)
	RegisterParser("parse_log_quarto_cli", parseQuartoCLI)
}

var jestResult = mlLazy(`^\s*(✓|✕|○)\s(.+?)(?:\s\((\d+\s*m?s)\))?$`)

// parseJest reads jest --verbose lines "✓ name (5 ms)", "✕ name", "○ skipped
// name". Only the test's own title is kept (not its describe blocks), so
// equal titles in different blocks share one entry, the last one winning.
func parseJest(log string, _ *task.Task) StatusMap {
	sm, w := StatusMap{}, WorstCopy{}
	for _, line := range mlLines(log) {
		m := jestResult.FindStringSubmatch(pyStrip(line))
		if m == nil {
			noteJestHeader(w, line)
			continue
		}
		name := pyStrip(m[2])
		switch m[1] {
		case "✓":
			w.Set(sm, name, Passed)
		case "✕":
			w.Set(sm, name, Failed)
		case "○":
			w.Set(sm, name, Skipped)
		}
	}
	return w.Apply(sm)
}

// noteJestHeader notes the test a jest failure header names: "● describe
// › ... › title" opens the report of each failed test, and the parser keys
// tests by their title alone.
func noteJestHeader(w WorstCopy, line string) {
	h, ok := strings.CutPrefix(pyStrip(mlAnsiEscape(line)), "● ")
	if !ok || !strings.Contains(h, " › ") {
		return
	}
	w.Note(pyStrip(h[strings.LastIndex(h, " › ")+len(" › "):]), Failed)
}

var jestJSONResult = mlLazy(`^\[(PASSED|FAILED)\]\s(.+)$`)

// parseJestJSON reads "[PASSED] full name" lines, which the harness makes
// from jest --json output with jq.
func parseJestJSON(log string, _ *task.Task) StatusMap {
	sm, w := StatusMap{}, WorstCopy{}
	for _, line := range mlLines(log) {
		m := jestJSONResult.FindStringSubmatch(pyStrip(line))
		if m == nil {
			continue
		}
		if m[1] == "PASSED" {
			w.Set(sm, m[2], Passed)
		} else {
			w.Set(sm, m[2], Failed)
		}
	}
	return w.Apply(sm)
}

var vitestResult = mlLazy(`^\s*(✓|×|↓)\s(.+?)(?:\s(\d+\s*m?s?|\[skipped\]))?$`)

// parseVitest reads vitest --reporter=verbose lines "✓ file > suite > test
// 2ms", "× ...", "↓ ... [skipped]". As upstream's duration group makes the
// unit optional, a name ending in a space and a number loses that number.
func parseVitest(log string, _ *task.Task) StatusMap {
	sm, w := StatusMap{}, WorstCopy{}
	for _, line := range mlLines(log) {
		m := vitestResult.FindStringSubmatch(pyStrip(line))
		if m == nil {
			continue
		}
		switch m[1] {
		case "✓":
			w.Set(sm, m[2], Passed)
		case "×":
			w.Set(sm, m[2], Failed)
		case "↓":
			w.Set(sm, m[2], Skipped)
		}
	}
	return w.Apply(sm)
}

var karmaLine = mlLazy(`^(\s*)?([✔✖])?\s(.*)$`)

// parseKarma reads karma-mocha-reporter output between "Starting browser"
// and "SUMMARY:". An indented line without a mark opens a describe block
// when it is indented deeper than the last one, and closes one (and is
// otherwise ignored) when it is indented less; a block at the same depth
// keeps the earlier block's name. Marked lines are recorded as "block >
// ... > test". The indentation counted is one less than the line's, because
// the pattern's \s takes the last leading blank. Lines are not trimmed.
func parseKarma(log string, _ *task.Task) StatusMap {
	sm, w := StatusMap{}, WorstCopy{}
	indent := -1
	var suite []string
	started := false
	for _, line := range mlLines(log) {
		if strings.HasPrefix(line, "SUMMARY:") {
			return w.Apply(sm)
		}
		if strings.Contains(line, "Starting browser") {
			started = true
			continue
		}
		if !started {
			continue
		}
		m := karmaLine.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		lead, mark, name := m[1], m[2], m[3]
		if lead != "" && mark == "" {
			n := utf8.RuneCountInString(lead)
			if n > indent {
				indent = n
				suite = append(suite, name)
			} else if n < indent {
				indent = n
				if len(suite) == 0 {
					return nil // upstream: pop from an empty list
				}
				suite = suite[:len(suite)-1]
				continue
			}
		}
		switch mark {
		case "✔":
			w.Set(sm, strings.Join(append(slices.Clip(suite), name), " > "), Passed)
		case "✖":
			w.Set(sm, strings.Join(append(slices.Clip(suite), name), " > "), Failed)
		}
	}
	return w.Apply(sm)
}

var tapResult = mlLazy(`^(ok|not ok) (\d+) (.+)$`)

// parseTap reads TAP "ok 3 - name" / "not ok 4 - name" lines; the name keeps
// everything after the number, including "- " and any "# SKIP" directive
// (so a skipped test counts as passed, a TODO one as failed).
func parseTap(log string, _ *task.Task) StatusMap {
	sm, w := StatusMap{}, WorstCopy{}
	for _, line := range mlLines(log) {
		m := tapResult.FindStringSubmatch(pyStrip(line))
		if m == nil {
			continue
		}
		if m[1] == "ok" {
			w.Set(sm, m[3], Passed)
		} else {
			w.Set(sm, m[3], Failed)
		}
	}
	return w.Apply(sm)
}

// parseImmutableJS picks the parser by the instance id's last "-" field:
// immutable-js-2006 ran jest --verbose, immutable-js-2005 jest --json.
func parseImmutableJS(log string, t *task.Task) StatusMap {
	id := t.InstanceID
	switch id[strings.LastIndex(id, "-")+1:] {
	case "2006":
		return parseJest(log, t)
	case "2005":
		return parseJestJSON(log, t)
	}
	return nil
}

// pyJoinSuite is Python's " - ".join(names + [test]) over a suite stack.
func pyJoinSuite(suite []indentedName, test string, sep string) string {
	parts := make([]string, 0, len(suite)+1)
	for _, s := range suite {
		parts = append(parts, s.name)
	}
	return strings.Join(append(parts, test), sep)
}

// indentedName is one level of a suite stack that some parsers keep by
// indentation.
type indentedName struct {
	name   string
	indent int
}

// pushIndented is the suite bookkeeping several upstream parsers share: an
// indented line drops every level indented as deep or deeper, then becomes
// the innermost level.
func pushIndented(suite []indentedName, line string) []indentedName {
	indent := mlIndent(line)
	for len(suite) > 0 && suite[len(suite)-1].indent >= indent {
		suite = suite[:len(suite)-1]
	}
	return append(suite, indentedName{pyStrip(line), indent})
}

var (
	calypsoPassTimed = mlLazy(`^\s+✓\s(.*)\(\d+ms\)$`)
	calypsoPass      = mlLazy(`^\s+✓\s(.*)`)
	calypsoFailTimed = mlLazy(`^\s+✕\s(.*)\(\d+ms\)$`)
	calypsoFail      = mlLazy(`^\s+✕\s(.*)`)
	msTiming         = mlLazy(`\(\d+ms\)`)
)

// parseCalypso reads jest --verbose output of wp-calypso, after each
// " ./node_modules/.bin/jest " command, up to the summary. Names are
// "suite - ... - test" from indentation; a test outside any suite is
// "- test". The suite stack carries over from one command to the next.
func parseCalypso(log string, _ *task.Task) StatusMap {
	sm, w := StatusMap{}, WorstCopy{}
	var suite []indentedName
	name := func(re *lazyre.Regexp, line string) (string, bool) {
		m := re.FindStringSubmatch(line)
		if m == nil {
			return "", false
		}
		parts := make([]string, len(suite))
		for i, s := range suite {
			parts[i] = s.name
		}
		return pyStrip(strings.Join(parts, " - ") + " - " + m[1]), true
	}
	chunks := strings.Split(log, " ./node_modules/.bin/jest ")
	for _, chunk := range chunks[1:] {
		for _, line := range mlLines(chunk) {
			if strings.HasPrefix(line, "Test Suites") || strings.HasPrefix(line, "  ● ") {
				break
			}
			trimmed := pyStrip(line)
			switch {
			case strings.HasPrefix(trimmed, "✓"), strings.HasPrefix(trimmed, "✕"):
				timed, plain, status := calypsoPassTimed, calypsoPass, Passed
				if strings.HasPrefix(trimmed, "✕") {
					timed, plain, status = calypsoFailTimed, calypsoFail, Failed
				}
				re := plain
				if msTiming.MatchString(line) {
					re = timed
				}
				n, ok := name(re, line)
				if !ok {
					return nil // upstream: .group() on a failed match
				}
				w.Set(sm, n, status)
			case mlIndent(line) > 0:
				suite = pushIndented(suite, line)
			}
		}
	}
	return w.Apply(sm)
}

// chartJSFailure is upstream's
// `Chrome\s[\d\.]+[^\S\r\n]\(.+?\)[^\S\r\n](.*)FAILED$` (multi-line), with
// [^\S\r\n] written out as Python's white space minus CR and LF.
var chartJSFailure = lazyre.Func(func() *regexp.Regexp {
	blank := `[\t\x0b\x0c\x1c-\x20\x{85}\x{a0}\x{1680}\x{2000}-\x{200a}\x{2028}\x{2029}\x{202f}\x{205f}\x{3000}]`
	p := mlRegexp(`(?m)Chrome\s[\d\.]+BLANK\(.+?\)BLANK(.*)FAILED$`).String()
	return regexp.MustCompile(strings.ReplaceAll(p, "BLANK", blank))
})

// parseChartJS records the "Chrome 120.0 (Linux x86_64) name FAILED" lines of
// karma's output (after removing ANSI codes) as failures; nothing passes.
func parseChartJS(log string, _ *task.Task) StatusMap {
	sm, w := StatusMap{}, WorstCopy{}
	for _, m := range chartJSFailure.FindAllStringSubmatch(mlAnsiEscape(log), -1) {
		w.Set(sm, m[1], Failed)
	}
	return w.Apply(sm)
}

var markedFailure = mlLazy(`^\d+\)\s(.*)`)

// parseMarked records mocha/jasmine's numbered failure list "1) name" as
// failures.
func parseMarked(log string, _ *task.Task) StatusMap {
	sm, w := StatusMap{}, WorstCopy{}
	for _, line := range mlLines(log) {
		if m := markedFailure.FindStringSubmatch(line); m != nil {
			w.Set(sm, pyStrip(m[1]), Failed)
		}
	}
	return w.Apply(sm)
}

var p5jsFailure = mlLazy(`(?ms)^\s*(\d+)\)(.{0,1000}?):`)

// parseP5JS records the numbered failures of p5.js's mocha output, after
// dropping what looks like JSON or XML dumped by the tests. A failure's title
// runs from "N)" to the next colon and may span lines, each indented deeper
// than the one before; its lines, trimmed, are joined with ":".
func parseP5JS(log string, _ *task.Task) StatusMap {
	log = p5jsRemoveXML(p5jsRemoveJSON(mlAnsiEscape(log)))
	sm, w := StatusMap{}, WorstCopy{}
	for _, m := range p5jsFailure.FindAllStringSubmatch(log, -1) {
		lines := strings.Split(m[2], "\n")
		valid, last := true, 0
		for _, l := range lines {
			ind := mlIndent(l)
			if ind <= last {
				valid = false
				break
			}
			last = ind
		}
		if !valid {
			continue
		}
		for i, l := range lines {
			lines[i] = pyStrip(l)
		}
		w.Set(sm, strings.Join(lines, ":"), Failed)
	}
	return w.Apply(sm)
}

// p5jsRemoveJSON drops lines inside (and the lines opening and closing) what
// look like multi-line JSON objects or arrays, and one-line ones. A closing
// line must be exactly "}" or "]" after trimming its end only.
func p5jsRemoveJSON(log string) string {
	var kept []string
	inObject, inList := false, false
	for _, line := range mlLines(log) {
		s := mlRStrip(line)
		switch {
		case strings.HasSuffix(s, "{"):
			inObject = true
		case strings.HasSuffix(s, "["):
			inList = true
		case s == "}" && inObject:
			inObject = false
		case s == "]" && inList:
			inList = false
		case inObject || inList:
		case strings.HasPrefix(s, "{") && strings.HasSuffix(s, "}"):
		case strings.HasPrefix(s, "[") && strings.HasSuffix(s, "]"):
		default:
			kept = append(kept, line)
		}
	}
	return strings.Join(kept, "\n")
}

// p5jsRemoveXML repeats upstream's substitution of `<(\w+)>[\s\S]*?</\1>`
// (the leftmost one each time) until none is left: an element with a word
// name and no attributes, up to the first closing tag of the same name, is
// replaced by as many "<name>" as it held beyond its own opening tag. RE2
// has no back-references, so the search is done by hand.
func p5jsRemoveXML(log string) string {
	from := 0
	for {
		start, end, name, ok := p5jsFindElement(log, from)
		if !ok {
			return log
		}
		open := "<" + name + ">"
		n := max(strings.Count(log[start:end], open)-1, 0)
		log = log[:start] + strings.Repeat(open, n) + log[end:]
		// No match began before start, as nothing closed the tags opened
		// there. That still holds unless the cut joined text into a new
		// closing tag ("</" and a name running up to the cut); then search
		// again from the top, as upstream always does.
		from = start
		if p5jsJoinedClosingTag(log, start) {
			from = 0
		}
	}
}

// p5jsJoinedClosingTag reports whether a "</name" could straddle position
// cut of s.
func p5jsJoinedClosingTag(s string, cut int) bool {
	if strings.HasSuffix(s[:cut], "<") && strings.HasPrefix(s[cut:], "/") {
		return true
	}
	k := cut
	for k > 0 {
		r, size := utf8.DecodeLastRuneInString(s[:k])
		if !(r == '_' || unicode.IsLetter(r) || unicode.IsNumber(r)) {
			break
		}
		k -= size
	}
	return strings.HasSuffix(s[:k], "</")
}

// p5jsFindElement finds the leftmost match of `<(\w+)>[\s\S]*?</\1>` at or
// after byte from.
func p5jsFindElement(s string, from int) (start, end int, name string, ok bool) {
	for i := from; i < len(s); i++ {
		if s[i] != '<' {
			continue
		}
		// \w+ is greedy and what follows it, '>', is not a word character,
		// so the only candidate name is the whole word.
		j := i + 1
		for j < len(s) {
			r, size := utf8.DecodeRuneInString(s[j:])
			if !(r == '_' || unicode.IsLetter(r) || unicode.IsNumber(r)) {
				break
			}
			j += size
		}
		if j == i+1 || j >= len(s) || s[j] != '>' {
			continue
		}
		name := s[i+1 : j]
		k := strings.Index(s[j+1:], "</"+name+">")
		if k < 0 {
			continue
		}
		return i, j + 1 + k + len(name) + 3, name, true
	}
	return 0, 0, "", false
}

// jestSuiteLine is upstream's list of eight patterns for "PASS file (1.2 s)"
// and "FAIL file" lines, tried in order; the first one that matches names
// the file.
var jestSuiteLine = []struct {
	re     *lazyre.Regexp
	status Status
}{
	{mlLazy(`^PASS\s(.*)\s\([\d\.]+ms\)`), Passed},
	{mlLazy(`^PASS\s(.*)\s\([\d\.]+\ss\)`), Passed},
	{mlLazy(`^PASS\s(.*)\s\([\d\.]+s\)`), Passed},
	{mlLazy(`^PASS\s(.*)`), Passed},
	{mlLazy(`^FAIL\s(.*)\s\([\d\.]+ms\)`), Failed},
	{mlLazy(`^FAIL\s(.*)\s\([\d\.]+\ss\)`), Failed},
	{mlLazy(`^FAIL\s(.*)\s\([\d\.]+s\)`), Failed},
	{mlLazy(`^FAIL\s(.*)`), Failed},
}

// parseJestSuiteLines reads jest's per-file "PASS path (1.2 s)" and "FAIL
// path" lines (react-pdf, carbon, and lighthouse's jest versions): the
// results are per file, not per test.
func parseJestSuiteLines(log string, _ *task.Task) StatusMap {
	sm, w := StatusMap{}, WorstCopy{}
	for _, line := range mlLines(log) {
		for _, p := range jestSuiteLine {
			if m := p.re.FindStringSubmatch(line); m != nil {
				w.Set(sm, m[1], p.status)
				break
			}
		}
	}
	return w.Apply(sm)
}

// bpmnJSFailures are upstream's four karma failure patterns, searched over
// the whole log; the third has two groups and the second names the test.
var bpmnJSFailures = []*lazyre.Regexp{
	mlLazy(`2KPhantomJS\s[\d\.]+\s\(Linux\s[\d\.]+\)\s(.*)FAILED\n`),
	mlLazy(`2KPhantomJS\s[\d\.]+\s\(Linux\sx86\_64\)\s(.*)FAILED\n`),
	mlLazy(`Chrome\sHeadless\s(.*)\s\(Linux\sx86\_64\)\s(.*)FAILED\n`),
	mlLazy(`HeadlessChrome\s[\d\.]+\s\(Linux\s[\d\.]+\)\s(.*)FAILED\n`),
}

// parseBpmnJS records karma's "<browser> (Linux ...) name FAILED" lines as
// failures.
func parseBpmnJS(log string, _ *task.Task) StatusMap {
	sm, w := StatusMap{}, WorstCopy{}
	for _, re := range bpmnJSFailures {
		for _, m := range re.FindAllStringSubmatch(log, -1) {
			w.Set(sm, m[len(m)-1], Failed)
		}
	}
	return w.Apply(sm)
}

var (
	eslintFailure = mlLazy(`(\s{2}\d+\))((?s:.)*?)\s+(?:(.*)Error)`)
	pyBlankRun    = mlLazy(`\s+`)
)

// pyCollapse is Python's re.sub(r"\s+", " ", s).strip().
func pyCollapse(s string) string { return pyStrip(pyBlankRun.ReplaceAllString(s, " ")) }

// parseESLint records mocha's numbered failures "  1) title ... Error" as
// failures, the title's white space collapsed.
func parseESLint(log string, _ *task.Task) StatusMap {
	sm, w := StatusMap{}, WorstCopy{}
	for _, m := range eslintFailure.FindAllStringSubmatch(log, -1) {
		w.Set(sm, pyCollapse(m[2]), Failed)
	}
	return w.Apply(sm)
}

var (
	grommetFail   = mlLazy(`(?m)^FAIL\s(.*)`)
	grommetPass   = mlLazy(`(?m)^PASS\s(.*)`)
	grommetTiming = mlLazy(`\s\([\d\.]+\s?(?:ms|s)\)$`)
)

// parseGrommet reads jest's per-file "FAIL path" and "PASS path (1.2 s)"
// lines; a file both failed and passed in the log counts as passed.
func parseGrommet(log string, _ *task.Task) StatusMap {
	sm, w := StatusMap{}, WorstCopy{}
	for _, m := range grommetFail.FindAllStringSubmatch(log, -1) {
		w.Set(sm, grommetTiming.ReplaceAllString(pyStrip(m[1]), ""), Failed)
	}
	for _, m := range grommetPass.FindAllStringSubmatch(log, -1) {
		w.Set(sm, grommetTiming.ReplaceAllString(pyStrip(m[1]), ""), Passed)
	}
	return w.Apply(sm)
}

var (
	mochaSummary  = mlLazy(`\n[ \t]*\d+ passing`)
	mochaNumbered = mlLazy(`^\d+\)`)
)

// parseHighlightJS reads mocha's spec reporter up to its "N passing"
// summary: "✓ test" passes and "1) test" failures, named "suite.test" after
// the last line indented by two spaces (the suite).
func parseHighlightJS(log string, _ *task.Task) StatusMap {
	if loc := mochaSummary.FindStringIndex(log); loc != nil {
		log = log[:loc[0]]
	}
	untime := func(s string) string { return pyStrip(msTiming.ReplaceAllString(s, "")) }
	sm, w := StatusMap{}, WorstCopy{}
	var suite []string
	for _, line := range mlLines(log) {
		trimmed := pyStrip(line)
		switch {
		case strings.HasPrefix(trimmed, "✓") || strings.HasPrefix(trimmed, "✔"):
			check := "✔"
			if strings.HasPrefix(trimmed, "✓") {
				check = "✓"
			}
			_, after, _ := strings.Cut(line, check)
			w.Set(sm, strings.Join(append(slices.Clip(suite), untime(after)), "."), Passed)
		case mochaNumbered.MatchString(trimmed):
			_, after, _ := strings.Cut(line, ")")
			w.Set(sm, strings.Join(append(slices.Clip(suite), untime(after)), "."), Failed)
		case strings.HasPrefix(line, "  "):
			suite = []string{trimmed}
		}
	}
	return w.Apply(sm)
}

var (
	lighthouseMochaRun     = mlLazy(`running\s\d+\stest\sfiles`)
	lighthouseMochaPassing = mlLazy(`\d+\spassing`)
	lighthouseMochaLine    = []struct {
		re     *lazyre.Regexp
		status Status
	}{
		{mlLazy(`^✔\s(.*)\s\(\d+m+s\)`), Passed},
		{mlLazy(`^✔\s(.*)`), Passed},
		{mlLazy(`^\d+\)\s(.*)\s\(\d+m+s\)`), Failed},
		{mlLazy(`^\d+\)\s(.*)`), Failed},
	}
	mochaJSONTitle = mlLazy(`"fullTitle":\s"(.*)",\n`)
)

// parseLighthouse picks the reader by the task's version: 9.5, 10.0 and 10.2
// ran mocha's spec reporter, other versions from 3 on jest (per-file lines),
// older ones mocha's JSON reporter. A version that is not a number makes
// upstream raise.
func parseLighthouse(log string, t *task.Task) StatusMap {
	switch t.Version {
	case "9.5", "10.0", "10.2":
		return parseLighthouseMocha(log)
	}
	v, ok := pyFloat(t.Version)
	if !ok {
		return nil
	}
	if v >= 3 {
		return parseJestSuiteLines(log, t)
	}
	sm, w := StatusMap{}, WorstCopy{}
	chunks := strings.Split(log, "./node_modules/.bin/mocha --reporter json")
	for _, chunk := range chunks[1:] {
		passes := pyLastAfter(chunk, `"passes": [`)
		passes = pyBeforeLast(passes, "]")
		for _, m := range mochaJSONTitle.FindAllStringSubmatch(passes, -1) {
			w.Set(sm, m[1], Passed)
		}
		failures := pyLastAfter(chunk, `"failures": [`)
		failures = pyBeforeLast(failures, "],")
		for _, m := range mochaJSONTitle.FindAllStringSubmatch(failures, -1) {
			w.Set(sm, m[1], Failed)
		}
	}
	return w.Apply(sm)
}

// pyLastAfter is Python's s.split(sep)[-1].
func pyLastAfter(s, sep string) string {
	if i := strings.LastIndex(s, sep); i >= 0 {
		return s[i+len(sep):]
	}
	return s
}

// pyBeforeLast is Python's s.rsplit(sep, 1)[0].
func pyBeforeLast(s, sep string) string {
	if i := strings.LastIndex(s, sep); i >= 0 {
		return s[:i]
	}
	return s
}

// pyFloat is Python's float(s) for the strings a version field holds: it
// trims white space and accepts digits with single underscores between them,
// infinities and NaN, but not Go-only forms such as hexadecimal.
func pyFloat(s string) (float64, bool) {
	s = pyStrip(s)
	if s == "" || strings.ContainsAny(s, "xXpP") && !isPyInfNaN(s) {
		return 0, false
	}
	if strings.Contains(s, "_") {
		for i := 0; i < len(s); i++ {
			if s[i] == '_' && (i == 0 || i == len(s)-1 || !isASCIIDigit(s[i-1]) || !isASCIIDigit(s[i+1])) {
				return 0, false
			}
		}
		s = strings.ReplaceAll(s, "_", "")
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		if ne, ok := err.(*strconv.NumError); ok && ne.Err == strconv.ErrRange {
			return v, true
		}
		return 0, false
	}
	return v, true
}

func isPyInfNaN(s string) bool {
	s = strings.ToLower(strings.TrimLeft(s, "+-"))
	return s == "inf" || s == "infinity" || s == "nan"
}

func isASCIIDigit(c byte) bool { return c >= '0' && c <= '9' }

// parseLighthouseMocha reads the spec reporter output that follows each
// "running N test files": "✔ test (12ms)" passes and "1) test" failures,
// named "suite - ... - test" from indentation.
func parseLighthouseMocha(log string) StatusMap {
	sm, w := StatusMap{}, WorstCopy{}
	runs := lighthouseMochaRun.Split(log, -1)
	for _, run := range runs[1:] {
		run = pyStrip(lighthouseMochaPassing.Split(run, -1)[0])
		var suite []indentedName
		for _, line := range mlLines(run) {
			found := false
			for _, p := range lighthouseMochaLine {
				if m := p.re.FindStringSubmatch(pyStrip(line)); m != nil {
					w.Set(sm, pyJoinSuite(suite, m[1], " - "), p.status)
					found = true
					break
				}
			}
			if !found && mlIndent(line) > 0 {
				suite = pushIndented(suite, line)
			}
		}
	}
	return w.Apply(sm)
}

var (
	nextAssertion = mlLazy(`AssertionError:\s+#((?s:.)*?)\n\n`)
	nextFail      = mlLazy(`^.*?✗\s*(.*)`)
	nextPass      = mlLazy(`^.*?✓\s*(.*)`)
	nextSuites    = mlLazy(`Running\:(.*)\)\n{3}\s{2}(.*)\n`)
	nextV2Fail    = mlLazy(`(?m)^\s{4}\d+\)\s(.*)`)
	nextV2Pass    = mlLazy(`(?m)^\s{4}✓\s(.*)\(`)
)

// parseNext reads alibaba-fusion/next's logs: version 1.27 ran suites
// announced by "Running: ...)" lines; the others ran karma in xvfb-run, with
// ✓ / ✗ marks named "suite - ... - test" from indentation.
func parseNext(log string, t *task.Task) StatusMap {
	if t.Version == "1.27" {
		return parseNextV2(log)
	}
	return parseNextV1(log)
}

func parseNextV1(log string) StatusMap {
	sm, w := StatusMap{}, WorstCopy{}
	var suite []indentedName
	log = mlAnsiEscape(log)
	log = nextAssertion.ReplaceAllString(log, "")
	skip := []string{"ERROR", "LOG", "WARN", "Check", "in"}
	for _, run := range strings.Split(log, " xvfb-run ")[1:] {
		run = pyLastAfter(run, "Starting browser Chrome")
	lines:
		for _, line := range mlLines(run) {
			if strings.HasPrefix(line, "TOTAL") {
				break
			}
			trimmed := pyStrip(line)
			for _, p := range skip {
				if strings.HasPrefix(trimmed, p) {
					continue lines
				}
			}
			if m := nextFail.FindStringSubmatch(line); m != nil {
				w.Set(sm, pyJoinSuite(suite, m[1], " - "), Failed)
			} else if m := nextPass.FindStringSubmatch(line); m != nil {
				w.Set(sm, pyJoinSuite(suite, m[1], " - "), Passed)
			} else if mlIndent(line) > 0 {
				suite = pushIndented(suite, line)
			}
		}
	}
	return w.Apply(sm)
}

func parseNextV2(log string) StatusMap {
	sm, w := StatusMap{}, WorstCopy{}
	matches := nextSuites.FindAllStringSubmatchIndex(log, -1)
	for i, m := range matches {
		suite := log[m[4]:m[5]]
		end := len(log)
		if i+1 < len(matches) {
			end = matches[i+1][0]
		}
		chunk := log[m[1]:end]
		for _, f := range nextV2Fail.FindAllStringSubmatch(chunk, -1) {
			w.Set(sm, suite+": "+pyStrip(f[1]), Failed)
		}
		for _, p := range nextV2Pass.FindAllStringSubmatch(chunk, -1) {
			w.Set(sm, suite+": "+pyStrip(p[1]), Passed)
		}
	}
	return w.Apply(sm)
}

// openLayersFailures are upstream's four failure patterns, searched over the
// whole log in multi-line mode. Upstream's class [\d\.\_\S] is the same set
// as \S.
var openLayersFailures = []*lazyre.Regexp{
	mlLazy(`(?m)Chrome\sHeadless\s[\d\.]+\s\(Linux\s\S+\)\s(.*)\sFAILED\n`),
	mlLazy(`(?m)Chrome\s[\d\.]+\s\(Linux\s\S+\)\s(.*)FAILED\n`),
	mlLazy(`(?m)^\s{2}\d+\)((?s:.)*?)Error:`),
	mlLazy(`(?m)^case\s(.*):\smismatch`),
}

// parseOpenLayers records karma's "Chrome ... name FAILED" lines, mocha's
// numbered failures and rendering "case x: mismatch" lines as failures,
// white space collapsed.
func parseOpenLayers(log string, _ *task.Task) StatusMap {
	sm, w := StatusMap{}, WorstCopy{}
	for _, re := range openLayersFailures {
		for _, m := range re.FindAllStringSubmatch(log, -1) {
			w.Set(sm, pyCollapse(m[1]), Failed)
		}
	}
	return w.Apply(sm)
}

// parsePrismJS reads the mocha JSON report that follows each run of prism's
// test command: the text from the first "{" to the last "}" is the report,
// and the fullTitle of its failures and passes are recorded.
func parsePrismJS(log string, _ *task.Task) StatusMap {
	const cmd = "./node_modules/.bin/mocha tests/run.js --reporter json"
	sm, w := StatusMap{}, WorstCopy{}
	for _, chunk := range strings.Split(log, cmd)[1:] {
		_, body, found := strings.Cut(chunk, "{")
		if !found {
			body = chunk
		}
		body = pyBeforeLast(body, "}")
		var report map[string]json.RawMessage
		if err := json.Unmarshal([]byte("{"+body+"}"), &report); err != nil {
			return nil
		}
		for _, k := range []struct {
			key    string
			status Status
		}{{"failures", Failed}, {"passes", Passed}} {
			raw, ok := report[k.key]
			if !ok {
				return nil // upstream: KeyError
			}
			titles, ok := mochaTitles(raw)
			if !ok {
				return nil
			}
			for _, title := range titles {
				w.Set(sm, title, k.status)
			}
		}
	}
	return w.Apply(sm)
}

// mochaTitles returns the fullTitle of each test in a mocha JSON list, or
// false where upstream's loop would raise. Iterating an empty string or
// object does nothing in Python, so those are accepted; titles that are not
// strings (which a status map cannot hold) are left out.
func mochaTitles(raw json.RawMessage) ([]string, bool) {
	var list []json.RawMessage
	if err := json.Unmarshal(raw, &list); err != nil {
		var s string
		if json.Unmarshal(raw, &s) == nil && s == "" {
			return nil, true
		}
		var o map[string]json.RawMessage
		if json.Unmarshal(raw, &o) == nil && len(o) == 0 {
			return nil, true
		}
		return nil, false
	}
	var titles []string
	for _, item := range list {
		var test map[string]json.RawMessage
		if err := json.Unmarshal(item, &test); err != nil || test == nil {
			return nil, false
		}
		t, ok := test["fullTitle"]
		if !ok {
			return nil, false
		}
		var title string
		if json.Unmarshal(t, &title) != nil {
			if b := strings.TrimSpace(string(t)); strings.HasPrefix(b, "[") || strings.HasPrefix(b, "{") {
				return nil, false // unhashable key
			}
			continue
		}
		titles = append(titles, title)
	}
	return titles, true
}

var (
	quartoTest    = mlLazy(`\[(smoke|unit)\]`)
	quartoTmpFile = []*lazyre.Regexp{mlLazy(`/tmp/(\w+)\.qmd`), mlLazy(`/tmp/(\w+)/`)}
)

// parseQuartoCLI reads deno test output of quarto-cli up to its "ERRORS" or
// "failures:" section: each "[smoke] ... => name ... ok" line (with ANSI
// colours: green "ok", red "FAILED") is a test named by the text before its
// first "...", with temporary paths renumbered in order of appearance. A
// test line without either status counts as failed, unless it is a
// summary or INFO line.
func parseQuartoCLI(log string, _ *task.Task) StatusMap {
	sm, w := StatusMap{}, WorstCopy{}
	tmp := map[string]int{}
	for _, line := range mlLines(log) {
		if strings.Contains(line, "ERRORS") || strings.Contains(line, "failures:") {
			break
		}
		if !quartoTest.MatchString(line) {
			continue
		}
		for _, re := range quartoTmpFile {
			m := re.FindString(line)
			if m == "" {
				continue
			}
			n, seen := tmp[m]
			if !seen {
				n = len(tmp)
				tmp[m] = n
			}
			line = re.ReplaceAllLiteralString(line, "/tmp/"+strconv.Itoa(n))
		}
		name := pyStrip(pyBefore(line, "..."))
		reject := strings.HasPrefix(line, "test result:") ||
			(strings.Contains(line, "passed") && strings.Contains(line, "failed") && strings.Contains(line, "steps")) ||
			strings.Contains(line, "34mINFO")
		if reject {
			continue
		}
		switch {
		case strings.Contains(line, "32mok"):
			w.Set(sm, name, Passed)
		case strings.Contains(line, "31mFAILED"):
			w.Set(sm, name, Failed)
		default:
			// A line with no status yet (deno prints the name again with
			// its status after the test's output): failed until then, but
			// not a failure line, so a later "ok" still counts.
			if _, ok := sm[name]; !ok {
				sm[name] = Failed
			}
		}
	}
	return w.Apply(sm)
}
