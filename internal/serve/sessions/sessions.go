// Package sessions keeps agent boxes open across HTTP calls for trainers
// that drive the tools themselves: NeMo Gym's resources-server surface
// (/seed_session, a route per tool, /verify) and a sandbox-tool API for
// verl-style trainers (/sandboxes: create, execute, release). A Manager
// owns the boxes: it opens a task's box with its hidden tests removed,
// bounds how many are open, closes the ones left idle past their TTL, and
// closes every box on shutdown. Grading goes through a Verifier, in a
// fresh box from the task's image.
//
// The package is self-contained: Register mounts its routes on any
// http.ServeMux, and nothing here listens, authenticates or writes files
// (the server in front of it checks the bearer token). A server mounts it
// like this, and closes the Manager when it drains:
//
//	m := sessions.New(sessions.Options{
//		Open:     opener, // the task's image on the chosen backend, and its repository directory
//		Tasks:    sessions.NewCatalog(tasks, true),
//		Verifier: sessions.GraderVerifier{Open: opener, EvalTimeout: 1800 * time.Second},
//		MaxSessions: 64, TTL: 30 * time.Minute, StepTimeout: 600 * time.Second,
//	})
//	sessions.Register(mux, m) // Gym's resources routes and /sandboxes
//	defer m.Close(context.Background())
package sessions

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/swerve-dev/swerve/internal/agent"
	"github.com/swerve-dev/swerve/internal/agent/signals"
	"github.com/swerve-dev/swerve/internal/reward/grader"
	"github.com/swerve-dev/swerve/internal/reward/history"
	"github.com/swerve-dev/swerve/internal/sandbox"
	"github.com/swerve-dev/swerve/internal/task"
)

// Errors a Manager returns; the HTTP surfaces map them to statuses.
var (
	// ErrFull: MaxSessions boxes are open or opening (429).
	ErrFull = errors.New("too many open sessions")
	// ErrNotFound: no open session has this id (404).
	ErrNotFound = errors.New("no such session")
	// ErrClosed: the manager is shutting down (503).
	ErrClosed = errors.New("the session manager is shut down")
)

// Opener opens a box for a task and says where its repository is (the
// same shape as the run package's).
type Opener func(ctx context.Context, t *task.Task) (sandbox.Sandbox, string, error)

// Defaults of Options.
const (
	DefaultMaxSessions = 64
	DefaultTTL         = 30 * time.Minute
	DefaultStepTimeout = 600 * time.Second // Gym's step_timeout
)

// Options configure a Manager.
type Options struct {
	// Open opens a task's box (required).
	Open Opener
	// Tasks turns a request's instance id or row into a task (required).
	Tasks TaskSource
	// Verifier grades a session's patch (required for verify and
	// submit_solution).
	Verifier Verifier
	// MaxSessions bounds the boxes open or opening at once
	// (DefaultMaxSessions when 0).
	MaxSessions int
	// TTL closes a session left unused this long (DefaultTTL when 0;
	// negative: never).
	TTL time.Duration
	// StepTimeout bounds one bash call (DefaultStepTimeout when 0).
	StepTimeout time.Duration
	// Reward forces a grader (as --reward does); it decides which hidden
	// tests are removed from the box.
	Reward string
	// GradeInSame keeps the hidden tests in the box (grading in the agent's
	// box, upstream's way); the default removes them.
	GradeInSame bool
}

// Session is one open box and the task it serves.
type Session struct {
	// ID is the session's own random id.
	ID string
	// Key is the caller's key (a Gym session cookie, a verl trajectory id);
	// opening again with the same key returns this session.
	Key  string
	Task *task.Task
	// History is the proof that the box's repository held nothing past
	// the base commit when it was handed out (package history).
	History *history.Proof

	box     sandbox.Sandbox
	workdir string
	base    string // the commit the patch is taken against
	opened  time.Time

	ready   chan struct{} // closed once the box is open (or failed)
	openErr error

	shellMu sync.Mutex           // guards shell while it is being opened
	shell   sandbox.ShellSession // the bash tool's persistent shell, once opened
	noShell bool                 // the box has none: bash calls exec each line

	// The audit of the session's calls (package signals); each call counts
	// as a step.
	auditMu sync.Mutex
	audit   *signals.Auditor
	calls   int
	flags   []signals.Flag

	mu       sync.RWMutex // calls hold it shared; closing holds it alone
	closed   bool
	lastUsed time.Time // under Manager.mu
	active   int       // calls running, under Manager.mu

	// done is cancelled when the session is closed: running calls end.
	done   context.Context
	cancel context.CancelFunc
}

