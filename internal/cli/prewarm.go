package cli

import (
	"context"
	"fmt"
	"io"
	"sync"

	"github.com/spf13/pflag"

	"github.com/swerve-dev/swerve/internal/reward/history"
	"github.com/swerve-dev/swerve/internal/sandbox"
	"github.com/swerve-dev/swerve/internal/sandbox/pool"
	"github.com/swerve-dev/swerve/internal/serve"
	"github.com/swerve-dev/swerve/internal/task"
)

// registerPrewarm adds --prewarm to a command that opens a box per task.
func registerPrewarm(fs *pflag.FlagSet, n *int) {
	fs.IntVar(n, "prewarm", 0, "boxes kept opening or open ahead of the tasks that come next, so that a task does not wait for its box to start (0: off); a warm box is only ever given to the task it was opened for, once, and closed when not used")
	setFlagGroup(fs, groupBox, "prewarm")
}

// setPrewarm turns on the warm pools of bf's boxes for --prewarm n (nothing
// for 0) and returns what closes them.
func (f *boxFlags) setPrewarm(n int) (func(context.Context), error) {
	if n < 0 {
		return nil, fmt.Errorf("--prewarm %d: must be 0 or more", n)
	}
	if n == 0 {
		return func(context.Context) {}, nil
	}
	f.warm = &warmPools{size: n, pools: map[string]*pool.Pool{}}
	return f.warm.close, nil
}

// warmPools are the warm pools of one command, one per backend its tasks
// use (auto may pick local for some and docker for others), sharing one
// --prewarm budget each.
type warmPools struct {
	size int
	// prep lets one prepared copy be built at a time for the warm boxes.
	prep sync.Mutex

	mu     sync.Mutex
	pools  map[string]*pool.Pool
	closed bool
}

// backend is the pool over backend name, made on first use.
func (w *warmPools) backend(ctx context.Context, name string, opts sandbox.Options) (sandbox.Backend, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if p := w.pools[name]; p != nil {
		return p, nil
	}
	b, err := sandbox.New(ctx, name, opts)
	if err != nil {
		return nil, err
	}
	p := pool.New(b, pool.Options{Size: w.size})
	if w.closed {
		p.Close(ctx) // after the end: open on demand, keep nothing warm
	}
	w.pools[name] = p
	return p, nil
}

// expect tells the pool of t's backend that boxes boxes of t's spec will be
// opened next, the first an agent's when agent is set. The returned
// function releases the ones not taken; call it when t ends. A task whose
// spec cannot be made gets nothing warm: its own open reports why.
//
// An agent's box opens, with --history_images on a backend that builds
// images, from the image's prepared copy (see boxFlags.preparedSpec), so
// that is what its warm box opens from too. The copy may have to be built
// first (once per image): that happens here in the background, one image
// at a time, and the boxes are expected once it is there.
func (w *warmPools) expect(ctx context.Context, f *boxFlags, t *task.Task, boxes int, agent bool) func() {
	if w == nil || boxes <= 0 {
		return func() {}
	}
	name, spec, err := f.boxSpec(ctx, *t, io.Discard)
	if err != nil {
		return func() {}
	}
	b, err := w.backend(ctx, name, f.options())
	if err != nil {
		return func() {}
	}
	p, ok := b.(*pool.Pool)
	if !ok {
		return func() {}
	}
	specs := make([]sandbox.Spec, boxes)
	for i := range specs {
		specs[i] = spec
	}
	if _, builds := p.Backend().(history.Builder); !agent || !f.HistoryImages || !builds {
		tk := p.Expect(specs...)
		return func() { tk.Release(context.WithoutCancel(ctx)) }
	}
	var mu sync.Mutex
	var tk *pool.Ticket
	ended := false
	go func() {
		w.prep.Lock()
		s := f.preparedSpec(ctx, p.Backend(), spec)
		w.prep.Unlock()
		mu.Lock()
		defer mu.Unlock()
		if ended || ctx.Err() != nil {
			return
		}
		specs[0] = s
		tk = p.Expect(specs...)
	}()
	return func() {
		mu.Lock()
		ended = true
		got := tk
		mu.Unlock()
		if got != nil {
			got.Release(context.WithoutCancel(ctx))
		}
	}
}

