// Package shim is the helper swerve runs inside every sandbox, and the client
// that talks to it.
//
// The helper is the swerve binary itself ("swerve shim"), started once per
// box. It reads requests from stdin and writes responses to stdout over one
// byte stream, so that each command costs a fork/exec inside the box rather
// than a round trip through the container engine.
//
// # Wire format
//
// Both directions carry frames:
//
//	uint32 header length H (big endian)
//	uint32 payload length P (big endian)
//	H bytes: a JSON-encoded Message
//	P bytes: the payload (stdin or file data in requests; output or file
//	         data in responses), raw, so binary data costs nothing extra
//
// A request carries a client-chosen ID and an Op; its response carries the
// same ID. Requests are served concurrently, so responses may come back in
// any order. Anything the helper wants to tell a person goes to stderr.
//
// A tool request (OpTool) names the tool in Message.Tool and carries the
// model's arguments, a JSON object, as its payload; the response's payload
// is the JSON-encoded tools.Result. A mistake in the arguments is reported
// inside that Result, for the model; Message.Err is for requests the
// helper could not serve at all (an unknown tool).
//
// Shell requests (OpShellOpen, OpShellRun, OpShellClose) keep a login
// bash running between commands, for a bash tool whose calls share cd and
// variables; shell.go says how each call's end is marked and how what it
// started is swept.
//
// # Containment
//
// When a command ends, by exiting, on timeout or on cancel, everything it
// started is killed before its result is sent, and nothing printed after
// its end is counted. The helper makes itself a child subreaper
// (PR_SET_CHILD_SUBREAPER), or is PID 1 in a container, so every process
// of its subtree whose parent dies is re-parented to it: once a command's
// leader is gone, whatever it started that still lives is, or descends
// from, a direct child of the helper that leads no running command. Right
// after the leader ends, and before it is reaped (a zombie until then, so
// that a leftover polling its pid, with kill -0 or in /proc, still finds
// it), the helper sweeps: it lists its own children from
// /proc/self/task/*/children (a scan of /proc only on kernels without
// those files), SIGKILLs each one no running command could have started
// (its start time, field 22 of /proc/PID/stat, is before every running
// command's start, with one clock tick of slack), reaps, and repeats until
// a round finds nothing: a killed process hands its children to the
// helper, so fork loops run out too. On timeout or cancel the helper
// first stops (SIGSTOP) the command's process group, every descendant of
// its leader and the orphans the sweep would take, and only then kills
// them all, so that none of them runs past that moment. A daemon cannot get away by forking
// twice, calling setsid, changing its process group or clearing its
// environment: none of these changes its parent chain or its start time.
// Only then is the output read to its end; with every writer dead the pipe
// ends at once. If something the sweep had to spare still holds it, the
// output is drained for at most outputDrain (10ms) and cut. An exec with
// KillOthers sweeps everything instead, the leaders of other running
// commands included; it is meant for grading boxes, where nothing but the
// eval script may run.
//
// Limits. Orphans of an ended command that a concurrent, still running
// command could have started (it started no later than they did) live
// until that command ends too, and may print into the ended command's
// output for up to outputDrain. When a leader exits by itself, there is a
// window between its exit and the sweep, of microseconds (milliseconds on
// a loaded machine), in which a child that watches for its parent's exit
// (its parent pid changes at once) can notice it and print a line before
// it is killed; closing it would take a freezer or ptrace.
// Graders therefore cut eval logs at an end line the eval script's own
// shell prints. Root in the box can kill the helper itself, which ends the
// box (PID 1 in a container; with the local backend, its orphans go to the
// next subreaper up, so the backend also kills what runs under the box's
// directory on Close); without a subreaper (prctl refused) the helper
// falls back to killing each command's process group and the descendants
// it can still find.
package shim

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// ProtocolVersion changes whenever a frame or message changes shape; the
// client refuses a helper with another version. Additions that an older
// peer answers clearly need no new version: OpTool and Message.Tool came
// that way, since a helper without them rejects the op by name ("unknown
// op") and a client without them never sends it. So did exec's KillOthers:
// a helper that does not know it leaves KilledOthers unset in its answer,
// and the client then fails the call. PrivateMemory came the same way; a
// helper that does not know it runs the command as it is. Findings too: an
// older helper reports none. User came the same way, and callers that rely
// on it check who ran.
const ProtocolVersion = 1

// Ops a client can ask for.
const (
	OpHello  = "hello"  // handshake: the helper reports its version and pid
	OpExec   = "exec"   // run a command
	OpCancel = "cancel" // kill the running exec (or stop the tool call) whose ID is Target
	OpRead   = "read"   // read a file
	OpWrite  = "write"  // write a file
	OpTool   = "tool"   // run one of the native tools (editor, search)

	// Persistent shells (see shell.go). Like OpTool they came without a
	// new protocol version: an older helper rejects them as unknown ops.
	OpShellOpen  = "shell_open"  // start a login bash; the response's Shell names it
	OpShellRun   = "shell_run"   // run the payload, a command line, in shell Shell
	OpShellClose = "shell_close" // kill shell Shell and what it started
)