// note audits one call of the session, before it runs.
func (s *Session) note(name string, args map[string]any) {
	s.auditMu.Lock()
	defer s.auditMu.Unlock()
	if s.audit == nil {
		s.audit = signals.New(s.workdir, s.Task.TestPatch)
	}
	s.flags = append(s.flags, s.audit.Call(s.calls, name, args)...)
	s.calls++
}

// Signals are the audit's flags for the session's calls so far.
func (s *Session) Signals() []signals.Flag {
	s.auditMu.Lock()
	defer s.auditMu.Unlock()
	return slices.Clone(s.flags)
}

// Box returns the session's box and its repository directory.
func (s *Session) Box() (sandbox.Sandbox, string) { return s.box, s.workdir }

// Manager owns the open sessions.
type Manager struct {
	opts Options

	mu     sync.Mutex
	byID   map[string]*Session
	byKey  map[string]*Session
	shut   bool
	stats  Stats
	stop   chan struct{}
	reaped sync.WaitGroup
	closes sync.WaitGroup // boxes being closed in the background
}

// New starts a Manager and its reaper. Close stops both.
func New(opts Options) *Manager {
	if opts.MaxSessions <= 0 {
		opts.MaxSessions = DefaultMaxSessions
	}
	if opts.TTL == 0 {
		opts.TTL = DefaultTTL
	}
	if opts.StepTimeout <= 0 {
		opts.StepTimeout = DefaultStepTimeout
	}
	m := &Manager{opts: opts, byID: map[string]*Session{}, byKey: map[string]*Session{}, stop: make(chan struct{})}
	if opts.TTL > 0 {
		every := min(max(opts.TTL/4, 10*time.Millisecond), time.Minute)
		m.reaped.Add(1)
		go m.reapLoop(every)
	}
	return m
}

// Options returns the manager's options with defaults filled in.
func (m *Manager) Options() Options { return m.opts }

func newID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// Open returns the session for key, opening the task's box when there is
// none (created is then true). An empty key always opens a new session.
// Concurrent opens with one key share one box. The task comes from
// Options.Tasks (instanceID, row).
func (m *Manager) Open(ctx context.Context, key, instanceID string, row json.RawMessage) (s *Session, created bool, err error) {
	m.mu.Lock()
	if m.shut {
		m.mu.Unlock()
		return nil, false, ErrClosed
	}
	if key != "" {
		if s := m.byKey[key]; s != nil {
			m.mu.Unlock()
			select {
			case <-s.ready:
			case <-ctx.Done():
				return nil, false, ctx.Err()
			}
			if s.openErr != nil {
				return nil, false, s.openErr
			}
			m.touch(s)
			return s, false, nil
		}
	}
	if len(m.byID) >= m.opts.MaxSessions {
		m.mu.Unlock()
		return nil, false, fmt.Errorf("%w (at most %d)", ErrFull, m.opts.MaxSessions)
	}
	s = &Session{ID: newID(), Key: key, ready: make(chan struct{}), lastUsed: time.Now()}
	s.done, s.cancel = context.WithCancel(context.Background())
	m.byID[s.ID] = s
	if key != "" {
		m.byKey[key] = s
	}
	m.mu.Unlock()

	s.openErr = m.open(ctx, s, instanceID, row)
	close(s.ready)
	if s.openErr != nil {
		m.forget(s)
		m.count(func(st *Stats) { st.Failed++ })
		return nil, false, s.openErr
	}
	m.count(func(st *Stats) { st.Opened++ })
	m.mu.Lock()
	shut := m.shut
	m.mu.Unlock()
	if shut { // Close ran while the box was opening: it was not there to close
		m.forget(s)
		m.closeBox(s)
		return nil, false, ErrClosed
	}
	m.touch(s)
	return s, true, nil
}

