package sandbox

import (
	"os"
	"strconv"
	"strings"
	"syscall"
)

// ProcessAlive reports whether pid is a running process on this machine.
// A zombie (exited, not yet reaped) counts as gone: gc uses this to decide
// whether the swerve that made a box still runs.
func ProcessAlive(pid int) bool {
	if pid <= 0 {
		return false
	}
	if err := syscall.Kill(pid, 0); err == syscall.ESRCH {
		return false
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return !os.IsNotExist(err) // no /proc to ask: trust kill(2)
	}
	s := string(b)
	if i := strings.LastIndexByte(s, ')'); i >= 0 && i+2 < len(s) {
		return s[i+2] != 'Z' && s[i+2] != 'X'
	}
	return true
}
