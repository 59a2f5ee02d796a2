// Package reward holds what every grader shares: putting a patch into a box
// the way the SWE-bench harness does, and running an eval script in it.
// The graders themselves live in sub-packages (swebench, swefactory, ...).
package reward

import (
	"context"
	"fmt"
	"io/fs"
	"path"
	"strings"
	"time"

	"github.com/swerve-dev/swerve/internal/lazyre"
	"github.com/swerve-dev/swerve/internal/sandbox"
)

// Where the harness puts things in a container box.
const (
	Workdir   = "/testbed"
	PatchFile = "/tmp/patch.diff"
	EvalFile  = "/eval.sh"
)

// DefaultEvalTimeout is --eval_timeout's default.
const DefaultEvalTimeout = 300 * time.Second

// MaxLog caps a kept eval log; beyond it the middle is elided (a log that
// big is pathological: django at depth 1 prints 35 MB of git show).
const MaxLog = 64 << 20

// Paths returns where the patch and the eval script go in box: the
// harness's paths, or the box's private scratch directory where absolute
// paths are shared with other boxes (sandbox.Scratch).
func Paths(box sandbox.Sandbox) (patchFile, evalFile string) {
	if sc, ok := box.(sandbox.Scratch); ok {
		return path.Join(sc.ScratchDir(), "patch.diff"), path.Join(sc.ScratchDir(), "eval.sh")
	}
	return PatchFile, EvalFile
}

// applyCmds are tried in order until one applies the patch, the tree reset
// between attempts, as the harness (5.x) does.
var applyCmds = []string{
	"git apply --verbose",
	"git apply --verbose --3way",
	"git apply --verbose --reject",
	"patch --batch --forward --fuzz=5 -p1 -i",
}

// ApplyPatch writes patch to patchFile and applies it in dir with the
// harness's commands. It reports whether the patch is in place and what the
// commands printed; errors mean the box failed.
func ApplyPatch(ctx context.Context, box sandbox.Sandbox, dir, patchFile, patch string) (bool, string, error) {
	Phase(ctx, "applying the patch")
	if err := box.WriteFile(ctx, patchFile, []byte(patch), 0o644); err != nil {
		return false, "", err
	}
	var log strings.Builder
	for i, cmd := range applyCmds {
		if i > 0 {
			// A failed attempt (--reject especially) leaves debris behind.
			if _, err := box.Exec(ctx, sandbox.ExecRequest{Cmd: []string{"/bin/bash", "-c", "git checkout -- . ; git clean -fd"}, Cwd: dir, Timeout: time.Minute}); err != nil {
				return false, log.String(), err
			}
		}
		res, err := box.Exec(ctx, sandbox.ExecRequest{Cmd: []string{"/bin/bash", "-c", cmd + " " + patchFile}, Cwd: dir, Timeout: 5 * time.Minute})
		if err != nil {
			return false, log.String(), err
		}
		fmt.Fprintf(&log, "$ %s %s (exit %d)\n%s", cmd, patchFile, res.ExitCode, res.Output)
		if res.ExitCode == 0 {
			Phase(ctx, "patch applied ("+cmd+"); running the tests")
			return true, log.String(), nil
		}
	}
	// Every command failed, yet the patch may be in place already.
	res, err := box.Exec(ctx, sandbox.ExecRequest{Cmd: []string{"/bin/bash", "-c", "git apply --check --reverse " + patchFile}, Cwd: dir, Timeout: time.Minute})
	if err != nil {
		return false, log.String(), err
	}
	return res.ExitCode == 0, log.String(), nil
}

// TreeMark is the work tree as it was before a patch: git's tree object
// of it (tracked files as they are, image-made changes included) and the
// files git neither tracks nor ignores, NUL-separated. Zero when the
// directory is not a git work tree.
type TreeMark struct {
	tree, untracked string
	// index is MarkTree's copy of the index, its file status fresh, which
	// AppliedTree starts from (and removes) so that only the files the
	// patch touched are read again.
	index string
}