// open resolves the task and opens its box with the hidden tests removed.
func (m *Manager) open(ctx context.Context, s *Session, instanceID string, row json.RawMessage) error {
	t, err := m.opts.Tasks.Task(ctx, instanceID, row)
	if err != nil {
		return err
	}
	s.Task = t
	box, workdir, err := m.opts.Open(ctx, t)
	if err != nil {
		return &InfraError{Err: fmt.Errorf("task %s: open box: %w", t.InstanceID, err)}
	}
	fail := func(err error) error {
		box.Close(context.WithoutCancel(ctx))
		return &InfraError{Err: fmt.Errorf("task %s: %w", t.InstanceID, err)}
	}
	proof, err := grader.PrepareBox(ctx, box, t, m.opts.Reward, workdir, !m.opts.GradeInSame)
	if err != nil {
		return fail(err)
	}
	s.History = proof
	base, err := agent.PrepareRepo(ctx, box, workdir)
	if err != nil {
		return fail(err)
	}
	s.box, s.workdir, s.base, s.opened = box, workdir, base, time.Now()
	return nil
}

// InfraError is a failure outside the policy (a box that would not open, a
// grader that could not run): reported apart from rewards, never as one.
type InfraError struct{ Err error }

func (e *InfraError) Error() string { return e.Err.Error() }
func (e *InfraError) Unwrap() error { return e.Err }

// IsInfra says whether err is an infrastructure error.
func IsInfra(err error) bool {
	var ie *InfraError
	return errors.As(err, &ie)
}

func (m *Manager) touch(s *Session) {
	m.mu.Lock()
	s.lastUsed = time.Now()
	m.mu.Unlock()
}

// forget drops s from the maps (if it is still the one there).
func (m *Manager) forget(s *Session) {
	m.mu.Lock()
	if m.byID[s.ID] == s {
		delete(m.byID, s.ID)
	}
	if s.Key != "" && m.byKey[s.Key] == s {
		delete(m.byKey, s.Key)
	}
	m.mu.Unlock()
}

// Get returns the open session with this id and marks it used.
func (m *Manager) Get(id string) (*Session, error) {
	m.mu.Lock()
	s := m.byID[id]
	m.mu.Unlock()
	return m.ready(s)
}

// Lookup returns the open session opened with this key and marks it used.
func (m *Manager) Lookup(key string) (*Session, error) {
	if key == "" {
		return nil, ErrNotFound
	}
	m.mu.Lock()
	s := m.byKey[key]
	m.mu.Unlock()
	return m.ready(s)
}

func (m *Manager) ready(s *Session) (*Session, error) {
	if s == nil {
		return nil, ErrNotFound
	}
	<-s.ready
	if s.openErr != nil {
		return nil, ErrNotFound
	}
	m.touch(s)
	return s, nil
}

// Release closes the session's box. Releasing a session that is gone (or
// never was) is not an error.
func (m *Manager) Release(ctx context.Context, id string) error {
	m.mu.Lock()
	s := m.byID[id]
	m.mu.Unlock()
	if s == nil {
		return nil
	}
	<-s.ready
	m.forget(s)
	m.count(func(st *Stats) { st.Released++ })
	return m.closeBox(s)
}

// closeBox ends the session's running calls and closes its box once.
func (m *Manager) closeBox(s *Session) error {
	s.cancel()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed || s.box == nil {
		s.closed = true
		return nil
	}
	s.closed = true
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := s.box.Close(ctx); err != nil {
		return fmt.Errorf("session %s: close box: %w", s.ID, err)
	}
	return nil
}

// Stats count what a Manager did, for metrics.
type Stats struct {
	Open     int // sessions open or opening now
	Opened   int // boxes opened
	Failed   int // opens that failed
	Reaped   int // sessions closed by the TTL
	Released int // sessions released (including after verify)
	Verified int // verifications that produced a verdict
}

// Stats returns the manager's counters.
func (m *Manager) Stats() Stats {
	m.mu.Lock()
	defer m.mu.Unlock()
	st := m.stats
	st.Open = len(m.byID)
	return st
}

func (m *Manager) count(f func(*Stats)) {
	m.mu.Lock()
	f(&m.stats)
	m.mu.Unlock()
}

// Len is the number of sessions open or opening.
func (m *Manager) Len() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.byID)
}

