package sandboxtest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/swerve-dev/swerve/internal/sandbox"
)

func (s *suite) closeTests() []subtest {
	return []subtest{
		{"Idempotent", s.testCloseIdempotent},
		{"UseAfterClose", s.testUseAfterClose},
		{"DuringExec", s.testCloseDuringExec},
		{"Concurrent", s.testCloseConcurrent},
		{"BackgroundProcess", s.testCloseBackground},
	}
}

// closeNow closes box and fails the test on error.
func closeNow(t testing.TB, box sandbox.Sandbox) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), closeTimeout)
	defer cancel()
	if err := box.Close(ctx); err != nil {
		t.Fatalf("Close(%s): got error %v, want nil", box.ID(), err)
	}
}

func (s *suite) testCloseIdempotent(t *testing.T) {
	box := s.open(t, nil)
	bashOK(t, box, "true")
	closeNow(t, box)
	ctx, cancel := context.WithTimeout(context.Background(), closeTimeout)
	defer cancel()
	if err := box.Close(ctx); err != nil {
		t.Errorf("second Close(%s): got error %v, want nil (Close is idempotent)", box.ID(), err)
	}
	// The cleanup s.open registered closes it a third time.
}

func (s *suite) testUseAfterClose(t *testing.T) {
	box := s.open(t, nil)
	writeFile(t, box, "before-close.txt", []byte("x"), 0o644)
	closeNow(t, box)

	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	start := time.Now()
	res, err := box.Exec(ctx, sandbox.ExecRequest{Cmd: sandbox.Bash("echo hi")})
	if !errors.Is(err, sandbox.ErrClosed) {
		t.Errorf("Exec after Close: got %s, error %v; want an error wrapping ErrClosed", showRes(res), err)
	}
	if data, err := box.ReadFile(ctx, "before-close.txt"); !errors.Is(err, sandbox.ErrClosed) {
		t.Errorf("ReadFile after Close: got %q, error %v; want an error wrapping ErrClosed", data, err)
	}
	if err := box.WriteFile(ctx, "after-close.txt", []byte("x"), 0o644); !errors.Is(err, sandbox.ErrClosed) {
		t.Errorf("WriteFile after Close: got error %v, want an error wrapping ErrClosed", err)
	}
	if took := time.Since(start); took > 10*time.Second {
		t.Errorf("calls on a closed box took %v, want them to fail at once", took)
	}
}

func (s *suite) testCloseDuringExec(t *testing.T) {
	box := s.open(t, nil)
	req := sandbox.ExecRequest{Cmd: sandbox.Bash("sleep 1000 & echo $$ > running.pid; sleep 1000")}
	done := startExec(context.Background(), box, req)
	waitRunning(t, box, done, "running.pid")

	closeStart := time.Now()
	closeNow(t, box)
	closed := time.Now()
	t.Logf("Close with a running Exec took %v", closed.Sub(closeStart).Round(time.Millisecond))

	var o outcome
	select {
	case o = <-done:
	case <-time.After(10 * time.Second):
		t.Fatalf("Exec(%s) still running 10s after Close returned", showCmd(req.Cmd))
	}
	if !errors.Is(o.err, sandbox.ErrClosed) {
		t.Errorf("Exec(%s) interrupted by Close: got %s, error %v; want an error wrapping ErrClosed", showCmd(req.Cmd), showRes(o.res), o.err)
	}
}

func (s *suite) testCloseConcurrent(t *testing.T) {
	box := s.open(t, nil)
	bashOK(t, box, "true")
	const n = 10
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), closeTimeout)
			defer cancel()
			if err := box.Close(ctx); err != nil {
				t.Errorf("concurrent Close #%d of %d: got error %v, want nil", i, n, err)
			}
		})
	}
	wg.Wait()
}

