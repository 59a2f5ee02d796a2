// Package sandbox defines how swerve gets a box to run a task in: a Backend
// opens a Sandbox from a Spec, and a Sandbox runs commands and moves files.
//
// Backends live in sub-packages (sandbox/docker, sandbox/local, ...) and
// register themselves by name in init() (a binary links them with a blank
// import); New makes one by name. Every backend passes the conformance suite
// in sandbox/sandboxtest.
//
// # Using a sandbox
//
//	b, err := sandbox.New(ctx, "docker", sandbox.Options{})
//	box, err := b.Open(ctx, sandbox.Spec{Image: "swebench/sweb.eval.x86_64.django_1776_django-16901:latest"})
//	defer box.Close(context.WithoutCancel(ctx))
//	res, err := box.Exec(ctx, sandbox.ExecRequest{Cmd: sandbox.Bash("git status"), Timeout: time.Minute})
//
// ExampleNew in example_test.go is the same sequence, compiled with the tests.
//
// Optional abilities (an interactive terminal, ...) are small extra
// interfaces found with a type assertion, e.g. Interactive.
package sandbox

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"time"
)

// Sentinel errors. Backends wrap them with %w so callers can test with
// errors.Is whatever the backend.
var (
	// ErrNotFound: the image, box or file does not exist.
	ErrNotFound = errors.New("not found")
	// ErrTimeout: an operation ran out of time.
	ErrTimeout = errors.New("timed out")
	// ErrUnavailable: the backend cannot be reached (no engine, socket gone).
	ErrUnavailable = errors.New("unavailable")
	// ErrClosed: the sandbox was closed, or died, before or during the call.
	ErrClosed = errors.New("sandbox closed")
)

// Backend opens sandboxes.
type Backend interface {
	// Open starts a box from spec and returns once it is ready for its
	// first command. On error nothing is left behind.
	Open(ctx context.Context, spec Spec) (Sandbox, error)
}

// Sandbox is one running box.
type Sandbox interface {
	// ID names the box for people and for logs (container id, temp dir).
	ID() string
	// Exec runs one command and waits for it.
	//
	//   - A command that exceeds its timeout is killed together with
	//     everything it started, and the result says TimedOut with ExitCode
	//     124; that is not an error.
	//   - A program that cannot be found or executed gives ExitCode 127 or
	//     126 with the reason in Output, as a shell would; not an error.
	//   - Cancelling ctx kills the command the same way and returns an error
	//     wrapping ctx.Err(); with ctx already done, nothing is started.
	//   - When the command ends (it exits, times out or is cancelled),
	//     everything it started is killed before Exec returns, including
	//     daemons that double-forked, called setsid or cleared their
	//     environment; nothing they print after the command's end is in
	//     Output. (Only processes that a concurrent, still running command
	//     of the same box could have started are spared until that one
	//     ends too.)
	//
	// Errors mean the command could not be run or its result not be read;
	// ErrClosed once the box is closed or dead.
	Exec(ctx context.Context, req ExecRequest) (ExecResult, error)
	// WriteFile writes data to path (relative paths are relative to the
	// box's working directory), creating parent directories.
	WriteFile(ctx context.Context, path string, data []byte, mode fs.FileMode) error
	// ReadFile returns the content of path; a missing file is ErrNotFound.
	ReadFile(ctx context.Context, path string) ([]byte, error)
	// Close stops the box and removes everything it created. It is
	// idempotent and safe to call concurrently with other methods, which
	// then fail with ErrClosed.
	Close(ctx context.Context) error
}

// Network modes for Spec.Network.
const (
	NetworkNone    = "none"   // no network at all: the default for agent boxes
	NetworkBridge  = "bridge" // the engine's default network
	NetworkHost    = "host"   // the host's network stack
	NetworkDefault = NetworkNone
)

// Pull policies for Spec.Pull.
const (
	PullMissing = "missing" // pull only when the image is not present (default)
	PullAlways  = "always"
	PullNever   = "never"
)

