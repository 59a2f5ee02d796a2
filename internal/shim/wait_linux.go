package shim

import (
	"syscall"
	"unsafe"
)

// waitExited blocks until child pid has ended, and leaves it unreaped: a
// zombie, whose pid, and process group id, no other process can take, and
// which kill(pid, 0) still finds. Whoever waits for it next reaps it.
func waitExited(pid int) error {
	const (
		pPID    = 1          // P_PID
		wExited = 4          // WEXITED
		wNoWait = 0x01000000 // WNOWAIT
	)
	var info [128]byte // siginfo_t, not looked at
	for {
		_, _, errno := syscall.Syscall6(syscall.SYS_WAITID, pPID, uintptr(pid), uintptr(unsafe.Pointer(&info[0])), wExited|wNoWait, 0, 0)
		if errno == syscall.EINTR {
			continue
		}
		if errno != 0 {
			return errno
		}
		return nil
	}
}
