// Package grader picks the grader for a task and runs it, whichever it is:
// SWE-bench's harness rules (swebench), SWE-Factory's exit-code line
// (swefactory), R2E-Gym's expected test output (r2e), SWE-smith's harness
// rules (swesmith) or a Harbor task's verifier (harbor). Every result is an
// Outcome with a reward, a one-line reason and the grader's own report.
//
// The grader is the one forced (--reward), else the task's own grader
// field, else the one its image name implies as upstream runtimes decide it
// (see FromImage), else swebench.
package grader

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"path"
	"strings"
	"time"

	"github.com/swerve-dev/swerve/internal/reward"
	"github.com/swerve-dev/swerve/internal/reward/harbor"
	"github.com/swerve-dev/swerve/internal/reward/r2e"
	"github.com/swerve-dev/swerve/internal/reward/swebench"
	"github.com/swerve-dev/swerve/internal/reward/swefactory"
	"github.com/swerve-dev/swerve/internal/reward/swesmith"
	"github.com/swerve-dev/swerve/internal/reward/tamper"
	"github.com/swerve-dev/swerve/internal/sandbox"
	"github.com/swerve-dev/swerve/internal/task"
)

// Outcome is one graded task, whichever grader graded it.
type Outcome struct {
	InstanceID string      `json:"instance_id"`
	Grader     task.Grader `json:"grader"`
	Reward     float64     `json:"reward"`
	Resolved   bool        `json:"resolved"`
	// Reason says in one line why: "resolved", "tests failed: <names>",
	// "patch did not apply: <why>", "eval timed out after N s", ...
	Reason string `json:"reason"`
	// Report is the harness's report.json object for swebench (and
	// SWE-smith's for swesmith), the grader's own result object otherwise.
	Report json.RawMessage `json:"report,omitempty"`
	// Log is the eval run's output (the apply commands' when the patch
	// did not apply); empty for GradeLog.
	Log         string        `json:"-"`
	ApplyFailed bool          `json:"apply_failed,omitempty"`
	TimedOut    bool          `json:"timed_out,omitempty"`
	Duration    time.Duration `json:"-"`
	// ExitCode is the eval script's own exit status (-1 when it did not
	// run, timed out or was killed with its runner, and for GradeLog).
	ExitCode int `json:"exit_code"`
	// Sealed says the verdict was read from a sealed run (reward.RunScript):
	// anchored on what bash itself traced, not on lines the tests can print.
	Sealed bool `json:"sealed"`
	// Anchored says no line the code under test could print decided the
	// verdict: true for sealed runs (but Harbor's, whose verdict is the
	// reward file the tests write), and for a log given to GradeLog
	// whose verdict lines are bash's trace (a SWE-bench log whose
	// test-output markers bash traced, or that has none and so no valid
	// run; a SWE-smith log). False for a SWE-bench log whose markers are
	// plain lines, graded by the harness's own rule (a printed marker moves
	// its test section there too), and for SWE-Factory and R2E logs, whose
	// verdict lines are printed.
	Anchored bool `json:"anchored"`

	// Tampered lists what the tamper defences found (see package tamper):
	// the patch's static findings and wrong canaries. In tamper.ModeZero
	// any finding makes the reward 0 and the reason "tampered: <what>";
	// Report stays the official grader's either way.
	Tampered []string `json:"tampered,omitempty"`
	// Canaries says whether canary tests ran: "checked", or why not.
	Canaries string `json:"canaries,omitempty"`
	// CanaryKind says what the canaries were: "mutants of <test>" (copies
	// of a hidden test, one with an expected value changed) or "fixed
	// templates (<why no test could be copied>)".
	CanaryKind string `json:"canary_kind,omitempty"`
	// Phases says how the eval script ran: "phased" (the patch's code as
	// an unprivileged user: for swebench the tree outside the work tree
	// checked, see reward.RunPhased; for r2e and swesmith the tests run as
	// the grading user over root's read-only hidden tests, see
	// reward.RunAsGradingUser; for harbor, "unprivileged: …" when test.sh
	// ran as the grading user; for swefactory as for swebench) or
	// "single phase: <why>".
	Phases string `json:"phases,omitempty"`
	// Evidence says whether an exit-status grader (swefactory, harbor)
	// read the test output for evidence that the tests ran ("checked", or
	// "not applied: <why>"; harbor says how many tests passed); empty for
	// graders whose verdict is the parsed log itself.
	Evidence string `json:"evidence,omitempty"`
	// Tests is how many distinct tests the run produced results for (the
	// canaries left out), as the grader's parser read them: swebench,
	// r2e and swesmith count the names in the parsed log, swefactory the
	// results its evidence check read, harbor the tests that passed.
	Tests int `json:"tests"`
	// TestsBaseline says what Tests was held to: "<M> (gold run)" when
	// the task's gold run on this image is known (a grade with fewer
	// results, in all or under one test name, is reward 0 with the reason
	// "fewer tests ran than the gold patch's run: N < M"), "gold run
	// (kept)" for a gold grade, "unknown" (with why) when no gold run is
	// known; empty when the grader counts no tests.
	TestsBaseline string `json:"tests_baseline,omitempty"`
}

