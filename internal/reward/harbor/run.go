package harbor

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/swerve-dev/swerve/internal/reward"
	"github.com/swerve-dev/swerve/internal/sandbox"
	"github.com/swerve-dev/swerve/internal/task"
)

// RunOptions configure Run. Patch is applied in Workdir before the tests;
// a zero EvalTimeout means the task's [verifier] timeout_sec, else
// reward.DefaultEvalTimeout; an empty Workdir means the box's own working
// directory (the image's WORKDIR), where the scripts start too.
type RunOptions struct {
	reward.RunOptions
	// Solution runs the task's solution/solve.sh (copied to /solution)
	// before the tests, as Harbor's oracle agent does: the task's own
	// reference answer.
	Solution bool
	// VerifierDir is where test.sh leaves its reward; empty means
	// /logs/verifier, or <scratch>/logs/verifier on boxes whose absolute
	// paths are the host's (sandbox.Scratch).
	VerifierDir string
	// Canaries runs test.sh a second time with mutant canaries in the
	// pytest file it runs, when the first run's verdict is 1 (see
	// canary.go).
	Canaries bool
	// GoldSkips are the tests ("file::test") the task's gold run on this
	// image skipped or xfailed under a condition of their own marks, and
	// GoldKnown says they are known: only those skips count (see mark in
	// evidence.go). A Solution run is its own reference.
	GoldSkips map[string]bool
	GoldKnown bool
}

// RunResult is a graded run.
type RunResult struct {
	reward.RunResult[Result]
	// Canaries is "checked" when the canary run ran, else why not (""
	// when not asked for); CanaryKind says what they were.
	Canaries, CanaryKind string
	// CanaryFindings is what was wrong with the canary run.
	CanaryFindings []string
}

// layout is where the tests, the solution and the verifier output go in a
// box. On a Scratch box they live in its scratch directory, and the copied
// tests' text files are rewritten to name those paths.
type layout struct {
	tests, solution, verifier string
	rewrite                   bool
}

func layoutFor(box sandbox.Sandbox, verifier string) layout {
	l := layout{tests: TestsDir, solution: SolutionDir, verifier: VerifierDir}
	if sc, ok := box.(sandbox.Scratch); ok {
		root := path.Join(sc.ScratchDir(), "harbor")
		l = layout{tests: root + TestsDir, solution: root + SolutionDir, verifier: root + VerifierDir, rewrite: true}
	}
	if verifier != "" {
		l.verifier = verifier
	}
	return l
}

// Check reports whether t can be graded this way.
func Check(t *task.Task) error {
	if t.TaskDir == "" {
		return fmt.Errorf("task %s: task_dir: empty; harbor grading runs the task directory's tests/%s", t.InstanceID, TestScript)
	}
	if fi, err := os.Stat(filepath.Join(t.TaskDir, "tests", TestScript)); err != nil || fi.IsDir() {
		return fmt.Errorf("task %s: tests/%s: missing in %s", t.InstanceID, TestScript, t.TaskDir)
	}
	return nil
}

var _ reward.RunFunc[RunOptions, *RunResult] = Run

