package run

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// LockName is the file under a --traj_dir that a running swerve run holds
// an exclusive flock on, with its pid inside. The kernel drops the lock
// when the process ends, also on kill -9, so a stale file never blocks.
const LockName = ".swerve-run.lock"

// ErrLocked is returned when another process holds the --traj_dir's lock.
var ErrLocked = errors.New("in use by another swerve run")

// lockDir takes dir's lock, or says which process holds it.
func lockDir(dir string) (unlock func(), err error) {
	path := filepath.Join(dir, LockName)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("--traj_dir %s: lock: %w", dir, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		holder := "another process"
		if b, rerr := os.ReadFile(path); rerr == nil {
			if pid, perr := strconv.Atoi(strings.TrimSpace(string(b))); perr == nil && pid > 0 {
				holder = "pid " + strconv.Itoa(pid)
			}
		}
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("--traj_dir %s: %w (%s); wait for it to end, or use another --traj_dir", dir, ErrLocked, holder)
		}
		return nil, fmt.Errorf("--traj_dir %s: lock %s: %w", dir, path, err)
	}
	if err := f.Truncate(0); err == nil {
		_, _ = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	return func() {
		// The pid stays in the file; only the lock says a run is live.
		_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		f.Close()
	}, nil
}