// Reap closes the sessions unused since before now minus the TTL and
// returns how many it closed.
func (m *Manager) Reap(now time.Time) int {
	if m.opts.TTL <= 0 {
		return 0
	}
	var old []*Session
	m.mu.Lock()
	for _, s := range m.byID {
		select {
		case <-s.ready:
		default:
			continue // still opening
		}
		if s.active == 0 && now.Sub(s.lastUsed) > m.opts.TTL {
			old = append(old, s)
		}
	}
	m.mu.Unlock()
	m.count(func(st *Stats) { st.Reaped += len(old) })
	for _, s := range old {
		m.forget(s)
		_ = m.closeBox(s)
	}
	return len(old)
}

func (m *Manager) reapLoop(every time.Duration) {
	defer m.reaped.Done()
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		select {
		case <-m.stop:
			return
		case now := <-tick.C:
			m.Reap(now)
		}
	}
}

// Close refuses new sessions, stops the reaper and closes every box,
// waiting for running calls to end (or ctx).
func (m *Manager) Close(ctx context.Context) error {
	m.mu.Lock()
	if m.shut {
		m.mu.Unlock()
		return nil
	}
	m.shut = true
	close(m.stop)
	var all []*Session
	for _, s := range m.byID {
		all = append(all, s)
	}
	m.mu.Unlock()
	m.reaped.Wait()
	errs := make(chan error, len(all))
	var wg sync.WaitGroup
	for _, s := range all {
		wg.Add(1)
		go func() {
			defer wg.Done()
			select {
			case <-s.ready:
			case <-ctx.Done():
				errs <- ctx.Err()
				return
			}
			m.forget(s)
			errs <- m.closeBox(s)
		}()
	}
	wg.Wait()
	close(errs)
	var out []error
	for err := range errs {
		if err != nil {
			out = append(out, err)
		}
	}
	return errors.Join(out...)
}

// use runs f with the session's box held open (shared with other calls)
// and a context that also ends when the session is closed; the session
// counts as in use (the reaper leaves it) until f returns.
func (m *Manager) use(ctx context.Context, s *Session, f func(ctx context.Context) error) error {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return ErrNotFound
	}
	m.mu.Lock()
	s.active++
	s.lastUsed = time.Now()
	m.mu.Unlock()
	defer func() {
		m.mu.Lock()
		s.active--
		s.lastUsed = time.Now()
		m.mu.Unlock()
	}()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := context.AfterFunc(s.done, cancel)
	defer stop()
	err := f(ctx)
	if err != nil && s.done.Err() != nil {
		return fmt.Errorf("%w: the session was closed during the call", ErrNotFound)
	}
	return err
}

// BashResult is one bash call's result.
type BashResult struct {
	Output   string
	ExitCode int
	TimedOut bool
	// Exited: the command ended the session's shell (exit, exec); the
	// next call starts a fresh one. Restarted: this call ran in a fresh
	// shell, the earlier one having ended or been killed on a timeout.
	Exited    bool
	Restarted bool
}

// Bash runs one command line in the session's shell, bounded by timeout
// (the manager's StepTimeout when 0 or above it). The shell persists
// between calls, as agents' bash tools expect: cd, exported variables and
// functions carry over. It starts in the repository, as a login shell.
// Calls on one session run one at a time. A call that times out kills the
// shell, and the next call starts a fresh one; so does a call that ends
// the shell itself. Whatever a call started in the background is killed
// when it ends. Boxes without persistent shells, or whose shell does not
// start, run each line with bash -lc instead.
func (m *Manager) Bash(ctx context.Context, s *Session, command string, timeout time.Duration) (BashResult, error) {
	if timeout <= 0 || timeout > m.opts.StepTimeout {
		timeout = m.opts.StepTimeout
	}
	var out BashResult
	err := m.use(ctx, s, func(ctx context.Context) error {
		s.note("bash", map[string]any{"command": command})
		sh, err := s.openShell(ctx)
		if err != nil {
			return &InfraError{Err: fmt.Errorf("task %s: bash: %w", s.Task.InstanceID, err)}
		}
		if sh == nil {
			res, err := s.box.Exec(ctx, sandbox.ExecRequest{Cmd: sandbox.Bash(command), Cwd: s.workdir, Timeout: timeout})
			if err != nil {
				return &InfraError{Err: fmt.Errorf("task %s: bash: %w", s.Task.InstanceID, err)}
			}
			out = BashResult{Output: string(res.Output), ExitCode: res.ExitCode, TimedOut: res.TimedOut}
			if res.TimedOut {
				out.Output += fmt.Sprintf("\n[the command timed out after %s and was killed]", timeout)
			}
			return nil
		}
		res, err := sh.Run(ctx, sandbox.ShellRequest{Cmd: command, Timeout: timeout})
		if err != nil {
			return &InfraError{Err: fmt.Errorf("task %s: bash: %w", s.Task.InstanceID, err)}
		}
		out = BashResult{Output: string(res.Output), ExitCode: res.ExitCode, TimedOut: res.TimedOut, Exited: res.Exited, Restarted: res.Restarted}
		switch {
		case res.TimedOut:
			out.Output = withNote(out.Output, fmt.Sprintf("[the command timed out after %s and was killed, with the shell: the next command starts in a fresh shell in the repository]", timeout))
		case res.Exited:
			out.Output = withNote(out.Output, fmt.Sprintf("[the shell exited with status %d: the next command starts in a fresh shell in the repository]", res.ExitCode))
		}
		return nil
	})
	return out, err
}

