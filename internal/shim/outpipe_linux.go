package shim

import (
	"fmt"
	"os"
	"syscall"
)

// outputPipe returns the two ends of the channel a command's stdout and
// stderr go to: r for the helper, w for the command. It is a Unix socket
// pair, not a pipe, because a process can reopen a pipe it holds for
// reading through /proc/<pid>/fd and steal the output on its way to the
// helper — a sealed eval run's trace lines, and the nonce in them, with it.
// A socket cannot be reopened that way (the open fails), and the
// command's end is shut for reading and the helper's for writing, so
// reading the command's end gives nothing.
func outputPipe() (r, w *os.File, err error) {
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("socketpair: %w", err)
	}
	if err := syscall.Shutdown(fds[0], syscall.SHUT_WR); err != nil {
		syscall.Close(fds[0])
		syscall.Close(fds[1])
		return nil, nil, fmt.Errorf("shutdown: %w", err)
	}
	if err := syscall.Shutdown(fds[1], syscall.SHUT_RD); err != nil {
		syscall.Close(fds[0])
		syscall.Close(fds[1])
		return nil, nil, fmt.Errorf("shutdown: %w", err)
	}
	// The helper's end is non-blocking, as os.Pipe's are, so that reads
	// go through the runtime's poller and take deadlines.
	if err := syscall.SetNonblock(fds[0], true); err != nil {
		syscall.Close(fds[0])
		syscall.Close(fds[1])
		return nil, nil, fmt.Errorf("nonblock: %w", err)
	}
	return os.NewFile(uintptr(fds[0]), "output"), os.NewFile(uintptr(fds[1]), "output"), nil
}
