package serve

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// A few Prometheus series, written in the text exposition format (0.0.4)
// without a client library: the same binary starts in every box, and the
// client library's package init (its default registry's Go and process
// collectors) costs every one of those starts more than this file does.
// The tests parse the output with the Prometheus project's own parser.

// family is one metric family: its name, help and type, and how it
// writes its samples.
type family interface {
	write(w *bufio.Writer)
}

// registry holds families in the order they are written.
type registry struct {
	families []family
}

func (r *registry) add(f ...family) { r.families = append(r.families, f...) }

// ServeHTTP writes every family, then the process's own series.
func (r *registry) ServeHTTP(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
	bw := bufio.NewWriter(w)
	for _, f := range r.families {
		f.write(bw)
	}
	writeProcess(bw)
	bw.Flush()
}

func header(w *bufio.Writer, name, help, typ string) {
	fmt.Fprintf(w, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, typ)
}

func num(v float64) string {
	switch {
	case math.IsInf(v, 1):
		return "+Inf"
	case math.IsInf(v, -1):
		return "-Inf"
	case math.IsNaN(v):
		return "NaN"
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}

// escapeLabel escapes a label value as the text format wants.
func escapeLabel(v string) string {
	return strings.NewReplacer(`\`, `\\`, "\n", `\n`, `"`, `\"`).Replace(v)
}

// value is a float guarded by a mutex: a gauge, or a counter.
type value struct {
	name, help, typ string
	mu              sync.Mutex
	v               float64
}

func newGauge(name, help string) *value   { return &value{name: name, help: help, typ: "gauge"} }
func newCounter(name, help string) *value { return &value{name: name, help: help, typ: "counter"} }

func (g *value) Add(d float64) { g.mu.Lock(); g.v += d; g.mu.Unlock() }
func (g *value) Inc()          { g.Add(1) }
func (g *value) Dec()          { g.Add(-1) }

func (g *value) write(w *bufio.Writer) {
	g.mu.Lock()
	v := g.v
	g.mu.Unlock()
	header(w, g.name, g.help, g.typ)
	fmt.Fprintf(w, "%s %s\n", g.name, num(v))
}

// funcValue is a series read from a function at each scrape.
type funcValue struct {
	name, help, typ string
	f               func() float64
}

func (g *funcValue) write(w *bufio.Writer) {
	header(w, g.name, g.help, g.typ)
	fmt.Fprintf(w, "%s %s\n", g.name, num(g.f()))
}

// counterVec is a counter per value of one label.
type counterVec struct {
	name, help, label string
	mu                sync.Mutex
	v                 map[string]float64
}

func newCounterVec(name, help, label string) *counterVec {
	return &counterVec{name: name, help: help, label: label, v: map[string]float64{}}
}

// counterRef is one labelled counter of a counterVec.
type counterRef struct {
	c   *counterVec
	key string
}

func (c *counterVec) WithLabelValues(v string) counterRef {
	c.mu.Lock()
	if _, ok := c.v[v]; !ok {
		c.v[v] = 0
	}
	c.mu.Unlock()
	return counterRef{c, v}
}

func (r counterRef) Inc() {
	r.c.mu.Lock()
	r.c.v[r.key]++
	r.c.mu.Unlock()
}

func (c *counterVec) write(w *bufio.Writer) {
	c.mu.Lock()
	keys := make([]string, 0, len(c.v))
	for k := range c.v {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	vals := make([]float64, len(keys))
	for i, k := range keys {
		vals[i] = c.v[k]
	}
	c.mu.Unlock()
	header(w, c.name, c.help, "counter")
	for i, k := range keys {
		fmt.Fprintf(w, "%s{%s=\"%s\"} %s\n", c.name, c.label, escapeLabel(k), num(vals[i]))
	}
}

// histogram counts observations into cumulative buckets.
type histogram struct {
	name, help string
	bounds     []float64
	mu         sync.Mutex
	counts     []uint64 // per bucket, not cumulative; the last is +Inf
	sum        float64
	n          uint64
}

func newHistogram(name, help string, bounds []float64) *histogram {
	return &histogram{name: name, help: help, bounds: bounds, counts: make([]uint64, len(bounds)+1)}
}

func (h *histogram) Observe(v float64) {
	i, _ := slices.BinarySearch(h.bounds, v) // first bound >= v: "le" is inclusive
	h.mu.Lock()
	h.counts[i]++
	h.sum += v
	h.n++
	h.mu.Unlock()
}

func (h *histogram) write(w *bufio.Writer) {
	h.mu.Lock()
	counts := slices.Clone(h.counts)
	sum, n := h.sum, h.n
	h.mu.Unlock()
	header(w, h.name, h.help, "histogram")
	var cum uint64
	for i, b := range h.bounds {
		cum += counts[i]
		fmt.Fprintf(w, "%s_bucket{le=\"%s\"} %d\n", h.name, num(b), cum)
	}
	fmt.Fprintf(w, "%s_bucket{le=\"+Inf\"} %d\n", h.name, n)
	fmt.Fprintf(w, "%s_sum %s\n%s_count %d\n", h.name, num(sum), h.name, n)
}

var processStart = time.Now()

// writeProcess writes the usual Go and process series a scraper expects.
func writeProcess(w *bufio.Writer) {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	header(w, "go_goroutines", "Goroutines that currently exist.", "gauge")
	fmt.Fprintf(w, "go_goroutines %d\n", runtime.NumGoroutine())
	header(w, "go_memstats_heap_alloc_bytes", "Bytes of allocated heap objects.", "gauge")
	fmt.Fprintf(w, "go_memstats_heap_alloc_bytes %d\n", ms.HeapAlloc)
	header(w, "process_start_time_seconds", "Start time of the process since the Unix epoch, in seconds.", "gauge")
	fmt.Fprintf(w, "process_start_time_seconds %s\n", num(float64(processStart.UnixNano())/1e9))
	if rss, ok := residentBytes(); ok {
		header(w, "process_resident_memory_bytes", "Resident memory size in bytes.", "gauge")
		fmt.Fprintf(w, "process_resident_memory_bytes %d\n", rss)
	}
}

// residentBytes reads the process's resident set from /proc (Linux).
func residentBytes() (int64, bool) {
	f, err := os.Open("/proc/self/statm")
	if err != nil {
		return 0, false
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, 256))
	if err != nil {
		return 0, false
	}
	fields := strings.Fields(string(b))
	if len(fields) < 2 {
		return 0, false
	}
	pages, err := strconv.ParseInt(fields[1], 10, 64)
	if err != nil {
		return 0, false
	}
	return pages * int64(os.Getpagesize()), true
}
