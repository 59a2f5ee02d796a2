// Package serve is swerve's long-running HTTP server for RL trainers: the
// NeMo Gym agent surface (POST /run, POST /aggregate_metrics), health and
// Prometheus metrics, bounded concurrency with a queue, bearer-token
// auth off loopback, and a graceful drain. Episodes run through the
// Rollouts interface; other surfaces mount their handlers with Handle.
package serve

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/swerve-dev/swerve/internal/agent/signals"
)

// Defaults, with Gym's names where Gym has the setting.
const (
	DefaultListen      = "127.0.0.1:8000"
	DefaultConcurrency = 16   // Gym mini_swe_agent's concurrency
	DefaultQueue       = 1024 // requests waiting for a slot before 429
	DefaultRetryAfter  = 5 * time.Second
	maxRowBytes        = 64 << 20
)

// Options configure a Server.
type Options struct {
	// Rollouts runs the episodes behind POST /run.
	Rollouts Rollouts
	// Tasks, when set, finds each row's task before it queues; a row whose
	// task cannot be found is answered with an infrastructure row of kind
	// "task" and never reaches Rollouts.
	Tasks *Tasks
	// Token, when set, is required as "Authorization: Bearer <token>" on
	// every route but the health check.
	Token string
	// Concurrency is the number of rollouts running at once.
	Concurrency int
	// Queue is the number of accepted rollouts that may wait for a slot;
	// past Concurrency+Queue a request gets 429 with Retry-After.
	Queue int
	// RetryAfter is the delay a 429 or 503 asks the client to wait.
	RetryAfter time.Duration
	// Log receives one line per finished rollout (nil: slog's default).
	Log *slog.Logger
	// Progress, when set, gets one plain line per rollout that ends (the
	// operator's view, whatever --log-level says): instance id, rollout
	// id, reward, time (RolloutLine).
	Progress io.Writer
}

// Server is the HTTP server. Build it with New, mount extra surfaces with
// Handle, then Serve.
type Server struct {
	opts  Options
	mux   *http.ServeMux
	met   *metrics
	sem   chan struct{}
	admit atomic.Int64 // requests queued or running
	drain atomic.Bool

	progressMu sync.Mutex // one Options.Progress line at a time

	// active counts the /run requests past the drain check; drain is set
	// under the same lock, so a drain waits for every request it let in.
	activeMu sync.Mutex
	active   int
	idle     *sync.Cond
	drainCh  chan struct{}   // closed when the drain begins: queued requests leave
	hard     context.Context // cancelled on a hard stop: every rollout ends now
	stopAll  context.CancelFunc

	mu       sync.Mutex
	shutdown []func(context.Context)
}

// New checks the options and builds a Server.
func New(opts Options) (*Server, error) {
	if opts.Rollouts == nil {
		return nil, errors.New("serve: no rollouts implementation")
	}
	if opts.Concurrency <= 0 {
		opts.Concurrency = DefaultConcurrency
	}
	if opts.Queue < 0 {
		return nil, fmt.Errorf("serve: queue %d: must be 0 or more", opts.Queue)
	}
	if opts.RetryAfter <= 0 {
		opts.RetryAfter = DefaultRetryAfter
	}
	if opts.Log == nil {
		opts.Log = slog.Default()
	}
	s := &Server{opts: opts, mux: http.NewServeMux(), met: newMetrics(), sem: make(chan struct{}, opts.Concurrency)}
	s.hard, s.stopAll = context.WithCancel(context.Background())
	s.idle = sync.NewCond(&s.activeMu)
	s.drainCh = make(chan struct{})
	s.mux.HandleFunc("GET /{$}", s.health)
	s.mux.Handle("GET /metrics", s.met.reg)
	s.mux.HandleFunc("POST /run", s.run)
	s.mux.HandleFunc("POST /aggregate_metrics", s.aggregate)
	return s, nil
}

// CheckListen refuses a non-loopback listen address without a token.
func CheckListen(addr, token string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("--listen %s: %w", addr, err)
	}
	if token != "" || isLoopback(host) {
		return nil
	}
	return fmt.Errorf("--listen %s is not a loopback address: give a bearer token with --token or SWERVE_TOKEN", addr)
}

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// Handle mounts another surface's handler (the resources and sandbox-tool
// surfaces) behind the same auth. pattern is a net/http ServeMux pattern.
func (s *Server) Handle(pattern string, h http.Handler) { s.mux.Handle(pattern, h) }

// AddMetric adds a series to /metrics, read from f at each scrape; typ is
// "gauge" or "counter" (surfaces mounted on Mux report their state so).
func (s *Server) AddMetric(name, help, typ string, f func() float64) {
	s.met.reg.add(&funcValue{name: name, help: help, typ: typ, f: f})
}

