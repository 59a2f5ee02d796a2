package reward

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"path"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/swerve-dev/swerve/internal/lazyre"
	"github.com/swerve-dev/swerve/internal/sandbox"
)

// A phased run keeps the patch's code away from grading. A SWE-bench eval
// script runs as five sealed runs (RunScript), one after the other in the
// same box:
//
//   - setup, as root: everything up to the `git … diff <base>` that shows
//     the patched tree (no code of the repository runs there); its shell
//     state (exported variables, functions, options, directory) is saved.
//   - install, as the grading user (GradingUser): the install/build steps
//     up to the reset of the test files. The work tree, the grading user's
//     home, and the Python environment's site-packages and scripts
//     directories (only them, not what is in them) are the grading user's.
//   - check, as root, once every process of the install is dead: what the
//     grading user owns outside the listed trees (and the byte-code caches
//     it wrote) is removed (sweep); the filesystem outside the work tree,
//     world-writable places included, is listed again and compared with
//     the listing taken before the install (CheckRoots, compareTrees); the
//     editable install's files it wrote must hold only what such an
//     install writes (editable.go), and it may not have made a file a test
//     framework loads by itself in the work tree (generated). Any other
//     change is a finding, and the run stops there.
//   - apply, as root: reset the test files, apply the test patch, inject
//     the canaries; then the test files and the directories above them
//     become root's, and .git root's again.
//   - tests, as the grading user: the markers, the test command and its
//     exit code; cleanup, as root: the rest.
//
// Each later phase starts from the setup's saved state, so the script's
// log reads as one run's. Only the files of the two grading-user phases are
// readable by that user: the full eval script is never written to the box,
// and the apply phase (which holds the test patch) is root's alone.

// GradingUser is the numeric user and group the patch's code runs as in a
// phased run; GradingUserName names it in the box's passwd and group files.
const (
	GradingUser     = "65533:65533"
	GradingUserName = "swerve-eval"
)

// CheckRoots are the trees a phased run lists before and after the install
// phase; the Python environment's own directories are added when they lie
// elsewhere.
var CheckRoots = []string{"/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/usr", "/etc", "/root", "/opt", "/home", "/srv"}

// phasePlan is an eval script cut into phases.
type phasePlan struct {
	setup, install, apply, tests, cleanup string
	// rootStep is a line of the test part the caller named to run as
	// root (RunPhased's rootLines), and tests2 the test part after it;
	// both "" when there is none.
	rootStep, tests2 string
	// testFiles are the files the reset line names (the test patch's).
	testFiles []string
}

var (
	applyHeredoc = lazyre.New(`^git apply\b[^<]*<<-?\s*(['"]?)([A-Za-z0-9_]+)(['"]?)\s*$`)
	resetLine    = lazyre.New(`^git checkout [0-9a-f]{7,40}( [^\s;&|<>$` + "`" + `]+)+$`)
	diffLine     = lazyre.New(`^git (-c \S+ )*diff\b`)
	errexitLine  = lazyre.New(`(^|[;&|]\s*)set\s+-[a-zA-Z]*e|errexit`)
	assignOnly   = lazyre.New(`^[A-Za-z_][A-Za-z0-9_]*(\[[^]]*\])?\+?=\S*$`)
)

// stateWords are the commands that change the shell's own state, which a
// phase cannot hand on to the next.
var stateWords = map[string]bool{
	"cd": true, "pushd": true, "popd": true, "export": true, "unset": true, "declare": true, "typeset": true,
	"local": true, "readonly": true, "alias": true, "unalias": true, "shopt": true, "set": true, "source": true,
	".": true, "eval": true, "umask": true, "ulimit": true, "hash": true, "enable": true, "builtin": true,
	"conda": true, "trap": true, "exit": true, "exec": true, "return": true, "function": true,
}

