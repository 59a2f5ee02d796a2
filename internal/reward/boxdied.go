package reward

import (
	"errors"
	"strings"

	"github.com/swerve-dev/swerve/internal/sandbox"
)

// BoxDiedError is a grading box that died (sandbox.ErrClosed) while the
// eval script ran, that is after the patch was applied, while the patch's
// own code could run: its install step, the tests importing it. Code that
// kills the box (fills its memory so that the kernel kills the in-box
// helper, say) must not turn a failing grade into an infrastructure error,
// so graders return this error for the caller to settle against the task's
// reference run (see grader.Settle). A box that dies before (opening it,
// applying the patch) is an ordinary error.
type BoxDiedError struct {
	Err error
}

func (e *BoxDiedError) Error() string {
	return "the box died while the patch's code ran: " + e.Err.Error()
}

func (e *BoxDiedError) Unwrap() error { return e.Err }

// What says in a few words how the box died (the backend's account of it,
// without the sentinel's own text).
func (e *BoxDiedError) What() string {
	s := e.Err.Error()
	// What wraps the sentinel (the call that failed, a command line) says
	// nothing of how the box died.
	if i := strings.LastIndex(s, sandbox.ErrClosed.Error()+": "); i >= 0 {
		s = s[i+len(sandbox.ErrClosed.Error())+2:]
	}
	return strings.TrimSpace(s)
}

// diedUnder marks err, met running the eval script, as a box that died
// under the patch when it is one.
func diedUnder(err error) error {
	if err == nil || !errors.Is(err, sandbox.ErrClosed) {
		return err
	}
	if _, ok := errors.AsType[*BoxDiedError](err); ok {
		return err
	}
	return &BoxDiedError{Err: err}
}