// Mux is the server's own mux, for surfaces that register several routes
// (internal/serve/sessions). Its routes sit behind the server's token.
func (s *Server) Mux() *http.ServeMux { return s.mux }

// OnShutdown registers f to run once the server has stopped taking
// requests, before Serve returns: surfaces with boxes of their own remove
// them there.
func (s *Server) OnShutdown(f func(context.Context)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.shutdown = append(s.shutdown, f)
}

// Draining reports whether a drain has begun.
func (s *Server) Draining() bool { return s.drain.Load() }

// Handler is the whole server as an http.Handler (auth included).
func (s *Server) Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.opts.Token != "" && !(r.Method == http.MethodGet && r.URL.Path == "/") && !s.authorized(r) {
			w.Header().Set("WWW-Authenticate", `Bearer realm="swerve"`)
			writeJSON(w, http.StatusUnauthorized, map[string]string{"error": "missing or wrong bearer token"})
			return
		}
		s.mux.ServeHTTP(w, r)
	})
}

func (s *Server) authorized(r *http.Request) bool {
	h := r.Header.Get("Authorization")
	tok, ok := strings.CutPrefix(h, "Bearer ")
	if !ok {
		return false
	}
	return subtle.ConstantTimeCompare([]byte(tok), []byte(s.opts.Token)) == 1
}

// Serve answers on ln until drain closes or ctx ends. When drain closes it
// drains: new and queued rollouts get 503, running ones finish and are
// answered, then the listener closes. When ctx ends (a second signal) every
// rollout is cancelled at once. Either way Serve returns only after every
// rollout has returned and the OnShutdown functions have run.
func (s *Server) Serve(ctx context.Context, ln net.Listener, drain <-chan struct{}) error {
	hs := &http.Server{Handler: s.Handler(), ReadHeaderTimeout: 30 * time.Second}
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	stopHard := context.AfterFunc(ctx, s.stopAll)
	defer stopHard()
	var err error
	select {
	case err = <-errc:
		s.stopAll()
	case <-drain:
	case <-ctx.Done():
	}
	s.waitIdle() // a hard stop (ctx) cancels the rollouts, so this ends
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if e := hs.Shutdown(sctx); e != nil && err == nil {
		err = fmt.Errorf("serve: shutdown: %w", e)
	}
	s.mu.Lock()
	fns := s.shutdown
	s.mu.Unlock()
	for _, f := range fns {
		f(sctx)
	}
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	return err
}

func (s *Server) health(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
}

func (s *Server) retryAfter(w http.ResponseWriter) {
	secs := int((s.opts.RetryAfter + time.Second - 1) / time.Second)
	w.Header().Set("Retry-After", strconv.Itoa(secs))
}

// enter admits a /run request unless a drain has begun.
func (s *Server) enter() bool {
	s.activeMu.Lock()
	defer s.activeMu.Unlock()
	if s.drain.Load() {
		return false
	}
	s.active++
	return true
}

func (s *Server) leave() {
	s.activeMu.Lock()
	defer s.activeMu.Unlock()
	if s.active--; s.active == 0 {
		s.idle.Broadcast()
	}
}

// waitIdle begins the drain and waits for every admitted request.
func (s *Server) waitIdle() {
	s.activeMu.Lock()
	defer s.activeMu.Unlock()
	if !s.drain.Swap(true) {
		close(s.drainCh)
	}
	for s.active > 0 {
		s.idle.Wait()
	}
}

