// Package collect drives a rollout server the way NeMo Gym's collector
// (ng_collect_rollouts, now `gym eval run`) does: it posts each input row,
// K times for GRPO groups, to the server's /run, writes the rollout rows
// as they finish, resumes where a killed run stopped, and reports the
// reward profile.
//
// Files, for --output out/rollouts.jsonl:
//
//	out/rollouts.jsonl                        finished rollouts, one JSON row a line
//	out/rollouts_materialized_inputs.jsonl    every (row, repeat) request, written first
//	out/rollouts_failures.jsonl               rows that came back with _ng_failure_class
//	out/rollouts_aggregate_metrics.json       the server's (or the local) aggregate metrics
//
// Each input row becomes K requests, adjacent (aabbcc), with
// _ng_task_index (shared by identical input lines), _ng_rollout_index
// 0..K-1 and agent_ref (kept when the row has one). The server's answer is
// written with those three fields set again. Rows are appended whole and
// synced, so a run killed mid-way leaves only complete lines (a torn last
// line is cut off on the next run), and a rerun skips every (task,
// rollout) pair already in the output.
package collect

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Defaults for Options.
const (
	DefaultConcurrency = 8
	DefaultAgentName   = "swerve_agent"
	// MaxAttempts is how many times a (row, repeat) pair that came back as
	// a failure row is tried over reruns, unless the failure is terminal.
	MaxAttempts = 3
)

// Options configure Run.
type Options struct {
	// Server is the rollout server's base URL (http://127.0.0.1:8000).
	Server string
	// Token, when set, is sent as a bearer token.
	Token string
	// Input is the JSONL of rows; Output the rollouts JSONL.
	Input, Output string
	// Concurrency bounds the requests in flight (default 8).
	Concurrency int
	// NumRepeats is K, the rollouts per row (default 1).
	NumRepeats int
	// Limit, when positive, takes only the first Limit input rows.
	Limit int
	// AgentName fills agent_ref for rows without one (default swerve_agent).
	AgentName string
	// HTTPClient carries the requests; nil means one without a timeout (a
	// rollout takes as long as it takes).
	HTTPClient *http.Client
	// Progress, when set, gets one line per finished rollout.
	Progress io.Writer
	// MaxBackoff caps the wait between retries of a busy or unreachable
	// server (default one minute); Retry-After is honoured up to it.
	MaxBackoff time.Duration
	// Fresh starts over: the output and failures files are emptied first
	// (Gym's collector without --resume). By default a run resumes.
	Fresh bool
	// MaxTransportRetries is how many times a request that got no answer
	// (connection refused or reset) is re-sent before the pair is written
	// as a failure (default 5). A 429 or 503 is re-sent until ctx ends.
	MaxTransportRetries int
}

// Result is what a collection did.
type Result struct {
	// Pairs is the number of (row, repeat) pairs; Skipped were finished (or
	// given up) by earlier runs; Finished and Failed are this run's.
	Pairs, Skipped, Finished, Failed int
	// Profile sums up every row in the output file.
	Profile Profile
	// Metrics is the aggregate metrics file's content; Remote tells whether
	// the server computed it.
	Metrics json.RawMessage
	Remote  bool
}

// pair is one request.
type pair struct {
	task, rollout int
	row           map[string]json.RawMessage
}

// name is how progress lines call the pair's row: its instance_id, else
// (a row without one) its task index.
func (p pair) name() string {
	var id string
	if raw, ok := p.row["instance_id"]; ok && json.Unmarshal(raw, &id) == nil && id != "" {
		return id
	}
	return fmt.Sprintf("task %d", p.task)
}

func (o *Options) defaults() error {
	if o.Server == "" || o.Input == "" || o.Output == "" {
		return errors.New("collect: server, input and output are required")
	}
	o.Server = strings.TrimRight(o.Server, "/")
	if o.Concurrency <= 0 {
		o.Concurrency = DefaultConcurrency
	}
	if o.NumRepeats <= 0 {
		o.NumRepeats = 1
	}
	if o.AgentName == "" {
		o.AgentName = DefaultAgentName
	}
	if o.HTTPClient == nil {
		o.HTTPClient = &http.Client{}
	}
	if o.MaxBackoff <= 0 {
		o.MaxBackoff = time.Minute
	}
	if o.MaxTransportRetries <= 0 {
		o.MaxTransportRetries = 5
	}
	return nil
}