// splitPhases cuts a SWE-bench eval script into phases, or says why it is
// not in the shape it knows: one here-document (the test patch, applied by
// `git apply … <<EOF` right after the `git checkout <base> <files>` that
// resets the test files), a `git … diff` before it, the start and end
// markers after it, no errexit, and no line in a later phase that changes
// the shell's state (but the activation lines the setup already ran, and
// assignments in the test phase).
//
// A script with neither marker (SWE-Factory's: the tests, `rc=$?` and the
// echo of the status right after the here-document) is cut the same way:
// its test phase runs from the line after the here-document to the reset
// of the test files after it, and, without a `git … diff`, its setup is
// its leading lines that only set the shell up (`set`, `cd`, `source`,
// `export`, comments) and its install step the lines from there to the
// reset. A line of the test phase that is one of rootLines ends it: that
// line runs as root, on its own, and the rest of the test phase after it.
func splitPhases(script string, rootLines ...string) (*phasePlan, string) {
	lines := strings.Split(script, "\n")
	applyAt, docEnd, diffAt, startAt, endAt := -1, -1, -1, -1, -1
	for i := 0; i < len(lines); i++ {
		l := strings.TrimSpace(lines[i])
		if errexitLine.MatchString(l) {
			return nil, "the script exits on the first error (set -e)"
		}
		if strings.Contains(l, "<<") {
			m := applyHeredoc.FindStringSubmatch(l)
			if m == nil || m[1] != m[3] || applyAt >= 0 {
				return nil, fmt.Sprintf("line %d: a here-document other than the test patch's", i+1)
			}
			applyAt = i
			for i++; i < len(lines) && lines[i] != m[2]; i++ {
			}
			if i == len(lines) {
				return nil, "the test patch's here-document does not end"
			}
			docEnd = i
			continue
		}
		switch {
		case applyAt < 0 && diffLine.MatchString(l):
			diffAt = i
		case applyAt >= 0 && startAt < 0 && l == ": '>>>>> Start Test Output'":
			startAt = i
		case startAt >= 0 && endAt < 0 && l == ": '>>>>> End Test Output'":
			endAt = i
		}
	}
	noMarkers := applyAt >= 0 && startAt < 0 && endAt < 0
	switch {
	case applyAt < 0:
		return nil, "no test patch applied from a here-document"
	case diffAt < 0 && !noMarkers:
		return nil, "no git diff before the install step"
	case applyAt == 0 || !resetLine.MatchString(strings.TrimSpace(lines[applyAt-1])):
		return nil, "the test patch is not applied right after the test files are reset"
	case !noMarkers && (startAt < 0 || endAt < 0):
		return nil, "no test output markers after the test patch"
	}
	resetAt := applyAt - 1
	setupEnd := diffAt + 1
	if noMarkers {
		// The tests start right after the here-document.
		startAt, endAt = docEnd+1, docEnd
		if diffAt < 0 {
			setupEnd = 0
			for setupEnd < resetAt && setupLine(strings.TrimSpace(lines[setupEnd])) {
				setupEnd++
			}
		}
	}
	// The test phase runs on to the reset after the end marker (the
	// exit-code echoes are between them).
	testsEnd := endAt + 1
	for testsEnd < len(lines) && !resetLine.MatchString(strings.TrimSpace(lines[testsEnd])) {
		testsEnd++
	}
	// The cleanup starts from the setup's state: it must not read what
	// the test phase set.
	for i := startAt; i < testsEnd; i++ {
		if m := assignOnly.FindString(strings.TrimSpace(lines[i])); m != "" {
			name, _, _ := strings.Cut(m, "=")
			cleanup := strings.Join(lines[testsEnd:], "\n")
			if strings.Contains(cleanup, "$"+name) || strings.Contains(cleanup, "${"+name) {
				return nil, fmt.Sprintf("line %d: the cleanup reads $%s, which the test phase sets", i+1, name)
			}
		}
	}
	setup := lines[:setupEnd]
	seen := map[string]bool{}
	for _, l := range setup {
		seen[strings.TrimSpace(l)] = true
	}
	check := func(from, to int, assignOK bool) string {
		for i := from; i < to; i++ {
			if i > applyAt && i <= docEnd {
				continue
			}
			l := strings.TrimSpace(lines[i])
			if l == "" || strings.HasPrefix(l, "#") || seen[l] && (strings.HasPrefix(l, "source ") || strings.HasPrefix(l, "conda activate ")) {
				continue
			}
			w, _, _ := strings.Cut(l, " ")
			if stateWords[w] || (!assignOK && assignOnly.MatchString(l)) {
				return fmt.Sprintf("line %d (%s) changes the shell's state after the setup", i+1, w)
			}
		}
		return ""
	}
	for _, r := range []struct {
		from, to int
		assign   bool
	}{{setupEnd, startAt, false}, {startAt, testsEnd, true}, {testsEnd, len(lines), false}} {
		if why := check(r.from, r.to, r.assign); why != "" {
			return nil, why
		}
	}
	join := func(from, to int) string { return strings.Join(lines[from:to], "\n") + "\n" }
	plan := &phasePlan{
		setup:     join(0, setupEnd),
		install:   join(setupEnd, resetAt),
		apply:     join(resetAt, startAt),
		tests:     join(startAt, testsEnd),
		cleanup:   strings.Join(lines[testsEnd:], "\n"),
		testFiles: strings.Fields(lines[resetAt])[3:],
	}
	for i := startAt; i < testsEnd; i++ {
		if l := strings.TrimSpace(lines[i]); l != "" && contains(rootLines, l) {
			plan.tests, plan.rootStep, plan.tests2 = join(startAt, i), l+"\n", join(i+1, testsEnd)
			break
		}
	}
	return plan, ""
}

// setupLine reports whether l only sets the shell up: a #! line, a
// comment, `set`, `cd`, `source`/`.` of an absolute path, `conda
// activate`, `export`, `umask`; one command, nothing chained to it.
func setupLine(l string) bool {
	if l == "" || strings.HasPrefix(l, "#") {
		return true
	}
	if strings.ContainsAny(l, ";&|`<>") || strings.Contains(l, "$(") {
		return false
	}
	w, rest, _ := strings.Cut(l, " ")
	switch w {
	case "set", "cd", "export", "umask":
		return true
	case "source", ".":
		return strings.HasPrefix(strings.TrimSpace(rest), "/")
	case "conda":
		return strings.HasPrefix(strings.TrimSpace(rest), "activate ")
	}
	return false
}

// PhasedRun is the outcome of RunPhased.
type PhasedRun struct {
	*ScriptRun
	// Tampered lists what the check found changed outside the work tree
	// (each "<path> <what>"); when set, the phases after the install did
	// not run.
	Tampered []string
	// Phases is how long each phase (and each step between them) took.
	Phases []PhaseTime
	// Swept lists what the install left outside the listed roots (owned
	// by the grading user), removed before the check.
	Swept []string
}

// PhaseTime is how long one phase took.
type PhaseTime struct {
	Name     string
	Duration time.Duration
}

// gitHardening is added to the environment of the root phases after the
// install: git then runs no hook and no file-system monitor from the
// repository's configuration.
var gitHardening = []string{"GIT_CONFIG_COUNT=2", "GIT_CONFIG_KEY_0=core.hooksPath", "GIT_CONFIG_VALUE_0=/dev/null",
	"GIT_CONFIG_KEY_1=core.fsmonitor", "GIT_CONFIG_VALUE_1=false"}