// FromImage names the grader an image implies, as upstream runtimes read
// image names: SWE-Factory's "…_swefactory…" images, SWE-smith's
// "swesmith.…" ones, SWE-bench's "sweb.eval.…" (and R2E-Gym's "…swebench…"
// copies of them), R2E-Gym's own (namanjain12/… or anything naming r2e).
// "" when the name says nothing.
func FromImage(image string) task.Grader {
	image = strings.ToLower(image)
	switch {
	case image == "":
		return ""
	case strings.Contains(image, "swefactory"):
		return task.GraderSWEFactory
	case strings.Contains(image, "swesmith"):
		return task.GraderSWESmith
	case strings.Contains(image, "sweb.eval"), strings.Contains(image, "swebench"):
		return task.GraderSWEBench
	case strings.HasPrefix(image, "namanjain12/"), strings.Contains(image, "r2e"):
		return task.GraderR2E
	}
	return ""
}

// Choose names the grader for t: force (the --reward flag) when given,
// else the task's grader field, else FromImage, else swebench. An unknown
// name is an error naming the task and where the name came from.
func Choose(t *task.Task, force string) (task.Grader, error) {
	if force != "" {
		g := task.Grader(force)
		if !g.Valid() {
			return "", fmt.Errorf("task %s: --reward: unknown grader %q (want one of %s)", t.InstanceID, force, names())
		}
		return g, nil
	}
	if t.Grader != "" {
		if !t.Grader.Valid() {
			return "", fmt.Errorf("task %s: grader: unknown grader %q (want one of %s)", t.InstanceID, t.Grader, names())
		}
		return t.Grader, nil
	}
	if g := FromImage(t.Image); g != "" {
		return g, nil
	}
	return task.GraderSWEBench, nil
}

func names() string {
	s := make([]string, len(task.Graders))
	for i, g := range task.Graders {
		s[i] = string(g)
	}
	return strings.Join(s, ", ")
}

// report renders a grader's result object as grade prints it.
func report(v any) json.RawMessage {
	b, err := json.MarshalIndent(v, "", "    ")
	if err != nil {
		// The result types hold only strings, numbers and maps of them.
		panic("grader: render report: " + err.Error())
	}
	return b
}

// GradeLog grades an existing eval log (the output of the task's tests), for
// the graders that read only the log: swebench, swefactory, r2e and
// swesmith. Harbor's verifier reads files the tests leave in the box, so a
// harbor task is refused.
func GradeLog(t *task.Task, force, log string) (*Outcome, error) {
	return GradeLogOpts(t, force, log, LogOptions{})
}

// LogOptions adjust GradeLogOpts.
type LogOptions struct {
	// StrictMarkers refuses a SWE-bench log whose test-output markers are
	// plain lines with no bash trace of them (swebench.ErrUnanchored)
	// instead of grading it by the harness's rule, unanchored.
	StrictMarkers bool
}

