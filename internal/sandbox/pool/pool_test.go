package pool

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/swerve-dev/swerve/internal/sandbox"
)

// fakeBackend opens fakeBoxes; gate, when set, holds every open until it
// receives a value (or the open's ctx ends).
type fakeBackend struct {
	gate chan struct{}
	fail func(sandbox.Spec) error

	mu     sync.Mutex
	n      int
	opened []*fakeBox
	inOpen int // opens in flight now
}

type fakeBox struct {
	id     string
	spec   sandbox.Spec
	mu     sync.Mutex
	closed bool
}

func (b *fakeBox) ID() string { return b.id }
func (b *fakeBox) Exec(context.Context, sandbox.ExecRequest) (sandbox.ExecResult, error) {
	return sandbox.ExecResult{}, nil
}
func (b *fakeBox) WriteFile(context.Context, string, []byte, fs.FileMode) error { return nil }
func (b *fakeBox) ReadFile(context.Context, string) ([]byte, error)             { return nil, nil }
func (b *fakeBox) Close(context.Context) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.closed = true
	return nil
}
func (b *fakeBox) isClosed() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.closed
}

func (f *fakeBackend) Open(ctx context.Context, spec sandbox.Spec) (sandbox.Sandbox, error) {
	f.mu.Lock()
	f.inOpen++
	f.mu.Unlock()
	defer func() {
		f.mu.Lock()
		f.inOpen--
		f.mu.Unlock()
	}()
	if f.gate != nil {
		select {
		case <-f.gate:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	if f.fail != nil {
		if err := f.fail(spec); err != nil {
			return nil, err
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.n++
	b := &fakeBox{id: fmt.Sprintf("box-%d", f.n), spec: spec}
	f.opened = append(f.opened, b)
	return b, nil
}

// live is the number of boxes opened and not closed.
func (f *fakeBackend) live() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, b := range f.opened {
		if !b.isClosed() {
			n++
		}
	}
	return n
}

// waitFor polls cond for up to 5s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

func spec(image string) sandbox.Spec {
	return sandbox.Spec{Image: image, Task: image, Labels: map[string]string{"swerve.task": image}}
}

func TestHitAndMiss(t *testing.T) {
	ctx := context.Background()
	fb := &fakeBackend{}
	p := New(fb, Options{Size: 2})
	defer p.Close(ctx)
	tk := p.Expect(spec("a"), spec("b"))
	waitFor(t, "two warm boxes", func() bool { return p.Stats().Ready == 2 })

	a, err := p.Open(ctx, spec("a"))
	if err != nil {
		t.Fatal(err)
	}
	if a.(*fakeBox).spec.Image != "a" {
		t.Fatalf("got a box for %q, want a", a.(*fakeBox).spec.Image)
	}
	c, err := p.Open(ctx, spec("c"))
	if err != nil {
		t.Fatal(err)
	}
	st := p.Stats()
	if st.Hits != 1 || st.Misses != 1 || st.Ready != 1 {
		t.Fatalf("stats %+v: want 1 hit, 1 miss, 1 ready", st)
	}
	tk.Release(ctx) // b is not going to be used
	a.Close(ctx)
	c.Close(ctx)
	if n := fb.live(); n != 0 {
		t.Fatalf("%d boxes left open after release", n)
	}
	if st := p.Stats(); st.Unused != 1 || st.Ready != 0 {
		t.Fatalf("stats %+v: want 1 unused, 0 ready", st)
	}
}

// TestSpecMismatchNeverReused: a box opened for one spec is never handed to
// a caller whose spec differs in any field that matters.
func TestSpecMismatchNeverReused(t *testing.T) {
	base := func() sandbox.Spec {
		return sandbox.Spec{Image: "img", Workdir: "/testbed", Env: []string{"A=1"}, Network: sandbox.NetworkNone,
			Limits: sandbox.Limits{CPUs: 2, MemoryMiB: 4096, PIDs: 1024}, Labels: map[string]string{"swerve.task": "t1"},
			Pull: sandbox.PullMissing, User: "root", Task: "t1"}
	}
	for _, tc := range []struct {
		name   string
		change func(*sandbox.Spec)
	}{
		{"image", func(s *sandbox.Spec) { s.Image = "other" }},
		{"workdir", func(s *sandbox.Spec) { s.Workdir = "/repo" }},
		{"env", func(s *sandbox.Spec) { s.Env = []string{"A=2"} }},
		{"network", func(s *sandbox.Spec) { s.Network = sandbox.NetworkBridge }},
		{"cpus", func(s *sandbox.Spec) { s.Limits.CPUs = 1 }},
		{"memory", func(s *sandbox.Spec) { s.Limits.MemoryMiB = 1 }},
		{"pids", func(s *sandbox.Spec) { s.Limits.PIDs = 1 }},
		{"labels", func(s *sandbox.Spec) { s.Labels = map[string]string{"swerve.task": "t2"} }},
		{"pull", func(s *sandbox.Spec) { s.Pull = sandbox.PullNever }},
		{"user", func(s *sandbox.Spec) { s.User = "1000" }},
		{"cap_add", func(s *sandbox.Spec) { s.Security.CapAdd = []string{"SYS_PTRACE"} }},
		{"unhardened", func(s *sandbox.Spec) { s.Security.Unhardened = true }},
		{"task", func(s *sandbox.Spec) { s.Task = "t2" }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			fb := &fakeBackend{}
			p := New(fb, Options{Size: 1})
			defer p.Close(ctx)
			tk := p.Expect(base())
			defer tk.Release(ctx)
			waitFor(t, "the warm box", func() bool { return p.Stats().Ready == 1 })
			other := base()
			tc.change(&other)
			box, err := p.Open(ctx, other)
			if err != nil {
				t.Fatal(err)
			}
			defer box.Close(ctx)
			if got := box.(*fakeBox).spec; Key(got) != Key(other) {
				t.Fatalf("handed a box opened for %s to %s", Key(got), Key(other))
			}
			if st := p.Stats(); st.Hits != 0 || st.Misses != 1 || st.Ready != 1 {
				t.Fatalf("stats %+v: want a miss and the warm box kept", st)
			}
		})
	}
	t.Run("pull progress does not count", func(t *testing.T) {
		ctx := context.Background()
		p := New(&fakeBackend{}, Options{Size: 1})
		defer p.Close(ctx)
		p.Expect(base())
		waitFor(t, "the warm box", func() bool { return p.Stats().Ready == 1 })
		s := base()
		s.PullProgress = io.Discard
		box, err := p.Open(ctx, s)
		if err != nil {
			t.Fatal(err)
		}
		box.Close(ctx)
		if st := p.Stats(); st.Hits != 1 {
			t.Fatalf("stats %+v: want a hit", st)
		}
	})
}

// TestEachBoxOnce: two expected boxes of one spec serve two callers; the
// third opens its own, and no box is handed out twice.
func TestEachBoxOnce(t *testing.T) {
	ctx := context.Background()
	fb := &fakeBackend{}
	p := New(fb, Options{Size: 4})
	defer p.Close(ctx)
	p.Expect(spec("a"), spec("a"))
	waitFor(t, "two warm boxes", func() bool { return p.Stats().Ready == 2 })
	seen := map[string]bool{}
	for range 3 {
		box, err := p.Open(ctx, spec("a"))
		if err != nil {
			t.Fatal(err)
		}
		if seen[box.ID()] {
			t.Fatalf("box %s handed out twice", box.ID())
		}
		seen[box.ID()] = true
	}
	if st := p.Stats(); st.Hits != 2 || st.Misses != 1 {
		t.Fatalf("stats %+v: want 2 hits, 1 miss", st)
	}
}

// TestSizeBound: at most Size boxes are opening or waiting at once, and the
// earliest expected open first.
func TestSizeBound(t *testing.T) {
	ctx := context.Background()
	fb := &fakeBackend{gate: make(chan struct{})}
	p := New(fb, Options{Size: 2})
	defer p.Close(ctx)
	defer close(fb.gate) // Close waits for the opens in flight
	p.Expect(spec("a"), spec("b"), spec("c"), spec("d"))
	waitFor(t, "two opens", func() bool { return p.Stats().Opening == 2 })
	time.Sleep(20 * time.Millisecond)
	if st := p.Stats(); st.Opening != 2 {
		t.Fatalf("stats %+v: want 2 opening", st)
	}
	fb.gate <- struct{}{}
	fb.gate <- struct{}{}
	waitFor(t, "two ready", func() bool { return p.Stats().Ready == 2 })
	fb.mu.Lock()
	var images []string
	for _, b := range fb.opened {
		images = append(images, b.spec.Image)
	}
	fb.mu.Unlock()
	if got := strings.Join(images, ","); got != "a,b" && got != "b,a" {
		t.Fatalf("opened %s first, want a and b", got)
	}
	if st := p.Stats(); st.Opening != 0 {
		t.Fatalf("stats %+v: nothing more may open while two wait", st)
	}
	// Taking one frees a slot: c starts.
	box, err := p.Open(ctx, spec("a"))
	if err != nil {
		t.Fatal(err)
	}
	box.Close(ctx)
	waitFor(t, "c opening", func() bool { return p.Stats().Opening == 1 })
}

// TestWaitForOpening: a caller whose box is still opening waits for it
// rather than opening a second one.
func TestWaitForOpening(t *testing.T) {
	ctx := context.Background()
	fb := &fakeBackend{gate: make(chan struct{})}
	p := New(fb, Options{Size: 1})
	defer p.Close(ctx)
	p.Expect(spec("a"))
	waitFor(t, "the open", func() bool { return p.Stats().Opening == 1 })
	got := make(chan sandbox.Sandbox)
	go func() {
		box, err := p.Open(ctx, spec("a"))
		if err != nil {
			t.Error(err)
		}
		got <- box
	}()
	// The open must be waiting before the box is ready, or it is a hit.
	waitFor(t, "the wait", func() bool { return p.Stats().Waits == 1 })
	fb.gate <- struct{}{}
	box := <-got
	box.Close(ctx)
	fb.mu.Lock()
	n := fb.n
	fb.mu.Unlock()
	if st := p.Stats(); st.Waits != 1 || st.Misses != 0 || n != 1 {
		t.Fatalf("stats %+v, %d opens: want one wait and one open", st, n)
	}
}

// TestWarmOpenErrorGoesToTaker: a warm open that fails is that task's
// error, not a silent retry, and not another task's.
func TestWarmOpenErrorGoesToTaker(t *testing.T) {
	ctx := context.Background()
	boom := errors.New("image missing")
	fb := &fakeBackend{fail: func(s sandbox.Spec) error {
		if s.Image == "bad" {
			return fmt.Errorf("open %s: %w: %w", s.Image, sandbox.ErrNotFound, boom)
		}
		return nil
	}}
	p := New(fb, Options{Size: 2})
	defer p.Close(ctx)
	p.Expect(spec("bad"), spec("good"))
	waitFor(t, "both opens", func() bool { st := p.Stats(); return st.Failed == 1 && st.Ready == 1 })
	box, err := p.Open(ctx, spec("good"))
	if err != nil {
		t.Fatalf("good: %v", err)
	}
	box.Close(ctx)
	if _, err := p.Open(ctx, spec("bad")); !errors.Is(err, sandbox.ErrNotFound) {
		t.Fatalf("bad: got %v, want the warm open's error", err)
	}
}

// TestCancelClosesEverything: Close stops opens in flight and closes warm
// boxes; a caller that gives up waiting leaves nothing behind either.
func TestCancelClosesEverything(t *testing.T) {
	ctx := context.Background()
	fb := &fakeBackend{gate: make(chan struct{})}
	p := New(fb, Options{Size: 3})
	p.Expect(spec("a"), spec("b"), spec("c"), spec("d"))
	waitFor(t, "three opens", func() bool { return p.Stats().Opening == 3 })
	fb.gate <- struct{}{} // one of them becomes ready
	waitFor(t, "one ready", func() bool { return p.Stats().Ready == 1 })

	// A caller waiting for an opening box gives up.
	var waiting sandbox.Spec
	for _, im := range []string{"a", "b", "c"} {
		fb.mu.Lock()
		done := len(fb.opened) > 0 && fb.opened[0].spec.Image == im
		fb.mu.Unlock()
		if !done {
			waiting = spec(im)
			break
		}
	}
	cctx, cancel := context.WithCancel(ctx)
	errc := make(chan error)
	go func() { _, err := p.Open(cctx, waiting); errc <- err }()
	waitFor(t, "the wait", func() bool { return p.Stats().Waits == 1 })
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled open: got %v", err)
	}
	// The opens in flight are not cut short while Close may wait for them;
	// past its ctx they are.
	cctx, cancel = context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	if err := p.Close(cctx); err != nil {
		t.Fatal(err)
	}
	fb.mu.Lock()
	inOpen := fb.inOpen
	fb.mu.Unlock()
	if n := fb.live(); n != 0 || inOpen != 0 {
		t.Fatalf("after Close: %d boxes open, %d opens in flight", n, inOpen)
	}
	// After Close the pool keeps nothing warm and opens on demand.
	p.Expect(spec("e"))
	close(fb.gate)
	box, err := p.Open(ctx, spec("e"))
	if err != nil {
		t.Fatal(err)
	}
	box.Close(ctx)
	if n := fb.live(); n != 0 {
		t.Fatalf("%d boxes open", n)
	}
}

// TestNoLeakUnderLoad: many tasks expect, open some of their boxes, skip
// others, and release, concurrently; after Close every box is closed.
func TestNoLeakUnderLoad(t *testing.T) {
	ctx := context.Background()
	fb := &fakeBackend{}
	p := New(fb, Options{Size: 3})
	var wg sync.WaitGroup
	for i := range 40 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s := spec(fmt.Sprintf("t%d", i%7))
			tk := p.Expect(s, s)
			defer tk.Release(ctx)
			for range i % 3 { // 0, 1 or 2 of its boxes: skipped, agent only, agent and grade
				box, err := p.Open(ctx, s)
				if err != nil {
					t.Error(err)
					return
				}
				box.Close(ctx)
			}
		}()
	}
	wg.Wait()
	p.Close(ctx)
	if n := fb.live(); n != 0 {
		t.Fatalf("%d boxes left open", n)
	}
	st := p.Stats()
	// i%3 boxes for i in 0..39: 13 tasks open one, 13 open two.
	if got := st.Hits + st.Waits + st.Misses; got != 39 || st.Ready != 0 || st.Opening != 0 {
		t.Fatalf("stats %+v: want 39 opens served, nothing warm", st)
	}
}

