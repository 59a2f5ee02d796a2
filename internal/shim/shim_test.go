package shim

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/swerve-dev/swerve/internal/sandbox"
	"github.com/swerve-dev/swerve/internal/shim/tools"
)

func TestFrameRoundTrip(t *testing.T) {
	payload := make([]byte, 256)
	for i := range payload {
		payload[i] = byte(i)
	}
	in := &Message{ID: 7, Op: OpExec, Cmd: []string{"echo", "hi"}, TimeoutMS: 1500, Stdin: true}
	buf, err := appendFrame(nil, in, payload)
	if err != nil {
		t.Fatal(err)
	}
	out, got, err := readFrame(bytes.NewReader(buf))
	if err != nil {
		t.Fatal(err)
	}
	if out.ID != 7 || out.Op != OpExec || strings.Join(out.Cmd, " ") != "echo hi" || out.TimeoutMS != 1500 || !out.Stdin {
		t.Errorf("message changed in transit: %+v", out)
	}
	if !bytes.Equal(got, payload) {
		t.Errorf("payload changed in transit")
	}
}

func TestReadFrameErrors(t *testing.T) {
	good, _ := appendFrame(nil, &Message{ID: 1, Op: OpHello}, []byte("abc"))
	tests := []struct {
		name string
		in   []byte
		want string
	}{
		{"empty stream", nil, "EOF"},
		{"cut header", good[:5], "inside a frame header"},
		{"cut body", good[:len(good)-1], "inside a frame"},
		{"zero header", []byte{0, 0, 0, 0, 0, 0, 0, 0}, "bad frame"},
		{"huge header", []byte{0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0}, "bad frame"},
		{"text on the stream", []byte("hello world\n"), "bad frame"},
		{"bad json", append([]byte{0, 0, 0, 2, 0, 0, 0, 0}, '{', 'x'), "bad frame header"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := readFrame(bytes.NewReader(tt.in))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("readFrame = %v, want an error containing %q", err, tt.want)
			}
		})
	}
}

func TestCappedBuffer(t *testing.T) {
	tests := []struct {
		name       string
		limit      int
		writes     []string
		want       string
		wantElided int64
	}{
		{"under cap", 10, []string{"abc", "de"}, "abcde", 0},
		{"exactly cap", 6, []string{"abcdef"}, "abcdef", 0},
		{"one big write", 6, []string{"0123456789"}, "012\n[... 4 bytes of output elided ...]\n789", 4},
		{"many small writes wrap the tail", 6, []string{"01", "23", "45", "67", "89", "ab"}, "012\n[... 6 bytes of output elided ...]\n9ab", 6},
		{"uncapped", -1, []string{"0123456789", "abc"}, "0123456789abc", 0},
		{"cap of one", 1, []string{"xyz"}, "\n[... 2 bytes of output elided ...]\nz", 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := newCappedBuffer(tt.limit)
			var total int64
			for _, w := range tt.writes {
				b.Write([]byte(w))
				total += int64(len(w))
			}
			got, gotTotal, elided := b.Result()
			if string(got) != tt.want || gotTotal != total || elided != tt.wantElided {
				t.Errorf("Result() = %q, %d, %d; want %q, %d, %d", got, gotTotal, elided, tt.want, total, tt.wantElided)
			}
		})
	}
}

