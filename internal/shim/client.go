package shim

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"sync"
	"sync/atomic"
	"time"

	"github.com/swerve-dev/swerve/internal/sandbox"
	"github.com/swerve-dev/swerve/internal/shim/tools"
)

// Client speaks to one helper over one stream. It is safe for concurrent
// use: requests are multiplexed by id.
type Client struct {
	w io.Writer

	wmu sync.Mutex // serialises frames on w
	buf []byte     // frame buffer, guarded by wmu

	mu      sync.Mutex
	nextID  uint64
	pending map[uint64]chan reply
	err     error         // set once the stream is finished
	done    chan struct{} // closed once the read loop ended

	// Describe, if set, adds context (e.g. the helper's stderr) to the error
	// returned once the stream has broken.
	Describe func(err error) error
}

type reply struct {
	m       *Message
	payload []byte
}

// NewClient starts reading responses from r; requests go to w. The caller
// closes the underlying stream, then calls Shutdown.
func NewClient(r io.Reader, w io.Writer) *Client {
	c := &Client{w: w, pending: map[uint64]chan reply{}, done: make(chan struct{})}
	go c.readLoop(bufio.NewReaderSize(r, 64<<10))
	return c
}

func (c *Client) readLoop(r io.Reader) {
	defer close(c.done)
	for {
		m, payload, err := readFrame(r)
		if err != nil {
			if errors.Is(err, io.EOF) {
				err = errors.New("the helper closed its stream")
			}
			c.fail(err)
			return
		}
		c.mu.Lock()
		ch := c.pending[m.ID]
		delete(c.pending, m.ID)
		c.mu.Unlock()
		if ch != nil {
			ch <- reply{m, payload}
		}
	}
}

// fail ends every pending and future request with err.
func (c *Client) fail(err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err == nil {
		c.err = err
	}
	for id, ch := range c.pending {
		close(ch)
		delete(c.pending, id)
	}
}

// Shutdown marks the client closed: requests in flight and later ones fail
// with sandbox.ErrClosed. It does not close the stream.
func (c *Client) Shutdown() { c.fail(sandbox.ErrClosed) }

// Done is closed when the stream has ended.
func (c *Client) Done() <-chan struct{} { return c.done }

func (c *Client) streamErr() error {
	c.mu.Lock()
	err := c.err
	c.mu.Unlock()
	if errors.Is(err, sandbox.ErrClosed) {
		return err
	}
	if c.Describe != nil {
		err = c.Describe(err)
	}
	return fmt.Errorf("%w: %w", sandbox.ErrClosed, err)
}

// call sends a request and waits for its reply. On ctx cancellation it
// returns at once, first asking the helper to kill the command when
// cancelRunning is set.
func (c *Client) call(ctx context.Context, m *Message, payload []byte, cancelRunning bool) (*Message, []byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, nil, err // never start what the caller already gave up on
	}
	ch := make(chan reply, 1)
	c.mu.Lock()
	if c.err != nil {
		c.mu.Unlock()
		return nil, nil, c.streamErr()
	}
	c.nextID++
	m.ID = c.nextID
	c.pending[m.ID] = ch
	c.mu.Unlock()

	if err := c.send(m, payload); err != nil {
		c.mu.Lock()
		delete(c.pending, m.ID)
		c.mu.Unlock()
		return nil, nil, err
	}
	select {
	case r, ok := <-ch:
		if !ok {
			return nil, nil, c.streamErr()
		}
		return r.m, r.payload, nil
	case <-ctx.Done():
		c.mu.Lock()
		delete(c.pending, m.ID)
		c.mu.Unlock()
		if cancelRunning {
			_ = c.send(&Message{Op: OpCancel, Target: m.ID}, nil)
		}
		return nil, nil, ctx.Err()
	}
}

func (c *Client) send(m *Message, payload []byte) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	var err error
	c.buf, err = appendFrame(c.buf[:0], m, payload)
	if err != nil {
		return err
	}
	if _, err := c.w.Write(c.buf); err != nil {
		c.fail(err)
		return c.streamErr()
	}
	if cap(c.buf) > 1<<20 {
		c.buf = nil // don't pin a large file's worth of memory
	}
	return nil
}

// Hello is what the helper says about itself.
type Hello struct {
	Version  int
	PID      int
	Workdir  string
	Software string
}

// Hello performs the handshake; it returns once the helper answers, which is
// when the box is ready for commands.
func (c *Client) Hello(ctx context.Context) (Hello, error) {
	m, _, err := c.call(ctx, &Message{Op: OpHello}, nil, false)
	if err != nil {
		return Hello{}, err
	}
	h := Hello{Version: m.Version, PID: m.PID, Workdir: m.Workdir, Software: m.Software}
	if h.Version != ProtocolVersion {
		return h, fmt.Errorf("shim: the helper in the box speaks protocol %d, this swerve speaks %d (%s): use the same swerve binary on both sides", h.Version, ProtocolVersion, h.Software)
	}
	return h, nil
}

