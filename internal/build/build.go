// Package build is Stage 1: for each SWE-Factory task it builds the image
// from the task's Dockerfile, proves the environment with the gold patch
// (repository at /testbed, root user, toolchain on bash -lc, clean git
// status, the gold patch applies, the eval script passes with it and not
// without it), asks a model to repair the Dockerfile or eval script when a
// check fails, and writes the transferred dataset that Stage 2 runs on.
//
// Outputs, under Options.Output, with SWE-Factory's names and fields:
//
//	<instance_id>/            Dockerfile, Dockerfile_original, Dockerfile.resolved
//	                          (on success), run_tests.sh, run_tests_original.sh,
//	                          eval_script.sh, eval_script_original.sh, summary.json
//	                          (on success), instance.log, status.json,
//	                          iteration_<n>/ from 0 (files tried, metadata.json,
//	                          build and check logs, result, the model's request
//	                          and reply)
//	summary.json              [{instance_id, success, reason, cost}] for this run
//	summary_main.json         {total, succeeded, failed, success_rate, failed_instances}
//	summary_history.jsonl     one summary_main line per run, with input_file
//	<stem>_transferred.json   the proven rows, with docker_image, dockerfile, eval_script
//	<stem>_failed.json        every other row (never-run ones too), with
//	                          failure_reason and docker_image
package build

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/swerve-dev/swerve/internal/llm"
	"github.com/swerve-dev/swerve/internal/stop"
	"github.com/swerve-dev/swerve/internal/task"
)

// DefaultMaxIterations is --max-iterations' default.
const DefaultMaxIterations = 5

// ModelFactory returns the repair model for one instance. It is called at
// the instance's first repair, not before.
type ModelFactory func(t *task.Task) (llm.Client, error)

// Options configure Run.
type Options struct {
	// Tasks are the rows to build, SWE-Factory rows with Raw set.
	Tasks []task.Task
	// Output is the run directory; Stem names the output datasets
	// (<stem>_transferred.json), after the input file.
	Output string
	Stem   string
	// InputFile is the input's path, recorded in summary_history.jsonl.
	InputFile string
	// MaxIterations bounds the attempts per instance, the first included
	// (1: no repair).
	MaxIterations int
	// EvalTimeout limits each run of the eval script; a run past it fails
	// the instance without repair.
	EvalTimeout time.Duration
	Workers     int
	// SkipExisting keeps instances whose status.json says success;
	// failed ones run again, as SWE-Factory's --skip-existing retries them.
	SkipExisting bool
	// RepoCache is a directory of git mirrors to clone from instead of
	// GitHub.
	RepoCache string
	Engine    Engine
	// NewModel makes the repair model; nil means no repair.
	NewModel ModelFactory
	// ModelName is recorded in status.json before a model exists.
	ModelName string
	// Events, if set, hears about progress (one call at a time).
	Events func(Event)
	// Stop, when closed, lets running instances finish their current
	// attempt and starts nothing new; they run again next time.
	Stop <-chan struct{}
	// RunID labels the boxes the checks open.
	RunID string
}

// Event kinds.
const (
	EventStart   = "start"
	EventDone    = "done"
	EventSkipped = "skipped"
	EventAborted = "aborted"
	// EventIteration: an attempt of a running instance ended.
	EventIteration = "iteration"
)

// Event is one progress report.
type Event struct {
	Kind       string  `json:"event"`
	InstanceID string  `json:"instance_id"`
	Status     string  `json:"status,omitempty"`
	Reason     string  `json:"reason,omitempty"`
	Iteration  int     `json:"iteration,omitempty"`
	Seconds    float64 `json:"seconds,omitempty"`
	// Counters after this event.
	Done      int `json:"done"`
	Running   int `json:"running"`
	Succeeded int `json:"succeeded"`
	Total     int `json:"total"`
}

// Summary is what Run ends with.
type Summary struct {
	Aggregates
	Ran         int // instances finished by this run
	Skipped     int // instances kept from an earlier run
	Errors      int // instances that hit an engine or model API error
	Interrupted bool
	Wall        time.Duration
}

// ErrInterrupted is returned when Stop or ctx ended the run early.
var ErrInterrupted = errors.New("build interrupted")

// errStopped ends an instance that Stop interrupted between attempts.
var errStopped = errors.New("stopped")

// Run builds and proves every instance not kept from an earlier run, then
// writes the aggregate files.
func Run(ctx context.Context, opts Options) (*Summary, error) {
	if opts.Output == "" || opts.Stem == "" {
		return nil, errors.New("build: Output and Stem are required")
	}
	if opts.Engine == nil {
		return nil, errors.New("build: no engine")
	}
	if opts.MaxIterations <= 0 {
		opts.MaxIterations = DefaultMaxIterations
	}
	if opts.Workers <= 0 {
		opts.Workers = 1
	}
	seen := map[string]bool{}
	tags := map[string]string{}
	for i := range opts.Tasks {
		t := &opts.Tasks[i]
		if seen[t.InstanceID] {
			return nil, fmt.Errorf("instance %s appears twice in the input", t.InstanceID)
		}
		seen[t.InstanceID] = true
		tag := ImageTag(t.InstanceID)
		if other, ok := tags[tag]; ok {
			return nil, fmt.Errorf("instances %s and %s would share the image tag %s", other, t.InstanceID, tag)
		}
		tags[tag] = t.InstanceID
	}
	if err := os.MkdirAll(opts.Output, 0o755); err != nil {
		return nil, fmt.Errorf("--output: %w", err)
	}
	r := &runner{opts: opts, start: time.Now(), total: len(opts.Tasks)}
	var pending []*task.Task
	sum := &Summary{}
	for i := range opts.Tasks {
		t := &opts.Tasks[i]
		if opts.SkipExisting {
			st, err := ReadStatus(InstanceDir(opts.Output, t.InstanceID))
			if err != nil {
				return nil, err
			}
			if st != nil && st.Status == StatusSuccess {
				sum.Skipped++
				r.done++
				r.succeeded++
				r.emit(Event{Kind: EventSkipped, InstanceID: t.InstanceID, Status: st.Status, Reason: st.Reason})
				continue
			}
		}
		pending = append(pending, t)
	}

	runErr := r.runAll(ctx, pending)
	sum.Ran, sum.Errors = r.ran, r.errors
	sum.Interrupted = r.interrupted || ctx.Err() != nil
	agg, aggErr := r.aggregate()
	if agg != nil {
		sum.Aggregates = *agg
	}
	sum.Wall = time.Since(r.start)
	switch {
	case runErr != nil:
		return sum, runErr
	case aggErr != nil:
		return sum, aggErr
	case sum.Interrupted:
		return sum, ErrInterrupted
	}
	return sum, nil
}