// pair runs a server and a client connected by pipes, in this process.
func pair(t testing.TB) *Client {
	t.Helper()
	reqR, reqW := io.Pipe()
	respR, respW := io.Pipe()
	s := &Server{Software: "test"}
	done := make(chan error, 1)
	go func() { done <- s.Serve(context.Background(), reqR, respW); respW.Close() }()
	c := NewClient(respR, reqW)
	t.Cleanup(func() {
		reqW.Close()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	if _, err := c.Hello(context.Background()); err != nil {
		t.Fatal(err)
	}
	return c
}

func TestClientServer(t *testing.T) {
	c := pair(t)
	ctx := context.Background()
	dir := t.TempDir()

	res, err := c.Exec(ctx, sandbox.ExecRequest{Cmd: []string{"sh", "-c", "echo out; echo err >&2; exit 4"}, Cwd: dir})
	if err != nil || res.ExitCode != 4 || string(res.Output) != "out\nerr\n" {
		t.Errorf("exec = %+v (%q), %v; want exit 4 and merged output", res, res.Output, err)
	}
	res, err = c.Exec(ctx, sandbox.ExecRequest{Cmd: []string{"cat"}, Stdin: []byte("in\x00put")})
	if err != nil || string(res.Output) != "in\x00put" {
		t.Errorf("stdin: got %q, %v", res.Output, err)
	}
	res, err = c.Exec(ctx, sandbox.ExecRequest{Cmd: []string{"sh", "-c", "echo $A$B"}, Env: []string{"A=1", "B=2"}})
	if err != nil || string(res.Output) != "12\n" {
		t.Errorf("env: got %q, %v", res.Output, err)
	}

	p := filepath.Join(dir, "sub", "f.bin")
	data := []byte{0, 1, 2, 255}
	if err := c.WriteFile(ctx, p, data, 0o750); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(p); err != nil || fi.Mode().Perm() != 0o750 {
		t.Errorf("mode after WriteFile: %v, %v; want 0750", fi.Mode(), err)
	}
	got, err := c.ReadFile(ctx, p)
	if err != nil || !bytes.Equal(got, data) {
		t.Errorf("ReadFile = %v, %v; want %v", got, err, data)
	}
	if _, err := c.ReadFile(ctx, filepath.Join(dir, "missing")); !errors.Is(err, sandbox.ErrNotFound) {
		t.Errorf("ReadFile of a missing file: %v, want ErrNotFound", err)
	}

	// The timeout must fall after sh has printed, which under load can take
	// far longer than the fork and exec usually do: what is tested is that
	// the output before the timeout is kept and the command killed, not
	// how quickly a command starts, so the timeout leaves it a while.
	start := time.Now()
	res, err = c.Exec(ctx, sandbox.ExecRequest{Cmd: []string{"sh", "-c", "echo before; sleep 30"}, Timeout: 2 * time.Second})
	if err != nil || !res.TimedOut || res.ExitCode != sandbox.TimeoutExitCode || string(res.Output) != "before\n" {
		t.Errorf("timeout: %+v (%q), %v", res, res.Output, err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("timed-out exec took %v", d)
	}

	cctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	if _, err := c.Exec(cctx, sandbox.ExecRequest{Cmd: []string{"sleep", "30"}}); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("cancelled exec: %v, want context.DeadlineExceeded", err)
	}
}

func TestClientAfterShutdown(t *testing.T) {
	c := pair(t)
	c.Shutdown()
	if _, err := c.Exec(context.Background(), sandbox.ExecRequest{Cmd: []string{"true"}}); !errors.Is(err, sandbox.ErrClosed) {
		t.Errorf("exec after Shutdown: %v, want ErrClosed", err)
	}
}

func TestServerRejectsUnknownOp(t *testing.T) {
	c := pair(t)
	m, _, err := c.call(context.Background(), &Message{Op: "teleport"}, nil, false)
	if err != nil || m.ErrKind != KindInvalid || !strings.Contains(m.Err, "teleport") {
		t.Errorf("unknown op: %+v, %v", m, err)
	}
}

func TestCheckStatic(t *testing.T) {
	if err := CheckStatic("/bin/sh"); !errors.Is(err, ErrDynamic) || !strings.Contains(err.Error(), "CGO_ENABLED=0") {
		t.Errorf("CheckStatic(/bin/sh) = %v, want the dynamically-linked error", err)
	}
	if err := CheckStatic("/etc/hostname"); err == nil {
		t.Error("CheckStatic of a text file succeeded")
	}
}

// BenchmarkRoundTrip measures the protocol with no container in between
// (in-process pipes), against a bare fork+exec of the same command.
func BenchmarkRoundTrip(b *testing.B) {
	c := pair(b)
	ctx := context.Background()
	b.Run("shim-pipe", func(b *testing.B) {
		for b.Loop() {
			if res, err := c.Exec(ctx, sandbox.ExecRequest{Cmd: []string{"true"}}); err != nil || res.ExitCode != 0 {
				b.Fatal(res, err)
			}
		}
	})
	b.Run("read-file", func(b *testing.B) {
		for b.Loop() {
			if _, err := c.ReadFile(ctx, "/etc/hostname"); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func TestSocketConnections(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "s.sock")
	s := &Server{Software: "test"}
	if err := s.Listen(sock); err != nil {
		t.Fatal(err)
	}
	reqR, reqW := io.Pipe()
	respR, respW := io.Pipe()
	done := make(chan error, 1)
	go func() { done <- s.Serve(context.Background(), reqR, respW); respW.Close() }()
	main := NewClient(respR, reqW)
	ctx := context.Background()
	if _, err := main.Hello(ctx); err != nil {
		t.Fatal(err)
	}
	conn, err := net.Dial("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	c := NewClient(conn, conn)
	if _, err := c.Hello(ctx); err != nil {
		t.Fatal(err)
	}
	res, err := c.Exec(ctx, sandbox.ExecRequest{Cmd: []string{"echo", "via socket"}})
	if err != nil || string(res.Output) != "via socket\n" {
		t.Fatalf("exec over the socket: %q, %v", res.Output, err)
	}
	// A command started over the socket dies with the main stream.
	running := make(chan error, 1)
	go func() {
		_, err := c.Exec(ctx, sandbox.ExecRequest{Cmd: []string{"sleep", "60"}})
		running <- err
	}()
	time.Sleep(200 * time.Millisecond)
	reqW.Close()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Serve: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Serve did not return after its main stream ended")
	}
	select {
	case err := <-running:
		if err == nil {
			t.Error("exec over the socket survived the end of the main stream")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("exec over the socket still waiting after the server ended")
	}
}

// Output the command wrote before exiting must all be returned, even when a
// process it left in the background holds the pipe open past the grace.
func TestOutputKeptWhenBackgroundHoldsPipe(t *testing.T) {
	c := pair(t)
	for range 5 {
		start := time.Now()
		res, err := c.Exec(context.Background(), sandbox.ExecRequest{
			Cmd:       []string{"bash", "-c", "sleep 5 & head -c 3000000 /dev/zero | tr '\\0' a; echo END"},
			MaxOutput: -1,
		})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Output) != 3000004 || !bytes.HasSuffix(res.Output, []byte("aEND\n")) {
			t.Fatalf("got %d bytes ending %q; want all 3000004", len(res.Output), res.Output[max(0, len(res.Output)-8):])
		}
		if d := time.Since(start); d > 3*time.Second {
			t.Errorf("took %v: the background sleep held the result", d)
		}
	}
}

func TestStdinNotReadDoesNotHang(t *testing.T) {
	c := pair(t)
	big := bytes.Repeat([]byte("x"), 4<<20) // far more than a pipe holds
	done := make(chan error, 1)
	go func() {
		_, err := c.Exec(context.Background(), sandbox.ExecRequest{Cmd: []string{"bash", "-c", "sleep 5 & exit 0"}, Stdin: big})
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(3 * time.Second):
		t.Fatal("a command that ignores its stdin hung the exec")
	}
}

func TestClientTool(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir) // the server resolves relative tool paths against its workdir
	c := pair(t)
	ctx := context.Background()
	call := func(name, args string) tools.Result {
		t.Helper()
		res, err := c.Tool(ctx, name, json.RawMessage(args))
		if err != nil {
			t.Fatalf("Tool(%s, %s): %v", name, args, err)
		}
		return res
	}

	p := filepath.Join(dir, "pkg", "mod.py")
	if res := call("file_editor", `{"command":"create","path":"pkg/mod.py","file_text":"x = 1\ny = 2\n"}`); res.Error {
		t.Fatalf("create: %s", res.Output)
	}
	if got, _ := os.ReadFile(p); string(got) != "x = 1\ny = 2\n" {
		t.Fatalf("created file holds %q", got)
	}
	res := call("str_replace_editor", `{"command":"str_replace","path":"`+p+`","old_str":"y = 2","new_str":"y = 3"}`)
	if res.Error || !strings.Contains(res.Output, "     2\ty = 3\n") {
		t.Errorf("str_replace: %+v", res)
	}
	res = call("file_editor", `{"command":"view","path":"pkg/mod.py","view_range":[2,2]}`)
	if res.Error || !strings.HasSuffix(res.Output, "     2\ty = 3\n") {
		t.Errorf("view: %+v", res)
	}
	res = call("search", `{"search_term":"y = ","path":"pkg"}`)
	if res.Error || !strings.Contains(res.Output, "./pkg/mod.py (1 matching line)") {
		t.Errorf("search: %+v", res)
	}
	res = call("file_editor", `{"command":"str_replace","path":"pkg/mod.py","old_str":"absent","new_str":"z"}`)
	if !res.Error || !strings.Contains(res.Output, "does not occur") {
		t.Errorf("str_replace of a missing string: %+v, want an error result", res)
	}
	// The editor outlives the call: undo reverts the str_replace, then the
	// create.
	for range 2 {
		if res := call("file_editor", `{"command":"undo_edit","path":"`+p+`"}`); res.Error {
			t.Fatalf("undo: %s", res.Output)
		}
	}
	if _, err := os.Stat(p); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("after undoing the create: %v, want the file gone", err)
	}

	if _, err := c.Tool(ctx, "execute_bash", json.RawMessage(`{"cmd":"ls"}`)); err == nil || !strings.Contains(err.Error(), "unknown tool") {
		t.Errorf("Tool(execute_bash) = %v, want an unknown-tool error", err)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := c.Tool(cctx, "search", json.RawMessage(`{"search_term":"x"}`)); !errors.Is(err, context.Canceled) {
		t.Errorf("Tool with a cancelled ctx: %v, want context.Canceled", err)
	}
}

// TestToolHistorySharedAcrossStreams: one editor per server, so an edit
// made over the main stream can be undone over the socket.
func TestToolHistorySharedAcrossStreams(t *testing.T) {
	dir := t.TempDir()
	sock := filepath.Join(dir, "s.sock")
	s := &Server{Software: "test"}
	if err := s.Listen(sock); err != nil {
		t.Fatal(err)
	}
	reqR, reqW := io.Pipe()
	respR, respW := io.Pipe()
	done := make(chan error, 1)
	go func() { done <- s.Serve(context.Background(), reqR, respW); respW.Close() }()
	t.Cleanup(func() {
		reqW.Close()
		<-done
	})
	main := NewClient(respR, reqW)
	ctx := context.Background()
	if _, err := main.Hello(ctx); err != nil {
		t.Fatal(err)
	}
	conn, err := net.Dial("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	other := NewClient(conn, conn)

	p := filepath.Join(dir, "a.txt")
	os.WriteFile(p, []byte("before\n"), 0o644)
	args := json.RawMessage(`{"command":"str_replace","path":"` + p + `","old_str":"before","new_str":"after"}`)
	if res, err := main.Tool(ctx, "file_editor", args); err != nil || res.Error {
		t.Fatalf("str_replace: %+v, %v", res, err)
	}
	if res, err := other.Tool(ctx, "file_editor", json.RawMessage(`{"command":"undo_edit","path":"`+p+`"}`)); err != nil || res.Error {
		t.Fatalf("undo over the socket: %+v, %v", res, err)
	}
	if got, _ := os.ReadFile(p); string(got) != "before\n" {
		t.Errorf("after undo the file holds %q", got)
	}
}

// BenchmarkTool is the round trip of a small view through the protocol.
func BenchmarkTool(b *testing.B) {
	c := pair(b)
	p := filepath.Join(b.TempDir(), "a.py")
	os.WriteFile(p, bytes.Repeat([]byte("print('hello')\n"), 50), 0o644)
	args := json.RawMessage(`{"command":"view","path":"` + p + `","view_range":[10,20]}`)
	ctx := context.Background()
	for b.Loop() {
		if res, err := c.Tool(ctx, "file_editor", args); err != nil || res.Error {
			b.Fatal(res, err)
		}
	}
}
