// Package stop is the graceful-stop signal the run, build and agent loops
// share: a channel the caller closes to ask them to start nothing new and
// finish what is running.
package stop

// Chan is a stop signal: closing the channel asks for the stop. The nil Chan
// never stops. A plain <-chan struct{} converts to it.
type Chan <-chan struct{}

// Requested reports whether the stop has been asked for.
func (c Chan) Requested() bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// Done returns the channel to select on; for the nil Chan it is nil, which
// is never ready.
func (c Chan) Done() <-chan struct{} { return c }