// Run grades the box's current state the way Harbor's verifier does, after
// applying Patch (or running the task's solution). A patch that does not
// apply, a verifier that times out or leaves no readable reward give reward
// 0 with the reason; errors mean the box failed or the task has no tests.
func Run(ctx context.Context, box sandbox.Sandbox, t *task.Task, opts RunOptions) (*RunResult, error) {
	if err := Check(t); err != nil {
		return nil, err
	}
	start := time.Now()
	l := layoutFor(box, opts.VerifierDir)
	timeout := opts.EvalTimeout
	if timeout <= 0 {
		timeout = VerifierTimeout(t)
	}
	rr := &RunResult{RunResult: reward.RunResult[Result]{Result: &Result{InstanceID: t.InstanceID, ExitCode: -1}}}
	var log strings.Builder
	if opts.Patch != "" {
		patchFile, _ := reward.Paths(box)
		before, err := reward.MarkTree(ctx, box, opts.Workdir)
		if err != nil {
			return nil, fmt.Errorf("task %s: mark the work tree: %w", t.InstanceID, err)
		}
		applied, applyLog, err := reward.ApplyPatch(ctx, box, opts.Workdir, patchFile, opts.Patch)
		if err != nil {
			return nil, fmt.Errorf("task %s: apply patch: %w", t.InstanceID, err)
		}
		rr.ApplyLog = applyLog
		if !applied {
			rr.ApplyFailed, rr.Log, rr.Duration = true, applyLog, time.Since(start)
			rr.Result.Reason = "patch did not apply: " + reward.LastLine(applyLog)
			return rr, nil
		}
		if rr.Tree, err = reward.AppliedTree(ctx, box, opts.Workdir, before); err != nil {
			return nil, fmt.Errorf("task %s: read the applied tree: %w", t.InstanceID, err)
		}
	}
	if opts.Solution {
		if err := upload(ctx, box, filepath.Join(t.TaskDir, "solution"), l.solution, l); err != nil {
			return nil, fmt.Errorf("task %s: copy solution/: %w", t.InstanceID, err)
		}
		res, err := box.Exec(ctx, sandbox.ExecRequest{Cmd: []string{"bash", path.Join(l.solution, "solve.sh")}, Cwd: opts.Workdir,
			Timeout: tomlSeconds(t, "agent", timeout), MaxOutput: reward.MaxLog})
		if err != nil {
			return nil, fmt.Errorf("task %s: run solution/solve.sh: %w", t.InstanceID, err)
		}
		fmt.Fprintf(&log, "$ bash %s/solve.sh (exit %d)\n%s\n$ bash %s/%s\n", l.solution, res.ExitCode, res.Output, l.tests, TestScript)
	}
	// An empty verifier directory: nothing left from an earlier run, the
	// agent or the solution can stand in for what test.sh writes.
	prep := fmt.Sprintf("mkdir -p %s && find %s -mindepth 1 -delete", quote(l.verifier), quote(l.verifier))
	if res, err := box.Exec(ctx, sandbox.ExecRequest{Cmd: []string{"/bin/bash", "-c", prep}, Timeout: time.Minute}); err != nil {
		return nil, fmt.Errorf("task %s: make %s: %w", t.InstanceID, l.verifier, err)
	} else if res.ExitCode != 0 {
		return nil, fmt.Errorf("task %s: make %s: %s", t.InstanceID, l.verifier, reward.LastLine(string(res.Output)))
	}
	if err := upload(ctx, box, filepath.Join(t.TaskDir, "tests"), l.tests, l); err != nil {
		return nil, fmt.Errorf("task %s: copy tests/: %w", t.InstanceID, err)
	}
	script, err := os.ReadFile(filepath.Join(t.TaskDir, "tests", TestScript))
	if err != nil {
		return nil, fmt.Errorf("task %s: read tests/%s: %w", t.InstanceID, TestScript, err)
	}
	files, noEvidence := expectedFiles(t.TaskDir)
	if files == nil && noEvidence == "" {
		files, noEvidence = pytestFiles(t.TaskDir, string(script))
	}
	scripts := string(script) + "\n" + otherScripts(t.TaskDir)
	if l.rewrite {
		script = l.rewritePaths(script)
	}
	u, err := prepareUser(ctx, box, l, scripts)
	if err != nil {
		return nil, fmt.Errorf("task %s: %w", t.InstanceID, err)
	}
	rr.Phases = u.phases
	if len(files) > 0 {
		u.env = append(u.env, "PYTEST_ADDOPTS=-rA")
	}
	// Sealed, like every eval script: $0 and BASH_SOURCE are test.sh's path
	// as under `bash /tests/test.sh`, and the exit status is test.sh's own.
	runTests := func() (*reward.ScriptRun, error) {
		return reward.RunScriptAs(ctx, box, opts.Workdir, path.Join(l.tests, TestScript), string(script), timeout, u.user, u.env)
	}
	run, err := runTests()
	if err != nil {
		return nil, fmt.Errorf("task %s: run tests/%s: %w", t.InstanceID, TestScript, err)
	}
	rr.Trace, rr.ScriptExit, rr.Findings = run.Trace, run.ExitCode, run.Findings
	if run.TimedOut {
		rr.TimedOut = true
		log.WriteString(run.Log)
		rr.Log, rr.Duration = log.String(), time.Since(start)
		rr.Result.Reason = "eval timed out: " + reward.LastLine(strings.TrimSuffix(run.Log, reward.LastLine(run.Log)))
		return rr, nil
	}
	log.WriteString(run.Log)
	rr.Log, rr.Duration = log.String(), time.Since(start)
	rr.Result.ExitCode = run.ExitCode
	var f Files
	for name, dst := range map[string]*[]byte{RewardJSON: &f.JSON, RewardText: &f.Text} {
		b, err := box.ReadFile(ctx, path.Join(l.verifier, name))
		switch {
		case errors.Is(err, sandbox.ErrNotFound):
		case err != nil:
			return nil, fmt.Errorf("task %s: read %s: %w", t.InstanceID, name, err)
		default:
			if b == nil {
				b = []byte{}
			}
			*dst = b
		}
	}
	ReadReward(rr.Result, f)
	if len(files) == 0 {
		rr.Result.Evidence = "not checked: " + noEvidence
		return rr, nil
	}
	ref := reference{Gold: opts.Solution, Known: opts.GoldKnown, Skips: opts.GoldSkips}
	ev := checkEvidence(foldedSkips(parsePytest(run.Log), run.Log, files), files, ref)
	rr.Result.Evidence = fmt.Sprintf("%d of %d tests passed in the test output", ev.Passed, ev.Tests)
	rr.Result.TestsPassed, rr.Result.ConditionalSkips, rr.Result.EvidenceChecked = ev.Passed, ev.CondSkipped, true
	if rr.Result.Reward > 0 && !ev.ok() {
		rr.Result.Reward, rr.Result.Resolved, rr.Result.Reason = 0, false, ev.why()
	}
	if !opts.Canaries {
		return rr, nil
	}
	if !rr.Result.Resolved {
		rr.Canaries = "not checked: the tests did not pass"
		return rr, nil
	}
	if files[0].Source == "" {
		rr.Canaries = "not available: the tests are the eval script's, not a file of tests/"
		return rr, nil
	}
	can := planCanaries(t.InstanceID, files[0])
	if !can.Available() {
		rr.Canaries = can.Unavailable
		return rr, nil
	}
	rr.CanaryKind = can.Kind()
	// Nothing the first run left where the code under test can write
	// survives into the second: it cannot tell the runs apart by it.
	if err := u.clean(ctx, box, l); err != nil {
		return nil, fmt.Errorf("task %s: %w", t.InstanceID, err)
	}
	if why, err := inject(ctx, box, l, can); err != nil {
		return nil, fmt.Errorf("task %s: %w", t.InstanceID, err)
	} else if why != "" {
		rr.Canaries = "not checked: " + why
		return rr, nil
	}
	crun, err := runTests()
	if err != nil {
		return nil, fmt.Errorf("task %s: run tests/%s with the canaries: %w", t.InstanceID, TestScript, err)
	}
	rr.Canaries = "checked"
	csm := parsePytest(crun.Log)
	rr.CanaryFindings = can.Verify(csm, true)
	if cev := checkEvidence(foldedSkips(csm, crun.Log, files), files, ref); !cev.ok() {
		rr.CanaryFindings = append(rr.CanaryFindings, "the canary run: "+cev.why())
	}
	rr.Findings = append(rr.Findings, crun.Findings...)
	return rr, nil
}

