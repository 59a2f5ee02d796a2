package shim

import (
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"
)

// startReaper reaps orphans when the helper runs as PID 1 of a container:
// processes whose parent died are re-parented to it and would otherwise stay
// zombies, using up the box's pid limit. It only reaps zombies that are not
// the helper's own direct children (ours reports those; they belong to
// exec.Cmd.Wait). mu is held while a child is started and recorded, and while
// ours is called, so reaping never races a Start.
func startReaper(mu *sync.Mutex, ours func(pid int) bool) (stop func()) {
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGCHLD)
	done := make(chan struct{})
	go func() {
		tick := time.NewTicker(5 * time.Second)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-sigs:
			case <-tick.C:
			}
			reapOrphans(mu, ours)
		}
	}()
	return func() { signal.Stop(sigs); close(done) }
}

func reapOrphans(mu *sync.Mutex, ours func(pid int) bool) {
	mu.Lock()
	defer mu.Unlock()
	// Only the helper's own children can be its zombies: listing them is
	// cheap even on a host with many processes (the local backend).
	for _, pid := range childPIDs(false) {
		if ours(pid) {
			continue
		}
		if _, state, ok := procStat(pid); !ok || state != "Z" {
			continue
		}
		var ws syscall.WaitStatus
		_, _ = syscall.Wait4(pid, &ws, syscall.WNOHANG, nil)
	}
}

// setSubreaper makes orphaned descendants re-parent to this process rather
// than to the machine's init (PR_SET_CHILD_SUBREAPER).
func setSubreaper() error {
	_, _, errno := syscall.RawSyscall(syscall.SYS_PRCTL, 36 /* PR_SET_CHILD_SUBREAPER */, 1, 0)
	if errno != 0 {
		return errno
	}
	return nil
}
