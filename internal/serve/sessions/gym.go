package sessions

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/swerve-dev/swerve/internal/agent/signals"
)

// DefaultCookieName is the session cookie of the Gym surface: Gym names it
// {ClassName}___{config name}.
const DefaultCookieName = "SwerveResourcesServer___swerve"

// maxBody bounds a request body (a SWE-bench row with its patches and a
// whole Responses object fits easily).
const maxBody = 64 << 20

// GymOptions configure the NeMo Gym resources surface.
type GymOptions struct {
	// Prefix is put before every route ("" mounts them at the root, as a
	// Gym resources server has them).
	Prefix string
	// CookieName is the session cookie (DefaultCookieName when empty).
	CookieName string
	// Aggregate mounts POST /aggregate_metrics too (leave it off where the
	// agent surface mounts its own on the same mux).
	Aggregate bool
}

// The tool routes of the Gym surface: bash and the names swerve's
// scaffolds give the same tools.
var (
	bashTools   = []string{"bash", "execute_bash"}
	nativeTools = []string{"str_replace_editor", "file_editor", "search"}
)

// Register mounts both surfaces at the root: the Gym resources routes
// (without /aggregate_metrics, which the agent surface serves) and the
// sandbox API.
func Register(mux *http.ServeMux, m *Manager) {
	RegisterGym(mux, m, GymOptions{})
	RegisterSandboxes(mux, m, "")
}

// RegisterGym mounts the NeMo Gym resources-server surface on mux:
// POST /seed_session, /verify, a POST route per tool, GET /reverify_mode
// (and POST /aggregate_metrics with opts.Aggregate). Every response sets the
// session cookie.
func RegisterGym(mux *http.ServeMux, m *Manager, opts GymOptions) {
	if opts.CookieName == "" {
		opts.CookieName = DefaultCookieName
	}
	g := &gym{m: m, opts: opts}
	p := opts.Prefix
	mux.Handle("POST "+p+"/seed_session", g.withSession(g.seed))
	mux.Handle("POST "+p+"/verify", g.withSession(g.verify))
	for _, name := range bashTools {
		mux.Handle("POST "+p+"/"+name, g.withSession(g.bash))
	}
	for _, name := range nativeTools {
		mux.Handle("POST "+p+"/"+name, g.withSession(g.tool(name)))
	}
	mux.Handle("GET "+p+"/reverify_mode", g.withSession(func(w http.ResponseWriter, r *http.Request, _ string) {
		// Verify diffs the session's box: it cannot be redone from the
		// stored response alone.
		writeJSON(w, http.StatusOK, "unsupported")
	}))
	if opts.Aggregate {
		mux.Handle("POST "+p+"/aggregate_metrics", g.withSession(func(w http.ResponseWriter, r *http.Request, _ string) {
			AggregateHandler(w, r)
		}))
	}
}

type gym struct {
	m    *Manager
	opts GymOptions
}

// cookieValue carries the session id the way Starlette's session cookie
// does: base64 of a JSON object.
func cookieValue(sid string) string {
	b, _ := json.Marshal(map[string]string{"session_id": sid})
	return base64.RawURLEncoding.EncodeToString(b)
}

// sessionID reads the session id from the request's cookie ("" if none).
func (g *gym) sessionID(r *http.Request) string {
	c, err := r.Cookie(g.opts.CookieName)
	if err != nil {
		return ""
	}
	raw, err := base64.RawURLEncoding.DecodeString(c.Value)
	if err != nil {
		return ""
	}
	var v struct {
		SessionID string `json:"session_id"`
	}
	if json.Unmarshal(raw, &v) != nil || len(v.SessionID) > 200 {
		return ""
	}
	return v.SessionID
}

// withSession gives the handler the request's session id, minting one when
// the request has none, and sets the cookie on the response whatever its
// status (Gym's agents forward only the last response's cookie).
func (g *gym) withSession(h func(http.ResponseWriter, *http.Request, string)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sid := g.sessionID(r)
		if sid == "" {
			sid = newID()
		}
		http.SetCookie(w, &http.Cookie{Name: g.opts.CookieName, Value: cookieValue(sid), Path: "/", HttpOnly: true, SameSite: http.SameSiteLaxMode})
		r.Body = http.MaxBytesReader(w, r.Body, maxBody)
		h(w, r, sid)
	})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
}

// statusOf maps a Manager error to an HTTP status.
func statusOf(err error) int {
	switch {
	case errors.Is(err, ErrFull):
		return http.StatusTooManyRequests
	case errors.Is(err, ErrNotFound):
		return http.StatusNotFound
	case errors.Is(err, ErrClosed):
		return http.StatusServiceUnavailable
	case IsInfra(err):
		return http.StatusBadGateway
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return http.StatusServiceUnavailable
	}
	return http.StatusBadRequest
}

// writeError answers with {"detail": ...} as FastAPI does, and Retry-After
// on 429 and 503.
func writeError(w http.ResponseWriter, err error) {
	status := statusOf(err)
	if status == http.StatusTooManyRequests || status == http.StatusServiceUnavailable {
		w.Header().Set("Retry-After", "5")
	}
	writeJSON(w, status, map[string]any{"detail": err.Error(), "infrastructure_error": IsInfra(err)})
}

