package e2b

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/url"
	"strings"
	"sync"

	"github.com/swerve-dev/swerve/internal/sandbox"
)

// EnvdPort is the port envd listens on inside every sandbox.
const EnvdPort = 49983

// Envd is a client of the daemon inside one sandbox: its Connect-RPC
// process service and its /files and /health routes.
//
// It speaks Connect's JSON protocol by hand (unary calls as plain JSON,
// the Start stream as enveloped JSON messages) rather than through
// generated protobuf code: swerve uses five calls of one service, whose
// messages are a few fields each, and the JSON mapping of envd's
// process.proto (package process, service Process) is the wire format the
// official SDKs use too (useBinaryFormat: false).
type Envd struct {
	// URL is where envd is reached: https://49983-<id>.<domain>, or a
	// proxy that routes by the E2b-Sandbox-Id header.
	URL       string
	SandboxID string
	// Token is the envd access token from the create answer.
	Token string
	// User runs processes and owns uploaded files ("root").
	User string
	HTTP *http.Client
}

func (e *Envd) client() *http.Client {
	if e.HTTP != nil {
		return e.HTTP
	}
	return http.DefaultClient
}

// streamClient is the client for process streams: a connection of its
// own, never one an earlier request (an upload whose body the server
// answered before reading it all) leaves in a pool.
func (e *Envd) streamClient() *http.Client {
	hc := *e.client()
	if t, ok := hc.Transport.(*http.Transport); ok || hc.Transport == nil {
		if !ok {
			t = http.DefaultTransport.(*http.Transport)
		}
		t = t.Clone()
		t.DisableKeepAlives = true
		hc.Transport = t
	}
	return &hc
}

func (e *Envd) newRequest(ctx context.Context, method, path string, body io.Reader) (*http.Request, error) {
	req, err := http.NewRequestWithContext(ctx, method, strings.TrimRight(e.URL, "/")+path, body)
	if err != nil {
		return nil, err
	}
	req.Header.Set("E2b-Sandbox-Id", e.SandboxID)
	req.Header.Set("E2b-Sandbox-Port", fmt.Sprint(EnvdPort))
	if e.Token != "" {
		req.Header.Set("X-Access-Token", e.Token)
	}
	if e.User != "" {
		req.Header.Set("Authorization", "Basic "+base64.StdEncoding.EncodeToString([]byte(e.User+":")))
	}
	return req, nil
}

