package shim

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"testing"
	"time"

	"github.com/swerve-dev/swerve/internal/testutil"

	"github.com/swerve-dev/swerve/internal/sandbox"
)

// alive reports whether pid runs (a zombie counts as gone).
func alive(pid int) bool {
	_, state, ok := procStartTime(pid)
	return ok && state != "Z" && state != "X"
}

// pidIn waits for a pid written to path.
func pidIn(t *testing.T, path string) int {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); ; {
		data, err := os.ReadFile(path)
		if err == nil && strings.HasSuffix(string(data), "\n") {
			pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
			if err != nil {
				t.Fatalf("%s holds %q", path, data)
			}
			return pid
		}
		if time.Now().After(deadline) {
			t.Fatalf("no pid in %s: %v", path, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func execOK(t *testing.T, c *Client, line string) sandbox.ExecResult {
	t.Helper()
	res, err := c.Exec(context.Background(), sandbox.ExecRequest{Cmd: []string{"bash", "-c", line}, Timeout: time.Minute})
	if err != nil {
		t.Fatalf("exec %q: %v", line, err)
	}
	return res
}

// TestSweepKillsDaemons: what a command leaves, however detached, is dead
// when its Exec returns: no grace.
func TestSweepKillsDaemons(t *testing.T) {
	c := pair(t)
	dir := t.TempDir()
	for _, tc := range []struct{ name, line string }{
		{"setsid double fork", `( setsid sleep 100 & echo $! > %[1]s ) ; while [ ! -s %[1]s ]; do sleep 0.01; done`},
		{"own process group", `python3 -c 'import os, time
os.setpgid(0, 0)
if os.fork(): os._exit(0)
open("%[1]s.t", "w").write("%%d\n" %% os.getpid()); os.rename("%[1]s.t", "%[1]s"); time.sleep(100)' & while [ ! -s %[1]s ]; do sleep 0.01; done`},
		{"nohup", `nohup sleep 100 > /dev/null 2>&1 & echo $! > %[1]s`},
		{"fork chain", `bash -c 'bash -c "bash -c \"sleep 100 & echo \\\$! > %[1]s; wait\" &" &' ; while [ ! -s %[1]s ]; do sleep 0.01; done`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if strings.HasPrefix(tc.line, "python3 ") {
				testutil.HostPython(t)
			}
			pidFile := filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "-")+".pid")
			execOK(t, c, fmt.Sprintf(tc.line, pidFile))
			if pid := pidIn(t, pidFile); alive(pid) {
				t.Errorf("pid %d still alive when the exec returned", pid)
				syscall.Kill(pid, syscall.SIGKILL)
			}
		})
	}
}