// Error kinds carried in Message.ErrKind, mapped to sandbox sentinels by the
// client.
const (
	KindNotFound = "not_found"
	KindInvalid  = "invalid"
	KindOther    = "other"
)

// maxHeader and maxPayload bound a frame, so a corrupt stream fails fast
// instead of allocating gigabytes.
const (
	maxHeader  = 1 << 20
	maxPayload = 1 << 30
)

// Message is the JSON header of every frame. Requests and responses share it;
// each op uses the fields it needs.
type Message struct {
	ID uint64 `json:"id"`
	Op string `json:"op,omitempty"`

	// exec requests
	Cmd       []string `json:"cmd,omitempty"`
	Env       []string `json:"env,omitempty"`
	Cwd       string   `json:"cwd,omitempty"`
	TimeoutMS int64    `json:"timeout_ms,omitempty"`
	MaxOutput int      `json:"max_output,omitempty"`
	Stdin     bool     `json:"stdin,omitempty"` // the payload is the command's stdin
	// KillOthers: when the command ends, kill every other process in the
	// helper's subtree too, whoever started it (sandbox.ExecRequest's
	// KillOthers). The response confirms it with KilledOthers.
	KillOthers bool `json:"kill_others,omitempty"`
	// PrivateMemory: start the command non-dumpable, so no other process
	// in the box can read its memory (sandbox.ExecRequest's PrivateMemory).
	PrivateMemory bool `json:"private_memory,omitempty"`
	// User: run the command as this numeric "UID:GID" with no
	// supplementary groups (sandbox.ExecRequest's User). A helper that does
	// not know it runs the command as itself; callers check.
	User string `json:"user,omitempty"`

	// cancel requests
	Target uint64 `json:"target,omitempty"`

	// tool requests: the tool's name (file_editor, str_replace_editor,
	// search); the payload holds its JSON arguments
	Tool string `json:"tool,omitempty"`

	// shell requests: which shell (chosen by the helper at shell_open,
	// per stream)
	Shell uint64 `json:"shell,omitempty"`

	// file requests
	Path string `json:"path,omitempty"`
	Mode uint32 `json:"mode,omitempty"`

	// responses
	Err         string `json:"err,omitempty"`
	ErrKind     string `json:"err_kind,omitempty"`
	ExitCode    int    `json:"exit_code,omitempty"`
	TimedOut    bool   `json:"timed_out,omitempty"`
	OutputBytes int64  `json:"output_bytes,omitempty"`
	ElidedBytes int64  `json:"elided_bytes,omitempty"`
	DurationNS  int64  `json:"duration_ns,omitempty"`
	// KilledOthers confirms that a KillOthers request was carried out.
	KilledOthers bool `json:"killed_others,omitempty"`
	// Findings: what the helper saw done to it while the command ran that
	// no command may do (see sandbox.ExecResult.Findings).
	Findings []string `json:"findings,omitempty"`
	// ShellExited: the shell ended during this shell_run;
	// ShellRestarted: this shell_run started a fresh shell first.
	ShellExited    bool `json:"shell_exited,omitempty"`
	ShellRestarted bool `json:"shell_restarted,omitempty"`

	// hello responses
	Version  int    `json:"version,omitempty"`
	PID      int    `json:"pid,omitempty"`
	Workdir  string `json:"workdir,omitempty"`
	Software string `json:"software,omitempty"`
}

// appendFrame encodes m and payload as one frame appended to buf, so that a
// frame goes out in a single Write.
func appendFrame(buf []byte, m *Message, payload []byte) ([]byte, error) {
	h, err := json.Marshal(m)
	if err != nil {
		return buf, fmt.Errorf("shim: encode message: %w", err)
	}
	if len(payload) > maxPayload {
		return buf, fmt.Errorf("shim: payload of %d bytes is over the %d limit", len(payload), maxPayload)
	}
	buf = binary.BigEndian.AppendUint32(buf, uint32(len(h)))
	buf = binary.BigEndian.AppendUint32(buf, uint32(len(payload)))
	buf = append(buf, h...)
	return append(buf, payload...), nil
}

// readFrame reads one frame. io.EOF means the stream ended cleanly between
// frames.
func readFrame(r io.Reader) (*Message, []byte, error) {
	var lens [8]byte
	if _, err := io.ReadFull(r, lens[:]); err != nil {
		if errors.Is(err, io.ErrUnexpectedEOF) {
			return nil, nil, fmt.Errorf("shim: stream cut inside a frame header: %w", err)
		}
		return nil, nil, err
	}
	hl := binary.BigEndian.Uint32(lens[:4])
	pl := binary.BigEndian.Uint32(lens[4:])
	if hl == 0 || hl > maxHeader || pl > maxPayload {
		return nil, nil, fmt.Errorf("shim: bad frame (header %d bytes, payload %d bytes): is something else writing to the stream?", hl, pl)
	}
	body := make([]byte, int(hl)+int(pl))
	if _, err := io.ReadFull(r, body); err != nil {
		return nil, nil, fmt.Errorf("shim: stream cut inside a frame: %w", err)
	}
	m := new(Message)
	if err := json.Unmarshal(body[:hl], m); err != nil {
		return nil, nil, fmt.Errorf("shim: bad frame header: %w", err)
	}
	return m, body[hl:], nil
}