// readObject reads the body as a JSON object (an empty body is {}).
func readObject(r *http.Request) (json.RawMessage, map[string]json.RawMessage, error) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return nil, nil, fmt.Errorf("read body: %w", err)
	}
	if len(bytes.TrimSpace(body)) == 0 {
		body = []byte("{}")
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(body, &m); err != nil {
		return nil, nil, fmt.Errorf("body: not a JSON object: %w", err)
	}
	return body, m, nil
}

func str(m map[string]json.RawMessage, key string) string {
	var s string
	_ = json.Unmarshal(m[key], &s)
	return s
}

// seed opens the row's box for this session; a session seeded again gets
// a fresh box.
func (g *gym) seed(w http.ResponseWriter, r *http.Request, sid string) {
	body, m, err := readObject(r)
	if err != nil {
		writeError(w, err)
		return
	}
	if old, err := g.m.Lookup(sid); err == nil {
		_ = g.m.Release(r.Context(), old.ID)
	}
	s, _, err := g.m.Open(r.Context(), sid, str(m, "instance_id"), body)
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"sandbox_handle": s.ID})
}

// bash runs {"command": ..., "timeout": seconds} and answers with the
// output as a JSON string; the exit code is in X-Exit-Code. Mistakes are
// answered as text too (with a 4xx), since Gym's agents show any answer to
// the model.
func (g *gym) bash(w http.ResponseWriter, r *http.Request, sid string) {
	_, m, err := readObject(r)
	if err != nil {
		writeError(w, err)
		return
	}
	s, err := g.m.Lookup(sid)
	if err != nil {
		writeError(w, fmt.Errorf("%w: call /seed_session first", err))
		return
	}
	var args struct {
		Command string  `json:"command"`
		Timeout float64 `json:"timeout"`
	}
	b, _ := json.Marshal(m)
	_ = json.Unmarshal(b, &args)
	if args.Command == "" {
		writeError(w, errors.New("command: missing"))
		return
	}
	res, err := g.m.Bash(r.Context(), s, args.Command, time.Duration(args.Timeout*float64(time.Second)))
	if err != nil {
		writeError(w, err)
		return
	}
	w.Header().Set("X-Exit-Code", strconv.Itoa(res.ExitCode))
	writeJSON(w, http.StatusOK, res.Output)
}

// tool runs one native tool with the body as its arguments.
func (g *gym) tool(name string) func(http.ResponseWriter, *http.Request, string) {
	return func(w http.ResponseWriter, r *http.Request, sid string) {
		body, _, err := readObject(r)
		if err != nil {
			writeError(w, err)
			return
		}
		s, err := g.m.Lookup(sid)
		if err != nil {
			writeError(w, fmt.Errorf("%w: call /seed_session first", err))
			return
		}
		res, err := g.m.Tool(r.Context(), s, name, body)
		if err != nil {
			writeError(w, err)
			return
		}
		if res.Error {
			w.Header().Set("X-Tool-Error", "1")
		}
		writeJSON(w, http.StatusOK, res.Output)
	}
}

// verify grades the session's patch in a fresh box, echoes the body with
// the verdict's fields, and closes the session's box. An infrastructure
// failure is a 200 with evaluation_completed false, reward 0 and
// infrastructure_error set: never a reward, never a 5xx.
func (g *gym) verify(w http.ResponseWriter, r *http.Request, sid string) {
	_, m, err := readObject(r)
	if err != nil {
		writeError(w, err)
		return
	}
	s, err := g.m.Lookup(sid)
	if err != nil {
		writeError(w, fmt.Errorf("%w: call /seed_session first", err))
		return
	}
	defer g.m.Release(context.WithoutCancel(r.Context()), s.ID)
	v, err := g.m.Verify(r.Context(), s)
	if err != nil && r.Context().Err() != nil {
		return // the client is gone
	}
	out := make(map[string]any, len(m)+10)
	for k, val := range m {
		out[k] = val
	}
	set := func(k string, val any) { out[k] = val }
	set("evaluation_completed", err == nil)
	set("resolved", false)
	set("reward", 0.0)
	set("model_patch", "")
	set("test_output", "")
	set("sandbox_handle", s.ID)
	if s.History != nil {
		set("history", s.History)
	}
	if f := s.Signals(); len(f) > 0 {
		// The audit's flags, whatever the outcome.
		set("signals", signals.Counts(f))
		set("signal_flags", f)
	}
	if v != nil {
		set("model_patch", v.Patch)
		set("timings", map[string]float64{"patch_seconds": v.PatchTime.Seconds(), "eval_seconds": v.VerifyTime.Seconds()})
		set("patch_time", v.PatchTime.Seconds())
		set("eval_time", v.VerifyTime.Seconds())
	}
	if err != nil {
		set("infrastructure_error", err.Error())
	} else {
		d := v.Verdict
		set("resolved", d.Resolved)
		set("reward", d.Reward)
		set("test_output", d.TestOutput)
		set("reason", d.Reason)
		set("grader", d.Grader)
		if len(d.Report) > 0 {
			set("eval_report", d.Report)
		}
		if len(d.Tampered) > 0 {
			set("tampered", d.Tampered)
		}
	}
	writeJSON(w, http.StatusOK, out)
}