// PhaseOptions configure RunPhased.
type PhaseOptions struct {
	// Timeout bounds the script's phases together (the steps between
	// them do not count); zero: DefaultEvalTimeout.
	Timeout time.Duration
	// RootLines are lines of the test part that run as root, each on its
	// own (see splitPhases).
	RootLines []string
	// AfterRoot, when set, is a budget of its own for the part after the
	// first root line (the grader's second run of the test command, for
	// its canaries): the script's own part keeps Timeout, as the official
	// harness gives it, and the grader's addition does not eat into it.
	AfterRoot time.Duration
}

// RunPhased runs script in box in phases (see the comment at the top of
// phases.go), its files in a new directory under scratch. When the script
// is not in the shape splitPhases knows, or the box cannot run a command as
// GradingUser, it returns nil and why, having run nothing.
func RunPhased(ctx context.Context, box sandbox.Sandbox, dir, scratch, script string, opts PhaseOptions) (*PhasedRun, string, error) {
	timeout := opts.Timeout
	if timeout <= 0 {
		timeout = DefaultEvalTimeout
	}
	plan, why := splitPhases(script, opts.RootLines...)
	if plan == nil {
		return nil, why, nil
	}
	if dir == "." || !path.IsAbs(dir) {
		return nil, "the work tree has no absolute path in the box", nil
	}
	if ok, err := CanRunAsGradingUser(ctx, box); err != nil || !ok {
		return nil, "the box cannot run a command as another user", err
	}
	var b [8]byte
	_, _ = rand.Read(b[:])
	pd := path.Join(scratch, ".swerve-phases-"+hex.EncodeToString(b[:]))
	home := path.Join(pd, "home")
	p := &phaser{box: box, dir: dir, pd: pd, timeout: timeout, out: &PhasedRun{ScriptRun: &ScriptRun{Trace: &Trace{}}}}
	if err := p.root(ctx, "mkdir", fmt.Sprintf("mkdir -m 0711 %s && mkdir -m 0700 %s", shq(pd), shq(home))); err != nil {
		return nil, "", err
	}

	// setup, as root; its trailer saves the shell's state and where the
	// Python environment installs.
	trailer := fmt.Sprintf("\n{ __swerve_flags=$-; set +x; } 2>/dev/null\n"+
		"{ declare -px; declare -f; shopt -p; printf 'cd -- %%q\\n' \"$PWD\"; set +o; printf '#flags %%s\\n' \"$__swerve_flags\"; } >%s 2>/dev/null\n"+
		"__swerve_py=$(command -v python || command -v python3) && \"$__swerve_py\" -E -s -S -c 'import sysconfig; p = sysconfig.get_paths(); print(p[\"purelib\"]); print(p[\"platlib\"]); print(p[\"scripts\"])' >%s 2>/dev/null\n"+
		// Where the setuptools that writes editable finders is (its
		// template checks the finder an install writes), asked before
		// any of the patch's code ran.
		"[ -n \"$__swerve_py\" ] && \"$__swerve_py\" -E -s -c 'import importlib.util as u; s = u.find_spec(\"setuptools\"); print(s.origin if s and s.origin else \"\")' >%s 2>/dev/null\n",
		shq(pd+"/state"), shq(pd+"/pyenv"), shq(pd+"/setuptools"))
	if stop, err := p.phase(ctx, "setup", plan.setup+trailer, "", nil); err != nil || stop {
		return p.out, "", err
	}
	stateB, err := box.ReadFile(ctx, pd+"/state")
	if err != nil {
		return nil, "", fmt.Errorf("read the setup's shell state: %w", err)
	}
	state := restoreState(string(stateB), "")
	var pyDirs []string
	setupOut, err := p.readAll(ctx, []string{pd + "/pyenv", pd + "/setuptools"})
	if err != nil {
		return nil, "", err
	}
	tmpl := ""
	if origin := strings.TrimSpace(setupOut[pd+"/setuptools"]); path.IsAbs(origin) {
		tmpl = path.Join(path.Dir(origin), "command", "editable_wheel.py")
	}
	if b, ok := setupOut[pd+"/pyenv"]; ok {
		for _, d := range strings.Fields(b) {
			if path.IsAbs(d) && !contains(pyDirs, d) {
				pyDirs = append(pyDirs, d)
			}
		}
	}
	sitePkgs, scripts := pyDirs, []string(nil)
	if n := len(pyDirs); n > 0 {
		sitePkgs, scripts = pyDirs[:n-1], pyDirs[n-1:]
	}

	// The grading user gets the work tree, a home, and the environment's
	// directories (not what is in them, but the editable install's own
	// files) for the install.
	t0 := time.Now()
	if err := p.root(ctx, "grant", grantScript(dir, home, sitePkgs, scripts)); err != nil {
		return nil, "", err
	}
	roots := append([]string(nil), CheckRoots...)
	for _, d := range append(append(parents(sitePkgs), pyDirs...), path.Join(dir, ".git")) {
		if !underAny(d, roots) {
			roots = append(roots, d)
		}
	}
	// Places anyone may write outside those roots are listed too: what
	// the install changes there that is not its own is a finding (what
	// is its own is removed before the second listing).
	open, err := p.worldWritable(ctx, roots)
	if err != nil {
		return nil, "", err
	}
	listed := append(append([]string(nil), roots...), open...)
	before, err := p.list(ctx, listed)
	if err != nil {
		return nil, "", err
	}
	trackedBefore, err := p.tracked(ctx)
	if err != nil {
		return nil, "", err
	}
	p.time("snapshot", t0)

	// The grading user's git trusts the root-owned repository.
	if err := box.WriteFile(ctx, pd+"/gitconfig", []byte("[safe]\n\tdirectory = *\n"), 0o644); err != nil {
		return nil, "", fmt.Errorf("phases: write the grading user's git configuration: %w", err)
	}
	uenv := []string{"HOME=" + home, "GIT_CONFIG_GLOBAL=" + pd + "/gitconfig"}
	ustate := restoreState(string(stateB), "export HOME="+shq(home)+" GIT_CONFIG_GLOBAL="+shq(pd+"/gitconfig"))
	if stop, err := p.phase(ctx, "install", ustate+plan.install, GradingUser, uenv); err != nil || stop {
		return p.out, "", err
	}

	// The check, as root: the install's processes died with its run.
	// What the grading user left outside the listed roots, and the
	// byte-code caches it wrote, go first.
	t0 = time.Now()
	var made []string
	if p.out.Swept, made, err = p.sweep(ctx, roots, sitePkgs, pd+"/gitconfig"); err != nil {
		return nil, "", err
	}
	after, err := p.list(ctx, listed)
	if err != nil {
		return nil, "", err
	}
	homeList, err := p.list(ctx, []string{home})
	if err != nil {
		return nil, "", err
	}
	p.out.Tampered = compareTrees(before, after, treeRules{workdir: dir, sitePkgs: sitePkgs, scripts: scripts})
	for _, e := range sortedPaths(homeList) {
		if rel := strings.TrimPrefix(e, home+"/"); e != home && rel != ".cache" && !strings.HasPrefix(rel, ".cache/") {
			p.out.Tampered = append(p.out.Tampered, e+" added (the grading user's home)")
		}
	}
	if len(p.out.Tampered) == 0 {
		// Files the install made in the work tree that a test framework
		// or the interpreter loads by itself: no diff shows them.
		found, err := p.generated(ctx, made)
		if err != nil {
			return nil, "", err
		}
		p.out.Tampered = append(p.out.Tampered, found...)
	}
	if len(p.out.Tampered) == 0 {
		// The editable install's own files hold only what such an
		// install writes.
		found, err := p.editable(ctx, before, after, sitePkgs, scripts, tmpl)
		if err != nil {
			return nil, "", err
		}
		p.out.Tampered = append(p.out.Tampered, found...)
	}
	if len(p.out.Tampered) == 0 {
		// .git is as it was: git may read it. Tracked files the install
		// changed are edits the patch does not show.
		trackedAfter, err := p.tracked(ctx)
		if err != nil {
			return nil, "", err
		}
		for _, f := range sortedStrings(trackedAfter) {
			if trackedBefore[f] != trackedAfter[f] {
				p.out.Tampered = append(p.out.Tampered, path.Join(dir, f)+" changed by the install step")
			}
		}
		for _, f := range sortedStrings(trackedBefore) {
			if _, ok := trackedAfter[f]; !ok {
				p.out.Tampered = append(p.out.Tampered, path.Join(dir, f)+" put back by the install step")
			}
		}
	}
	p.time("check", t0)
	if len(p.out.Tampered) > 0 {
		return p.out, "", nil
	}
	t0 = time.Now()
	if err := p.root(ctx, "revoke", revokeScript(dir, home, sitePkgs, scripts)); err != nil {
		return nil, "", err
	}
	p.time("revoke", t0)

	if stop, err := p.phase(ctx, "apply", state+plan.apply, "", gitHardening); err != nil || stop {
		return p.out, "", err
	}
	t0 = time.Now()
	if err := p.root(ctx, "lock", lockScript(dir, plan.testFiles)); err != nil {
		return nil, "", err
	}
	p.time("lock", t0)
	if stop, err := p.phase(ctx, "tests", ustate+plan.tests, GradingUser, uenv); err != nil || stop {
		return p.out, "", err
	}
	if plan.rootStep != "" {
		if opts.AfterRoot > 0 {
			p.timeout, p.spent = opts.AfterRoot, p.out.Duration
		}
		if stop, err := p.phase(ctx, "root-step", state+plan.rootStep, "", gitHardening); err != nil || stop {
			return p.out, "", err
		}
		if stop, err := p.phase(ctx, "tests-after", ustate+plan.tests2, GradingUser, uenv); err != nil || stop {
			return p.out, "", err
		}
	}
	if _, err := p.phase(ctx, "cleanup", state+plan.cleanup, "", gitHardening); err != nil {
		return nil, "", err
	}
	return p.out, "", nil
}

