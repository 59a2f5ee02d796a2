// Package pool keeps boxes warm: it opens the boxes of the tasks that come
// next while others run, so that a task whose box is ready does not wait for
// one to start.
//
// A Pool wraps any sandbox.Backend. The caller tells it, in order, the specs
// of the boxes it will ask for (Expect); the pool keeps up to Size of them
// opening or open ahead of use. Open hands out a warm box only to a caller
// whose spec is the same as the one it was opened for (image, workdir, env,
// network, limits, labels, pull policy, user, security and task: everything
// but the pull progress writer); every other call opens a box on demand.
//
// What the pool never does:
//   - hand a box out twice: a box leaves the pool once, and nothing is run in
//     a warm box before it is handed out (the backend's own start-up aside);
//   - hand a box to a spec other than its own;
//   - keep a box nobody will use: a Ticket's boxes that were not taken are
//     closed when it is released, and Close closes every warm box. An open
//     in flight is let finish and its box closed (a backend may leave a box
//     behind when an open is cut short); Close cuts them short only once its
//     own ctx ends.
//
// Warm boxes are opened by the wrapped backend like any other, so they carry
// the same labels (run id, owner pid, task), and swerve gc finds them when
// the process that opened them was killed.
package pool

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/swerve-dev/swerve/internal/sandbox"
)

// Options configure a Pool.
type Options struct {
	// Size is the number of boxes kept opening or open ahead of use; zero
	// or less keeps none (every Open is on demand).
	Size int
}

// Stats count what the pool did.
type Stats struct {
	// Hits are Opens served by a box that was ready; Waits by a box that was
	// still opening (the caller waited for the rest of its start);
	// Misses by a box opened on demand.
	Hits, Waits, Misses int64
	// Failed counts warm opens that failed (each error went to the caller
	// that took its entry, or nowhere when none did).
	Failed int64
	// Unused counts warm boxes closed without being handed out.
	Unused int64
	// Ready is the number of warm boxes open and waiting now; Opening the
	// warm opens in flight.
	Ready, Opening int
}

// Pool is a set of warm boxes over a backend. Its methods are safe for
// concurrent use.
type Pool struct {
	b    sandbox.Backend
	size int

	ctx    context.Context // cancelled by Close: warm opens in flight stop
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu     sync.Mutex
	queue  []*entry // expected boxes not yet taken or dropped, in order
	closed bool
	st     Stats
}

// entry states.
const (
	statePending = iota // expected, not started
	stateOpening        // a warm open is in flight
	stateReady          // open, waiting to be taken
	stateFailed         // the warm open failed; err says why
)

// entry is one expected box.
type entry struct {
	key   string
	spec  sandbox.Spec
	state int
	box   sandbox.Sandbox
	err   error
	// gone is set when the entry left the queue without being handed out
	// (released, pool closed) or its taker stopped waiting: a box that
	// arrives later is closed.
	gone bool
	// taken is set when an Open took the entry.
	taken bool
	done  chan struct{} // closed when the warm open ends
}

var _ sandbox.Backend = (*Pool)(nil)

// New returns a pool over b. Nothing opens until Expect is called.
func New(b sandbox.Backend, opts Options) *Pool {
	ctx, cancel := context.WithCancel(context.Background())
	return &Pool{b: b, size: opts.Size, ctx: ctx, cancel: cancel}
}

// Backend is the backend the pool opens its boxes on.
func (p *Pool) Backend() sandbox.Backend { return p.b }

// Key is what two specs must share for a box opened for one to be handed
// to the other: every field but PullProgress.
func Key(spec sandbox.Spec) string {
	spec.PullProgress = nil
	b, err := json.Marshal(spec) // maps marshal with sorted keys
	if err != nil {
		panic(fmt.Sprintf("pool: spec key: %v", err)) // a Spec always marshals
	}
	return string(b)
}

// Ticket is a set of expected boxes: what one task, or one queued request,
// will open. Release it when that task ends, opened or not.
type Ticket struct {
	p       *Pool
	entries []*entry
}

// Expect adds specs to the end of the boxes the caller will open, in the
// order given, and starts warm opens while fewer than Size are opening or
// ready. Release the ticket once those boxes have been asked for, or will
// not be.
func (p *Pool) Expect(specs ...sandbox.Spec) *Ticket {
	t := &Ticket{p: p}
	if p.size <= 0 {
		return t
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return t
	}
	for _, s := range specs {
		e := &entry{key: Key(s), spec: s, done: make(chan struct{})}
		t.entries = append(t.entries, e)
		p.queue = append(p.queue, e)
	}
	p.fillLocked()
	return t
}

// Release drops the ticket's boxes that nobody took: a warm one is closed,
// one still opening is stopped and closed. It is safe to call more than
// once, and on a nil ticket.
func (t *Ticket) Release(ctx context.Context) {
	if t == nil || len(t.entries) == 0 {
		return
	}
	p := t.p
	p.mu.Lock()
	var boxes []sandbox.Sandbox
	for _, e := range t.entries {
		if e.taken || e.gone {
			continue
		}
		boxes = append(boxes, p.dropLocked(e)...)
	}
	t.entries = nil
	p.fillLocked()
	p.mu.Unlock()
	closeAll(ctx, boxes)
}

// dropLocked takes e out of the queue without handing it out; it returns
// the box to close when e was ready.
func (p *Pool) dropLocked(e *entry) []sandbox.Sandbox {
	p.removeLocked(e)
	e.gone = true
	switch e.state {
	case stateReady:
		p.st.Unused++
		box := e.box
		e.box = nil
		return []sandbox.Sandbox{box}
	case stateOpening:
		// Not cancelled: a backend may leave a box behind when its open is
		// cut short (an engine that created the container after the client
		// gave up). The open ends, and its goroutine closes the box.
	}
	return nil
}