// testCloseBackground leaves processes running in the box (one detached
// with nohup, under a command still running) and closes it; the leak check
// after the Close tests then finds them if Close did not remove them.
func (s *suite) testCloseBackground(t *testing.T) {
	box := s.open(t, nil)
	req := sandbox.ExecRequest{
		Cmd:     sandbox.Bash("nohup sleep 1000 >/dev/null 2>&1 & sleep 1000 >/dev/null 2>&1 & echo started"),
		Timeout: time.Minute,
	}
	wantOutput(t, req, run(t, box, req), "started\n")
	req = sandbox.ExecRequest{Cmd: sandbox.Bash("nohup sleep 1000 >/dev/null 2>&1 & echo $$ > running.pid; sleep 1000")}
	done := startExec(context.Background(), box, req)
	waitRunning(t, box, done, "running.pid")
	writeFile(t, box, "left-behind/file.txt", []byte("x"), 0o644)
	closeNow(t, box)
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Errorf("Exec(%s) still running 10s after Close returned", showCmd(req.Cmd))
	}
}

// testParallelOpenClose opens h.Parallel boxes at once, runs one command in
// each, closes them all at once, and checks nothing is left behind.
func (s *suite) testParallelOpenClose(t *testing.T) {
	n := s.h.Parallel
	boxes := make([]sandbox.Sandbox, n)
	t.Cleanup(func() {
		// Only matters when the test failed half way.
		for _, box := range boxes {
			if box != nil {
				box.Close(context.WithoutCancel(t.Context()))
			}
		}
	})

	phase := func(name string, fn func(i int) error) bool {
		t.Helper()
		var wg sync.WaitGroup
		errs := make([]error, n)
		start := time.Now()
		for i := range n {
			wg.Go(func() { errs[i] = fn(i) })
		}
		wg.Wait()
		t.Logf("%s %d boxes in parallel: %v", name, n, time.Since(start).Round(time.Millisecond))
		err := errors.Join(errs...)
		if err != nil {
			t.Errorf("%s %d boxes in parallel:\n%v", name, n, err)
		}
		return err == nil
	}

	total := time.Now()
	specs := make([]sandbox.Spec, n)
	for i := range specs {
		specs[i] = s.h.Spec(t)
	}
	opened := phase("open", func(i int) error {
		ctx, cancel := context.WithTimeout(context.Background(), openTimeout)
		defer cancel()
		box, err := s.h.Backend.Open(ctx, specs[i])
		if err != nil {
			return fmt.Errorf("Open #%d: %w", i, err)
		}
		boxes[i] = box
		return nil
	})
	if opened {
		phase("exec in", func(i int) error {
			ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
			defer cancel()
			res, err := boxes[i].Exec(ctx, sandbox.ExecRequest{Cmd: sandbox.Bash("echo ok")})
			if err != nil {
				return fmt.Errorf("Exec in box #%d (%s): got error %w, want a result", i, boxes[i].ID(), err)
			}
			if res.ExitCode != 0 || string(res.Output) != "ok\n" {
				return fmt.Errorf("Exec(echo ok) in box #%d (%s): got %s, want exit 0, output \"ok\\n\"", i, boxes[i].ID(), showRes(res))
			}
			return nil
		})
		ids := map[string]int{}
		for i, box := range boxes {
			if j, dup := ids[box.ID()]; dup {
				t.Errorf("boxes #%d and #%d share the ID %q, want distinct IDs", j, i, box.ID())
			}
			ids[box.ID()] = i
		}
	}
	phase("close", func(i int) error {
		if boxes[i] == nil {
			return nil
		}
		ctx, cancel := context.WithTimeout(context.Background(), closeTimeout)
		defer cancel()
		if err := boxes[i].Close(ctx); err != nil {
			return fmt.Errorf("Close of box #%d (%s): %w", i, boxes[i].ID(), err)
		}
		return nil
	})
	t.Logf("%d boxes opened, used and closed in %v", n, time.Since(total).Round(time.Millisecond))
	s.assertNoLeaks(t)
}