// treeIndex starts a script that works on a copy of the index, so the real
// one, which the eval script's own git commands read, keeps its content; it
// stages every tracked file as it is now. No fsmonitor of the
// repository's configuration runs.
const treeIndex = `idx=$(mktemp) || exit 1
trap '[ -n "$keep" ] || rm -f "$idx"' EXIT
cp "$(git rev-parse --git-path index)" "$idx" 2>/dev/null || exit 1
export GIT_INDEX_FILE="$idx" GIT_LITERAL_PATHSPECS=1
git -c core.fsmonitor=false add -u -- . >/dev/null 2>&1 || exit 1
`

// MarkTree records the work tree in dir before ApplyPatch, for
// AppliedTree. Errors mean the box failed.
func MarkTree(ctx context.Context, box sandbox.Sandbox, dir string) (TreeMark, error) {
	// The real index's file status cache is refreshed first, as the eval
	// script's own git status would (its content is unchanged): the files
	// are read once, here, not again by every git command after. The copy
	// of the index stays for AppliedTree: nothing but the apply commands
	// runs in between.
	script := "git -c core.fsmonitor=false update-index -q --refresh >/dev/null 2>&1\n" + treeIndex + "t=$(git write-tree) || exit 1\nkeep=1\nprintf '%s %s\\n' \"$t\" \"$idx\"\ngit ls-files --others --exclude-standard -z"
	res, err := box.Exec(ctx, sandbox.ExecRequest{Cmd: []string{"/bin/bash", "-c", script}, Cwd: dir, Timeout: 2 * time.Minute, MaxOutput: MaxLog})
	if err != nil {
		return TreeMark{}, err
	}
	head, untracked, ok := strings.Cut(string(res.Output), "\n")
	tree, index, _ := strings.Cut(head, " ")
	if res.ExitCode != 0 || res.TimedOut || !ok || !objectName.MatchString(tree) || !strings.HasPrefix(index, "/") {
		return TreeMark{}, nil
	}
	return TreeMark{tree: tree, untracked: untracked, index: index}, nil
}

var objectName = lazyre.New(`^[0-9a-f]{40,64}$`)

// AppliedTree is what a patch did to the work tree in dir, read from the
// tree after ApplyPatch instead of from the patch's text (whose format a
// reader may not know as git and patch(1) do): git's diff from the tree
// MarkTree recorded before the patch to the tree now, tracked files and
// new files git does not ignore, binary files shown as text. "" when the
// directory is not a git work tree or git fails there; errors mean the
// box failed.
func AppliedTree(ctx context.Context, box sandbox.Sandbox, dir string, before TreeMark) (string, error) {
	if before.tree == "" {
		return "", nil
	}
	res, err := box.Exec(ctx, sandbox.ExecRequest{Cmd: []string{"git", "ls-files", "--others", "--exclude-standard", "-z"}, Cwd: dir, Timeout: 2 * time.Minute, MaxOutput: MaxLog})
	if err != nil {
		return "", err
	}
	if res.ExitCode != 0 || res.TimedOut {
		return "", nil
	}
	old := map[string]bool{}
	for _, p := range strings.Split(before.untracked, "\x00") {
		old[p] = true
	}
	var added []string
	for _, p := range strings.Split(string(res.Output), "\x00") {
		if p != "" && !old[p] {
			added = append(added, p)
		}
	}
	script := strings.Replace(treeIndex, `cp "$(git rev-parse --git-path index)" "$idx"`, `mv -f "$2" "$idx"`, 1) + `git -c core.fsmonitor=false add -f --pathspec-from-file=- --pathspec-file-nul >/dev/null 2>&1 || exit 1
now=$(git write-tree) || exit 1
exec git -c core.quotepath=true diff --text --no-color --no-ext-diff --no-textconv --no-renames "$1" "$now"`
	res, err = box.Exec(ctx, sandbox.ExecRequest{Cmd: []string{"/bin/bash", "-c", script, "tree", before.tree, before.index}, Stdin: []byte(strings.Join(added, "\x00")),
		Cwd: dir, Timeout: 2 * time.Minute, MaxOutput: MaxLog})
	if err != nil {
		return "", err
	}
	if res.ExitCode != 0 || res.TimedOut {
		return "", nil
	}
	return string(res.Output), nil
}