func (p *Pool) removeLocked(e *entry) {
	for i, q := range p.queue {
		if q == e {
			p.queue = append(p.queue[:i], p.queue[i+1:]...)
			return
		}
	}
}

// fillLocked starts warm opens, earliest expected first, while fewer than
// Size are opening or ready.
func (p *Pool) fillLocked() {
	if p.closed {
		return
	}
	busy := 0
	for _, e := range p.queue {
		if e.state == stateOpening || e.state == stateReady {
			busy++
		}
	}
	for _, e := range p.queue {
		if busy >= p.size {
			return
		}
		if e.state != statePending {
			continue
		}
		busy++
		p.startLocked(e)
	}
}

// startLocked opens e's box in the background. Its context ends only when
// Close gives up waiting before the open returns: a box must not die with
// the context it was opened with once handed out.
func (p *Pool) startLocked(e *entry) {
	e.state = stateOpening
	p.st.Opening++
	ctx, cancel := context.WithCancel(context.WithoutCancel(p.ctx))
	stop := context.AfterFunc(p.ctx, cancel)
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		box, err := p.b.Open(ctx, e.spec)
		stop()
		p.mu.Lock()
		p.st.Opening--
		if err != nil {
			p.st.Failed++
		}
		var orphan sandbox.Sandbox
		switch {
		case e.gone:
			orphan = box
			if box != nil {
				p.st.Unused++
			}
		case err != nil:
			e.state, e.err = stateFailed, err
		default:
			e.state, e.box = stateReady, box
		}
		close(e.done)
		p.fillLocked()
		p.mu.Unlock()
		if orphan != nil {
			orphan.Close(context.WithoutCancel(p.ctx))
		}
	}()
}

// Open hands out the warm box opened for spec when there is one (waiting
// for it when it is still opening), else opens one on demand. The error of
// a warm open that failed is returned to the caller that takes its entry,
// as if that caller had opened the box itself.
func (p *Pool) Open(ctx context.Context, spec sandbox.Spec) (sandbox.Sandbox, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	key := Key(spec)
	p.mu.Lock()
	e := p.takeLocked(key)
	if e == nil {
		p.st.Misses++
		p.fillLocked()
		p.mu.Unlock()
		return p.b.Open(ctx, spec)
	}
	switch e.state {
	case stateReady:
		p.st.Hits++
		box := e.box
		e.box = nil
		p.fillLocked()
		p.mu.Unlock()
		return box, nil
	case stateFailed:
		p.fillLocked()
		p.mu.Unlock()
		return nil, e.err
	case statePending:
		// Expected but not started: open it now, for this caller.
		p.st.Misses++
		p.fillLocked()
		p.mu.Unlock()
		return p.b.Open(ctx, spec)
	}
	// Opening: wait for the rest of its start.
	p.st.Waits++
	p.fillLocked()
	p.mu.Unlock()
	select {
	case <-e.done:
	case <-ctx.Done():
		p.mu.Lock()
		select {
		case <-e.done: // it arrived meanwhile: close it below
		default:
			e.gone = true // its goroutine closes it
			p.mu.Unlock()
			return nil, ctx.Err()
		}
		box := e.box
		e.box = nil
		p.mu.Unlock()
		if box != nil {
			box.Close(context.WithoutCancel(ctx))
		}
		return nil, ctx.Err()
	}
	p.mu.Lock()
	box, err := e.box, e.err
	e.box = nil
	p.mu.Unlock()
	return box, err
}

// takeLocked removes and returns the entry Open should use for key: a
// ready one first, then one opening, then the earliest other; nil when none
// is expected.
func (p *Pool) takeLocked(key string) *entry {
	var best *entry
	rank := func(e *entry) int {
		switch e.state {
		case stateReady:
			return 0
		case stateOpening:
			return 1
		case stateFailed:
			return 2
		}
		return 3
	}
	for _, e := range p.queue {
		if e.key == key && (best == nil || rank(e) < rank(best)) {
			best = e
		}
	}
	if best == nil {
		return nil
	}
	p.removeLocked(best)
	best.taken = true
	return best
}

// Stats says what the pool did so far and holds now.
func (p *Pool) Stats() Stats {
	p.mu.Lock()
	defer p.mu.Unlock()
	st := p.st
	for _, e := range p.queue {
		if e.state == stateReady {
			st.Ready++
		}
	}
	return st
}

// Close closes every warm box nobody took, lets the warm opens in flight
// end and closes their boxes, and returns when all of them are gone. When
// ctx ends first, the opens still in flight are cancelled (the backend then
// removes what it made). Later Expects keep nothing warm and later Opens go
// to the backend. Boxes already handed out are the callers' to close.
func (p *Pool) Close(ctx context.Context) error {
	p.mu.Lock()
	p.closed = true
	var boxes []sandbox.Sandbox
	for len(p.queue) > 0 {
		boxes = append(boxes, p.dropLocked(p.queue[0])...)
	}
	p.mu.Unlock()
	closeAll(ctx, boxes)
	opens := make(chan struct{})
	go func() { p.wg.Wait(); close(opens) }()
	select {
	case <-opens:
	case <-ctx.Done():
		p.cancel()
		<-opens
	}
	p.cancel()
	return nil
}

// closeAll closes boxes at once, in parallel.
func closeAll(ctx context.Context, boxes []sandbox.Sandbox) {
	ctx = context.WithoutCancel(ctx)
	var wg sync.WaitGroup
	for _, b := range boxes {
		if b == nil {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			b.Close(ctx)
		}()
	}
	wg.Wait()
}