// Spec says what box to open.
type Spec struct {
	// Image is the image to start. For the local backend it is a host
	// directory whose copy becomes the box's working directory (may be
	// empty: an empty directory).
	Image string
	// Workdir is the working directory of the shim and of commands that
	// name none, an absolute path in the box's filesystem (for the local
	// backend, a relative one is taken inside the copy); empty means the
	// image's own (WORKDIR), or the copy's root for the local backend.
	Workdir string
	// Env is added to every command's environment, "KEY=VALUE".
	Env []string
	// Network is NetworkNone (default), NetworkBridge or NetworkHost.
	Network string
	// Limits caps the box's resources; zero values mean no cap.
	Limits Limits
	// Labels are added to the backend's own labels (swerve.run, ...).
	Labels map[string]string
	// Pull is PullMissing (default), PullAlways or PullNever.
	Pull string
	// PullProgress, if set, receives human-readable pull progress lines.
	PullProgress io.Writer
	// User runs commands as this user ("root", "1000:1000"); empty keeps
	// the image's.
	User string
	// Security relaxes the backend's default hardening; the zero value
	// keeps all of it.
	Security Security
	// Task is the instance id of the task the box is for, when there is
	// one. Backends whose images are not named like the task's image use
	// it to find theirs (apptainer's --sif_template '{instance_id}', e2b's
	// template map); others put it in a label.
	Task string
}

// Security relaxes a box's default hardening, for images that need more
// than building, installing and testing a repository does. Container
// backends harden every box by default: Linux capabilities cut to a
// minimal set, and no process may gain privileges (setuid programs, sudo,
// file capabilities do not raise them).
type Security struct {
	// CapAdd adds Linux capabilities ("SYS_PTRACE", "NET_RAW") to the
	// minimal set.
	CapAdd []string
	// Unhardened keeps the engine's own defaults: its default capability
	// set, and programs may gain privileges. Limits and network still apply.
	Unhardened bool
}

// Limits are resource caps for a box.
type Limits struct {
	CPUs      float64 // number of CPUs, e.g. 1.5
	MemoryMiB int64   // memory in MiB
	PIDs      int64   // maximum number of processes
}

// ExecRequest is one command to run.
type ExecRequest struct {
	// Cmd is the argv; Bash wraps a shell command line.
	Cmd []string
	// Env is added to the box's environment for this command.
	Env []string
	// Cwd is the working directory; empty means the box's, and a relative
	// path is taken from the box's.
	Cwd string
	// Stdin is fed to the command; nil means no input (EOF at once).
	Stdin []byte
	// Timeout kills the command's whole process group when reached; zero
	// means no limit beyond ctx.
	Timeout time.Duration
	// MaxOutput caps the bytes of output kept: beyond it, the middle is
	// elided and the head and tail are kept. Zero means DefaultMaxOutput;
	// negative means no cap.
	MaxOutput int
	// KillOthers makes the command's end kill every other process in the
	// box as well, whoever started it, other commands still running
	// included (they end with exit 137), before Exec returns. Graders set
	// it on the eval script: in a grading box nothing but the eval script
	// runs, and nothing else may write to its log or to the files read
	// after it. A backend that cannot do it fails the Exec.
	KillOthers bool
	// PrivateMemory starts the command so that no other process in the box
	// can read its memory, environment or descriptors (through /proc or
	// ptrace) unless it holds CAP_SYS_PTRACE, which container boxes drop.
	// It is meant for a bash program: the command starts with its
	// effective group different from its real one, which bash undoes at
	// start-up (the kernel keeps it non-dumpable). Graders set it on the
	// sealed eval runner, whose nonce the tests must not read. Backends
	// without the in-box helper may ignore it.
	PrivateMemory bool
	// User runs the command as another user, given as numeric
	// "UID:GID" (no name lookup: the box needs no passwd entry), with no
	// supplementary groups. Graders use it to run the patch's code without
	// root's power over grading. Only a helper running as root can switch
	// users; a backend or helper that cannot may run the command as the
	// box's own user instead, so callers that rely on it check (id -u).
	User string
}