// ScriptRun is the outcome of RunScript.
type ScriptRun struct {
	// Log is the script's merged output as `/bin/bash <file>` would have
	// printed it (see Trace), with the harness's timeout note appended when
	// it timed out.
	Log      string
	TimedOut bool
	// ExitCode is the script's own exit status; -1 when it is not known
	// (the run timed out or the runner was killed).
	ExitCode int
	Duration time.Duration
	// Trace is what bash itself traced: the lines graders anchor their
	// verdicts on. Never nil.
	Trace *Trace
	// Findings are what the in-box helper saw the run do to it
	// (sandbox.ExecResult.Findings).
	Findings []string
}

// RunScript writes script to file and runs it with bash in dir, sealed (see
// sealedRunner): the script's trace lines carry a nonce the code under test
// cannot know, so the returned Trace lists only what bash itself traced,
// and ExitCode is the script's own status. It kills the script and
// everything it started after timeout (DefaultEvalTimeout when zero). A box
// that dies while the script runs is a *BoxDiedError.
func RunScript(ctx context.Context, box sandbox.Sandbox, dir, file, script string, timeout time.Duration) (*ScriptRun, error) {
	return runSealed(ctx, box, sealedRun{dir: dir, file: file, script: script, timeout: timeout, mode: 0o755})
}

// sealedRun is one sealed run of a script: RunScript's arguments, and for
// a phase of a phased run (see phases.go) the user it runs as, what it adds
// to the environment and the script file's mode.
type sealedRun struct {
	dir, file, script string
	timeout           time.Duration
	user              string
	env               []string
	mode              fs.FileMode
}

func runSealed(ctx context.Context, box sandbox.Sandbox, r sealedRun) (*ScriptRun, error) {
	timeout, file := r.timeout, r.file
	if timeout <= 0 {
		timeout = DefaultEvalTimeout
	}
	if !strings.Contains(file, "/") {
		file = "./" + file // source searches PATH for a bare name
	}
	if err := box.WriteFile(ctx, file, []byte(r.script), r.mode); err != nil {
		return nil, err
	}
	nonce := newNonce()
	res, err := box.Exec(ctx, sandbox.ExecRequest{
		Cmd:   []string{"/bin/bash", "-c", sealedRunner, file},
		Stdin: []byte(nonce + "\n"),
		Cwd:   r.dir, Timeout: timeout, MaxOutput: MaxLog,
		// Nothing but the eval script runs in a grading box: when it
		// ends, whatever else is running there dies before the log is
		// read. And its runner's memory, which holds the nonce, is out of
		// the tests' reach.
		KillOthers: true, PrivateMemory: true,
		User: r.user, Env: r.env,
	})
	if err != nil {
		if ctx.Err() != nil {
			return nil, err // the caller gave up: not the box's doing
		}
		return nil, diedUnder(err)
	}
	log, tr, code := ParseSealed(string(res.Output), nonce)
	run := &ScriptRun{Log: log, TimedOut: res.TimedOut, ExitCode: code, Duration: res.Duration, Trace: tr, Findings: res.Findings}
	if res.TimedOut {
		run.ExitCode = -1
		run.Log += fmt.Sprintf("\n\nTimeout error: %d seconds exceeded.", int(timeout.Seconds()))
	}
	return run, nil
}