// GradeLogOpts is GradeLog with options.
func GradeLogOpts(t *task.Task, force, log string, opts LogOptions) (*Outcome, error) {
	g, err := Choose(t, force)
	if err != nil {
		return nil, err
	}
	out := &Outcome{InstanceID: t.InstanceID, Grader: g, ExitCode: -1}
	switch g {
	case task.GraderSWEBench:
		r, err := swebench.Evaluate(t, log, swebench.Options{StrictMarkers: opts.StrictMarkers})
		if err != nil {
			return nil, err
		}
		out.fromSWEBench(r)
		out.Tests = len(r.Status)
		out.Anchored = !r.Unanchored
	case task.GraderSWEFactory:
		out.fromSWEFactory(swefactory.Evaluate(t, log))
	case task.GraderR2E:
		r, err := r2e.Evaluate(t, log)
		if err != nil {
			return nil, err
		}
		out.fromR2E(r)
		out.Tests = len(r.Parsed)
	case task.GraderSWESmith:
		r, err := swesmith.Evaluate(t, log, swesmith.Options{})
		if err != nil {
			return nil, err
		}
		out.fromSWESmith(r)
		out.Tests = len(r.Status)
		out.Anchored = true // its test section is cut at bash's trace of the markers
	case task.GraderHarbor:
		return nil, fmt.Errorf("task %s: harbor grading reads the reward file tests/test.sh leaves in the box; a log alone cannot be graded (grade a patch instead)", t.InstanceID)
	}
	return out, nil
}

func (o *Outcome) fromSWEBench(r *swebench.Result) {
	o.Reward, o.Resolved, o.Reason, o.Report = r.Reward(), r.Resolved, r.Reason, r.Report()
}

func (o *Outcome) fromSWEFactory(r *swefactory.Result) {
	o.Reward, o.Resolved, o.Reason, o.Report = r.Reward, r.Resolved, r.Reason, report(r)
}

func (o *Outcome) fromR2E(r *r2e.Result) {
	o.Reward, o.Resolved, o.Reason, o.Report = r.Reward, r.Resolved, r.Reason, report(r)
}

func (o *Outcome) fromSWESmith(r *swesmith.Result) {
	o.Reward, o.Resolved, o.Reason, o.Report = r.Reward(), r.Resolved, r.Reason, report(r)
}

func (o *Outcome) fromHarbor(r *harbor.Result) {
	o.Reward, o.Resolved, o.Reason, o.Report = r.Reward, r.Resolved, r.Reason, report(r)
}

// Options configure Grade.
type Options struct {
	// Force names the grader to use instead of the task's (--reward).
	Force string
	// Patch is the diff to grade; empty runs the tests on the repository as
	// the box has it.
	Patch string
	// Gold grades the task's own reference solution instead of Patch: its
	// gold patch, or for a Harbor task its solution/solve.sh.
	Gold bool
	// EvalTimeout bounds the tests; zero means reward.DefaultEvalTimeout
	// (for Harbor tasks, the task's [verifier] timeout_sec first).
	EvalTimeout time.Duration
	// Workdir is the repository in the box; empty means each grader's
	// default (/testbed; for Harbor the box's own working directory), "."
	// the box's own working directory (the local backend's copy).
	Workdir string
	// VerifierDir is where a Harbor task's tests leave their reward (see
	// harbor.RunOptions).
	VerifierDir string
	// Tamper is what to do with the tamper defences' findings; empty means
	// tamper.ModeZero.
	Tamper tamper.Mode
	// SinglePhase runs a swebench or swefactory eval script as one run,
	// as root, the way it ran before phased runs (reward.RunPhased)
	// existed, and the tests of r2e and swesmith tasks as root
	// (reward.RunAsGradingUser not used).
	SinglePhase bool
	// Baseline keeps the gold runs' test counts: a gold grade keeps its
	// count there, every other grade is held to it. nil: DefaultBaseline.
	Baseline *Baseline
}