// run is POST /run: one Gym row in, the row with response and reward out.
func (s *Server) run(w http.ResponseWriter, r *http.Request) {
	if !s.enter() {
		s.met.rejected.WithLabelValues("draining").Inc()
		s.retryAfter(w)
		writeJSON(w, http.StatusServiceUnavailable, map[string]string{"error": "server is draining: no new rollouts"})
		return
	}
	defer s.leave()
	limit := int64(s.opts.Concurrency + s.opts.Queue)
	if s.admit.Add(1) > limit {
		s.admit.Add(-1)
		s.met.rejected.WithLabelValues("queue_full").Inc()
		s.retryAfter(w)
		writeJSON(w, http.StatusTooManyRequests, map[string]string{
			"error": fmt.Sprintf("%d rollouts running or queued: retry later", limit)})
		return
	}
	defer s.admit.Add(-1)

	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxRowBytes))
	if err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "row: " + err.Error()})
		return
	}
	req, err := parseRequest(body)
	if err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": err.Error()})
		return
	}

	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	defer context.AfterFunc(s.hard, cancel)()

	if s.opts.Tasks != nil {
		t, err := s.opts.Tasks.Find(ctx, req.Row)
		if err != nil {
			res := &RolloutResult{InfraError: "task", InfraDetail: err.Error()}
			s.met.observe(res, outcomeInfra)
			writeJSON(w, http.StatusOK, buildRow(req, res))
			return
		}
		req.Task = t
	}
	if q, ok := s.opts.Rollouts.(Queuer); ok {
		defer q.Queued(req)()
	}

	queuedAt := time.Now()
	s.met.queued.Inc()
	select {
	case s.sem <- struct{}{}:
		s.met.queued.Dec()
	case <-ctx.Done():
		s.met.queued.Dec()
		s.met.finished.WithLabelValues(outcomeCancelled).Inc()
		return
	case <-s.drainCh:
		// Not started yet: the client should take it elsewhere.
		s.met.queued.Dec()
		s.met.rejected.WithLabelValues("draining").Inc()
		s.retryAfter(w)
		writeJSON(w, http.StatusServiceUnavailable, map[string]string{"error": "server is draining: the rollout did not start"})
		return
	}
	defer func() { <-s.sem }()
	queue := secondsSince(queuedAt)

	s.met.running.Inc()
	start := time.Now()
	res, err := s.rollout(ctx, req)
	s.met.running.Dec()
	if ctx.Err() != nil {
		// The client went away or the server is stopping hard: nobody
		// reads an answer, and a cancelled rollout is no verdict.
		s.met.observe(nil, outcomeCancelled)
		s.opts.Log.Info("rollout cancelled", "rollout", req.RolloutID, "instance_id", req.InstanceID)
		s.progress(RolloutLine(req, nil, secondsSince(start)))
		return
	}
	if err != nil {
		res = &RolloutResult{InfraError: "rollout", InfraDetail: err.Error()}
	}
	res.Timings.Queue = queue
	if res.Timings.Total == 0 {
		res.Timings.Total = secondsSince(start)
	}
	outcome := outcomeUnresolved
	switch {
	case res.InfraError != "":
		outcome = outcomeInfra
	case res.Resolved:
		outcome = outcomeResolved
	}
	s.met.observe(res, outcome)
	s.opts.Log.Info("rollout finished", "rollout", req.RolloutID, "instance_id", req.InstanceID,
		"reward", res.Reward, "exit_reason", res.ExitReason, "infra_error", res.InfraError)
	s.progress(RolloutLine(req, res, res.Timings.Total))
	writeJSON(w, http.StatusOK, buildRow(req, res))
}

// progress writes one line to Options.Progress, if any; lines of rollouts
// ending at once do not interleave.
func (s *Server) progress(line string) {
	if s.opts.Progress == nil {
		return
	}
	s.progressMu.Lock()
	defer s.progressMu.Unlock()
	_, _ = io.WriteString(s.opts.Progress, line)
}

// RolloutLine is the one line serve prints per rollout that ends: the
// instance id, the rollout id, the reward (or why there is none) and the
// rollout's time. res nil: the rollout was cancelled.
func RolloutLine(req *RolloutRequest, res *RolloutResult, seconds float64) string {
	id := req.InstanceID
	if id == "" {
		id = "(row without instance_id)"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "rollout %s", id)
	if req.RolloutID != "" && req.RolloutID != req.InstanceID {
		fmt.Fprintf(&b, " [%s]", req.RolloutID)
	}
	switch {
	case res == nil:
		b.WriteString(": cancelled")
	default:
		fmt.Fprintf(&b, ": reward %s", strconv.FormatFloat(res.Reward, 'g', 4, 64))
		if res.ExitReason != "" {
			fmt.Fprintf(&b, " (%s)", res.ExitReason)
		}
		if res.InfraError != "" {
			fmt.Fprintf(&b, ", infra_error %s", res.InfraError)
		}
	}
	fmt.Fprintf(&b, " in %.1fs\n", seconds)
	return b.String()
}

// rollout calls the implementation, turning a panic into an error so that
// one bad episode cannot take the server down.
func (s *Server) rollout(ctx context.Context, req *RolloutRequest) (res *RolloutResult, err error) {
	defer func() {
		if p := recover(); p != nil {
			res, err = nil, fmt.Errorf("rollout %s panicked: %v", req.RolloutID, p)
		}
	}()
	res, err = s.opts.Rollouts.Rollout(ctx, req)
	if err == nil && res == nil {
		err = fmt.Errorf("rollout %s: no result", req.RolloutID)
	}
	return res, err
}