type phaser struct {
	box     sandbox.Sandbox
	dir, pd string
	timeout time.Duration
	// spent is the script's time before the current budget began.
	spent time.Duration
	out   *PhasedRun
}

func (p *phaser) time(name string, since time.Time) {
	p.out.Phases = append(p.out.Phases, PhaseTime{name, time.Since(since)})
}

// phase runs one phase sealed and adds its log and trace to the run's. It
// reports stop when the run must end there (a timeout).
func (p *phaser) phase(ctx context.Context, name, script, user string, env []string) (stop bool, err error) {
	// The eval timeout is the script's: the steps between phases do not
	// count against it.
	left := p.timeout - (p.out.Duration - p.spent)
	if left <= 0 {
		left = time.Millisecond
	}
	mode := 0o600
	if user != "" {
		mode = 0o644
	}
	t0 := time.Now()
	r, err := runSealed(ctx, p.box, sealedRun{dir: p.dir, file: path.Join(p.pd, name+".sh"), script: script, timeout: left, user: user, env: env, mode: fsMode(mode)})
	if err != nil {
		return true, fmt.Errorf("phase %s: %w", name, err)
	}
	p.time(name, t0)
	run := p.out.ScriptRun
	off := len(run.Log)
	log := r.Log
	if r.TimedOut {
		// runSealed noted the phase's own timeout; the harness notes the
		// script's.
		log = strings.TrimSuffix(log, fmt.Sprintf("\n\nTimeout error: %d seconds exceeded.", int(left.Seconds())))
		log += fmt.Sprintf("\n\nTimeout error: %d seconds exceeded.", int(p.timeout.Seconds()))
	}
	run.Log += log
	for _, l := range r.Trace.Lines {
		l.Start += off
		l.End += off
		run.Trace.Lines = append(run.Trace.Lines, l)
	}
	run.Trace.Ended = r.Trace.Ended
	run.ExitCode, run.TimedOut = r.ExitCode, r.TimedOut
	run.Duration += r.Duration
	return r.TimedOut || !r.Trace.Ended, nil
}