// Grade applies the patch in box (fresh from the task's image, or the box
// the patch was made in) and grades the task with its grader. A patch that
// does not apply or tests that time out are outcomes with reward 0, not
// errors; errors mean the box failed or the task cannot be graded.
func Grade(ctx context.Context, box sandbox.Sandbox, t *task.Task, opts Options) (*Outcome, error) {
	g, err := Choose(t, opts.Force)
	if err != nil {
		return nil, err
	}
	patch := opts.Patch
	if opts.Gold && g != task.GraderHarbor {
		if t.Patch == "" {
			return nil, fmt.Errorf("task %s: patch: empty; the task has no gold patch to grade", t.InstanceID)
		}
		patch = t.Patch
	}
	timeout := opts.EvalTimeout
	if timeout <= 0 {
		timeout = reward.DefaultEvalTimeout
		if g == task.GraderHarbor {
			timeout = harbor.VerifierTimeout(t)
		}
	}
	out := &Outcome{InstanceID: t.InstanceID, Grader: g}
	if patch == "" && !(opts.Gold && g == task.GraderHarbor) {
		reward.Phase(ctx, "no patch: running the tests on the unpatched repository")
	}
	// What every grader's Run takes; each adds its own settings.
	base := reward.RunOptions{Patch: patch, EvalTimeout: timeout, Workdir: opts.Workdir}
	var a reward.Attempt
	// count is the run's test results as the grader read them; nil when
	// the grader reads none.
	var count *testCount
	switch g {
	case task.GraderSWEBench:
		tk := t
		if t.EvalScript == "" && t.Dialect == task.DialectR2E {
			// R2E-Gym's copies of SWE-bench carry no eval script: their
			// images keep it at /run_tests.sh, which R2E-Gym runs. It is
			// sourced, not run, so that its trace is the sealed run's own
			// (a child bash's would not be trusted).
			c := *t
			c.EvalScript = "source /run_tests.sh\n"
			tk = &c
		}
		var can *tamper.Canaries
		if opts.Tamper != tamper.ModeIgnore {
			if can, tk, err = withCanaries(ctx, box, tk, opts.Workdir); err != nil {
				return nil, err
			}
			out.Canaries = can.Unavailable
			if can.Available() {
				out.CanaryKind = can.Kind()
			}
		}
		rr, err := swebench.Run(ctx, box, tk, swebench.RunOptions{RunOptions: base, SinglePhase: opts.SinglePhase})
		if err != nil {
			return nil, err
		}
		out.fromSWEBench(rr.Result)
		skip := func(string) bool { return false }
		if can != nil && can.Available() {
			skip = canaryNames(can.MustFail, can.MustPass)
		}
		count = countOf(rr.Result.Copies, skip)
		if can != nil && can.Available() {
			out.Canaries = "not checked: no valid test run"
			if rr.Result.Found {
				out.Canaries = "checked"
				out.Tampered = append(out.Tampered, can.Verify(rr.Result.Status, rr.Result.Resolved)...)
			}
		}
		a = rr.Attempt
		out.Phases = a.Phases
		for _, f := range a.Tampered {
			out.Tampered = append(out.Tampered, f)
		}
	case task.GraderSWEFactory:
		ro := swefactory.RunOptions{RunOptions: base, SinglePhase: opts.SinglePhase}
		var can *tamper.Canaries
		if opts.Tamper != tamper.ModeIgnore {
			if can, ro.Canary, err = factoryCanaries(ctx, box, t, opts.Workdir); err != nil {
				return nil, err
			}
			out.Canaries = can.Unavailable
			if can.Available() {
				out.CanaryKind = can.Kind()
			}
		}
		rr, err := swefactory.Run(ctx, box, t, ro)
		if err != nil {
			return nil, err
		}
		out.fromSWEFactory(rr.Result)
		out.Evidence = rr.Result.Evidence
		if rr.Result.TestResults != nil {
			out.Tests = *rr.Result.TestResults
		}
		if can != nil && can.Available() {
			// The canaries ran in a second run of the test command after
			// the verdict's echo; a run that never got there lacks them.
			out.Canaries = "checked"
			if rr.Canaries == nil {
				out.Canaries = "checked: the canary run left no output"
			}
			out.Tampered = append(out.Tampered, can.Verify(rr.Canaries, rr.Result.Resolved)...)
		}
		a = rr.Attempt
		out.Phases = a.Phases
		out.Tampered = append(out.Tampered, a.Tampered...)
	case task.GraderR2E:
		rr, err := r2e.Run(ctx, box, t, r2e.RunOptions{RunOptions: base, Canaries: opts.Tamper != tamper.ModeIgnore, SinglePhase: opts.SinglePhase})
		if err != nil {
			return nil, err
		}
		out.fromR2E(rr.Result)
		count = countOf(once(rr.Result.Parsed), nil)
		a = rr.Attempt
		out.checkCanaries(rr.Canaries, rr.CanaryStatus, !a.ApplyFailed && !a.TimedOut, rr.Result.Resolved)
		out.Phases = a.Phases
	case task.GraderSWESmith:
		rr, err := swesmith.Run(ctx, box, t, swesmith.RunOptions{RunOptions: base, Canaries: opts.Tamper != tamper.ModeIgnore, SinglePhase: opts.SinglePhase})
		if err != nil {
			return nil, err
		}
		out.fromSWESmith(rr.Result)
		count = countOf(once(rr.Result.Status), nil)
		a = rr.Attempt
		out.checkCanaries(rr.Canaries, rr.CanaryStatus, rr.Result.Found, rr.Result.Resolved)
		out.Phases = a.Phases
	case task.GraderHarbor:
		ho := harbor.RunOptions{RunOptions: base, Solution: opts.Gold, VerifierDir: opts.VerifierDir,
			Canaries: opts.Tamper != tamper.ModeIgnore}
		if !opts.Gold {
			// A skip under a condition of the test's own mark counts only
			// when the gold run skipped the test too (harbor's evidence.go).
			ho.GoldSkips, ho.GoldKnown = goldSkips(box, t, g, opts)
		}
		rr, err := harbor.Run(ctx, box, t, ho)
		if err != nil {
			return nil, err
		}
		out.fromHarbor(rr.Result)
		out.Evidence, out.Tests = rr.Result.Evidence, rr.Result.TestsPassed
		if rr.Result.EvidenceChecked && rr.Result.TestsPassed > 0 {
			count = &testCount{Total: rr.Result.TestsPassed, Skips: rr.Result.ConditionalSkips, SkipsKept: true}
		}
		a = rr.Attempt
		out.Phases = a.Phases
		out.Canaries, out.CanaryKind = rr.Canaries, rr.CanaryKind
		out.Tampered = append(out.Tampered, rr.CanaryFindings...)
	}
	out.Log, out.ApplyFailed, out.TimedOut, out.Duration = a.Log, a.ApplyFailed, a.TimedOut, a.Duration
	out.ExitCode, out.Sealed = a.ScriptExit, a.Trace != nil
	// A Harbor verdict is the reward file the tests leave, not a line of
	// the trace.
	out.Anchored = out.Sealed && g != task.GraderHarbor
	// One wording for the outcomes every grader shares.
	switch {
	case a.ApplyFailed:
		out.Reward, out.Resolved = 0, false
		out.Reason = "patch did not apply: " + reward.LastLine(strings.TrimSpace(a.ApplyLog))
	case a.TimedOut:
		out.Reward, out.Resolved = 0, false
		out.Reason = fmt.Sprintf("eval timed out after %d s", int(timeout.Seconds()))
	}
	if opts.Tamper != tamper.ModeIgnore {
		for _, f := range tamper.CheckApplied(t, patch, a.Tree) {
			out.Tampered = append(out.Tampered, f.String())
		}
		// What the helper saw the run do to it (its OOM priority raised):
		// nothing an honest test does.
		out.Tampered = append(out.Tampered, a.Findings...)
	}
	if len(out.Tampered) > 0 && opts.Tamper.Zeroes() && !a.ApplyFailed {
		out.Reward, out.Resolved = 0, false
		out.Reason = "tampered: " + out.Tampered[0]
		if n := len(out.Tampered) - 1; n > 0 {
			out.Reason += fmt.Sprintf(" (and %d more)", n)
		}
	}
	if count == nil && out.Tests > 0 {
		count = &testCount{Total: out.Tests} // a grader that counts only a total
	}
	if count != nil && !a.ApplyFailed && !a.TimedOut {
		holdToGold(box, t, g, opts, out, *count)
	}
	return out, nil
}

