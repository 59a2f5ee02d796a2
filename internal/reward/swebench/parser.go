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