// root runs a bash program as root, unsealed; a non-zero exit is an error.
func (p *phaser) root(ctx context.Context, what, prog string) error {
	res, err := p.box.Exec(ctx, sandbox.ExecRequest{Cmd: []string{"/bin/bash", "-c", prog}, Timeout: 5 * time.Minute, KillOthers: true})
	if err != nil {
		return fmt.Errorf("phases: %s: %w", what, err)
	}
	if res.ExitCode != 0 {
		return fmt.Errorf("phases: %s: exit %d: %s", what, res.ExitCode, LastLine(string(res.Output)))
	}
	return nil
}

// list lists roots with the in-box helper (shim-tree), as root.
func (p *phaser) list(ctx context.Context, roots []string) (map[string]treeEntry, error) {
	res, err := p.box.Exec(ctx, sandbox.ExecRequest{Cmd: append([]string{"/proc/self/exe", "shim-tree"}, roots...), Timeout: 5 * time.Minute, MaxOutput: -1, KillOthers: true})
	if err != nil {
		return nil, fmt.Errorf("phases: list files: %w", err)
	}
	if res.ExitCode != 0 {
		return nil, fmt.Errorf("phases: list files: exit %d: %s", res.ExitCode, LastLine(string(res.Output)))
	}
	return parseTree(string(res.Output))
}

// tracked maps each tracked file of the work tree that differs from HEAD
// to a digest of its content (its mode and type too), as root with git's
// hooks and monitor off.
func (p *phaser) tracked(ctx context.Context) (map[string]string, error) {
	prog := `git -c safe.directory='*' -c core.quotePath=false diff HEAD --no-ext-diff --no-textconv --name-only -z | ` +
		`while IFS= read -r -d '' f; do printf '%s\t%s\n' "$f" "$( { stat -c '%F %a' -- "$f" 2>/dev/null; cat -- "$f" 2>/dev/null; } | sha256sum)"; done`
	res, err := p.box.Exec(ctx, sandbox.ExecRequest{Cmd: []string{"/bin/bash", "-c", prog}, Cwd: p.dir, Env: gitHardening, Timeout: 5 * time.Minute, MaxOutput: -1, KillOthers: true})
	if err != nil {
		return nil, fmt.Errorf("phases: list changed tracked files: %w", err)
	}
	if res.ExitCode != 0 {
		return nil, fmt.Errorf("phases: list changed tracked files: exit %d: %s", res.ExitCode, LastLine(string(res.Output)))
	}
	m := map[string]string{}
	for _, l := range strings.Split(strings.TrimRight(string(res.Output), "\n"), "\n") {
		if f, digest, ok := strings.Cut(l, "\t"); ok {
			m[f] = digest
		}
	}
	return m, nil
}

// pruned is a find(1) expression that matches the paths whose trees a
// search of the whole filesystem leaves out: the kernel's, the work tree,
// the phases' own directory, and the listed roots.
func (p *phaser) pruned(roots []string) string {
	var b strings.Builder
	b.WriteString(`\( -path /proc -o -path /sys -o -path /dev/pts`)
	for _, r := range append([]string{p.dir, p.pd}, roots...) {
		b.WriteString(" -o -path " + shq(r))
	}
	b.WriteString(` \) -prune`)
	return b.String()
}

// worldWritable lists the directories and files outside roots that every
// user may write (on every mounted filesystem but /proc and /sys), those
// below another left out.
func (p *phaser) worldWritable(ctx context.Context, roots []string) ([]string, error) {
	prog := "find / " + p.pruned(roots) + ` -o \( -type d -o -type f \) -perm -0002 -print0 2>/dev/null; true`
	res, err := p.box.Exec(ctx, sandbox.ExecRequest{Cmd: []string{"/bin/bash", "-c", prog}, Timeout: 5 * time.Minute, MaxOutput: -1, KillOthers: true})
	if err != nil {
		return nil, fmt.Errorf("phases: find world-writable places: %w", err)
	}
	var out []string
	for _, f := range strings.Split(string(res.Output), "\x00") {
		if path.IsAbs(f) && !underAny(f, out) {
			out = append(out, f)
		}
	}
	return out, nil
}

