package grader

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"github.com/swerve-dev/swerve/internal/fsutil"
	"github.com/swerve-dev/swerve/internal/reward"
	"github.com/swerve-dev/swerve/internal/sandbox"
	"github.com/swerve-dev/swerve/internal/task"
)

// DiedReason starts the reason of a grade whose box the patch's code
// killed.
const DiedReason = "box died under the patch: "

// Opener opens a fresh box from a task's image and says where its
// repository is ("" for the grader's default).
type Opener func(ctx context.Context, t *task.Task) (sandbox.Sandbox, string, error)

// SettleOptions configure Settle.
type SettleOptions struct {
	// Open opens the fresh boxes Settle grades in.
	Open Opener
	// Again grades the patch once more in a fresh box before calling its
	// box's death a 0, so that a box lost to a passing fault (a cut
	// stream, a host under pressure) costs one more grade and not a
	// reward. Off when the patch cannot be applied again (a grade in the
	// agent's own box, whose tree holds it).
	Again bool
	// Baseline keeps the reference runs' answers; nil: DefaultBaseline.
	Baseline *Baseline
}

// Settle decides what a grade is worth whose box died while the patch's
// code ran (err holds a *reward.BoxDiedError; any other error is returned
// as it is). The task's reference solution (its gold patch, or the
// unpatched repository when it has none) is graded in a fresh box of the
// same image, once per task and image (see Baseline):
//
//   - when its box dies too, the image or the machine is at fault: err is
//     returned, an infrastructure error, with a note saying so;
//   - otherwise the patch killed its box: with opts.Again the patch is
//     graded once more in a fresh box, whose verdict counts if that box
//     lives; when it dies again (or without Again) the outcome is reward 0
//     with the reason "box died under the patch: <how>".
//
// An error while grading the reference or the patch again (a box that will
// not open, the engine) is returned: no verdict.
func Settle(ctx context.Context, err error, t *task.Task, opts Options, so SettleOptions) (*Outcome, error) {
	died, ok := errors.AsType[*reward.BoxDiedError](err)
	if !ok {
		return nil, err
	}
	if so.Open == nil {
		return nil, fmt.Errorf("%w (no way to open a box for the reference run)", err)
	}
	base := so.Baseline
	if base == nil {
		base = DefaultBaseline()
	}
	refDied, refWhat, rerr := base.referenceDies(ctx, t, opts, so.Open)
	if rerr != nil {
		return nil, fmt.Errorf("%w; the reference run could not tell whether the image is at fault: %w", err, rerr)
	}
	if refDied {
		return nil, fmt.Errorf("%w (the task's reference solution dies the same way on this image: %s)", err, refWhat)
	}
	if so.Again {
		out, aerr := gradeFresh(ctx, t, opts, so.Open)
		if aerr == nil {
			return out, nil
		}
		again, ok := errors.AsType[*reward.BoxDiedError](aerr)
		if !ok {
			return nil, aerr
		}
		died = again
	}
	return diedOutcome(t, opts, died), nil
}

// diedOutcome is reward 0 for a patch that killed its box.
func diedOutcome(t *task.Task, opts Options, died *reward.BoxDiedError) *Outcome {
	g, _ := Choose(t, opts.Force) // Grade chose it already
	out := &Outcome{InstanceID: t.InstanceID, Grader: g, ExitCode: -1}
	out.Reason = DiedReason + died.What()
	out.Report = report(struct {
		InstanceID string `json:"instance_id"`
		Resolved   bool   `json:"resolved"`
		BoxDied    string `json:"box_died"`
	}{t.InstanceID, false, died.What()})
	return out
}

// gradeFresh grades in a box opened for it.
func gradeFresh(ctx context.Context, t *task.Task, opts Options, open Opener) (*Outcome, error) {
	box, workdir, err := open(ctx, t)
	if err != nil {
		return nil, fmt.Errorf("open a box: %w", err)
	}
	defer box.Close(context.WithoutCancel(ctx))
	opts.Workdir = workdir
	return Grade(ctx, box, t, opts)
}

// Baseline remembers whether a task's reference run dies in its box, per
// task and image: a box death is rare, and each one costs a reference run
// only the first time. Answers are kept for the process, and on disk under
// Dir keyed by the image's content id when the box names it
// (sandbox.ImageIdentity), so that a rebuilt image is asked again.
type Baseline struct {
	// Dir keeps answers across processes; empty: in memory only.
	Dir string

	mu  sync.Mutex
	mem map[string]*baselineEntry
	// tests holds the gold runs' test counts read or kept (evidence.go).
	tests map[string]testCount
}

type baselineEntry struct {
	mu   sync.Mutex // held while the reference run is graded
	done bool
	baselineAnswer
}

// baselineAnswer is one reference run's answer, as kept on disk.
type baselineAnswer struct {
	Dies bool   `json:"dies"`
	What string `json:"what,omitempty"`
}

var (
	defaultBaselinesMu sync.Mutex
	defaultBaselines   = map[string]*Baseline{}
)

