package shim

import "golang.org/x/sys/unix"

// waitExited blocks until child pid has ended, and leaves it unreaped: a
// zombie, whose pid, and process group id, no other process can take, and
// which kill(pid, 0) still finds. Whoever waits for it next reaps it.
func waitExited(pid int) error {
	var info unix.Siginfo // not looked at
	for {
		err := unix.Waitid(unix.P_PID, pid, &info, unix.WEXITED|unix.WNOWAIT, nil)
		if err != unix.EINTR {
			return err
		}
	}
}