// sweep removes, as root, what the grading user owns outside the listed
// roots, the work tree, its home and the phases' directory (a pip build
// directory in /tmp, or whatever the install planted there), and the
// byte-code caches it wrote in the work tree and in site-packages (a cache
// can be made to hold other code than its source's: the interpreter
// checks only the source's time and size, or nothing). It returns what it
// removed outside the work tree.
func (p *phaser) sweep(ctx context.Context, roots, sitePkgs []string, marker string) (swept, made []string, err error) {
	uid, gid, _ := strings.Cut(GradingUser, ":")
	own := fmt.Sprintf(`\( -uid %s -o -gid %s \)`, uid, gid)
	var b strings.Builder
	// First, for generated: the files of the work tree whose status
	// changed after marker was written, by name.
	fmt.Fprintf(&b, "find %s -path %s -prune -o ! -type d -cnewer %s \\( -name '*.pth' -o -name '*.py' -o -name '*.ini' -o -name '*.cfg' -o -name '*.toml' -o -name entry_points.txt \\) -print0 || exit 1\nprintf '\\0\\0'\n",
		shq(p.dir), shq(path.Join(p.dir, ".git")), shq(marker))
	fmt.Fprintf(&b, "find %[1]s -path %[2]s -prune -o ! -type d \\( -name '*.pyc' -o -name '*.pyo' \\) %[3]s -print0 2>/dev/null | xargs -0r rm -f -- || exit 1\n",
		shq(p.dir), shq(path.Join(p.dir, ".git")), own)
	for _, sp := range sitePkgs {
		c := shq(path.Join(sp, "__pycache__"))
		fmt.Fprintf(&b, "if [ -d %[1]s ] && [ ! -L %[1]s ]; then find %[1]s -mindepth 1 -maxdepth 1 ! -type d %[2]s -print0 | xargs -0r rm -f -- || exit 1; fi\n", c, own)
	}
	list := shq(path.Join(p.pd, "swept"))
	fmt.Fprintf(&b, "find / %s -o %s -prune -print0 >%s 2>/dev/null\n", p.pruned(roots), own, list)
	fmt.Fprintf(&b, "xargs -0r rm -rf -- <%[1]s || exit 1\ncat %[1]s\n", list)
	res, err := p.box.Exec(ctx, sandbox.ExecRequest{Cmd: []string{"/bin/bash", "-c", b.String()}, Timeout: 5 * time.Minute, MaxOutput: -1, KillOthers: true})
	if err != nil {
		return nil, nil, fmt.Errorf("phases: sweep: %w", err)
	}
	if res.ExitCode != 0 {
		return nil, nil, fmt.Errorf("phases: sweep: exit %d: %s", res.ExitCode, LastLine(string(res.Output)))
	}
	first, rest, ok := strings.Cut(string(res.Output), "\x00\x00")
	if !ok {
		return nil, nil, fmt.Errorf("phases: sweep: no end to the list of files the install made")
	}
	for _, f := range strings.Split(first, "\x00") {
		if path.IsAbs(f) {
			made = append(made, f)
		}
	}
	for _, f := range strings.Split(rest, "\x00") {
		if path.IsAbs(f) {
			swept = append(swept, f)
		}
	}
	return swept, made, nil
}

// readAll reads files as root in one command: what is not a regular file
// is left out of the map.
func (p *phaser) readAll(ctx context.Context, files []string) (map[string]string, error) {
	out := map[string]string{}
	if len(files) == 0 {
		return out, nil
	}
	prog := `{ for f; do if [ -f "$f" ] && [ ! -L "$f" ]; then wc -c <"$f"; cat -- "$f"; else echo -1; fi; done; } 2>/dev/null`
	res, err := p.box.Exec(ctx, sandbox.ExecRequest{Cmd: append([]string{"/bin/bash", "-c", prog, "bash"}, files...), Timeout: 5 * time.Minute, MaxOutput: -1, KillOthers: true})
	if err != nil {
		return nil, fmt.Errorf("phases: read files: %w", err)
	}
	rest := string(res.Output)
	for _, f := range files {
		head, tail, ok := strings.Cut(rest, "\n")
		n, err := strconv.Atoi(strings.TrimSpace(head))
		if !ok || err != nil || n > len(tail) {
			return nil, fmt.Errorf("phases: read files: output out of step at %s", f)
		}
		if n >= 0 {
			out[f], rest = tail[:n], tail[n:]
		} else {
			rest = tail
		}
	}
	return out, nil
}

// autoLoaded are names of files that a test framework or the interpreter
// loads without being asked (a file of that name in a test directory, for
// those in testDirOnly); an entry_points.txt only with a pytest11 group.
var (
	autoLoaded = map[string]bool{"conftest.py": true, "pytest.ini": true, ".pytest.ini": true, "pytest.toml": true, "tox.ini": true,
		"setup.cfg": true, "pyproject.toml": true, "sitecustomize.py": true, "usercustomize.py": true, "__init__.py": true, "apps.py": true,
		"unittest.py": true, "pytest.py": true, "entry_points.txt": true}
	testDirOnly = map[string]bool{"__init__.py": true, "apps.py": true}
	testDirName = lazyre.New(`(^|/)(tests?|testing|test_[^/]*|[^/]*_tests?)/`)
)