// DefaultBaseline is the process's Baseline for the cache directory in
// force when it is called (one per directory: a test, or a caller, that
// points SWERVE_CACHE_DIR elsewhere gets its own). Its answers go on disk
// under $SWERVE_CACHE_DIR/baseline, else the user's cache directory
// (~/.cache/swerve/baseline on Linux); SWERVE_CACHE_DIR=off keeps them in
// memory only.
func DefaultBaseline() *Baseline {
	dir := cacheDir()
	defaultBaselinesMu.Lock()
	defer defaultBaselinesMu.Unlock()
	b := defaultBaselines[dir]
	if b == nil {
		b = &Baseline{Dir: dir}
		defaultBaselines[dir] = b
	}
	return b
}

func cacheDir() string {
	dir := cacheRoot()
	if dir == "" {
		return ""
	}
	return filepath.Join(dir, "baseline")
}

// cacheRoot is swerve's cache directory: $SWERVE_CACHE_DIR, else the
// user's cache directory's swerve/; "" for SWERVE_CACHE_DIR=off (or no
// cache directory).
func cacheRoot() string {
	dir := os.Getenv("SWERVE_CACHE_DIR")
	switch dir {
	case "off":
		return ""
	case "":
		d, err := os.UserCacheDir()
		if err != nil {
			return ""
		}
		dir = filepath.Join(d, "swerve")
	}
	return dir
}

// referenceDies grades the task's reference solution in a fresh box, or
// answers from what an earlier grade found, and reports whether its box
// died and how. Reference runs of one task and image are graded one at a
// time, so that many boxes dying at once cost one.
func (b *Baseline) referenceDies(ctx context.Context, t *task.Task, opts Options, open Opener) (bool, string, error) {
	ref := opts
	ref.Patch, ref.Gold = "", false
	g, err := Choose(t, opts.Force)
	if err != nil {
		return false, "", err
	}
	if t.Patch != "" || g == task.GraderHarbor {
		ref.Gold = true
	}
	e := b.entry(baselineKey(t, ref, g, ""))
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.done {
		return e.Dies, e.What, nil
	}
	box, workdir, err := open(ctx, t)
	if err != nil {
		return false, "", fmt.Errorf("open a box: %w", err)
	}
	defer box.Close(context.WithoutCancel(ctx))
	// Only a box can name its image's content id, under which answers are
	// kept on disk.
	diskKey := ""
	if ii, ok := box.(sandbox.ImageIdentity); ok && ii.ImageID() != "" {
		diskKey = baselineKey(t, ref, g, ii.ImageID())
	}
	if a, ok := b.load(diskKey); ok {
		e.done, e.baselineAnswer = true, a
		return a.Dies, a.What, nil
	}
	ref.Workdir = workdir
	ref.Baseline = b // the reference run's test count is kept with its answer
	_, gerr := Grade(ctx, box, t, ref)
	var a baselineAnswer
	if gerr != nil {
		died, ok := errors.AsType[*reward.BoxDiedError](gerr)
		if !ok {
			return false, "", gerr
		}
		a = baselineAnswer{Dies: true, What: died.What()}
	}
	if ctx.Err() != nil {
		return false, "", ctx.Err()
	}
	e.done, e.baselineAnswer = true, a
	b.store(diskKey, a)
	return a.Dies, a.What, nil
}

func (b *Baseline) entry(key string) *baselineEntry {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.mem == nil {
		b.mem = map[string]*baselineEntry{}
	}
	e := b.mem[key]
	if e == nil {
		e = &baselineEntry{}
		b.mem[key] = e
	}
	return e
}

// baselineKey names a reference run: what decides its outcome (the task's
// image, grader, eval script and solution, the timeout, how findings are
// treated).
func baselineKey(t *task.Task, ref Options, g task.Grader, imageID string) string {
	h := sha256.New()
	for _, s := range []string{t.InstanceID, t.Image, imageID, string(g), t.EvalScript, t.Patch, t.TestPatch, t.TaskDir,
		fmt.Sprint(ref.Gold, ref.EvalTimeout, ref.Tamper)} {
		fmt.Fprintf(h, "%d:%s\n", len(s), s)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// load reads an answer kept on disk; only answers about an image's
// content id are (key "" otherwise).
func (b *Baseline) load(key string) (baselineAnswer, bool) {
	var a baselineAnswer
	if b.Dir == "" || key == "" {
		return a, false
	}
	data, err := os.ReadFile(filepath.Join(b.Dir, key+".json"))
	if err != nil || json.Unmarshal(data, &a) != nil {
		return baselineAnswer{}, false
	}
	return a, true
}

// store keeps an answer on disk, best effort: a cache that cannot be
// written costs a reference run in the next process, nothing more. Only
// a reference that lived is kept: one whose box died may have met a
// passing fault, and is asked again in the next process, so that one bad
// moment does not make every later death on the image an error.
func (b *Baseline) store(key string, a baselineAnswer) {
	if b.Dir == "" || key == "" || a.Dies {
		return
	}
	data, err := json.Marshal(a)
	if err != nil {
		return
	}
	if err := os.MkdirAll(b.Dir, 0o755); err != nil {
		return
	}
	_ = fsutil.WriteFileAtomic(filepath.Join(b.Dir, key+".json"), data, false)
}
