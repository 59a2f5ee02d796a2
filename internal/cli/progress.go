package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"

	"github.com/vbauerster/mpb/v8"
	"github.com/vbauerster/mpb/v8/decor"
	"golang.org/x/term"
)

// countBar is the terminal display of run and build: one bar with
// done/total, how many are running and how many succeeded, an ETA, and a
// line per finished item above it.
type countBar struct {
	p       *mpb.Progress
	bar     *mpb.Bar
	running atomic.Int64
	good    atomic.Int64
	last    int
}

// newCountBar returns a bar when w is a terminal, else nil (the caller
// prints plain lines). goodLabel names the successes ("resolved").
func newCountBar(w io.Writer, total int, name, goodLabel string) *countBar {
	f, ok := w.(*os.File)
	if !ok || !term.IsTerminal(int(f.Fd())) {
		return nil
	}
	b := &countBar{p: mpb.New(mpb.WithOutput(w), mpb.WithWidth(40))}
	b.bar = b.p.AddBar(int64(total),
		mpb.PrependDecorators(
			decor.Name(name+" ", decor.WC{}),
			decor.CountersNoUnit("%d/%d", decor.WCSyncWidth),
		),
		mpb.AppendDecorators(
			decor.Any(func(decor.Statistics) string {
				return fmt.Sprintf(" running %d · %s %d ", b.running.Load(), goodLabel, b.good.Load())
			}),
			decor.OnComplete(decor.AverageETA(decor.ET_STYLE_GO), "done"),
		),
	)
	return b
}

// set updates the counters; done only grows.
func (b *countBar) set(done, running, good int) {
	b.running.Store(int64(running))
	b.good.Store(int64(good))
	if d := done - b.last; d > 0 {
		b.bar.IncrBy(d)
		b.last = done
	}
}

func (b *countBar) line(s string) { fmt.Fprintln(b.p, s) }

func (b *countBar) finish() {
	if !b.bar.Completed() {
		b.bar.Abort(false)
	}
	b.p.Wait()
}

// reporter prints the progress events of run and build: JSON lines on
// stdout with --json; else one line per event worth a line, above a
// countBar on a terminal, or prefixed with the counts when not.
type reporter struct {
	mu   sync.Mutex
	out  io.Writer
	err  io.Writer
	json bool
	good string
	bar  *countBar
}

// counts are a progress event's counters.
type counts struct{ done, total, running, good int }

func newReporter(stdout, stderr io.Writer, asJSON bool, total int, name, goodLabel string) *reporter {
	r := &reporter{out: stdout, err: stderr, json: asJSON, good: goodLabel}
	if !asJSON {
		r.bar = newCountBar(stderr, total, name, goodLabel)
	}
	return r
}

// report prints event (as JSON) or line (may be empty) and the counters.
func (r *reporter) report(event any, line string, c counts) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.json {
		b, _ := json.Marshal(event)
		fmt.Fprintf(r.out, "%s\n", b)
		return
	}
	if r.bar != nil {
		if line != "" {
			r.bar.line(line)
		}
		r.bar.set(c.done, c.running, c.good)
		return
	}
	if line != "" {
		fmt.Fprintf(r.err, "[%d/%d, %d %s] %s\n", c.done, c.total, c.good, r.good, line)
	}
}

// note prints a line that is no event (a model's retry) on stderr: above
// the bar on a terminal, as it is otherwise (also under --json, whose
// stdout carries events only).
func (r *reporter) note(line string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.bar != nil {
		r.bar.line(line)
		return
	}
	fmt.Fprintf(r.err, "swerve: %s\n", line)
}

func (r *reporter) finish() {
	if r.bar != nil {
		r.bar.finish()
	}
}