// generated lists, as findings, the files of the work tree the install
// step made or changed (made: their status changed after the install
// began, listed by sweep)
// that a test framework or the interpreter loads by itself: a conftest.py
// or a pytest plugin written by setup.py is in no diff, and the tracked
// files' check does not see an untracked file.
func (p *phaser) generated(ctx context.Context, made []string) ([]string, error) {
	var out []string
	for _, f := range made {
		rel, ok := strings.CutPrefix(f, p.dir+"/")
		if !ok {
			continue
		}
		switch autoLoadedFile(rel) {
		case "":
			continue
		case "plugins?":
			b, err := p.box.ReadFile(ctx, f)
			if err != nil {
				return nil, fmt.Errorf("phases: read %s: %w", f, err)
			}
			if !pytestPlugins.MatchString(string(b)) {
				continue
			}
		}
		out = append(out, f+" made by the install step (a file the tests' framework or the interpreter loads by itself)")
	}
	return out, nil
}

// autoLoadedFile says whether a file of the work tree (its path relative
// to it) is one that a test framework or the interpreter loads by itself:
// "yes", "plugins?" for an entry_points.txt (loaded when it declares a
// pytest plugin), "" for no. What is under build/ or dist/ is build output
// pytest does not collect and nothing imports.
func autoLoadedFile(rel string) string {
	base := path.Base(rel)
	switch {
	case strings.HasPrefix(rel, "build/") || strings.HasPrefix(rel, "dist/"):
		return ""
	case strings.HasSuffix(base, ".pth"):
		return "yes"
	case !autoLoaded[base]:
		return ""
	case testDirOnly[base] && !testDirName.MatchString(rel):
		return ""
	case base == "entry_points.txt":
		dir := path.Base(path.Dir(rel))
		if strings.HasSuffix(dir, ".egg-info") || strings.HasSuffix(dir, ".dist-info") {
			return "plugins?"
		}
		return ""
	}
	return "yes"
}

var pytestPlugins = lazyre.New(`(?m)^\s*\[\s*pytest11\s*\]`)

// editable checks what the editable install's files the install added or
// changed in site-packages hold (see editable.go); tmplFile is setuptools'
// editable_wheel module, or "".
func (p *phaser) editable(ctx context.Context, before, after map[string]treeEntry, sitePkgs, scripts []string, tmplFile string) ([]string, error) {
	var out, entries, check []string
	changed := func(f string) bool {
		b, ok := before[f]
		return !ok || entryChange(b, after[f]) != ""
	}
	finder := false
	for _, f := range sortedPaths(after) {
		a, d := after[f], path.Dir(f)
		if path.Base(f) == "entry_points.txt" && strings.HasSuffix(d, ".dist-info") && contains(sitePkgs, path.Dir(d)) && changed(f) && a.kind == 'f' {
			entries = append(entries, f)
			continue
		}
		kind := editableKind(path.Base(f))
		if kind == "" || !contains(sitePkgs, d) || !changed(f) {
			continue // not one of them, or the image's own
		}
		if a.kind != 'f' {
			out = append(out, f+" is not a regular file")
			continue
		}
		check = append(check, f)
		finder = finder || kind == "finder"
	}
	read := append(append([]string(nil), entries...), check...)
	if finder && tmplFile != "" {
		read = append(read, tmplFile)
	}
	content, err := p.readAll(ctx, read)
	if err != nil {
		return nil, err
	}
	// The console scripts the install may rewrite are those its
	// dist-info names; a pytest plugin it declares is loaded by pytest
	// by itself.
	launchers := map[string]bool{}
	for _, f := range entries {
		groups := entryPoints(content[f])
		if len(groups["pytest11"]) > 0 {
			out = append(out, f+" declares a pytest plugin (pytest loads it by itself)")
		}
		for _, n := range append(groups["console_scripts"], groups["gui_scripts"]...) {
			launchers[n] = true
		}
	}
	for _, f := range sortedPaths(after) {
		if _, ok := before[f]; ok && contains(scripts, path.Dir(f)) && changed(f) && !launchers[path.Base(f)] {
			out = append(out, f+" rewritten, and no console script the install declares has that name")
		}
	}
	var tmpl *regexp.Regexp
	if src, ok := content[tmplFile]; ok && tmplFile != "" {
		tmpl = finderTemplate(src)
	}
	for _, f := range check {
		text, ok := content[f]
		if !ok {
			out = append(out, f+" cannot be read")
			continue
		}
		switch editableKind(path.Base(f)) {
		case "pth":
			named := map[string]bool{}
			out = append(out, checkPth(f, text, p.dir, named)...)
			for _, n := range sortedKeys(named) {
				if e, ok := after[path.Join(path.Dir(f), n+".py")]; !ok || e.kind != 'f' {
					out = append(out, fmt.Sprintf("%s loads a finder that is not there (%s)", f, n))
				}
			}
		case "egg-link":
			out = append(out, checkEggLink(f, text, p.dir)...)
		case "finder":
			if why := checkFinder(f, text, tmpl, p.dir); why != "" {
				out = append(out, why)
			}
		}
	}
	return out, nil
}

// restoreState turns what the setup's trailer saved into a prologue that
// puts the state back silently, and turns tracing back on last when it
// was on. extra is added to the silent part.
func restoreState(saved, extra string) string {
	var b strings.Builder
	b.WriteString("{\n")
	xtrace := false
	for _, l := range strings.Split(saved, "\n") {
		if f, ok := strings.CutPrefix(l, "#flags "); ok {
			xtrace = strings.Contains(f, "x")
			continue
		}
		if l == "set -o xtrace" || l == "set +o xtrace" {
			continue
		}
		b.WriteString(l)
		b.WriteByte('\n')
	}
	if extra != "" {
		b.WriteString(extra + "\n")
	}
	b.WriteString("} >/dev/null 2>&1\n")
	if xtrace {
		b.WriteString("set -x\n")
	}
	return b.String()
}

