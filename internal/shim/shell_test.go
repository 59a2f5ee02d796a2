package shim

import (
	"context"
	"io"
	"net"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/swerve-dev/swerve/internal/sandbox"
)

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
	sh, err := c.OpenShell(ctx, sandbox.ShellOptions{Cwd: t.TempDir(), Env: []string{"SHELL_TEST=on"}})
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
	sh, err := c.OpenShell(ctx, sandbox.ShellOptions{})
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
		sh, err := c.OpenShell(ctx, sandbox.ShellOptions{})
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