// Exec runs a command through the helper.
func (c *Client) Exec(ctx context.Context, req sandbox.ExecRequest) (sandbox.ExecResult, error) {
	m := &Message{
		Op:        OpExec,
		Cmd:       req.Cmd,
		Env:       req.Env,
		Cwd:       req.Cwd,
		TimeoutMS: req.Timeout.Milliseconds(),
		MaxOutput: req.MaxOutput,
		Stdin:     req.Stdin != nil,

		KillOthers:    req.KillOthers,
		PrivateMemory: req.PrivateMemory,
		User:          req.User,
	}
	if req.Timeout > 0 && m.TimeoutMS == 0 {
		m.TimeoutMS = 1
	}
	resp, out, err := c.call(ctx, m, req.Stdin, true)
	if err != nil {
		return sandbox.ExecResult{}, fmt.Errorf("exec %q: %w", req.Cmd, err)
	}
	if err := respErr(resp); err != nil {
		return sandbox.ExecResult{}, fmt.Errorf("exec %q: %w", req.Cmd, err)
	}
	if req.KillOthers && !resp.KilledOthers {
		return sandbox.ExecResult{}, fmt.Errorf("exec %q: kill_others: the helper did not kill the box's other processes (an older helper, or one that is neither PID 1 nor a subreaper)", req.Cmd)
	}
	return sandbox.ExecResult{
		Output:      out,
		ExitCode:    resp.ExitCode,
		TimedOut:    resp.TimedOut,
		OutputBytes: resp.OutputBytes,
		ElidedBytes: resp.ElidedBytes,
		Duration:    time.Duration(resp.DurationNS),
		Findings:    resp.Findings,
	}, nil
}

// ReadFile reads a file inside the box.
func (c *Client) ReadFile(ctx context.Context, path string) ([]byte, error) {
	resp, data, err := c.call(ctx, &Message{Op: OpRead, Path: path}, nil, false)
	if err == nil {
		err = respErr(resp)
	}
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	return data, nil
}

// WriteFile writes a file inside the box, creating parent directories.
func (c *Client) WriteFile(ctx context.Context, path string, data []byte, mode fs.FileMode) error {
	if data == nil {
		data = []byte{}
	}
	resp, _, err := c.call(ctx, &Message{Op: OpWrite, Path: path, Mode: uint32(mode.Perm())}, data, false)
	if err == nil {
		err = respErr(resp)
	}
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// Tool runs one of the helper's native tools: name is file_editor,
// str_replace_editor or search, args the model's arguments (a JSON
// object). Mistakes in the call come back in the Result (Error set, the
// message for the model); errors are for calls the helper could not serve
// (an unknown tool, a broken stream, ctx done). Relative paths are the
// helper's working directory's.
func (c *Client) Tool(ctx context.Context, name string, args json.RawMessage) (tools.Result, error) {
	if len(args) == 0 {
		args = json.RawMessage("{}")
	}
	resp, out, err := c.call(ctx, &Message{Op: OpTool, Tool: name}, args, true)
	if err == nil {
		err = respErr(resp)
	}
	if err != nil {
		return tools.Result{}, fmt.Errorf("tool %s: %w", name, err)
	}
	var res tools.Result
	if err := json.Unmarshal(out, &res); err != nil {
		return tools.Result{}, fmt.Errorf("tool %s: bad result from the helper: %w", name, err)
	}
	return res, nil
}

// OpenShell starts a persistent login bash in the box (see
// sandbox.ShellSession). The shell lives until Close, or until the stream
// ends.
func (c *Client) OpenShell(ctx context.Context, opts sandbox.ShellOptions) (sandbox.ShellSession, error) {
	resp, _, err := c.call(ctx, &Message{Op: OpShellOpen, Cwd: opts.Cwd, Env: opts.Env}, nil, false)
	if err == nil {
		err = respErr(resp)
	}
	if err != nil {
		return nil, fmt.Errorf("open shell: %w", err)
	}
	return &ShellSession{c: c, id: resp.Shell}, nil
}

// ShellSession is a persistent shell in the box, reached through a Client.
type ShellSession struct {
	c      *Client
	id     uint64
	closed atomic.Bool
}

var _ sandbox.ShellSession = (*ShellSession)(nil)

// Run runs one command line in the shell.
func (sh *ShellSession) Run(ctx context.Context, req sandbox.ShellRequest) (sandbox.ShellResult, error) {
	if sh.closed.Load() {
		return sandbox.ShellResult{}, fmt.Errorf("shell: %w", sandbox.ErrClosed)
	}
	m := &Message{Op: OpShellRun, Shell: sh.id, TimeoutMS: req.Timeout.Milliseconds(), MaxOutput: req.MaxOutput}
	if req.Timeout > 0 && m.TimeoutMS == 0 {
		m.TimeoutMS = 1
	}
	resp, out, err := sh.c.call(ctx, m, []byte(req.Cmd), true)
	if err == nil {
		err = respErr(resp)
	}
	if err != nil {
		return sandbox.ShellResult{}, fmt.Errorf("shell %q: %w", req.Cmd, err)
	}
	return sandbox.ShellResult{
		Output:      out,
		ExitCode:    resp.ExitCode,
		TimedOut:    resp.TimedOut,
		Exited:      resp.ShellExited,
		Restarted:   resp.ShellRestarted,
		OutputBytes: resp.OutputBytes,
		ElidedBytes: resp.ElidedBytes,
		Duration:    time.Duration(resp.DurationNS),
	}, nil
}

// Close kills the shell and what it started; closing twice, or after
// the box is gone, is not an error.
func (sh *ShellSession) Close(ctx context.Context) error {
	if sh.closed.Swap(true) {
		return nil
	}
	resp, _, err := sh.c.call(ctx, &Message{Op: OpShellClose, Shell: sh.id}, nil, false)
	if errors.Is(err, sandbox.ErrClosed) {
		return nil
	}
	if err == nil {
		err = respErr(resp)
	}
	if err != nil {
		return fmt.Errorf("close shell: %w", err)
	}
	return nil
}

// remoteError is an error reported by the helper.
type remoteError struct{ msg string }

func (e *remoteError) Error() string { return e.msg }

func respErr(m *Message) error {
	if m.Err == "" {
		return nil
	}
	err := &remoteError{m.Err}
	if m.ErrKind == KindNotFound {
		return fmt.Errorf("%w: %w", sandbox.ErrNotFound, err)
	}
	return err
}