// DefaultMaxOutput is the output cap when ExecRequest.MaxOutput is zero.
const DefaultMaxOutput = 1 << 20

// TimeoutExitCode is the exit code reported for a command that timed out,
// as timeout(1) does.
const TimeoutExitCode = 124

// ExecResult is what a command did.
type ExecResult struct {
	// Output is stdout and stderr merged in the order they were written,
	// with the middle elided when it exceeded the cap.
	Output []byte
	// ExitCode is the command's exit status; 128+n when killed by signal n;
	// TimeoutExitCode when it timed out.
	ExitCode int
	// TimedOut is set when the command was killed for exceeding Timeout.
	TimedOut bool
	// OutputBytes is the total output produced; ElidedBytes how many of
	// those were dropped from the middle.
	OutputBytes int64
	ElidedBytes int64
	// Duration is how long the command ran inside the box.
	Duration time.Duration
	// Findings lists what the in-box helper saw done to it while the
	// command ran that no command may do: its OOM priority raised, so that
	// the kernel would kill it first when memory runs out. Graders report
	// them as tamper findings. Empty where no helper watches.
	Findings []string
}

// Bash returns the argv that runs line with bash as a login shell, so the
// image's toolchain set-up in /etc/profile applies.
func Bash(line string) []string { return []string{"bash", "-lc", line} }

// Scratch is implemented by sandboxes whose absolute paths are shared with
// other boxes (the local backend's are the host's): ScratchDir is an
// absolute directory private to this box, outside the repository, for
// files a grader puts in the box. Container boxes need not implement it.
type Scratch interface {
	ScratchDir() string
}

// ImageIdentity is implemented by sandboxes that know the exact image they
// run: a content id (Docker's "sha256:…"), which changes when a name is
// given to another build. Answers about an image may be kept under it.
type ImageIdentity interface {
	ImageID() string
}

// Tooler is implemented by sandboxes whose helper runs swerve's native tools:
// the file editor and search that agent scaffolds give their models
// (file_editor, str_replace_editor, search), served inside the box so that
// the image needs no Python for them.
type Tooler interface {
	// Tool runs one tool call in the box. A mistake in the call (a missing
	// file, an old_str that is not unique, a bad range) is a ToolResult
	// with Error set and a message for the model, not an error. Errors are
	// for calls the box could not serve: an unknown tool name, ctx done,
	// ErrClosed. The editor keeps its undo history for the box's life;
	// relative paths are taken from the box's working directory.
	Tool(ctx context.Context, req ToolRequest) (ToolResult, error)
}

// ToolRequest is one tool call.
type ToolRequest struct {
	// Name is the tool: "file_editor", "str_replace_editor" or "search".
	Name string
	// Args are the model's arguments, a JSON object (command, path,
	// file_text, old_str, new_str, insert_line, view_range, concise;
	// search_term, path).
	Args json.RawMessage
}

// ToolResult is what the tool shows the model.
type ToolResult struct {
	// Output is the text for the model.
	Output string
	// Error is set when the call did nothing because of a mistake in it.
	Error bool
}

// Shell is implemented by sandboxes that can keep a shell running between
// commands, as an agent's bash tool expects: cd, exported variables and
// functions carry over from one call to the next. The shim's boxes
// implement it (docker, local, and every backend that runs the in-box
// helper). Exec stays the way to run independent commands.
type Shell interface {
	// OpenShell starts one login bash in the box, in opts.Cwd, and returns
	// once it is ready for its first command.
	OpenShell(ctx context.Context, opts ShellOptions) (ShellSession, error)
}

// ShellOptions say how to start a shell.
type ShellOptions struct {
	// Cwd is the shell's first working directory; empty means the box's.
	Cwd string
	// Env is added to the box's environment, "KEY=VALUE".
	Env []string
}

