package swebench

import (
	"fmt"
	"sort"
	"sync"

	"github.com/swerve-dev/swerve/internal/task"
)

// Status is a test's outcome as a log parser reads it.
type Status string

// The statuses the SWE-bench harness uses.
const (
	Passed  Status = "PASSED"
	Failed  Status = "FAILED"
	Skipped Status = "SKIPPED"
	Error   Status = "ERROR"
	XFail   Status = "XFAIL"
)

// StatusMap maps test names, as the dataset's FAIL_TO_PASS / PASS_TO_PASS
// spell them, to their outcome.
type StatusMap map[string]Status

// Parser reads the test section of a log. t is the task being graded: a few
// parsers need its test lists or repository.
type Parser func(log string, t *task.Task) StatusMap

var (
	parsersMu sync.RWMutex
	parsers   = map[string]Parser{}
)

// RegisterParser makes p available under name, the value of a task's
// log_parser field (e.g. "parse_log_django"). Registering a name twice is a
// programming error and panics.
func RegisterParser(name string, p Parser) {
	parsersMu.Lock()
	defer parsersMu.Unlock()
	if _, dup := parsers[name]; dup {
		panic("swebench: parser registered twice: " + name)
	}
	parsers[name] = p
}

// LookupParser returns the parser registered under name.
func LookupParser(name string) (Parser, error) {
	parsersMu.RLock()
	defer parsersMu.RUnlock()
	if p, ok := parsers[name]; ok {
		return p, nil
	}
	return nil, fmt.Errorf("no log parser %q (swerve has %d: see swebench.ParserNames)", name, len(parsers))
}

// ParserNames lists the registered parsers, sorted.
func ParserNames() []string {
	parsersMu.RLock()
	defer parsersMu.RUnlock()
	names := make([]string, 0, len(parsers))
	for n := range parsers {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// failed says whether s is a failing status.
func failed(s Status) bool { return s == Failed || s == Error }

// WorstCopy holds the tests a log names as failed or errored, for the rule
// every parser applies after the harness's own reading: a test that any
// failure header or failure status line names is failed, whatever else the
// log says about it. The harness lets the last line about a test win, so
// code under test that prints a pass line for a test that then fails (an
// "ok" after django's "test_x ... ", a "PASSED x" after pytest's
// "FAILED x") would otherwise turn the failure into a pass.
type WorstCopy map[string]Status

// Note records that the log names name with status s; passes are ignored.
func (w WorstCopy) Note(name string, s Status) {
	if !failed(s) {
		return
	}
	if _, seen := w[name]; !seen {
		w[name] = s
	}
}

// Apply makes every noted test that sm holds with a passing, skipped or
// expected-failure status failed again (with the status first noted). It
// never adds a test to sm: a name the harness did not record is already a
// failure wherever a test list names it.
func (w WorstCopy) Apply(sm StatusMap) StatusMap {
	for name, s := range w {
		if cur, ok := sm[name]; ok && !failed(cur) {
			sm[name] = s
		}
	}
	return sm
}

// Set is sm[name] = s that also notes a failure in w.
func (w WorstCopy) Set(sm StatusMap, name string, s Status) {
	sm[name] = s
	w.Note(name, s)
}
