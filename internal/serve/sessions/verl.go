package sessions

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/swerve-dev/swerve/internal/agent/signals"
)

// RegisterSandboxes mounts the sandbox-tool API for verl-style trainers on
// mux, under prefix ("" for /sandboxes):
//
//	POST   /sandboxes               create: {"request_id", "instance_id", "row"} → {"id", "created", "instance_id"}
//	POST   /sandboxes/{id}/execute  {"tool": "bash"|"submit_solution"|<editor>, "arguments": {...}}
//	DELETE /sandboxes/{id}          release (idempotent)
//
// A create with the request_id (or trajectory_id) of an open sandbox
// returns that sandbox, so one trajectory keeps one box across calls.
func RegisterSandboxes(mux *http.ServeMux, m *Manager, prefix string) {
	v := &sandboxes{m: m}
	mux.HandleFunc("POST "+prefix+"/sandboxes", v.create)
	mux.HandleFunc("POST "+prefix+"/sandboxes/{id}/execute", v.execute)
	mux.HandleFunc("DELETE "+prefix+"/sandboxes/{id}", v.release)
}

type sandboxes struct{ m *Manager }

// CreateRequest is the body of POST /sandboxes.
type CreateRequest struct {
	// RequestID (or TrajectoryID) names the trajectory: creates with the
	// same one share a box.
	RequestID    string `json:"request_id,omitempty"`
	TrajectoryID string `json:"trajectory_id,omitempty"`
	// InstanceID names a task of the served datasets; Row, if set, is the
	// task's own dataset row.
	InstanceID string          `json:"instance_id,omitempty"`
	Row        json.RawMessage `json:"row,omitempty"`
}

// CreateResponse is the answer to POST /sandboxes.
type CreateResponse struct {
	ID         string `json:"id"`
	Created    bool   `json:"created"`
	InstanceID string `json:"instance_id"`
}

// ExecuteRequest is the body of POST /sandboxes/{id}/execute.
type ExecuteRequest struct {
	Tool      string          `json:"tool"`
	Arguments json.RawMessage `json:"arguments,omitempty"`
}

// ExecuteResponse is the answer to an execute: the text for the model, the
// step reward (submit_solution's grade; 0 otherwise) and the details.
type ExecuteResponse struct {
	Output   string   `json:"output"`
	Reward   float64  `json:"reward"`
	ExitCode *int     `json:"exit_code,omitempty"`
	Error    bool     `json:"error,omitempty"`
	Done     bool     `json:"done,omitempty"`
	Resolved *bool    `json:"resolved,omitempty"`
	Patch    *string  `json:"patch,omitempty"`
	Reason   string   `json:"reason,omitempty"`
	Timings  *Timings `json:"timings,omitempty"`
	// InfrastructureError is set when grading could not run: the reward is
	// then no verdict on the patch.
	InfrastructureError string `json:"infrastructure_error,omitempty"`
	// Signals counts the audit's flags for the session's calls by kind;
	// SignalFlags lists them (submit only).
	Signals     map[string]int `json:"signals,omitempty"`
	SignalFlags []signals.Flag `json:"signal_flags,omitempty"`
}

// Timings of a submit_solution, in seconds.
type Timings struct {
	Patch float64 `json:"patch_seconds"`
	Eval  float64 `json:"eval_seconds"`
}

func (v *sandboxes) create(w http.ResponseWriter, r *http.Request) {
	var req CreateRequest
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxBody)).Decode(&req); err != nil {
		writeError(w, fmt.Errorf("body: %w", err))
		return
	}
	key := req.RequestID
	if key == "" {
		key = req.TrajectoryID
	}
	if req.InstanceID == "" && len(req.Row) == 0 {
		writeError(w, errors.New("instance_id: name a task (or send its row)"))
		return
	}
	s, created, err := v.m.Open(r.Context(), key, req.InstanceID, req.Row)
	if err != nil {
		writeError(w, err)
		return
	}
	status := http.StatusOK
	if created {
		status = http.StatusCreated
	}
	writeJSON(w, status, CreateResponse{ID: s.ID, Created: created, InstanceID: s.Task.InstanceID})
}

func (v *sandboxes) execute(w http.ResponseWriter, r *http.Request) {
	var req ExecuteRequest
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxBody)).Decode(&req); err != nil {
		writeError(w, fmt.Errorf("body: %w", err))
		return
	}
	s, err := v.m.Get(r.PathValue("id"))
	if err != nil {
		writeError(w, fmt.Errorf("sandbox %s: %w", r.PathValue("id"), err))
		return
	}
	if len(req.Arguments) == 0 || string(req.Arguments) == "null" {
		req.Arguments = json.RawMessage("{}")
	}
	switch req.Tool {
	case "bash", "execute_bash":
		var a struct {
			Command string  `json:"command"`
			Timeout float64 `json:"timeout"`
		}
		if err := json.Unmarshal(req.Arguments, &a); err != nil || a.Command == "" {
			writeJSON(w, http.StatusOK, ExecuteResponse{Output: "bash: give the command to run as the \"command\" argument", Error: true})
			return
		}
		res, err := v.m.Bash(r.Context(), s, a.Command, time.Duration(a.Timeout*float64(time.Second)))
		if err != nil {
			writeError(w, err)
			return
		}
		code := res.ExitCode
		writeJSON(w, http.StatusOK, ExecuteResponse{Output: res.Output, ExitCode: &code})
	case "submit_solution", "submit":
		ver, err := v.m.Verify(r.Context(), s)
		if err != nil && r.Context().Err() != nil {
			return
		}
		out := ExecuteResponse{Done: true}
		if f := s.Signals(); len(f) > 0 {
			out.Signals, out.SignalFlags = signals.Counts(f), f
		}
		if ver != nil {
			out.Patch = &ver.Patch
			out.Timings = &Timings{Patch: ver.PatchTime.Seconds(), Eval: ver.VerifyTime.Seconds()}
		}
		if err != nil {
			if !IsInfra(err) {
				writeError(w, err)
				return
			}
			out.InfrastructureError = err.Error()
			out.Output = "The solution could not be graded (infrastructure error)."
			writeJSON(w, http.StatusOK, out)
			return
		}
		d := ver.Verdict
		out.Reward, out.Resolved, out.Reason = d.Reward, &d.Resolved, d.Reason
		out.Output = fmt.Sprintf("Submitted. reward %g: %s", d.Reward, d.Reason)
		writeJSON(w, http.StatusOK, out)
	case "str_replace_editor", "file_editor", "search":
		res, err := v.m.Tool(r.Context(), s, req.Tool, req.Arguments)
		if err != nil {
			writeError(w, err)
			return
		}
		writeJSON(w, http.StatusOK, ExecuteResponse{Output: res.Output, Error: res.Error})
	default:
		writeJSON(w, http.StatusOK, ExecuteResponse{Output: fmt.Sprintf("unknown tool %q: use bash, submit_solution, str_replace_editor, file_editor or search", req.Tool), Error: true})
	}
}

func (v *sandboxes) release(w http.ResponseWriter, r *http.Request) {
	if err := v.m.Release(context.WithoutCancel(r.Context()), r.PathValue("id")); err != nil {
		writeError(w, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}