// ShellSession is one persistent shell. Calls on one session run one at a
// time, in the order they arrive; concurrent calls wait for their turn.
//
// Each call keeps Exec's guarantees: when it ends, everything it started,
// background jobs and daemons that double-forked, called setsid or cleared
// their environment included, is killed before Run returns (the shell
// itself lives on); nothing they print after the call's end is in its
// Output; output beyond MaxOutput is elided in the middle.
//
// A call that times out, or whose ctx is cancelled, kills the shell with
// everything in it: the next call starts a fresh shell (Restarted is set on
// its result), in ShellOptions.Cwd, and whatever the earlier calls set up
// (working directory, variables, functions) is gone. So is it after a call
// that ends the shell itself (exit, exec, killing it, a set -e that
// fires): that call's result has Exited set and the shell's own exit
// status. Nothing a command prints can end another call or set its exit
// status: each call's end is marked with a nonce made for that call only.
type ShellSession interface {
	// Run runs one command line in the shell and waits for it. Errors
	// mean the command could not be run or its result not be read.
	Run(ctx context.Context, req ShellRequest) (ShellResult, error)
	// Close kills the shell and everything it started. It is idempotent.
	Close(ctx context.Context) error
}

// ShellRequest is one command line for a ShellSession.
type ShellRequest struct {
	// Cmd is the command line, as typed at a bash prompt (no NUL bytes).
	Cmd string
	// Timeout bounds the call; zero means no limit beyond ctx.
	Timeout time.Duration
	// MaxOutput caps the bytes of output kept, as ExecRequest.MaxOutput.
	MaxOutput int
}

// ShellResult is what one call did.
type ShellResult struct {
	// Output is stdout and stderr merged, as ExecResult.Output.
	Output []byte
	// ExitCode is the command line's exit status ($?); TimeoutExitCode when
	// it timed out; the shell's own exit status (128+n when killed by
	// signal n) when the call ended the shell.
	ExitCode int
	// TimedOut is set when the call was killed for exceeding Timeout.
	TimedOut bool
	// Exited is set when the shell ended during the call (see
	// ShellSession); the next call gets a fresh one.
	Exited bool
	// Restarted is set when this call ran in a fresh shell because the
	// previous one had ended: the state of earlier calls is gone.
	Restarted bool
	// OutputBytes and ElidedBytes are as in ExecResult.
	OutputBytes int64
	ElidedBytes int64
	// Duration is how long the call took inside the box.
	Duration time.Duration
}

// Interactive is implemented by sandboxes that can attach a person's
// terminal to a shell inside the box.
type Interactive interface {
	// Attach runs cmd (a login shell when empty) connected to the given
	// streams; with TTY set the command gets a pseudo-terminal. It returns
	// the command's exit code.
	Attach(ctx context.Context, req AttachRequest) (int, error)
}

// AttachRequest is an interactive session.
type AttachRequest struct {
	Cmd    []string
	Stdin  io.Reader
	Stdout io.Writer
	TTY    bool
	// Resize delivers terminal size changes (width, height) while attached.
	Resize <-chan [2]uint
	Env    []string
}

// Collector is implemented by backends whose boxes can outlive the swerve
// that opened them (a kill -9, a lost node): swerve gc lists them by the
// labels every box carries and removes them. Backends other than docker
// and local need only implement it to take part in gc.
type Collector interface {
	// Leftovers lists the backend's boxes whose owning swerve process is
	// gone (all: every box of swerve's), of run opts.RunID when set.
	Leftovers(ctx context.Context, opts LeftoverOptions) ([]Leftover, error)
	// Remove removes one box Leftovers listed; removing one already gone
	// is not an error.
	Remove(ctx context.Context, l Leftover) error
}

// LeftoverOptions filters Collector.Leftovers.
type LeftoverOptions struct {
	// All includes boxes whose owner still runs.
	All bool
	// RunID keeps only boxes of this run.
	RunID string
}

// Leftover is one box a Collector found.
type Leftover struct {
	ID    string // what Remove needs, and people read (pod name, instance)
	Image string
	RunID string
	Task  string
}
