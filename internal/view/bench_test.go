package view

import (
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/swerve-dev/swerve/internal/run"
)

func TestMain(m *testing.M) {
	code := m.Run()
	if benchDir != "" {
		os.RemoveAll(filepath.Dir(benchDir))
	}
	os.Exit(code)
}

// benchSteps gives every 500th task 200 steps and the rest 20.
func benchSteps(i int) int {
	if i%500 == 0 {
		return 200
	}
	return 20
}

var (
	benchOnce sync.Once
	benchDir  string
	benchErr  error
)

// benchRun is a generated 5,000-task run directory, with the
// <exp_name>.jsonl that swerve's own writer (run.WriteAggregates) makes of
// it, shared by the benchmarks.
func benchRun(b *testing.B) (dir, jsonl string) {
	b.Helper()
	benchOnce.Do(func() {
		tmp, err := os.MkdirTemp("", "swerve-view-bench-")
		if err != nil {
			benchErr = err
			return
		}
		benchDir = filepath.Join(tmp, "run5000")
		genRun(b, benchDir, 5000, benchSteps)
		_, benchErr = run.WriteAggregates(benchDir, "gen")
	})
	if benchErr != nil {
		b.Fatal(benchErr)
	}
	return benchDir, filepath.Join(benchDir, "gen.jsonl")
}

// The 200-step task of the benchmark run.
const benchTask = "demo__calc-0500"

// BenchmarkOverview is the run overview of 5,000 tasks (figures, histograms,
// one sorted and filtered page of 50 rows) once the index is built.
//
//	go test -run '^$' -bench 'Overview|TaskPage|Index' -benchmem ./internal/view/
func BenchmarkOverview(b *testing.B) {
	dir, jsonl := benchRun(b)
	for _, src := range []struct{ name, path string }{{"dir", dir}, {"jsonl", jsonl}} {
		b.Run(src.name, func(b *testing.B) {
			r, err := Open(src.path)
			if err != nil {
				b.Fatal(err)
			}
			s, err := NewServer(nil, r)
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				rec := httptest.NewRecorder()
				s.ServeHTTP(rec, httptest.NewRequest("GET", "/?sort=tokens&desc=1&outcome=unresolved&offset=100", nil))
				if rec.Code != 200 {
					b.Fatal(rec.Code, rec.Body.String())
				}
			}
		})
	}
}

// BenchmarkTaskPage renders a 200-step task of the 5,000-task run: only
// that task's row is read from the file.
func BenchmarkTaskPage(b *testing.B) {
	dir, jsonl := benchRun(b)
	for _, src := range []struct{ name, path string }{{"dir", dir}, {"jsonl", jsonl}} {
		b.Run(src.name, func(b *testing.B) {
			r, err := Open(src.path)
			if err != nil {
				b.Fatal(err)
			}
			s, err := NewServer(nil, r)
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				rec := httptest.NewRecorder()
				s.ServeHTTP(rec, httptest.NewRequest("GET", "/task?key="+benchTask, nil))
				if rec.Code != 200 {
					b.Fatal(rec.Code, rec.Body.String())
				}
			}
		})
	}
}

// BenchmarkIndex builds the index of the 5,000-task run from cold: what the
// first request (and the first after a file changed) pays.
func BenchmarkIndex(b *testing.B) {
	dir, jsonl := benchRun(b)
	for _, src := range []struct{ name, path string }{{"dir", dir}, {"jsonl", jsonl}} {
		b.Run(src.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Open(src.path); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
