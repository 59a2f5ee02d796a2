package shim

import (
	"os"
	"os/signal"
	"syscall"
)

// heldSignals are the signals that would end the helper by default. Code in
// the box may send any of them to the helper (it is the box's PID 1 in a
// container); none of them may end it, or a patch could turn a failing
// grade into a dead box, which is an infrastructure error rather than a 0.
var heldSignals = []os.Signal{
	syscall.SIGHUP, syscall.SIGINT, syscall.SIGTERM, syscall.SIGQUIT,
	syscall.SIGABRT, syscall.SIGUSR1, syscall.SIGUSR2, syscall.SIGALRM,
	syscall.SIGVTALRM, syscall.SIGXCPU, syscall.SIGXFSZ, syscall.SIGSTKFLT,
	syscall.SIGIO, syscall.SIGPWR, syscall.SIGTRAP, syscall.SIGSYS,
	// Sent with kill(2) these are asynchronous, so catching them only
	// changes what happens when someone sends them, not real faults.
	syscall.SIGBUS, syscall.SIGFPE, syscall.SIGSEGV, syscall.SIGILL,
}

// HoldSignals makes the helper survive every catchable signal sent to it:
// each is caught and dropped. Catching rather than ignoring matters: an
// ignored disposition would be inherited by every command the helper
// starts, while caught ones are reset to the default in the child. A
// container's PID 1 only receives, from inside its namespace, the signals
// it has a handler for, so what is left (SIGKILL, SIGSTOP) never reaches
// it from the box. The host ends the helper by closing its stream or with
// SIGKILL from outside. stop undoes it.
func HoldSignals() (stop func()) {
	ch := make(chan os.Signal, 16)
	signal.Notify(ch, heldSignals...)
	done := make(chan struct{})
	go func() {
		for {
			select {
			case <-ch:
			case <-done:
				return
			}
		}
	}()
	return func() { signal.Stop(ch); close(done) }
}