// close closes every pool: warm boxes nobody took are removed, opens in
// flight stopped.
func (w *warmPools) close(ctx context.Context) {
	w.mu.Lock()
	w.closed = true
	pools := make([]*pool.Pool, 0, len(w.pools))
	for _, p := range w.pools {
		pools = append(pools, p) // a closed pool opens on demand: it stays
	}
	w.mu.Unlock()
	var wg sync.WaitGroup
	for _, p := range pools {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p.Close(ctx)
		}()
	}
	wg.Wait()
}

// stats adds up the pools' counts.
func (w *warmPools) stats() pool.Stats {
	var st pool.Stats
	if w == nil {
		return st
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, p := range w.pools {
		s := p.Stats()
		st.Hits += s.Hits
		st.Waits += s.Waits
		st.Misses += s.Misses
		st.Failed += s.Failed
		st.Unused += s.Unused
		st.Ready += s.Ready
		st.Opening += s.Opening
	}
	return st
}

// warmBoxes is how many boxes an episode of run or serve opens: the
// agent's and a fresh one to grade in; one with the gold patch (grading
// only) or when grading in the agent's own box.
func warmBoxes(gold bool, gradeIn string) int {
	if gold || gradeIn == "same" {
		return 1
	}
	return 2
}

// upcoming is run.Options.Upcoming for these flags: each pending task's
// boxes are expected in the order the tasks start, and released as each
// ends. Nil without --prewarm.
func (f *boxFlags) upcoming(ctx context.Context, boxes int, agent bool) func([]*task.Task) func(*task.Task) {
	if f.warm == nil {
		return nil
	}
	return func(pending []*task.Task) func(*task.Task) {
		var mu sync.Mutex
		release := make(map[*task.Task]func(), len(pending))
		for _, t := range pending {
			release[t] = f.warm.expect(ctx, f, t, boxes, agent)
		}
		return func(t *task.Task) {
			mu.Lock()
			r := release[t]
			delete(release, t)
			mu.Unlock()
			if r != nil {
				r()
			}
		}
	}
}

// addWarmMetrics puts the warm pools' counts in serve's /metrics (nothing
// without --prewarm).
func addWarmMetrics(srv *serve.Server, w *warmPools) {
	if w == nil {
		return
	}
	for _, m := range []struct {
		name, help, typ string
		f               func(pool.Stats) float64
	}{
		{"swerve_warm_hits_total", "Boxes handed out warm: ready when their rollout asked.", "counter", func(s pool.Stats) float64 { return float64(s.Hits) }},
		{"swerve_warm_waits_total", "Boxes handed out while still opening: their rollout waited for the rest of the start.", "counter", func(s pool.Stats) float64 { return float64(s.Waits) }},
		{"swerve_warm_misses_total", "Boxes opened on demand: none was warm for the rollout.", "counter", func(s pool.Stats) float64 { return float64(s.Misses) }},
		{"swerve_warm_unused_total", "Warm boxes closed without being used (row cancelled, drained or answered from results).", "counter", func(s pool.Stats) float64 { return float64(s.Unused) }},
		{"swerve_warm_failed_total", "Warm opens that failed; each error went to its rollout as an infrastructure error.", "counter", func(s pool.Stats) float64 { return float64(s.Failed) }},
		{"swerve_warm_boxes", "Warm boxes open and waiting for their rollout now.", "gauge", func(s pool.Stats) float64 { return float64(s.Ready) }},
		{"swerve_warm_opening", "Warm boxes opening now.", "gauge", func(s pool.Stats) float64 { return float64(s.Opening) }},
	} {
		srv.AddMetric(m.name, m.help, m.typ, func() float64 { return m.f(w.stats()) })
	}
}

// printWarmSummary ends a run's summary with what the warm pool did
// (nothing without --prewarm).
func printWarmSummary(w io.Writer, wp *warmPools) {
	if wp == nil {
		return
	}
	st := wp.stats()
	fmt.Fprintf(w, "warm pool     %d boxes ready when asked for, %d still opening, %d opened on demand, %d closed unused, %d warm opens failed\n",
		st.Hits, st.Waits, st.Misses, st.Unused, st.Failed)
}