// grantScript gives the grading user what the install step writes.
func grantScript(dir, home string, sitePkgs, scripts []string) string {
	var b strings.Builder
	u := GradingUser
	fmt.Fprintf(&b, "set -e\n")
	b.WriteString(gradingUserEntries(home))
	fmt.Fprintf(&b, "chown %s %s\n", u, shq(home))
	// The work tree's directories, and its untracked and ignored files
	// (build output), are the grading user's; tracked files and .git stay
	// root's (chown would copy every file up in an overlay filesystem:
	// 20 s for django). The grading user can still replace a tracked file
	// through its directory: the check compares them. -h: a symbolic link
	// is the link's, never its target's.
	fmt.Fprintf(&b, "find %[1]s -path %[2]s -prune -o -type d -exec chown -h %[3]s {} +\n", shq(dir), shq(path.Join(dir, ".git")), u)
	fmt.Fprintf(&b, "git -c safe.directory='*' -C %s ls-files -o -z | (cd %s && xargs -0r chown -h %s)\n", shq(dir), shq(dir), u)
	// pip stashes site-packages whole, by renaming it, when everything in
	// it is the project's: its parent is the grading user's too.
	for _, d := range append(append(parents(sitePkgs), sitePkgs...), scripts...) {
		fmt.Fprintf(&b, "if [ -d %[1]s ] && [ ! -L %[1]s ]; then chown %[2]s %[1]s; fi\n", shq(d), u)
	}
	for _, d := range sitePkgs {
		fmt.Fprintf(&b, "if [ -d %s ]; then (cd %s && for f in __editable__* *.egg-link easy-install.pth; do if [ -f \"$f\" ] && [ ! -L \"$f\" ]; then chown %s \"$f\"; fi; done; "+
			"for f in __editable__.*.pth; do n=${f#__editable__.}; n=${n%%.pth}; if [ -d \"$n.dist-info\" ] && [ ! -L \"$n.dist-info\" ]; then chown -hR %s \"$n.dist-info\"; fi; done; "+
			// pip removes the finder's compiled copy when it uninstalls.
			"if [ -d __pycache__ ] && [ ! -L __pycache__ ]; then chown %s __pycache__; for f in __pycache__/__editable__*; do if [ -f \"$f\" ] && [ ! -L \"$f\" ]; then chown %s \"$f\"; fi; done; fi); fi\n", shq(d), shq(d), u, u, u, u)
	}
	return b.String()
}

// revokeScript takes the environment's directories back, empties the
// grading user's home, and takes .git back: the root phases' git reads it.
func revokeScript(dir, home string, sitePkgs, scripts []string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "set -e\n")
	for _, d := range append(append(parents(sitePkgs), sitePkgs...), scripts...) {
		fmt.Fprintf(&b, "if [ -d %[1]s ] && [ ! -L %[1]s ]; then chown 0:0 %[1]s; fi\n", shq(d))
	}
	for _, d := range sitePkgs {
		fmt.Fprintf(&b, "if [ -d %[1]s ] && [ ! -L %[1]s ]; then chown 0:0 %[1]s; fi\n", shq(path.Join(d, "__pycache__")))
	}
	// What the install wrote there (the editable install's files, console
	// scripts) is root's again: the tests cannot change it for a later
	// phase.
	uid, gid, _ := strings.Cut(GradingUser, ":")
	for _, d := range append(append([]string(nil), sitePkgs...), scripts...) {
		fmt.Fprintf(&b, "if [ -d %[1]s ] && [ ! -L %[1]s ]; then find %[1]s -mindepth 1 -maxdepth 2 \\( -uid %[2]s -o -gid %[3]s \\) -exec chown -h 0:0 {} +; fi\n", shq(d), uid, gid)
	}
	fmt.Fprintf(&b, "find %s -mindepth 1 -delete\n", shq(home))
	// git refuses a work tree its user does not own.
	fmt.Fprintf(&b, "chown 0:0 %s\n", shq(dir))
	return b.String()
}

// lockScript makes the test files root's and read-only, and every
// directory from the work tree down to them root's, sticky and writable by
// all: the tests can still create files there, but cannot remove, rename
// or rewrite what the grader put there.
func lockScript(dir string, files []string) string {
	var b strings.Builder
	dirs := map[string]bool{dir: true}
	for _, f := range files {
		full := path.Join(dir, f)
		if !strings.HasPrefix(full, dir+"/") {
			continue
		}
		fmt.Fprintf(&b, "if [ -e %[1]s ] || [ -L %[1]s ]; then chown -h 0:0 %[1]s; if [ ! -L %[1]s ]; then chmod go-w %[1]s; fi; fi\n", shq(full))
		for d := path.Dir(full); d != dir && strings.HasPrefix(d, dir+"/"); d = path.Dir(d) {
			dirs[d] = true
		}
	}
	for _, d := range sortedKeys(dirs) {
		fmt.Fprintf(&b, "if [ -d %[1]s ] && [ ! -L %[1]s ]; then chown 0:0 %[1]s && chmod 1777 %[1]s; fi\n", shq(d))
	}
	b.WriteString("true\n")
	return b.String()
}

// parents are the directories that hold dirs.
func parents(dirs []string) []string {
	var out []string
	for _, d := range dirs {
		if p := path.Dir(d); !contains(out, p) {
			out = append(out, p)
		}
	}
	return out
}

func shq(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func underAny(p string, roots []string) bool {
	for _, r := range roots {
		if p == r || strings.HasPrefix(p, r+"/") {
			return true
		}
	}
	return false
}