// Health asks envd whether it is up (GET /health, 204).
func (e *Envd) Health(ctx context.Context) error {
	req, err := e.newRequest(ctx, http.MethodGet, "/health", nil)
	if err != nil {
		return err
	}
	resp, err := e.client().Do(req)
	if err != nil {
		return fmt.Errorf("e2b: envd health of %s: %w: %w", e.SandboxID, sandbox.ErrUnavailable, err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	if resp.StatusCode/100 != 2 {
		return &StatusError{Op: "envd health of " + e.SandboxID, Status: resp.StatusCode, Message: errorMessage(data)}
	}
	return nil
}

// Upload writes a file in the sandbox (POST /files, multipart), creating
// its parent directories.
func (e *Envd) Upload(ctx context.Context, path string, r io.Reader) error {
	pr, pw := io.Pipe()
	mw := multipart.NewWriter(pw)
	go func() {
		part, err := mw.CreateFormFile("file", path)
		if err == nil {
			_, err = io.Copy(part, r)
		}
		if err == nil {
			err = mw.Close()
		}
		pw.CloseWithError(err)
	}()
	q := url.Values{"path": {path}}
	if e.User != "" {
		q.Set("username", e.User)
	}
	req, err := e.newRequest(ctx, http.MethodPost, "/files?"+q.Encode(), pr)
	if err != nil {
		pr.Close()
		return err
	}
	req.Header.Set("Content-Type", mw.FormDataContentType())
	resp, err := e.client().Do(req)
	if err != nil {
		return fmt.Errorf("e2b: upload %s to %s: %w: %w", path, e.SandboxID, sandbox.ErrUnavailable, err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode != http.StatusOK {
		return &StatusError{Op: "upload " + path + " to " + e.SandboxID, Status: resp.StatusCode, Message: errorMessage(data)}
	}
	return nil
}

// Download reads a file of the sandbox (GET /files).
func (e *Envd) Download(ctx context.Context, path string) ([]byte, error) {
	q := url.Values{"path": {path}}
	if e.User != "" {
		q.Set("username", e.User)
	}
	req, err := e.newRequest(ctx, http.MethodGet, "/files?"+q.Encode(), nil)
	if err != nil {
		return nil, err
	}
	resp, err := e.client().Do(req)
	if err != nil {
		return nil, fmt.Errorf("e2b: download %s from %s: %w: %w", path, e.SandboxID, sandbox.ErrUnavailable, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("e2b: download %s from %s: %w", path, e.SandboxID, err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, &StatusError{Op: "download " + path + " from " + e.SandboxID, Status: resp.StatusCode, Message: errorMessage(data)}
	}
	return data, nil
}

// ProcessConfig is process.ProcessConfig.
type ProcessConfig struct {
	Cmd  string            `json:"cmd"`
	Args []string          `json:"args,omitempty"`
	Envs map[string]string `json:"envs,omitempty"`
	Cwd  string            `json:"cwd,omitempty"`
}

type selector struct {
	PID uint32 `json:"pid"`
}

// processEvent is process.ProcessEvent in Connect's JSON mapping; bytes
// fields are base64.
type processEvent struct {
	Start *struct {
		PID uint32 `json:"pid"`
	} `json:"start,omitempty"`
	Data *struct {
		Stdout []byte `json:"stdout,omitempty"`
		Stderr []byte `json:"stderr,omitempty"`
		Pty    []byte `json:"pty,omitempty"`
	} `json:"data,omitempty"`
	End *struct {
		ExitCode int32   `json:"exitCode"`
		Exited   bool    `json:"exited"`
		Status   string  `json:"status"`
		Error    *string `json:"error,omitempty"`
	} `json:"end,omitempty"`
}

// Process is a process started with Start: its output arrives on the
// stream until it ends.
type Process struct {
	PID uint32

	// Stdout and Stderr receive the process's output as it comes; set
	// them before the first output, i.e. pass them to Start.
	body io.ReadCloser
	done chan struct{}
	// Set when done is closed.
	ExitCode int
	Err      error // the stream broke or ended with an error
}

// Done is closed when the process has ended or its stream broke.
func (p *Process) Done() <-chan struct{} { return p.done }

// Close drops the stream (the process keeps running in the sandbox).
func (p *Process) Close() error { return p.body.Close() }

// StartOptions say where a started process's output goes.
type StartOptions struct {
	Stdin  bool
	Stdout io.Writer // nil: dropped
	Stderr io.Writer // nil: dropped
}

// Start runs a process (process.Process/Start, a server stream) and
// returns once envd reports its pid; output is copied to opts.Stdout and
// opts.Stderr until the process ends or ctx is done.
func (e *Envd) Start(ctx context.Context, cfg ProcessConfig, opts StartOptions) (*Process, error) {
	msg, err := json.Marshal(map[string]any{"process": cfg, "stdin": opts.Stdin})
	if err != nil {
		return nil, err
	}
	var env bytes.Buffer
	env.Write(envelope(0, msg))
	req, err := e.newRequest(ctx, http.MethodPost, "/process.Process/Start", &env)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/connect+json")
	req.Header.Set("Connect-Protocol-Version", "1")
	op := "start " + cfg.Cmd + " in " + e.SandboxID
	resp, err := e.streamClient().Do(req)
	if err != nil {
		return nil, fmt.Errorf("e2b: %s: %w: %w", op, sandbox.ErrUnavailable, err)
	}
	if resp.StatusCode != http.StatusOK {
		data, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		resp.Body.Close()
		return nil, &StatusError{Op: op, Status: resp.StatusCode, Message: errorMessage(data)}
	}
	p := &Process{body: resp.Body, done: make(chan struct{})}
	br := bufio.NewReaderSize(resp.Body, 64<<10)
	// The first event is the start event, with the pid.
	ev, err := readEvent(br)
	if err != nil || ev.Start == nil {
		resp.Body.Close()
		if err == nil {
			err = errors.New("the stream did not begin with a start event")
		}
		return nil, fmt.Errorf("e2b: %s: %w", op, err)
	}
	p.PID = ev.Start.PID
	go func() {
		defer close(p.done)
		defer resp.Body.Close()
		for {
			ev, err := readEvent(br)
			if err != nil {
				p.Err = err
				p.ExitCode = -1
				return
			}
			switch {
			case ev.Data != nil:
				if opts.Stdout != nil && len(ev.Data.Stdout) > 0 {
					if _, err := opts.Stdout.Write(ev.Data.Stdout); err != nil {
						p.Err = err
						return
					}
				}
				if opts.Stderr != nil && len(ev.Data.Stderr) > 0 {
					_, _ = opts.Stderr.Write(ev.Data.Stderr)
				}
			case ev.End != nil:
				p.ExitCode = int(ev.End.ExitCode)
				if ev.End.Error != nil && *ev.End.Error != "" {
					p.Err = errors.New(*ev.End.Error)
				}
				// Drain to the end-of-stream message.
				_, _ = io.Copy(io.Discard, br)
				return
			}
		}
	}()
	return p, nil
}

// errStreamEnded is readEvent's answer to a clean end of stream.
var errStreamEnded = errors.New("stream ended")

// readEvent reads envelopes until a ProcessEvent (skipping keepalives);
// the end-of-stream envelope gives its error, or errStreamEnded.
func readEvent(r io.Reader) (processEvent, error) {
	for {
		flags, msg, err := readEnvelope(r)
		if err != nil {
			if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
				return processEvent{}, fmt.Errorf("the process stream broke: %w", io.ErrUnexpectedEOF)
			}
			return processEvent{}, fmt.Errorf("the process stream broke: %w", err)
		}
		if flags&flagEndStream != 0 {
			var end struct {
				Error *connectError `json:"error"`
			}
			if json.Unmarshal(msg, &end) == nil && end.Error != nil {
				return processEvent{}, end.Error
			}
			return processEvent{}, errStreamEnded
		}
		var resp struct {
			Event processEvent `json:"event"`
		}
		if err := json.Unmarshal(msg, &resp); err != nil {
			return processEvent{}, fmt.Errorf("bad process event: %w", err)
		}
		if resp.Event.Start == nil && resp.Event.Data == nil && resp.Event.End == nil {
			continue // keepalive
		}
		return resp.Event, nil
	}
}

// connectError is a Connect error ({"code": "not_found", "message": ...}).
type connectError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

func (e *connectError) Error() string { return e.Code + ": " + e.Message }

func (e *connectError) Unwrap() error {
	switch e.Code {
	case "not_found":
		return sandbox.ErrNotFound
	case "unauthenticated", "permission_denied":
		return ErrUnauthorized
	case "unavailable":
		return sandbox.ErrUnavailable
	}
	return nil
}

const flagEndStream = 0x02

func envelope(flags byte, msg []byte) []byte {
	b := make([]byte, 5+len(msg))
	b[0] = flags
	binary.BigEndian.PutUint32(b[1:5], uint32(len(msg)))
	copy(b[5:], msg)
	return b
}

func readEnvelope(r io.Reader) (byte, []byte, error) {
	var h [5]byte
	if _, err := io.ReadFull(r, h[:]); err != nil {
		return 0, nil, err
	}
	n := binary.BigEndian.Uint32(h[1:])
	if n > 64<<20 {
		return 0, nil, fmt.Errorf("envelope of %d bytes", n)
	}
	msg := make([]byte, n)
	if _, err := io.ReadFull(r, msg); err != nil {
		return 0, nil, err
	}
	return h[0], msg, nil
}

// unary makes one unary Connect call with JSON bodies.
func (e *Envd) unary(ctx context.Context, method string, in any) error {
	body, err := json.Marshal(in)
	if err != nil {
		return err
	}
	req, err := e.newRequest(ctx, http.MethodPost, "/process.Process/"+method, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Connect-Protocol-Version", "1")
	resp, err := e.client().Do(req)
	if err != nil {
		return fmt.Errorf("e2b: %s in %s: %w: %w", method, e.SandboxID, sandbox.ErrUnavailable, err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode != http.StatusOK {
		var ce connectError
		if json.Unmarshal(data, &ce) == nil && ce.Code != "" {
			return fmt.Errorf("e2b: %s in %s: %w", method, e.SandboxID, &ce)
		}
		return &StatusError{Op: method + " in " + e.SandboxID, Status: resp.StatusCode, Message: errorMessage(data)}
	}
	return nil
}

// SendInput writes data to a process's stdin (process.Process/SendInput).
func (e *Envd) SendInput(ctx context.Context, pid uint32, data []byte) error {
	return e.unary(ctx, "SendInput", map[string]any{"process": selector{pid}, "input": map[string][]byte{"stdin": data}})
}

// CloseStdin ends a process's stdin (process.Process/CloseStdin).
func (e *Envd) CloseStdin(ctx context.Context, pid uint32) error {
	return e.unary(ctx, "CloseStdin", map[string]any{"process": selector{pid}})
}

// Kill sends SIGKILL to a process (process.Process/SendSignal).
func (e *Envd) Kill(ctx context.Context, pid uint32) error {
	return e.unary(ctx, "SendSignal", map[string]any{"process": selector{pid}, "signal": "SIGNAL_SIGKILL"})
}

// Run starts one process per call and waits for it: how clients without a
// helper in the box run every command (the benchmark's baseline).
func (e *Envd) Run(ctx context.Context, cfg ProcessConfig) (int, []byte, error) {
	var out lockedBuffer
	p, err := e.Start(ctx, cfg, StartOptions{Stdout: &out, Stderr: &out})
	if err != nil {
		return -1, nil, err
	}
	select {
	case <-p.Done():
	case <-ctx.Done():
		p.Close()
		<-p.Done()
		return -1, out.Bytes(), ctx.Err()
	}
	if p.Err != nil {
		return p.ExitCode, out.Bytes(), fmt.Errorf("e2b: run %s in %s: %w", cfg.Cmd, e.SandboxID, p.Err)
	}
	return p.ExitCode, out.Bytes(), nil
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) Bytes() []byte {
	l.mu.Lock()
	defer l.mu.Unlock()
	return bytes.Clone(l.b.Bytes())
}

// stdinWriter is an io.Writer onto a process's stdin: each Write is one
// SendInput call, so writes arrive in order.
type stdinWriter struct {
	ctx  context.Context
	envd *Envd
	pid  uint32
	mu   sync.Mutex
}

func (w *stdinWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.envd.SendInput(w.ctx, w.pid, p); err != nil {
		return 0, err
	}
	return len(p), nil
}