// checkCanaries records what the canaries of a run that carried them
// (can nil: none were asked for) say: ran tells whether the tests ran and
// their log could be read, status is what the log says of the canaries.
func (o *Outcome) checkCanaries(can *tamper.Canaries, status swebench.StatusMap, ran, resolved bool) {
	if can == nil {
		return
	}
	o.Canaries = can.Unavailable
	if !can.Available() {
		return
	}
	o.CanaryKind = can.Kind()
	o.Canaries = "not checked: no valid test run"
	if ran {
		o.Canaries = "checked"
		o.Tampered = append(o.Tampered, can.Verify(status, resolved)...)
	}
}

// countOf counts a parsed log's tests (see countTests).
func countOf(copies map[string][]string, skip func(string) bool) *testCount {
	c := countTests(copies, skip)
	return &c
}

// once gives every test of a parsed log one copy, itself.
func once[S ~string](m map[string]S) map[string][]string {
	out := make(map[string][]string, len(m))
	for k := range m {
		out[k] = []string{k}
	}
	return out
}

// holdToGold keeps a gold grade's test count, or holds any other grade
// to the gold run's: a grade whose run produced fewer results than the
// gold patch's, in all or under one test name, has a finding saying so,
// and in tamper.ModeZero is reward 0 (tamper.ModeIgnore compares nothing).
// Counts are kept per task and image content id; a box that does not
// name its image is not compared.
func holdToGold(box sandbox.Sandbox, t *task.Task, g task.Grader, opts Options, out *Outcome, c testCount) {
	out.Tests = c.Total
	b := opts.Baseline
	if b == nil {
		b = DefaultBaseline()
	}
	imageID := ""
	if ii, ok := box.(sandbox.ImageIdentity); ok {
		imageID = ii.ImageID()
	}
	if imageID == "" {
		out.TestsBaseline = TestsBaselineUnknown + ": the box does not name its image"
		return
	}
	key := testsKey(t, g, imageID)
	if opts.Gold {
		out.TestsBaseline = TestsBaselineGold
		// Only a gold run that resolved sets the bar.
		if out.Resolved {
			b.keepGoldTests(key, c)
		} else {
			out.TestsBaseline = "gold run (not kept: not resolved)"
		}
		return
	}
	gold, ok := b.goldTests(key)
	if !ok {
		out.TestsBaseline = TestsBaselineUnknown
		return
	}
	out.TestsBaseline = fmt.Sprintf("%d (gold run)", gold.Total)
	if opts.Tamper == tamper.ModeIgnore {
		return
	}
	why := fewerTests(c, gold)
	if why == "" || !out.Resolved {
		return // a grade that is not resolved has nothing to lose
	}
	// A finding like the tamper defences' (kept beside the official
	// verdict in tamper.ModeFlag), and in tamper.ModeZero a 0 with the
	// comparison as its reason.
	out.Tampered = append(out.Tampered, why)
	if opts.Tamper.Zeroes() {
		out.Reward, out.Resolved, out.Reason = 0, false, why
	}
}