// Paths of the files next to the output.
func sidePath(output, suffix string) string {
	ext := filepath.Ext(output)
	return strings.TrimSuffix(output, ext) + suffix
}

// MaterializedPath, FailuresPath and MetricsPath name the side files.
func MaterializedPath(output string) string { return sidePath(output, "_materialized_inputs.jsonl") }
func FailuresPath(output string) string     { return sidePath(output, "_failures.jsonl") }
func MetricsPath(output string) string      { return sidePath(output, "_aggregate_metrics.json") }

// Run collects the rollouts. It returns when every pair is done, or ctx
// ends (then with ctx's error, after the requests in flight were cancelled;
// what finished is on disk).
func Run(ctx context.Context, opts Options) (Result, error) {
	if err := opts.defaults(); err != nil {
		return Result{}, err
	}
	pairs, err := materialize(opts)
	if err != nil {
		return Result{}, err
	}
	if err := os.MkdirAll(filepath.Dir(opts.Output), 0o755); err != nil {
		return Result{}, fmt.Errorf("collect: %w", err)
	}
	if err := writeMaterialized(MaterializedPath(opts.Output), pairs); err != nil {
		return Result{}, err
	}
	if opts.Fresh {
		for _, p := range []string{opts.Output, FailuresPath(opts.Output)} {
			if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
				return Result{}, fmt.Errorf("collect: %w", err)
			}
		}
	}
	done, attempts, err := finishedPairs(opts.Output, FailuresPath(opts.Output))
	if err != nil {
		return Result{}, err
	}
	res := Result{Pairs: len(pairs)}
	var todo []pair
	for _, p := range pairs {
		if done[[2]int{p.task, p.rollout}] {
			res.Skipped++
			continue
		}
		if n := attempts[[2]int{p.task, p.rollout}]; n > 0 {
			// A retry: Gym numbers it so its captures stay apart.
			p.row["_ng_attempt_index"] = mustJSON(n)
		}
		todo = append(todo, p)
	}

	out, err := openAppend(opts.Output)
	if err != nil {
		return res, err
	}
	defer out.Close()
	fail, err := openAppend(FailuresPath(opts.Output))
	if err != nil {
		return res, err
	}
	defer fail.Close()

	c := &collector{opts: opts, out: out, fail: fail}
	work := make(chan pair)
	var wg sync.WaitGroup
	for range min(opts.Concurrency, max(1, len(todo))) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for p := range work {
				c.one(ctx, p)
			}
		}()
	}
feed:
	for _, p := range todo {
		select {
		case work <- p:
		case <-ctx.Done():
			break feed
		}
	}
	close(work)
	wg.Wait()
	res.Finished, res.Failed = c.finished, c.failed
	if c.err != nil {
		return res, c.err
	}
	if err := ctx.Err(); err != nil {
		return res, err
	}

	rows, err := readRows(opts.Output)
	if err != nil {
		return res, err
	}
	res.Profile = ProfileOf(rows)
	res.Metrics, res.Remote, err = c.aggregate(ctx, rows)
	if err != nil {
		return res, err
	}
	if err := writeFileSync(MetricsPath(opts.Output), append(res.Metrics, '\n')); err != nil {
		return res, err
	}
	return res, nil
}