// otherScripts joins the shell scripts of the task's tests/ but test.sh
// (what test.sh may source or run).
func otherScripts(taskDir string) string {
	var b strings.Builder
	root := filepath.Join(taskDir, "tests")
	_ = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".sh") || p == filepath.Join(root, TestScript) {
			return nil
		}
		if data, err := os.ReadFile(p); err == nil {
			b.Write(data)
			b.WriteByte('\n')
		}
		return nil
	})
	return b.String()
}

// VerifierTimeout is the task's [verifier] timeout_sec, else
// reward.DefaultEvalTimeout: what Run uses when given no EvalTimeout.
func VerifierTimeout(t *task.Task) time.Duration {
	return tomlSeconds(t, "verifier", reward.DefaultEvalTimeout)
}

// tomlSeconds reads [section] timeout_sec from the task's task.toml (kept
// as the task's raw row), or returns def.
func tomlSeconds(t *task.Task, section string, def time.Duration) time.Duration {
	raw, ok := t.RawField(section)
	if !ok {
		return def
	}
	var s struct {
		TimeoutSec *float64 `json:"timeout_sec"`
	}
	if err := json.Unmarshal(raw, &s); err != nil || s.TimeoutSec == nil || *s.TimeoutSec <= 0 {
		return def
	}
	return time.Duration(*s.TimeoutSec * float64(time.Second))
}

// upload copies the host directory src into the box at dst, keeping file
// modes; with l.rewrite, text files have Harbor's absolute paths replaced
// by l's.
func upload(ctx context.Context, box sandbox.Sandbox, src, dst string, l layout) error {
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			return nil
		}
		fi, err := os.Stat(p) // through symbolic links
		if err != nil || !fi.Mode().IsRegular() {
			return nil
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		if l.rewrite {
			data = l.rewritePaths(data)
		}
		return box.WriteFile(ctx, path.Join(dst, filepath.ToSlash(rel)), data, fi.Mode().Perm())
	})
}

// rewritePaths replaces Harbor's absolute paths (/tests, /solution,
// /logs/verifier) where they stand as whole paths in a text file.
func (l layout) rewritePaths(data []byte) []byte {
	if bytes.IndexByte(data, 0) >= 0 || !utf8.Valid(data) {
		return data
	}
	s := string(data)
	for _, m := range []struct{ from, to string }{
		{VerifierDir, l.verifier}, {TestsDir, l.tests}, {SolutionDir, l.solution},
	} {
		s = replacePath(s, m.from, m.to)
	}
	return []byte(s)
}

// replacePath replaces from in s where it starts a path (not preceded by a
// name character, a slash or a shell expansion) and ends one (not followed
// by a name character).
func replacePath(s, from, to string) string {
	const name = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-"
	var b strings.Builder
	pos := 0
	for {
		i := strings.Index(s[pos:], from)
		if i < 0 {
			b.WriteString(s[pos:])
			return b.String()
		}
		i += pos
		end := i + len(from)
		before := i == 0 || !strings.ContainsRune(name+"/~}$)", rune(s[i-1]))
		after := end == len(s) || !strings.ContainsRune(name, rune(s[end]))
		b.WriteString(s[pos:i])
		if before && after {
			b.WriteString(to)
		} else {
			b.WriteString(from)
		}
		pos = end
	}
}

// quote makes s one single-quoted shell word.
func quote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }
