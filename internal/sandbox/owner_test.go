package sandbox

import (
	"os"
	"os/exec"
	"testing"
	"time"
)

func TestProcessAlive(t *testing.T) {
	if !ProcessAlive(os.Getpid()) {
		t.Error("ProcessAlive(self) = false")
	}
	if ProcessAlive(4194305) { // above the kernel's pid_max
		t.Error("ProcessAlive(no such pid) = true")
	}
	if ProcessAlive(0) || ProcessAlive(-1) {
		t.Error("ProcessAlive of a non-pid = true")
	}
	// An exited child we have not waited for is a zombie: gone for gc.
	cmd := exec.Command("true")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()
	deadline := time.Now().Add(5 * time.Second)
	for ProcessAlive(cmd.Process.Pid) {
		if time.Now().After(deadline) {
			t.Fatal("an exited, unreaped child still counts as alive")
		}
		time.Sleep(10 * time.Millisecond)
	}
}