// materialize reads the input and expands it into pairs.
func materialize(opts Options) ([]pair, error) {
	f, err := os.Open(opts.Input)
	if err != nil {
		return nil, fmt.Errorf("collect: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<30)
	taskOf := map[string]int{}
	nextRollout := map[int]int{}
	var pairs []pair
	n := 0
	for line := 1; sc.Scan(); line++ {
		text := strings.TrimSpace(sc.Text())
		if text == "" {
			continue
		}
		if opts.Limit > 0 && n >= opts.Limit {
			break
		}
		n++
		var row map[string]json.RawMessage
		if err := json.Unmarshal([]byte(text), &row); err != nil {
			return nil, fmt.Errorf("collect: %s line %d: not a JSON object: %w", opts.Input, line, err)
		}
		if _, ok := row["responses_create_params"]; !ok {
			return nil, fmt.Errorf("collect: %s line %d: no responses_create_params", opts.Input, line)
		}
		// A task index the row brings (a slicer's global index) is kept;
		// otherwise identical lines share one. Rollout indices count per
		// task, so a repeated line continues its task's numbering.
		var task int
		if raw, ok := row["_ng_task_index"]; ok {
			if err := json.Unmarshal(raw, &task); err != nil {
				return nil, fmt.Errorf("collect: %s line %d: _ng_task_index: %w", opts.Input, line, err)
			}
		} else {
			t, ok := taskOf[text]
			if !ok {
				t = len(taskOf)
				taskOf[text] = t
			}
			task = t
		}
		if _, ok := row["agent_ref"]; !ok {
			row["agent_ref"] = mustJSON(map[string]string{"name": opts.AgentName})
		}
		for range opts.NumRepeats {
			r := nextRollout[task]
			nextRollout[task]++
			p := pair{task: task, rollout: r, row: make(map[string]json.RawMessage, len(row)+2)}
			for k, v := range row {
				p.row[k] = v
			}
			p.row["_ng_task_index"] = mustJSON(task)
			p.row["_ng_rollout_index"] = mustJSON(r)
			pairs = append(pairs, p)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("collect: read %s: %w", opts.Input, err)
	}
	return pairs, nil
}

func mustJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

func writeMaterialized(path string, pairs []pair) error {
	var b bytes.Buffer
	for _, p := range pairs {
		line, err := json.Marshal(p.row)
		if err != nil {
			return fmt.Errorf("collect: %w", err)
		}
		b.Write(line)
		b.WriteByte('\n')
	}
	return writeFileSync(path, b.Bytes())
}

func writeFileSync(path string, data []byte) error {
	tmp := path + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return fmt.Errorf("collect: %w", err)
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return fmt.Errorf("collect: write %s: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("collect: sync %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("collect: %w", err)
	}
	return os.Rename(tmp, path)
}

// openAppend opens path for appending, first cutting off a torn last line
// (a run killed mid-write).
func openAppend(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("collect: %w", err)
	}
	if err := cutTornLine(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("collect: %s: %w", path, err)
	}
	if _, err := f.Seek(0, io.SeekEnd); err != nil {
		f.Close()
		return nil, fmt.Errorf("collect: %w", err)
	}
	return f, nil
}

// cutTornLine truncates f after its last newline when it does not end
// with one, reading backwards from the end.
func cutTornLine(f *os.File) error {
	st, err := f.Stat()
	if err != nil {
		return err
	}
	end := st.Size()
	buf := make([]byte, 64<<10)
	for pos := end; pos > 0; {
		n := min(int64(len(buf)), pos)
		pos -= n
		if _, err := f.ReadAt(buf[:n], pos); err != nil {
			return err
		}
		if pos+n == end && buf[n-1] == '\n' {
			return nil // the file ends with a whole line
		}
		if i := bytes.LastIndexByte(buf[:n], '\n'); i >= 0 {
			return f.Truncate(pos + int64(i) + 1)
		}
	}
	if end > 0 {
		return f.Truncate(0)
	}
	return nil
}

// index reads the pair a written row belongs to.
type index struct {
	Task     *int `json:"_ng_task_index"`
	Rollout  *int `json:"_ng_rollout_index"`
	Terminal bool `json:"_ng_failure_terminal"`
}

// finishedPairs is the set of pairs not to run again: every pair in the
// output, and every pair of the failures file that failed terminally or
// MaxAttempts times.
func finishedPairs(output, failures string) (done map[[2]int]bool, attempts map[[2]int]int, err error) {
	done = map[[2]int]bool{}
	if err := eachLine(output, func(line []byte) {
		var ix index
		if json.Unmarshal(line, &ix) == nil && ix.Task != nil && ix.Rollout != nil {
			done[[2]int{*ix.Task, *ix.Rollout}] = true
		}
	}); err != nil {
		return nil, nil, err
	}
	attempts = map[[2]int]int{}
	if err := eachLine(failures, func(line []byte) {
		var ix index
		if json.Unmarshal(line, &ix) != nil || ix.Task == nil || ix.Rollout == nil {
			return
		}
		k := [2]int{*ix.Task, *ix.Rollout}
		attempts[k]++
		if ix.Terminal || attempts[k] >= MaxAttempts {
			done[k] = true
		}
	}); err != nil {
		return nil, nil, err
	}
	return done, attempts, nil
}

// eachLine calls fn with every complete line of path; a missing file has
// none.
func eachLine(path string, fn func([]byte)) error {
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("collect: %w", err)
	}
	if i := bytes.LastIndexByte(data, '\n'); i >= 0 {
		data = data[:i+1]
	} else {
		data = nil // a torn only line
	}
	for _, line := range bytes.Split(data, []byte("\n")) {
		if line = bytes.TrimSpace(line); len(line) > 0 {
			fn(line)
		}
	}
	return nil
}

// readRows reads the output's rows.
func readRows(path string) ([]map[string]any, error) {
	var rows []map[string]any
	var bad error
	err := eachLine(path, func(line []byte) {
		var row map[string]any
		d := json.NewDecoder(bytes.NewReader(line))
		d.UseNumber()
		if err := d.Decode(&row); err != nil && bad == nil {
			bad = fmt.Errorf("collect: %s: a line is not a JSON object: %w", path, err)
		}
		rows = append(rows, row)
	})
	if err == nil {
		err = bad
	}
	return rows, err
}

// collector runs pairs and writes their rows.
type collector struct {
	opts      Options
	mu        sync.Mutex
	out, fail *os.File
	finished  int
	failed    int
	err       error // a write error: stops the run
}

// one runs a pair to its row and writes it.
func (c *collector) one(ctx context.Context, p pair) {
	body, err := json.Marshal(p.row)
	if err != nil {
		c.setErr(err)
		return
	}
	row, err := c.post(ctx, "/run", body, c.opts.MaxTransportRetries)
	if ctx.Err() != nil {
		return // interrupted: the pair stays to do
	}
	var he *httpError
	if errors.As(err, &he) && (he.status == http.StatusUnauthorized || he.status == http.StatusForbidden) {
		// Every other row would be refused too: stop.
		c.setErr(err)
		return
	}
	if err != nil {
		row = map[string]json.RawMessage{
			"_ng_failure_class":  mustJSON(failureClass(err)),
			"_ng_failure_detail": mustJSON(err.Error()),
			"reward":             mustJSON(0.0),
		}
		if errors.As(err, &he) && he.status >= 400 && he.status < 500 {
			// The server refused the row itself: sending it again will not help.
			row["_ng_failure_terminal"] = mustJSON(true)
		}
	}
	// As Gym's collector: the request's indices and agent_ref win, and
	// its attempt index and rollout id are carried over.
	for _, k := range []string{"_ng_task_index", "_ng_rollout_index", "agent_ref", "_ng_attempt_index", "_ng_rollout_id"} {
		if v, ok := p.row[k]; ok {
			row[k] = v
		}
	}
	if truthy(row["_ng_no_persist"]) {
		return
	}
	line, err := json.Marshal(row)
	if err != nil {
		c.setErr(err)
		return
	}
	c.write(line, failed(row), p)
}

func (c *collector) setErr(err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err == nil {
		c.err = fmt.Errorf("collect: %w", err)
	}
}

func (c *collector) write(line []byte, failed bool, p pair) {
	c.mu.Lock()
	defer c.mu.Unlock()
	f := c.out
	if failed {
		f = c.fail
	}
	if _, err := f.Write(append(line, '\n')); err != nil {
		c.err = fmt.Errorf("collect: write %s: %w", f.Name(), err)
		return
	}
	if err := f.Sync(); err != nil {
		c.err = fmt.Errorf("collect: sync %s: %w", f.Name(), err)
		return
	}
	if failed {
		c.failed++
	} else {
		c.finished++
	}
	if c.opts.Progress != nil {
		var r struct {
			Reward any    `json:"reward"`
			Class  string `json:"_ng_failure_class"`
		}
		_ = json.Unmarshal(line, &r)
		status := fmt.Sprintf("reward %v", r.Reward)
		if failed {
			status = "failed: " + r.Class
		}
		fmt.Fprintf(c.opts.Progress, "%s rollout %d: %s\n", p.name(), p.rollout, status)
	}
}

// failed reports whether a row is a failure: _ng_failure_class is set and
// not null.
func failed(row map[string]json.RawMessage) bool {
	raw, ok := row["_ng_failure_class"]
	return ok && string(bytes.TrimSpace(raw)) != "null"
}

// truthy is Python's bool() of a JSON value, as Gym reads _ng_no_persist.
func truthy(raw json.RawMessage) bool {
	switch string(bytes.TrimSpace(raw)) {
	case "", "null", "false", "0", "0.0", `""`, "[]", "{}":
		return false
	}
	return true
}

// httpError is a non-2xx answer.
type httpError struct {
	path   string
	status int
	body   string
}

func (e *httpError) Error() string {
	return fmt.Sprintf("POST %s: status %d: %s", e.path, e.status, e.body)
}

func failureClass(err error) string {
	var he *httpError
	if errors.As(err, &he) {
		return "http_" + strconv.Itoa(he.status)
	}
	if errors.Is(err, errBadBody) {
		return "bad_response"
	}
	return "transport"
}

var errBadBody = errors.New("answer is not a JSON object")

// post sends body to the server and decodes the JSON object it answers.
// 429 and 503 are re-sent after Retry-After (or a growing backoff) until
// ctx ends; a request that got no answer is re-sent maxLost times.
func (c *collector) post(ctx context.Context, path string, body []byte, maxLost int) (map[string]json.RawMessage, error) {
	busy, lost := 0, 0
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.opts.Server+path, bytes.NewReader(body))
		if err != nil {
			return nil, err
		}
		req.Header.Set("Content-Type", "application/json")
		if c.opts.Token != "" {
			req.Header.Set("Authorization", "Bearer "+c.opts.Token)
		}
		resp, err := c.opts.HTTPClient.Do(req)
		var wait time.Duration
		switch {
		case err != nil:
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			if lost >= maxLost {
				return nil, err
			}
			wait = c.backoff(lost)
			lost++
		case resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode == http.StatusServiceUnavailable:
			_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
			resp.Body.Close()
			wait = retryAfter(resp.Header.Get("Retry-After"), time.Now())
			if wait <= 0 {
				wait = c.backoff(busy)
			}
			wait = min(wait, c.opts.MaxBackoff)
			busy++
		default:
			data, rerr := io.ReadAll(resp.Body)
			resp.Body.Close()
			if rerr != nil {
				if ctx.Err() != nil {
					return nil, ctx.Err()
				}
				return nil, fmt.Errorf("POST %s: read answer: %w", path, rerr)
			}
			if resp.StatusCode/100 != 2 {
				return nil, &httpError{path: path, status: resp.StatusCode, body: firstLine(data)}
			}
			var row map[string]json.RawMessage
			if err := json.Unmarshal(data, &row); err != nil || row == nil {
				return nil, fmt.Errorf("POST %s: %w: %s", path, errBadBody, firstLine(data))
			}
			return row, nil
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, ctx.Err()
		case <-t.C:
		}
	}
}

// backoff is the wait before retry n: exponential from 250ms, jittered,
// capped at MaxBackoff.
func (c *collector) backoff(n int) time.Duration {
	d := 250 * time.Millisecond << min(n, 10)
	d = min(d, c.opts.MaxBackoff)
	return d/2 + rand.N(d/2+1)
}

// retryAfter reads a Retry-After header: seconds or an HTTP date.
func retryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil && s >= 0 && !math.IsInf(s, 0) {
		return time.Duration(s * float64(time.Second))
	}
	if t, err := http.ParseTime(v); err == nil {
		return t.Sub(now)
	}
	return 0
}

func firstLine(b []byte) string {
	s := strings.TrimSpace(string(b))
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	if len(s) > 300 {
		s = s[:300] + "..."
	}
	return s
}
