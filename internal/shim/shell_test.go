package shim

import (
	"context"
	"io"
	"net"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/swerve-dev/swerve/internal/sandbox"
)

// hostShell are options for a shell on the test's host: a HOME of its
// own, so that the user's login scripts (a pyenv rehash that a killed
// shell would leave locked) stay out of it.
func hostShell(t testing.TB) sandbox.ShellOptions {
	return sandbox.ShellOptions{Env: []string{"HOME=" + t.TempDir()}}
}

// shellPID runs echo $$ in a shell and returns the shell's pid.
func shellPID(t *testing.T, sh sandbox.ShellSession) int {
	t.Helper()
	res, err := sh.Run(context.Background(), sandbox.ShellRequest{Cmd: "echo $$", Timeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(res.Output)))
	if err != nil {
		t.Fatalf("echo $$: %q", res.Output)
	}
	return pid
}

// waitDead waits for pid to be gone (or a zombie).
func waitDead(t *testing.T, pid int, what string) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); alive(pid); {
		if time.Now().After(deadline) {
			t.Fatalf("%s (pid %d) still runs", what, pid)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestShellStreams: a shell belongs to the stream that opened it: another
// stream cannot run commands in it, and it dies when its stream ends.
func TestShellStreams(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "s.sock")
	s := &Server{Software: "test"}
	if err := s.Listen(sock); err != nil {
		t.Fatal(err)
	}
	reqR, reqW := io.Pipe()
	respR, respW := io.Pipe()
	done := make(chan error, 1)
	go func() { done <- s.Serve(context.Background(), reqR, respW); respW.Close() }()
	defer func() { reqW.Close(); <-done }()
	main := NewClient(respR, reqW)
	ctx := context.Background()
	if _, err := main.Hello(ctx); err != nil {
		t.Fatal(err)
	}
	conn, err := net.Dial("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	c := NewClient(conn, conn)
	sh, err := c.OpenShell(ctx, sandbox.ShellOptions{Cwd: t.TempDir(), Env: []string{"SHELL_TEST=on", "HOME=" + t.TempDir()}})
	if err != nil {
		t.Fatal(err)
	}
	res, err := sh.Run(ctx, sandbox.ShellRequest{Cmd: "echo $SHELL_TEST"})
	if err != nil || string(res.Output) != "on\n" {
		t.Fatalf("Run: %q, %v", res.Output, err)
	}
	pid := shellPID(t, sh)
	// The main stream does not see the socket's shell.
	other := &ShellSession{c: main, id: sh.(*ShellSession).id}
	if _, err := other.Run(ctx, sandbox.ShellRequest{Cmd: "true"}); err == nil || !strings.Contains(err.Error(), "no shell") {
		t.Errorf("Run in another stream's shell: %v, want a no-shell error", err)
	}
	conn.Close()
	waitDead(t, pid, "a shell whose stream ended")
}

// TestShellCloseKillsBackground: Close kills the shell and what it runs.
func TestShellCloseKillsBackground(t *testing.T) {
	c := pair(t)
	ctx := context.Background()
	sh, err := c.OpenShell(ctx, hostShell(t))
	if err != nil {
		t.Fatal(err)
	}
	pid := shellPID(t, sh)
	if err := sh.Close(ctx); err != nil {
		t.Fatal(err)
	}
	waitDead(t, pid, "a closed shell")
	if _, err := sh.Run(ctx, sandbox.ShellRequest{Cmd: "true"}); err == nil {
		t.Error("Run after Close: no error")
	}
}

// BenchmarkShell is one call of a command that does nothing in a
// persistent shell, in process (no box), against the same through exec.
//
//	go test -run '^$' -bench Shell ./internal/shim/
func BenchmarkShell(b *testing.B) {
	c := pair(b)
	ctx := context.Background()
	b.Run("shell", func(b *testing.B) {
		sh, err := c.OpenShell(ctx, hostShell(b))
		if err != nil {
			b.Fatal(err)
		}
		defer sh.Close(ctx)
		for b.Loop() {
			if res, err := sh.Run(ctx, sandbox.ShellRequest{Cmd: ":"}); err != nil || res.ExitCode != 0 {
				b.Fatal(res, err)
			}
		}
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "calls/s")
	})
	b.Run("exec-true", func(b *testing.B) {
		for b.Loop() {
			if res, err := c.Exec(ctx, sandbox.ExecRequest{Cmd: []string{"true"}}); err != nil || res.ExitCode != 0 {
				b.Fatal(res, err)
			}
		}
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "calls/s")
	})
}

// TestShellKillsAndRestarts runs the ways a call can end the shell in
// process (for the race detector; the conformance suite checks them on
// every backend): a timeout, a cancel, exit; each next call restarts.
func TestShellKillsAndRestarts(t *testing.T) {
	c := pair(t)
	ctx := context.Background()
	sh, err := c.OpenShell(ctx, hostShell(t))
	if err != nil {
		t.Fatal(err)
	}
	defer sh.Close(ctx)
	// The timeout leaves the shell time to print first, even on a loaded
	// machine: the kill and the output kept are tested, not a latency.
	res, err := sh.Run(ctx, sandbox.ShellRequest{Cmd: "echo before; sleep 30", Timeout: 2 * time.Second})
	if err != nil || !res.TimedOut || res.ExitCode != sandbox.TimeoutExitCode || string(res.Output) != "before\n" {
		t.Errorf("timeout: %+v %q, %v", res, res.Output, err)
	}
	cctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	if _, err := sh.Run(cctx, sandbox.ShellRequest{Cmd: "sleep 30"}); err == nil {
		t.Error("cancelled call: no error")
	}
	res, err = sh.Run(ctx, sandbox.ShellRequest{Cmd: "exit 6"})
	if err != nil || !res.Exited || res.ExitCode != 6 {
		t.Errorf("exit 6: %+v, %v", res, err)
	}
	res, err = sh.Run(ctx, sandbox.ShellRequest{Cmd: "echo ok"})
	if err != nil || !res.Restarted || string(res.Output) != "ok\n" {
		t.Errorf("after exit: %+v %q, %v", res, res.Output, err)
	}
}

// TestNowTicks: nowTicks is in the unit and from the origin of /proc start
// times, which the sweep compares it with.
func TestNowTicks(t *testing.T) {
	before := nowTicks()
	cmd := exec.Command("sleep", "1")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()
	defer cmd.Process.Kill()
	start, _, ok := procStartTime(cmd.Process.Pid)
	after := nowTicks()
	if !ok || start+startSlack < before || start > after+startSlack {
		t.Errorf("a process started between ticks %d and %d has start time %d", before, after, start)
	}
}