type runner struct {
	opts  Options
	start time.Time

	mu          sync.Mutex
	total       int
	done        int
	running     int
	succeeded   int
	ran         int
	errors      int
	interrupted bool
	fatal       error

	// summary is summary.json: the instances this run finished.
	summary []SummaryEntry
}

func (r *runner) emit(e Event) {
	if r.opts.Events == nil {
		return
	}
	e.Done, e.Running, e.Succeeded, e.Total = r.done, r.running, r.succeeded, r.total
	r.opts.Events(e)
}

func (r *runner) stopping() bool { return stop.Chan(r.opts.Stop).Requested() }

// aggregate writes the top-level files once, when the run ends (an
// interrupted one too). One pass over the instances: a build of N
// instances costs O(N). A killed run leaves every instance's status.json;
// the next run writes the aggregates from them.
func (r *runner) aggregate() (*Aggregates, error) {
	r.mu.Lock()
	ran := slices.Clone(r.summary)
	r.mu.Unlock()
	// summary.json lists them in input order, whatever order they ended in.
	pos := make(map[string]int, len(r.opts.Tasks))
	for i := range r.opts.Tasks {
		pos[r.opts.Tasks[i].InstanceID] = i
	}
	slices.SortFunc(ran, func(a, b SummaryEntry) int { return pos[a.InstanceID] - pos[b.InstanceID] })
	return WriteAggregates(r.opts.Output, r.opts.Stem, r.opts.Tasks, AggregateOptions{Ran: ran, InputFile: r.opts.InputFile})
}

func (r *runner) runAll(ctx context.Context, pending []*task.Task) error {
	sem := make(chan struct{}, r.opts.Workers)
	var wg sync.WaitGroup
	for _, t := range pending {
		if !r.acquire(ctx, sem) {
			break
		}
		wg.Go(func() {
			defer func() { <-sem }()
			r.one(ctx, t)
		})
	}
	wg.Wait()
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.fatal
}

// acquire waits for a worker slot; false when nothing more may start.
func (r *runner) acquire(ctx context.Context, sem chan struct{}) bool {
	if r.stopping() || ctx.Err() != nil || r.fatalErr() != nil {
		r.markInterrupted()
		return false
	}
	select {
	case sem <- struct{}{}:
	case <-ctx.Done():
		r.markInterrupted()
		return false
	case <-stop.Chan(r.opts.Stop).Done():
		r.markInterrupted()
		return false
	}
	if r.stopping() || ctx.Err() != nil || r.fatalErr() != nil {
		<-sem
		r.markInterrupted()
		return false
	}
	return true
}

func (r *runner) markInterrupted() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.fatal == nil {
		r.interrupted = true
	}
}

func (r *runner) fatalErr() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.fatal
}

// one builds one instance and records it.
func (r *runner) one(ctx context.Context, t *task.Task) {
	r.mu.Lock()
	r.running++
	r.emit(Event{Kind: EventStart, InstanceID: t.InstanceID})
	r.mu.Unlock()
	start := time.Now()
	st, err := r.instance(ctx, t)

	r.mu.Lock()
	r.running--
	switch {
	case err != nil && (errors.Is(err, errStopped) || ctx.Err() != nil):
		r.interrupted = true
		r.emit(Event{Kind: EventAborted, InstanceID: t.InstanceID, Reason: "interrupted", Seconds: time.Since(start).Seconds()})
		r.mu.Unlock()
		return
	case err != nil:
		// The output directory cannot be written: nothing else can be.
		if r.fatal == nil {
			r.fatal = fmt.Errorf("instance %s: %w", t.InstanceID, err)
		}
		r.emit(Event{Kind: EventAborted, InstanceID: t.InstanceID, Reason: err.Error(), Seconds: time.Since(start).Seconds()})
		r.mu.Unlock()
		return
	}
	r.done++
	r.ran++
	entry := SummaryEntry{InstanceID: t.InstanceID, Success: st.Status == StatusSuccess, Cost: st.Model.Cost}
	if !entry.Success {
		entry.Reason = failureReason(st)
	}
	r.summary = append(r.summary, entry)
	if st.Status == StatusSuccess {
		r.succeeded++
	}
	if st.Status == StatusError {
		r.errors++
	}
	r.emit(Event{Kind: EventDone, InstanceID: t.InstanceID, Status: st.Status, Reason: st.Reason,
		Iteration: st.TotalIterations, Seconds: time.Since(start).Seconds()})
	r.mu.Unlock()
}
