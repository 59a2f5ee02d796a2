package serve

import (
	"context"
	"io"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestLoad1000 posts 1,000 rollouts at once to a server with an instant
// fake episode that opens and closes a "box": every one is answered 200,
// none is refused, no box is left open, and the server's queue empties.
func TestLoad1000(t *testing.T) {
	const n = 1000
	var open, maxOpen atomic.Int64
	f := &fake{fn: func(ctx context.Context, req *RolloutRequest) (*RolloutResult, error) {
		o := open.Add(1)
		for {
			m := maxOpen.Load()
			if o <= m || maxOpen.CompareAndSwap(m, o) {
				break
			}
		}
		defer open.Add(-1)
		time.Sleep(time.Millisecond)
		return resolved(ctx, req)
	}}
	s, ts := newTest(t, Options{Rollouts: f, Concurrency: 64, Queue: n})
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: n}, Timeout: time.Minute}
	start := time.Now()
	var wg sync.WaitGroup
	var bad atomic.Int64
	for range n {
		wg.Go(func() {
			resp, err := client.Post(ts.URL+"/run", "application/json", strings.NewReader(smallRow))
			if err != nil {
				bad.Add(1)
				return
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 {
				bad.Add(1)
			}
		})
	}
	wg.Wait()
	wall := time.Since(start)
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	t.Logf("%d rollouts in %s (%.0f/s); max boxes open %d; Go heap in use %d MiB, from the OS %d MiB",
		n, wall.Round(time.Millisecond), n/wall.Seconds(), maxOpen.Load(), ms.HeapInuse>>20, ms.Sys>>20)
	if bad.Load() != 0 {
		t.Errorf("%d requests failed", bad.Load())
	}
	if open.Load() != 0 || s.admit.Load() != 0 {
		t.Errorf("left: %d boxes open, %d admitted", open.Load(), s.admit.Load())
	}
	if maxOpen.Load() > 64 {
		t.Errorf("%d rollouts ran at once, above concurrency 64", maxOpen.Load())
	}
	if f.calls.Load() != n {
		t.Errorf("%d rollouts ran, want %d", f.calls.Load(), n)
	}
}