// withNote appends a note for the model on a line of its own.
func withNote(output, note string) string {
	if output != "" && !strings.HasSuffix(output, "\n") {
		output += "\n"
	}
	return output + note
}

// openShell returns the session's shell, opening it on first use; nil
// when the box has no persistent shells.
func (s *Session) openShell(ctx context.Context) (sandbox.ShellSession, error) {
	s.shellMu.Lock()
	defer s.shellMu.Unlock()
	if s.shell != nil || s.noShell {
		return s.shell, nil
	}
	sb, ok := s.box.(sandbox.Shell)
	if !ok {
		s.noShell = true
		return nil, nil
	}
	sh, err := sb.OpenShell(ctx, sandbox.ShellOptions{Cwd: s.workdir})
	if err != nil {
		if ctx.Err() != nil || errors.Is(err, sandbox.ErrClosed) {
			return nil, err
		}
		// No bash that starts (a minimal image, login scripts that
		// hang): each line runs on its own, and says why it fails.
		s.noShell = true
		return nil, nil
	}
	s.shell = sh
	return sh, nil
}

// Tool runs one of the box's native tools (str_replace_editor,
// file_editor, search) with the model's arguments.
func (m *Manager) Tool(ctx context.Context, s *Session, name string, args json.RawMessage) (sandbox.ToolResult, error) {
	var out sandbox.ToolResult
	err := m.use(ctx, s, func(ctx context.Context) error {
		var a map[string]any
		_ = json.Unmarshal(args, &a)
		s.note(name, a)
		tl, ok := s.box.(sandbox.Tooler)
		if !ok {
			return fmt.Errorf("task %s: %s: this backend's boxes have no native tools", s.Task.InstanceID, name)
		}
		var err error
		out, err = tl.Tool(ctx, sandbox.ToolRequest{Name: name, Args: args})
		if err != nil {
			return fmt.Errorf("task %s: %s: %w", s.Task.InstanceID, name, err)
		}
		return nil
	})
	return out, err
}

// Verification is a session's graded patch.
type Verification struct {
	Patch      string
	Verdict    *Verdict
	PatchTime  time.Duration
	VerifyTime time.Duration
	InstanceID string
	// Signals are the audit's flags for the session's calls.
	Signals []signals.Flag
}

// Verify takes the session's patch (git diff against the base commit) and
// grades it with the Verifier in a fresh box. An infrastructure failure is
// an *InfraError.
func (m *Manager) Verify(ctx context.Context, s *Session) (*Verification, error) {
	if m.opts.Verifier == nil {
		return nil, errors.New("no verifier configured")
	}
	v := &Verification{InstanceID: s.Task.InstanceID, Signals: s.Signals()}
	start := time.Now()
	err := m.use(ctx, s, func(ctx context.Context) error {
		p, err := agent.ExtractPatch(ctx, s.box, s.workdir, s.base)
		if err != nil {
			return &InfraError{Err: fmt.Errorf("task %s: %w", s.Task.InstanceID, err)}
		}
		v.Patch = p
		return nil
	})
	v.PatchTime = time.Since(start)
	if err != nil {
		return v, err
	}
	start = time.Now()
	verdict, err := m.opts.Verifier.Verify(ctx, s.Task, v.Patch)
	v.VerifyTime = time.Since(start)
	if err != nil {
		return v, err
	}
	v.Verdict = verdict
	m.count(func(st *Stats) { st.Verified++ })
	return v, nil
}
