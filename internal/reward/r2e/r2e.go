// Package r2e grades tasks the way R2E-Gym's runtime computes its reward for
// its own (non-SWE-bench) images: run the image's run_tests.sh, read the
// pytest "short test summary info" section of the output into a map of test
// names to statuses, and compare that map with the row's
// expected_output_json. The reward is 1 only when both have the same number
// of entries and every parsed status equals the expected one.
//
// The rules follow R2E-Gym's DockerRuntime._calculate_reward_r2e and
// repo_analysis/execution_log_parser.py (in the DeepSWE revision, which
// skips an empty test name and counts a name missing from the expectation
// as a mismatch instead of crashing):
//
//   - ANSI colour codes and carriage returns are removed from the output
//     before it is parsed;
//   - a test is named by its pytest node id without the file, the remaining
//     "::" parts joined by "." (tests/test_x.py::TestA::test_b → TestA.test_b);
//   - names are cut at the first " - " on both sides before comparing.
//
// One difference, in sealed runs (EvaluateRun): R2E-Gym reads the first
// "short test summary info" in the output, which code under test can print
// before pytest does. swerve reads the last one, and only in the part of
// the log that run_tests.sh printed (from bash's own trace of the command
// that runs it to the next traced command). Honest runs print one summary,
// so the verdict is the same. What this cannot stop: code that runs inside
// the test process and prints a summary after pytest's (from an atexit
// hook, say) is read; that is for the canary tests to catch.
//
// One leniency: expected names written as full node ids (path::name), which
// R2E-Gym's own rows never hold because they come from the same parser, are
// read the way the parser names tests, so hand-written rows grade as meant.
package r2e

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"unicode"

	"github.com/swerve-dev/swerve/internal/lazyre"
	"github.com/swerve-dev/swerve/internal/reward"
	"github.com/swerve-dev/swerve/internal/reward/swebench"
	"github.com/swerve-dev/swerve/internal/reward/tamper"
	"github.com/swerve-dev/swerve/internal/task"
)

// Statuses the parser reports.
const (
	Passed = "PASSED"
	Failed = "FAILED"
	Error  = "ERROR"
)

// summaryHeader starts the section of pytest's output the parser reads.
const summaryHeader = "short test summary info"

// Parser reads test results out of a cleaned test log.
type Parser func(log string) map[string]string

// ParserFor returns the log parser R2E-Gym uses for a repository (its
// repo_name: sympy, pandas, pillow, numpy, ...). Every repository R2E-Gym
// ships is graded with the pytest summary parser, and the DeepSWE revision
// uses it for any other name too, so this does the same.
func ParserFor(repoName string) Parser { return ParsePytest }

// ParsePytest reads the lines after pytest's "short test summary info"
// header (as far as a second header, should there be one). A line that
// starts with PASSED, FAILED or ERROR records that status for the test it
// names; other lines (SKIPPED, XFAIL, the final counts) are ignored.
//
// R2E-Gym takes a line's status from the first of those words it contains
// anywhere, PASSED first, so a failure whose message holds "PASSED" (an
// assertion on a value whose repr the code under test chose) counts as a
// pass there. pytest writes the status first on every summary line, which
// is where swerve reads it: the same verdict on every honest log.
func ParsePytest(log string) map[string]string {
	out := map[string]string{}
	parts := strings.SplitN(log, summaryHeader, 3)
	if len(parts) < 2 {
		return out
	}
	section := strings.TrimFunc(parts[1], pyIsSpace)
	// Worst copy wins: a test the summary names as failed or errored stays
	// so, whatever pass line for it comes later (pytest writes its PASSED
	// lines first; a later one is printed by the code under test).
	bad := map[string]string{}
	for _, line := range strings.Split(section, "\n") {
		var status string
		first, _, _ := strings.Cut(strings.TrimLeftFunc(line, pyIsSpace), " ")
		switch first {
		case Passed, Failed, Error:
			status = first
		default:
			continue
		}
		name := nodeName(line)
		if status != Passed {
			name, _, _ = strings.Cut(name, " - ")
		}
		out[name] = status
		if _, seen := bad[name]; !seen && status != Passed {
			bad[name] = status
		}
	}
	for name, s := range bad {
		if out[name] == Passed {
			out[name] = s
		}
	}
	return out
}