// TestSweepAttribution: an orphan is spared while a command that could have
// started it runs, and swept when that command ends; an orphan older than
// every running command is swept at once.
func TestSweepAttribution(t *testing.T) {
	c := pair(t)
	dir := t.TempDir()
	long := func(line string) <-chan error {
		done := make(chan error, 1)
		go func() {
			_, err := c.Exec(context.Background(), sandbox.ExecRequest{Cmd: []string{"bash", "-c", line}})
			done <- err
		}()
		return done
	}

	// A runs first; C starts after it and leaves O: A may have started O.
	aFile, oFile := filepath.Join(dir, "a"), filepath.Join(dir, "o")
	a := long(fmt.Sprintf("touch %s; sleep 1.5", aFile))
	for _, err := os.Stat(aFile); err != nil; _, err = os.Stat(aFile) {
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(30 * time.Millisecond) // past the tick of A's start
	execOK(t, c, fmt.Sprintf("( setsid sleep 100 & echo $! > %s )", oFile))
	o := pidIn(t, oFile)
	if !alive(o) {
		t.Fatalf("orphan %d killed while a command that started before it still runs", o)
	}
	if err := <-a; err != nil {
		t.Fatal(err)
	}
	if alive(o) {
		t.Errorf("orphan %d alive after the last command that could have started it ended", o)
		syscall.Kill(o, syscall.SIGKILL)
	}

	// C leaves O and ends while B, started after O, still runs: B cannot
	// have started O.
	o2File, cFile := filepath.Join(dir, "o2"), filepath.Join(dir, "c")
	cDone := long(fmt.Sprintf("( setsid sleep 100 & echo $! > %s ); while [ ! -e %s ]; do sleep 0.01; done", o2File, cFile))
	o2 := pidIn(t, o2File)
	time.Sleep(30 * time.Millisecond)
	b := long("sleep 1")
	time.Sleep(100 * time.Millisecond)
	os.WriteFile(cFile, nil, 0o644)
	if err := <-cDone; err != nil {
		t.Fatal(err)
	}
	if alive(o2) {
		t.Errorf("orphan %d alive after its command ended, though the only running command started after it", o2)
		syscall.Kill(o2, syscall.SIGKILL)
	}
	<-b
}

// TestKillOthers: an exec with KillOthers ends every other command and
// what they started, and says so.
func TestKillOthers(t *testing.T) {
	c := pair(t)
	dir := t.TempDir()
	bgFile, fgFile := filepath.Join(dir, "bg"), filepath.Join(dir, "fg")
	other := make(chan sandbox.ExecResult, 1)
	go func() {
		res, _ := c.Exec(context.Background(), sandbox.ExecRequest{Cmd: []string{"bash", "-c",
			fmt.Sprintf("nohup sleep 100 >/dev/null 2>&1 & echo $! > %s; echo $$ > %s; sleep 100", bgFile, fgFile)}})
		other <- res
	}()
	bg, fg := pidIn(t, bgFile), pidIn(t, fgFile)
	res, err := c.Exec(context.Background(), sandbox.ExecRequest{Cmd: []string{"echo", "eval"}, KillOthers: true})
	if err != nil || string(res.Output) != "eval\n" {
		t.Fatalf("exec with KillOthers: %+v, %v", res, err)
	}
	// Every process got its SIGKILL before Exec returned and can run no
	// more code; on a loaded machine the kernel may take a moment to finish
	// it off, so allow that moment (a process the helper missed lives on).
	for _, pid := range []int{bg, fg} {
		deadline := time.Now().Add(2 * time.Second)
		for alive(pid) && time.Now().Before(deadline) {
			time.Sleep(5 * time.Millisecond)
		}
		if alive(pid) {
			t.Errorf("pid %d alive 2s after an exec with KillOthers returned", pid)
			syscall.Kill(pid, syscall.SIGKILL)
		}
	}
	select {
	case res := <-other:
		if res.ExitCode != 128+int(syscall.SIGKILL) {
			t.Errorf("the other command: exit %d, want %d (killed)", res.ExitCode, 128+int(syscall.SIGKILL))
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the other command still running after an exec with KillOthers")
	}
}

// BenchmarkSweep measures what the sweep adds to every exec when the
// command left nothing behind: listing the helper's children and finding
// none to kill.
func BenchmarkSweep(b *testing.B) {
	s := &Server{reaps: true, running: map[runKey]*proc{}}
	for b.Loop() {
		s.sweep(false)
	}
}

// TestKillOthersNeedsHelperConsent: a helper that does not confirm
// KillOthers (an older one, which ignores the field) fails the exec rather
// than let a grader believe the box was cleared.
func TestKillOthersNeedsHelperConsent(t *testing.T) {
	reqR, reqW := io.Pipe()
	respR, respW := io.Pipe()
	defer reqW.Close()
	go func() { // answers every exec with exit 0 and nothing else
		defer respW.Close()
		br := bufio.NewReader(reqR)
		for {
			m, _, err := readFrame(br)
			if err != nil {
				return
			}
			buf, _ := appendFrame(nil, &Message{ID: m.ID}, nil)
			if _, err := respW.Write(buf); err != nil {
				return
			}
		}
	}()
	c := NewClient(respR, reqW)
	ctx := context.Background()
	if _, err := c.Exec(ctx, sandbox.ExecRequest{Cmd: []string{"true"}}); err != nil {
		t.Fatalf("plain exec: %v", err)
	}
	_, err := c.Exec(ctx, sandbox.ExecRequest{Cmd: []string{"true"}, KillOthers: true})
	if err == nil || !strings.Contains(err.Error(), "kill_others") {
		t.Errorf("exec with KillOthers on a helper that does not confirm it: error %v, want one naming kill_others", err)
	}
}
