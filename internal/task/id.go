package task

import (
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// MaxIDLen is the longest instance id accepted, in bytes: the longest name
// one path element may have on the file systems swerve writes to.
const MaxIDLen = 255

// CheckID reports why id cannot name a task, or nil. A task's id names its
// directory under a run's --traj_dir and build's --output, its container
// labels and its log lines, so it must be one safe path element: not empty,
// not "." or "..", no "/", no NUL or other control character, valid UTF-8,
// at most MaxIDLen bytes. Every id of SWE-bench, SWE-Gym, SWE-smith,
// R2E-Gym, SWE-Factory and NeMo Gym passes.
func CheckID(id string) error {
	switch {
	case id == "":
		return fmt.Errorf("empty")
	case len(id) > MaxIDLen:
		return fmt.Errorf("%s is %d bytes, over the %d a path element may have", quoteID(id), len(id), MaxIDLen)
	case id == "." || id == "..":
		return fmt.Errorf("%q is not a usable name: it names a directory itself", id)
	case !utf8.ValidString(id):
		return fmt.Errorf("%s is not valid UTF-8", quoteID(id))
	case strings.Contains(id, "/"):
		return fmt.Errorf(`%s contains "/", which would make it a path, not a name`, quoteID(id))
	case strings.ContainsFunc(id, unicode.IsControl):
		return fmt.Errorf("%s contains a control character", quoteID(id))
	}
	return nil
}

// quoteID quotes an id for an error message on one line, cut short when it
// is long.
func quoteID(id string) string {
	if len(id) > 60 {
		return strconv.Quote(id[:60]) + "…"
	}
	return strconv.Quote(id)
}
