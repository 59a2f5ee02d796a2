package sessions

import (
	"bytes"
	"context"
	"io"
	"io/fs"
	"net/http"
	"strings"
	"testing"

	"github.com/swerve-dev/swerve/internal/sandbox"
	"github.com/swerve-dev/swerve/internal/task"
)

// BenchmarkBash measures bash tool calls on one seeded session (a command
// that does nothing, ":") on the local backend, all in one run: the shim's
// own round trip (true through Exec, no shell), the old way of a bash call
// (bash -lc per call through Exec), the session's persistent shell reached
// through the shim directly, and the Gym surface's POST /bash over
// loopback HTTP, one client and 16 at once. Calls on one session run one
// at a time, so 16 clients queue on the one shell: they only hide the
// HTTP round trips.
//
//	go test -run '^$' -bench BenchmarkBash -benchtime 3s ./internal/serve/sessions/
func BenchmarkBash(b *testing.B) {
	ts := startServer(b, Options{Verifier: &fakeVerifier{}})
	seed, err := http.Post(ts.URL+"/seed_session", "application/json", strings.NewReader(`{"instance_id":"sample__calc-1"}`))
	if err != nil {
		b.Fatal(err)
	}
	io.Copy(io.Discard, seed.Body)
	seed.Body.Close()
	cookie := strings.SplitN(seed.Header.Get("Set-Cookie"), ";", 2)[0]
	s, err := ts.m.Lookup(sessionIDOf(b, cookie))
	if err != nil {
		b.Fatal(err)
	}
	box, workdir := s.Box()
	ctx := context.Background()
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	call := func(b *testing.B) {
		req, _ := http.NewRequest("POST", ts.URL+"/bash", bytes.NewReader([]byte(`{"command":":"}`)))
		req.Header.Set("Cookie", cookie)
		resp, err := client.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || resp.Header.Get("X-Exit-Code") != "0" {
			b.Fatalf("bash: %d", resp.StatusCode)
		}
	}
	report := func(b *testing.B) {
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "calls/s")
	}
	// The floor under any command: the shim running true, no bash at all.
	b.Run("shim-true", func(b *testing.B) {
		for b.Loop() {
			if res, err := box.Exec(ctx, sandbox.ExecRequest{Cmd: []string{"true"}, Cwd: workdir}); err != nil || res.ExitCode != 0 {
				b.Fatal(res, err)
			}
		}
		report(b)
	})
	// The old way: a login bash per call.
	b.Run("exec-bash-lc", func(b *testing.B) {
		for b.Loop() {
			if res, err := box.Exec(ctx, sandbox.ExecRequest{Cmd: sandbox.Bash(":"), Cwd: workdir}); err != nil || res.ExitCode != 0 {
				b.Fatal(res, err)
			}
		}
		report(b)
	})
	b.Run("shell", func(b *testing.B) {
		sh, err := box.(sandbox.Shell).OpenShell(ctx, sandbox.ShellOptions{Cwd: workdir})
		if err != nil {
			b.Fatal(err)
		}
		defer sh.Close(ctx)
		for b.Loop() {
			if res, err := sh.Run(ctx, sandbox.ShellRequest{Cmd: ":"}); err != nil || res.ExitCode != 0 {
				b.Fatal(res, err)
			}
		}
		report(b)
	})
	b.Run("http", func(b *testing.B) {
		for b.Loop() {
			call(b)
		}
		report(b)
	})
	b.Run("http-16", func(b *testing.B) {
		b.SetParallelism(max(1, 16/max(1, testingProcs())))
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				call(b)
			}
		})
		report(b)
	})
}

// nullBox is a box whose commands take no time: it measures the surface's
// own cost per call, with no process started.
type nullBox struct{}

func (nullBox) ID() string { return "null" }
func (nullBox) Exec(ctx context.Context, req sandbox.ExecRequest) (sandbox.ExecResult, error) {
	return sandbox.ExecResult{}, ctx.Err()
}
func (nullBox) WriteFile(context.Context, string, []byte, fs.FileMode) error { return nil }
func (nullBox) ReadFile(context.Context, string) ([]byte, error)             { return nil, nil }
func (nullBox) Close(context.Context) error                                  { return nil }

// BenchmarkBashSurface is BenchmarkBash's HTTP path on a box whose commands
// cost nothing: what the surface (HTTP, cookie, session lookup, JSON) can
// carry by itself.
//
//	go test -run '^$' -bench BashSurface -benchtime 3s ./internal/serve/sessions/
func BenchmarkBashSurface(b *testing.B) {
	open := func(ctx context.Context, t *task.Task) (sandbox.Sandbox, string, error) { return nullBox{}, "/", nil }
	ts := startServer(b, Options{Open: open, Verifier: &fakeVerifier{}})
	seed, err := http.Post(ts.URL+"/seed_session", "application/json", strings.NewReader(`{"instance_id":"sample__calc-1"}`))
	if err != nil || seed.StatusCode != 200 {
		b.Fatal(seed.StatusCode, err)
	}
	seed.Body.Close()
	cookie := strings.SplitN(seed.Header.Get("Set-Cookie"), ";", 2)[0]
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	b.SetParallelism(max(1, 16/testingProcs()))
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			req, _ := http.NewRequest("POST", ts.URL+"/bash", bytes.NewReader([]byte(`{"command":":"}`)))
			req.Header.Set("Cookie", cookie)
			resp, err := client.Do(req)
			if err != nil {
				b.Fatal(err)
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 {
				b.Fatalf("bash: %d", resp.StatusCode)
			}
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "calls/s")
}