// withCanaries plans canary tests for a swebench task and, when its eval
// script can carry them, writes their injector into box under a random
// name and returns a copy of t whose eval script runs it. The test files
// the canaries copy tests from are read as the run will see them: the
// base commit's version from the box's repository (workdir), with the
// test patch applied.
func withCanaries(ctx context.Context, box sandbox.Sandbox, t *task.Task, workdir string) (*tamper.Canaries, *task.Task, error) {
	can := tamper.PlanCanaries(t, testSource(ctx, box, t, workdir))
	if !can.Available() {
		return can, t, nil
	}
	var b [6]byte
	_, _ = rand.Read(b[:])
	_, evalFile := reward.Paths(box)
	inj := path.Join(path.Dir(evalFile), "."+hex.EncodeToString(b[:])+".py")
	script, err := can.Script(t.EvalScript, inj)
	if err != nil {
		return nil, nil, fmt.Errorf("task %s: eval_script: %w", t.InstanceID, err)
	}
	if err := box.WriteFile(ctx, inj, can.Injector(), 0o600); err != nil {
		return nil, nil, fmt.Errorf("task %s: write canary injector: %w", t.InstanceID, err)
	}
	c := *t
	c.EvalScript = script
	return can, &c, nil
}

// testSource reads test files for the canaries: the version at the task's
// base commit in the box's repository, with the test patch applied (the
// eval script checks the test patch's files out at the base commit before
// applying it). A file that cannot be read or patched is not ok.
func testSource(ctx context.Context, box sandbox.Sandbox, t *task.Task, workdir string) tamper.Source {
	if workdir == "" {
		workdir = reward.Workdir
	}
	rev := t.BaseCommit
	if rev == "" {
		rev = "HEAD"
	}
	return func(file string) (string, bool) {
		base := ""
		if !tamper.CreatedBy(t.TestPatch, file) {
			res, err := box.Exec(ctx, sandbox.ExecRequest{
				Cmd:       []string{"sh", "-c", `git show "$1" 2>/dev/null`, "sh", rev + ":" + file},
				Cwd:       workdir,
				Timeout:   time.Minute,
				MaxOutput: -1,
			})
			if err != nil || res.ExitCode != 0 {
				return "", false
			}
			base = string(res.Output)
		}
		text, err := tamper.ApplyTestPatch(t.TestPatch, file, base)
		if err != nil {
			return "", false
		}
		return text, true
	}
}