// nodeName drops everything up to the first "::" and joins the remaining
// "::"-separated parts with "."; a line without "::" names "".
func nodeName(s string) string {
	parts := strings.Split(s, "::")
	return strings.Join(parts[1:], ".")
}

// pyIsSpace is Python's str.isspace for one character: Go's unicode.IsSpace
// plus the information separators U+001C..U+001F.
func pyIsSpace(r rune) bool {
	return unicode.IsSpace(r) || (r >= 0x1c && r <= 0x1f)
}

// runOutputNoise is what R2E-Gym strips from run_tests.sh's output before
// parsing it: colour codes and carriage returns.
var runOutputNoise = lazyre.New(`\x1b\[[0-9;]*m|\r`)

// keyColour is the colour code R2E-Gym removes again from every test name.
var keyColour = lazyre.New(`\x1b\[\p{Nd}+m`)

// Clean removes colour codes and carriage returns from a test log, as
// R2E-Gym does with run_tests.sh's output.
func Clean(log string) string { return runOutputNoise.ReplaceAllString(log, "") }

// normalise decolours every name and cuts it at " - ". When two names become
// the same, the one that sorts last wins, as in R2E-Gym's dict
// comprehension over the sorted keys. With nodeIDs set, names holding "::"
// are first turned into the parser's form.
func normalise(m map[string]string, nodeIDs bool) map[string]string {
	decoloured := make(map[string]string, len(m))
	for k, v := range m {
		decoloured[keyColour.ReplaceAllString(k, "")] = v
	}
	keys := make([]string, 0, len(decoloured))
	for k := range decoloured {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := make(map[string]string, len(keys))
	for _, k := range keys {
		name := k
		if nodeIDs && strings.Contains(name, "::") {
			name = nodeName(name)
		}
		name, _, _ = strings.Cut(name, " - ")
		out[name] = decoloured[k]
	}
	return out
}

// Mismatch is one test whose result differs from the expectation.
type Mismatch struct {
	Test string `json:"test"`
	// Want is the expected status, "" for a test the row does not expect.
	Want string `json:"want"`
	// Got is the parsed status, "" for a test missing from the log.
	Got string `json:"got"`
}

func (m Mismatch) String() string {
	switch {
	case m.Got == "":
		return fmt.Sprintf("%s (want %s, not in the log)", m.Test, m.Want)
	case m.Want == "":
		return fmt.Sprintf("%s (%s, not expected)", m.Test, m.Got)
	}
	return fmt.Sprintf("%s (want %s, got %s)", m.Test, m.Want, m.Got)
}

// Result is one graded log.
type Result struct {
	InstanceID string  `json:"instance_id"`
	Reward     float64 `json:"reward"`
	Resolved   bool    `json:"resolved"`
	// Parsed is what the parser read from the log, names normalised.
	Parsed map[string]string `json:"parsed"`
	// Expected is the number of entries of expected_output_json.
	Expected   int        `json:"expected"`
	Mismatches []Mismatch `json:"mismatches,omitempty"`
	Reason     string     `json:"reason"`
}

// Evaluate grades log, run_tests.sh's output (raw or already cleaned), against
// the task's expected_output_json.
func Evaluate(t *task.Task, log string) (*Result, error) {
	if err := check(t); err != nil {
		return nil, err
	}
	return evaluate(t, ParserFor(repoName(t))(Clean(log))), nil
}

// runTestsTrace matches bash's trace of the command that runs run_tests.sh.
var runTestsTrace = lazyre.New(`^bash (?:\S*/)?run_tests\.sh$`)

// EvaluateRun grades the log of a sealed run (reward.RunScript) of the
// task's eval script: only the part run_tests.sh printed is read — from
// bash's trace of `bash …run_tests.sh` to the next traced command, the
// whole log when the trace shows none (a row's own eval script) — and in
// it the last "short test summary info", the one pytest printed after the
// tests ran.
func EvaluateRun(t *task.Task, log string, tr *reward.Trace) (*Result, error) {
	if err := check(t); err != nil {
		return nil, err
	}
	r, _ := evaluateRun(t, log, tr, nil)
	return r, nil
}

// evaluateRun is EvaluateRun with canaries: the results of the tests
// they name are taken out of the parsed map before it is compared with
// expected_output_json, and returned on their own.
func evaluateRun(t *task.Task, log string, tr *reward.Trace, can *tamper.Canaries) (*Result, swebench.StatusMap) {
	part := log
	if tr != nil {
		for i := len(tr.Lines) - 1; i >= 0; i-- {
			if !runTestsTrace.MatchString(tr.Lines[i].Text) {
				continue
			}
			part = log[tr.Lines[i].End:]
			if i+1 < len(tr.Lines) {
				part = log[tr.Lines[i].End:tr.Lines[i+1].Start]
			}
			break
		}
	}
	part = Clean(part)
	if i := strings.LastIndex(part, summaryHeader); i >= 0 {
		part = part[i:]
	}
	parsed := ParserFor(repoName(t))(part)
	var canaries swebench.StatusMap
	if can != nil && can.Available() {
		canaries = swebench.StatusMap{}
		for k, v := range parsed {
			if can.IsCanary(k) {
				canaries[k] = swebench.Status(v)
				delete(parsed, k)
			}
		}
	}
	return evaluate(t, parsed), canaries
}

func evaluate(t *task.Task, parsed map[string]string) *Result {
	parse := normalise(parsed, false)
	want := normalise(t.ExpectedOutput, true)
	r := &Result{InstanceID: t.InstanceID, Parsed: parse, Expected: len(want)}
	r.Mismatches = compare(parse, want)
	switch {
	case len(parse) != len(want):
		r.Reason = fmt.Sprintf("tests failed: the log has %d test results, expected_output_json %d", len(parse), len(want))
		if len(r.Mismatches) > 0 {
			r.Reason += ": " + list(r.Mismatches)
		}
	case len(r.Mismatches) > 0:
		r.Reason = "tests failed: " + list(r.Mismatches)
	default:
		r.Reward, r.Resolved, r.Reason = 1, true, "resolved"
		if len(want) == 0 {
			r.Reason = "resolved (expected_output_json is empty and the log has no results)"
		}
	}
	return r
}

// compare lists, sorted by name, the parsed tests that differ from the
// expectation and the expected tests missing from the log. As R2E-Gym
// does, an empty name is not compared.
func compare(parse, want map[string]string) []Mismatch {
	var out []Mismatch
	for k, got := range parse {
		if k == "" {
			continue
		}
		if w, ok := want[k]; !ok || w != got {
			out = append(out, Mismatch{Test: k, Want: w, Got: got})
		}
	}
	for k, w := range want {
		if _, ok := parse[k]; !ok && k != "" {
			out = append(out, Mismatch{Test: k, Want: w})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Test < out[j].Test })
	return out
}

func list(ms []Mismatch) string {
	const most = 3
	parts := make([]string, 0, most)
	for i, m := range ms {
		if i == most {
			break
		}
		parts = append(parts, m.String())
	}
	s := strings.Join(parts, ", ")
	if len(ms) > most {
		s += fmt.Sprintf(" and %d more", len(ms)-most)
	}
	return s
}

// repoName is the row's repo_name (R2E-Gym's short name), else the task's
// repository.
func repoName(t *task.Task) string {
	if raw, ok := t.RawField("repo_name"); ok {
		var s string
		if err := json.Unmarshal(raw, &s); err == nil && s != "" {
			return s
		}
	}
	return t.Repo
}

// check refuses tasks that cannot be graded this way.
func check(t *task.Task) error {
	if t.ExpectedOutput == nil {
		return fmt.Errorf("task %s: expected_output_json: missing; r2e grading compares the parsed test results with it", t.InstanceID)
	}
	return nil
}
