package docker

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/swerve-dev/swerve/internal/sandbox"
)

// pingCounter answers /_ping like an engine and counts the pings.
func pingCounter(t *testing.T) (host string, count *atomic.Int64) {
	t.Helper()
	count = new(atomic.Int64)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/_ping") {
			count.Add(1)
			w.Header().Set("Api-Version", "1.47")
			w.Write([]byte("OK"))
			return
		}
		http.NotFound(w, r)
	}))
	t.Cleanup(srv.Close)
	return "tcp://" + strings.TrimPrefix(srv.URL, "http://"), count
}

// TestOneClientPerEngine checks that backends and probes share one engine
// client per address, that the engine is pinged once, and that
// CloseClients closes them.
func TestOneClientPerEngine(t *testing.T) {
	CloseClients()
	t.Cleanup(CloseClients)
	host, count := pingCounter(t)
	t.Setenv("DOCKER_HOST", host)
	t.Setenv("CONTAINER_HOST", "")
	ctx := context.Background()

	var first *Backend
	for i := range 5 {
		if err := Probe(ctx); err != nil {
			t.Fatalf("probe %d: %v", i, err)
		}
		b, err := New(ctx, Config{Options: sandbox.Options{RunID: "t"}})
		if err != nil {
			t.Fatal(err)
		}
		if first == nil {
			first = b
		} else if b.Client() != first.Client() {
			t.Fatalf("backend %d has its own engine client", i)
		}
	}
	if n := OpenClients(); n != 1 {
		t.Errorf("%d engine clients open, want 1", n)
	}
	if n := count.Load(); n != 1 {
		t.Errorf("the engine was pinged %d times, want once", n)
	}
	CloseClients()
	if n := OpenClients(); n != 0 {
		t.Errorf("%d engine clients open after CloseClients", n)
	}
	// A probe after an engine error pings again.
	if err := Probe(ctx); err != nil {
		t.Fatal(err)
	}
	forgetPings()
	if err := Probe(ctx); err != nil {
		t.Fatal(err)
	}
	if n := count.Load(); n != 3 {
		t.Errorf("pings after close and after an engine error: %d in all, want 3", n)
	}
}