func TestSizeZeroIsPassThrough(t *testing.T) {
	ctx := context.Background()
	fb := &fakeBackend{}
	p := New(fb, Options{})
	defer p.Close(ctx)
	tk := p.Expect(spec("a"))
	defer tk.Release(ctx)
	time.Sleep(10 * time.Millisecond)
	if fb.live() != 0 {
		t.Fatal("size 0 opened a box ahead of use")
	}
	box, err := p.Open(ctx, spec("a"))
	if err != nil {
		t.Fatal(err)
	}
	box.Close(ctx)
	if st := p.Stats(); st.Misses != 1 {
		t.Fatalf("stats %+v", st)
	}
}

// TestReleaseLetsOpenFinish: a released box that is still opening is not cut
// short (a backend may leave a box behind then); it is closed on arrival.
func TestReleaseLetsOpenFinish(t *testing.T) {
	ctx := context.Background()
	fb := &fakeBackend{gate: make(chan struct{})}
	p := New(fb, Options{Size: 1})
	defer p.Close(ctx)
	tk := p.Expect(spec("a"))
	waitFor(t, "the open", func() bool { return p.Stats().Opening == 1 })
	tk.Release(ctx)
	fb.gate <- struct{}{} // it was still waiting: not cancelled
	waitFor(t, "the late box closed", func() bool { st := p.Stats(); return st.Unused == 1 && st.Opening == 0 })
	if n := fb.live(); n != 0 {
		t.Fatalf("%d boxes open", n)
	}
}