// Attempt is a patch applied and an eval script run in a box.
type Attempt struct {
	// Log is the eval script's output (with the harness's timeout note
	// when it timed out), or the apply commands' output when none applied.
	Log string
	// ApplyLog is what the apply commands printed.
	ApplyLog    string
	ApplyFailed bool // no apply command took the patch; the script did not run
	TimedOut    bool
	Duration    time.Duration
	// ScriptExit is the eval script's own exit status, -1 when unknown.
	ScriptExit int
	// Trace is what bash traced of the eval script (RunScript); nil when
	// the script did not run.
	Trace *Trace
	// Findings are what the in-box helper saw the eval run do to it
	// (ScriptRun.Findings).
	Findings []string
	// Tree is what the patch did to the work tree, read from the tree
	// once it was applied and before anything ran (AppliedTree); "" when
	// there was no patch or no git work tree.
	Tree string `json:"-"`
	// Phases says how the script ran: "phased" (see RunPhased), or
	// "single phase: <why not phased>"; empty when not asked for.
	Phases string
	// Tampered lists what a phased run found changed outside the work
	// tree by the patch's code (each "<path> <what>"); the tests did not
	// run then.
	Tampered []string
}

// AttemptOptions configure Try.
type AttemptOptions struct {
	Patch       string        // empty: run the script on the unpatched repository
	Script      string        // the eval script, run sealed (RunScript)
	EvalTimeout time.Duration // zero: DefaultEvalTimeout
	Workdir     string        // empty: Workdir (/testbed); ".": the box's own directory
	// Phased runs a SWE-bench-shaped script in phases (RunPhased), the
	// patch's code never as root; a script or box that cannot be phased
	// runs as one, and Attempt.Phases says why.
	Phased bool
	// RootLines are lines of the test part of a phased run that run as
	// root, each on its own (see splitPhases).
	RootLines []string
	// AfterRoot is the budget of a phased run's part after its first root
	// line, on top of EvalTimeout (see PhaseOptions); a script that runs
	// as one gets EvalTimeout+AfterRoot in all.
	AfterRoot time.Duration
}

// Try applies the patch in box and runs the eval script, as every grader
// does before it reads the log. A patch that does not apply or a script
// that times out are outcomes, not errors; errors mean the box failed.
func Try(ctx context.Context, box sandbox.Sandbox, opts AttemptOptions) (*Attempt, error) {
	start := time.Now()
	dir := opts.Workdir
	if dir == "" {
		dir = Workdir
	}
	_, evalFile := Paths(box)
	a, err := ApplyOnly(ctx, box, dir, opts.Patch)
	if err != nil || a.ApplyFailed {
		return a, err
	}
	var run *ScriptRun
	if opts.Phased {
		pr, why, err := RunPhased(ctx, box, dir, path.Dir(evalFile), opts.Script, PhaseOptions{Timeout: opts.EvalTimeout, RootLines: opts.RootLines, AfterRoot: opts.AfterRoot})
		if err != nil {
			return nil, fmt.Errorf("run eval script in phases: %w", diedUnder(err))
		}
		if pr != nil {
			run, a.Phases, a.Tampered = pr.ScriptRun, "phased", pr.Tampered
		} else {
			a.Phases = "single phase: " + why
		}
	}
	if run == nil {
		var err error
		timeout := opts.EvalTimeout
		if opts.AfterRoot > 0 {
			if timeout <= 0 {
				timeout = DefaultEvalTimeout
			}
			timeout += opts.AfterRoot
		}
		if run, err = RunScript(ctx, box, dir, evalFile, opts.Script, timeout); err != nil {
			return nil, fmt.Errorf("run eval script: %w", err)
		}
	}
	a.Log, a.TimedOut, a.Duration = run.Log, run.TimedOut, time.Since(start)
	a.ScriptExit, a.Trace, a.Findings = run.ExitCode, run.Trace, run.Findings
	return a, nil
}

// LastLine is the last non-empty line of s, for one-line reasons.
func LastLine(s string) string {
	s = strings.TrimRight(s, "\n")
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		return s[i+1:]
	}
	return s
}