// parseRequest reads a posted Gym row.
func parseRequest(body []byte) (*RolloutRequest, error) {
	row, err := ParseRow(body)
	if err != nil {
		return nil, err
	}
	raw, ok := row["responses_create_params"]
	if !ok {
		return nil, errors.New("row: missing responses_create_params")
	}
	req := &RolloutRequest{Row: row, InstanceID: row.String("instance_id"),
		PolicyBaseURL: row.String("policy_base_url"), PolicyAPIKey: row.String("policy_api_key")}
	if err := json.Unmarshal(raw, &req.Params); err != nil {
		return nil, fmt.Errorf("row %s: responses_create_params: %w", req.InstanceID, err)
	}
	if len(req.Params.Input) == 0 || string(req.Params.Input) == "null" {
		return nil, fmt.Errorf("row %s: responses_create_params: missing input", req.InstanceID)
	}
	req.RolloutID = rolloutID(row)
	return req, nil
}

// rolloutID follows Gym: _ng_rollout_id, else {task}-{rollout}[-a{attempt}].
func rolloutID(row Row) string {
	if id := row.String("_ng_rollout_id"); id != "" {
		return id
	}
	t, tok := row.Number("_ng_task_index")
	k, kok := row.Number("_ng_rollout_index")
	if !tok || !kok {
		return row.String("instance_id")
	}
	id := fmt.Sprintf("%d-%d", int(t), int(k))
	if a, ok := row.Number("_ng_attempt_index"); ok {
		id += fmt.Sprintf("-a%d", int(a))
	}
	return id
}

// buildRow is the answer to POST /run: the posted row, its
// responses_create_params (input replaced by the harness's messages when the
// rollout reports them), plus response, reward, resolved and metadata; an
// infrastructure failure adds infra_error and Gym's _ng_failure_class
// ("transient", or "task_invalid" with _ng_failure_terminal for a task that
// cannot be run as given).
func buildRow(req *RolloutRequest, res *RolloutResult) Row {
	out := req.Row.Clone()
	if len(res.Input) > 0 {
		var params Row
		if json.Unmarshal(out["responses_create_params"], &params) == nil && params != nil {
			params = params.Clone()
			params["input"] = res.Input
			out.Set("responses_create_params", params)
		}
	}
	model := res.Model
	if model == "" {
		model = req.Params.Model
	}
	if model == "" {
		model = "policy"
	}
	tools := req.Params.Tools
	if len(tools) == 0 || string(tools) == "null" {
		tools = json.RawMessage("[]")
	}
	output := res.Output
	if output == nil {
		output = []OutputItem{}
	}
	resp := Response{
		ID: "resp_" + randomHex(12), Object: "response", CreatedAt: float64(time.Now().Unix()),
		Model: model, Status: "completed", Output: output, ParallelToolCalls: true, ToolChoice: "auto",
		Tools: tools, Temperature: req.Params.Temperature, TopP: req.Params.TopP,
		MaxOutputTokens: req.Params.MaxOutputTokens, Usage: res.Usage,
	}
	reward := res.Reward
	if res.InfraError != "" {
		reward = 0
		resp.Status = "failed"
		resp.Error = &ResponseError{Code: "server_error", Message: res.InfraError + ": " + res.InfraDetail}
	}
	out.Set("response", resp)
	out.Set("reward", reward)
	out.Set("resolved", res.Resolved && res.InfraError == "")
	if req.InstanceID != "" {
		out.Set("instance_id", req.InstanceID)
	}
	meta := map[string]any{
		"model_patch": res.Patch,
		"exit_reason": res.ExitReason,
		"steps":       res.Steps,
		"timings":     res.Timings,
	}
	if len(res.EvalReport) > 0 {
		meta["eval_report"] = res.EvalReport
	}
	if res.Scaffold != "" {
		meta["scaffold"] = res.Scaffold
	}
	if res.Dataset != "" {
		meta["dataset"] = res.Dataset
	}
	if !res.Started.IsZero() {
		meta["started"] = res.Started.UTC().Format(time.RFC3339Nano)
	}
	if len(res.History) > 0 {
		meta["history"] = res.History
	}
	if len(res.Signals) > 0 {
		meta["signals"] = signals.Counts(res.Signals)
		meta["signal_flags"] = res.Signals
	}
	if res.InfraError != "" {
		infra := map[string]string{"kind": res.InfraError, "detail": res.InfraDetail}
		meta["infra_error"] = infra
		out.Set("infra_error", infra)
		// Gym's failure sidecar: the collector writes such a row to
		// <stem>_failures.jsonl, keeps it out of the metrics, and retries
		// it on --resume unless it is terminal.
		if res.InfraError == "task" {
			out.Set("_ng_failure_class", "task_invalid")
			out.Set("_ng_failure_terminal", true)
		} else {
			out.Set("_ng_failure_class", "transient")
		}
	}
	out.Set("metadata", meta)
	return out
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}