// factoryCanaries plans canaries for a SWE-Factory row whose test command
// a log parser reads and that can run again (swefactory.CanaryScript):
// mutants of the tests it lists, else of the tests its test patch adds.
// When they can run it writes their injector into box under a random name
// and returns its path.
func factoryCanaries(ctx context.Context, box sandbox.Sandbox, t *task.Task, workdir string) (*tamper.Canaries, string, error) {
	cmd := swefactory.TestCommand(t.EvalScript)
	parser, why := swefactory.Framework(t, cmd)
	if parser == "" {
		return &tamper.Canaries{Unavailable: "not available: " + why}, "", nil
	}
	if swefactory.CanaryCommand(t.EvalScript) == "" {
		return &tamper.Canaries{Unavailable: "not available: the test command is not one simple command that can run again"}, "", nil
	}
	tk := *t
	tk.LogParser = parser
	if len(tk.FailToPass)+len(tk.PassToPass) == 0 {
		tk.FailToPass, _ = swefactory.Required(t, cmd, parser)
	}
	can := tamper.PlanCanariesCmd(&tk, cmd, testSource(ctx, box, &tk, workdir))
	if !can.Available() {
		return can, "", nil
	}
	if !can.Python() {
		// swefactory.CanaryScript runs its injector with Python.
		return &tamper.Canaries{Unavailable: "not available: the SWE-Factory canary run injects Python canaries only"}, "", nil
	}
	var b [6]byte
	_, _ = rand.Read(b[:])
	_, evalFile := reward.Paths(box)
	inj := path.Join(path.Dir(evalFile), "."+hex.EncodeToString(b[:])+".py")
	if err := box.WriteFile(ctx, inj, can.Injector(), 0o600); err != nil {
		return nil, "", fmt.Errorf("task %s: write canary injector: %w", t.InstanceID, err)
	}
	return can, inj, nil
}
