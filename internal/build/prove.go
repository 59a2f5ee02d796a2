package build

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/swerve-dev/swerve/internal/reward"
	"github.com/swerve-dev/swerve/internal/reward/swefactory"
	"github.com/swerve-dev/swerve/internal/sandbox"
	"github.com/swerve-dev/swerve/internal/sandbox/docker"
	"github.com/swerve-dev/swerve/internal/task"
)

// Stages a failure is reported at.
const (
	StageBuild     = "build"        // the image did not build
	StageRepo      = "repo"         // no git repository at /testbed
	StageUser      = "user"         // commands do not run as root
	StageToolchain = "toolchain"    // bash -lc does not see the image's tools
	StageClean     = "clean"        // git status is not clean after setup
	StageApply     = "apply"        // the gold patch does not apply
	StageEval      = "eval"         // the eval script does not pass with the gold patch
	StageNoPatch   = "eval_nopatch" // the eval script passes without the gold patch
	StageTimeout   = "timeout"      // an eval ran past --eval-timeout: filtered out
	StageModel     = "model"        // the repair model could not be asked or gave nothing usable
	StageRepair    = "repair"       // the repaired eval script dropped the test patch or the test command
	StageInput     = "input"        // the row lacks something no repair can supply
)

// Failure is why an attempt did not prove the environment.
type Failure struct {
	Stage  string `json:"stage"`
	Reason string `json:"reason"`
	// Command is what was run (a shell line or a description), and Output
	// the tail of what it printed; both go to the repair model.
	Command string `json:"command,omitempty"`
	Output  string `json:"output,omitempty"`
	// Final failures are not sent for repair (a timeout, a row without a
	// gold patch).
	Final bool `json:"final,omitempty"`
}

// Engine builds images and opens boxes from them; *docker.Backend is one.
type Engine interface {
	sandbox.Backend
	Build(ctx context.Context, opts docker.BuildOptions) error
}

// Workdir is where the repository must be in the image.
const Workdir = reward.Workdir

// maxTail is how much of a command's output a failure keeps.
const maxTail = 6000

// prover runs the checks of one attempt.
type prover struct {
	eng     Engine
	image   string
	t       *task.Task
	timeout time.Duration
	log     io.Writer // every command and its output
}

// open starts a box from the attempt's image, for the task (which the
// backend labels it with).
func (p *prover) open(ctx context.Context) (sandbox.Sandbox, error) {
	box, err := p.eng.Open(ctx, sandbox.Spec{
		Image: p.image, Pull: sandbox.PullNever, Network: sandbox.NetworkNone, Task: p.t.InstanceID,
	})
	if err != nil {
		return nil, fmt.Errorf("open a box from %s: %w", p.image, err)
	}
	return box, nil
}

// exec runs cmd in box and logs it.
func (p *prover) exec(ctx context.Context, box sandbox.Sandbox, req sandbox.ExecRequest) (sandbox.ExecResult, error) {
	if req.Timeout == 0 {
		req.Timeout = 2 * time.Minute
	}
	res, err := box.Exec(ctx, req)
	if err != nil {
		fmt.Fprintf(p.log, "$ %s\nerror: %v\n\n", shellLine(req.Cmd), err)
		return res, fmt.Errorf("%s: %w", shellLine(req.Cmd), err)
	}
	fmt.Fprintf(p.log, "$ %s (exit %d)\n%s\n", shellLine(req.Cmd), res.ExitCode, withNewline(string(res.Output)))
	return res, nil
}

// prove runs every check: the environment and the gold patch in one box,
// the eval script without the patch in a fresh one. A nil Failure means
// the image is proven; errors mean the engine failed.
func (p *prover) prove(ctx context.Context) (*Failure, error) {
	box, err := p.open(ctx)
	if err != nil {
		return nil, err
	}
	f, err := p.withGold(ctx, box)
	box.Close(context.WithoutCancel(ctx))
	if f != nil || err != nil {
		return f, err
	}
	box, err = p.open(ctx)
	if err != nil {
		return nil, err
	}
	defer box.Close(context.WithoutCancel(ctx))
	return p.withoutPatch(ctx, box)
}

// withGold checks the environment, applies the gold patch and runs the
// eval script.
func (p *prover) withGold(ctx context.Context, box sandbox.Sandbox) (*Failure, error) {
	for _, check := range []func(context.Context, sandbox.Sandbox) (*Failure, error){
		p.checkUser, p.checkRepo, p.checkToolchain, p.checkClean,
	} {
		if f, err := check(ctx, box); f != nil || err != nil {
			return f, err
		}
	}
	patchFile, evalFile := reward.Paths(box)
	fmt.Fprintf(p.log, "# apply the gold patch (%s)\n", patchFile)
	applied, applyLog, err := reward.ApplyPatch(ctx, box, Workdir, patchFile, p.t.Patch)
	fmt.Fprintf(p.log, "%s\n", withNewline(applyLog))
	if err != nil {
		return nil, fmt.Errorf("apply the gold patch: %w", err)
	}
	if !applied {
		return &Failure{Stage: StageApply, Reason: "the gold patch does not apply to /testbed: " + reward.LastLine(applyLog),
			Command: "git apply --verbose " + patchFile + " (then --3way, --reject, patch --fuzz=5)", Output: tail(applyLog)}, nil
	}
	return p.runEval(ctx, box, evalFile, true)
}

// withoutPatch runs the eval script on the untouched repository.
func (p *prover) withoutPatch(ctx context.Context, box sandbox.Sandbox) (*Failure, error) {
	_, evalFile := reward.Paths(box)
	return p.runEval(ctx, box, evalFile, false)
}

// runEval runs the eval script and reads its exit-code line.
func (p *prover) runEval(ctx context.Context, box sandbox.Sandbox, evalFile string, gold bool) (*Failure, error) {
	with := "with the gold patch"
	if !gold {
		with = "without the gold patch"
	}
	fmt.Fprintf(p.log, "# run the eval script %s (bash %s, limit %s)\n", with, evalFile, p.timeout)
	run, err := reward.RunScript(ctx, box, Workdir, evalFile, p.t.EvalScript, p.timeout)
	if err != nil {
		return nil, fmt.Errorf("run the eval script: %w", err)
	}
	fmt.Fprintf(p.log, "%s(exit %d, %.1fs)\n\n", withNewline(run.Log), run.ExitCode, run.Duration.Seconds())
	cmd := "bash " + evalFile + " (the eval script, " + with + ")"
	if run.TimedOut {
		return &Failure{Stage: StageTimeout, Final: true, Command: cmd, Output: tail(run.Log),
			Reason: fmt.Sprintf("the eval script ran longer than --eval-timeout (%s) %s; the task is filtered out", p.timeout, with)}, nil
	}
	res := swefactory.Evaluate(p.t, run.Log)
	switch {
	case gold && res.ExitCode < 0:
		return &Failure{Stage: StageEval, Command: cmd, Output: tail(run.Log),
			Reason: "the eval script printed no " + swefactory.Marker + "=<n> line " + with}, nil
	case gold && res.ExitCode != 0:
		return &Failure{Stage: StageEval, Command: cmd, Output: tail(run.Log),
			Reason: fmt.Sprintf("%s the eval script printed %s=%d, not 0", with, swefactory.Marker, res.ExitCode)}, nil
	case !gold && res.ExitCode == 0:
		return &Failure{Stage: StageNoPatch, Command: cmd, Output: tail(run.Log),
			Reason: fmt.Sprintf("%s the eval script already printed %s=0: its tests do not check the fix", with, swefactory.Marker)}, nil
	}
	return nil, nil
}

// checkRepo: /testbed is the top of a git work tree.
func (p *prover) checkRepo(ctx context.Context, box sandbox.Sandbox) (*Failure, error) {
	cmd := []string{"git", "-C", Workdir, "rev-parse", "--show-toplevel"}
	res, err := p.exec(ctx, box, sandbox.ExecRequest{Cmd: cmd})
	if err != nil {
		return nil, err
	}
	top := strings.TrimSpace(string(res.Output))
	if res.ExitCode == 0 && top == Workdir {
		return nil, nil
	}
	f := &Failure{Stage: StageRepo, Command: shellLine(cmd), Output: tail(string(res.Output))}
	switch {
	case res.ExitCode == 127:
		f.Reason = "git is not installed in the image"
		return f, nil
	case res.ExitCode == 0:
		f.Reason = fmt.Sprintf("/testbed is not the top of its git repository (the repository is %s): clone the repository into /testbed itself", top)
		return f, nil
	}
	// Where is the repository, then?
	look, err := p.exec(ctx, box, sandbox.ExecRequest{Cmd: []string{"sh", "-c",
		`if [ ! -d /testbed ]; then echo "missing"; exit 0; fi; find /testbed -maxdepth 3 -name .git 2>/dev/null | sed 's#/\.git$##' | sort | head -n 5`}})
	if err != nil {
		return nil, err
	}
	found := strings.Fields(string(look.Output))
	switch {
	case slices.Equal(found, []string{"missing"}):
		f.Reason = "/testbed does not exist: the repository must be cloned into /testbed"
	case len(found) > 0 && found[0] != Workdir:
		f.Reason = fmt.Sprintf("no git repository at /testbed; found one at %s: clone the repository into /testbed itself", strings.Join(found, ", "))
	default:
		f.Reason = "no git repository at /testbed: " + reward.LastLine(strings.TrimSpace(string(res.Output)))
	}
	return f, nil
}

// checkUser: commands run as root.
func (p *prover) checkUser(ctx context.Context, box sandbox.Sandbox) (*Failure, error) {
	cmd := []string{"id", "-u"}
	res, err := p.exec(ctx, box, sandbox.ExecRequest{Cmd: cmd})
	if err != nil {
		return nil, err
	}
	uid := strings.TrimSpace(string(res.Output))
	if res.ExitCode == 0 && uid == "0" {
		return nil, nil
	}
	f := &Failure{Stage: StageUser, Command: shellLine(cmd), Output: tail(string(res.Output))}
	if _, err := strconv.Atoi(uid); res.ExitCode == 0 && err == nil {
		f.Reason = fmt.Sprintf("commands in the image run as uid %s, not root: end the Dockerfile as root (USER root)", uid)
	} else {
		f.Reason = "cannot tell which user the image runs as (id -u failed)"
	}
	return f, nil
}

// checkToolchain: a login shell (bash -lc, as the eval script and the
// agents' commands are run) works and keeps every directory the image puts
// on PATH.
func (p *prover) checkToolchain(ctx context.Context, box sandbox.Sandbox) (*Failure, error) {
	const listDirs = `IFS=:; for d in $PATH; do [ -d "$d" ] && echo "$d"; done; true`
	plain, err := p.exec(ctx, box, sandbox.ExecRequest{Cmd: []string{"sh", "-c", listDirs}})
	if err != nil {
		return nil, err
	}
	loginCmd := []string{"bash", "-lc", listDirs + `; command -v git >/dev/null || echo "NO-GIT"`}
	login, err := p.exec(ctx, box, sandbox.ExecRequest{Cmd: loginCmd})
	if err != nil {
		return nil, err
	}
	f := &Failure{Stage: StageToolchain, Command: shellLine(loginCmd), Output: tail(string(login.Output))}
	if login.ExitCode == 127 && strings.Contains(string(login.Output), "bash") {
		f.Reason = "bash is not installed in the image; the eval script runs with bash"
		return f, nil
	}
	if login.ExitCode != 0 {
		f.Reason = fmt.Sprintf("a login shell fails in the image (bash -lc exits %d): check /root/.profile and /etc/profile", login.ExitCode)
		return f, nil
	}
	have := strings.Fields(string(login.Output))
	if slices.Contains(have, "NO-GIT") {
		f.Reason = "git is not on the PATH of a login shell (bash -lc)"
		return f, nil
	}
	var lost []string
	for _, d := range strings.Fields(string(plain.Output)) {
		if !slices.Contains(have, d) && !slices.Contains(lost, d) {
			lost = append(lost, d)
		}
	}
	if len(lost) > 0 {
		f.Reason = fmt.Sprintf("bash -lc loses PATH entries the image sets (%s): /etc/profile resets PATH, so also export them in /root/.profile", strings.Join(lost, ":"))
		f.Output = "PATH directories without a login shell:\n" + string(plain.Output) + "\nwith bash -lc:\n" + string(login.Output)
		return f, nil
	}
	return nil, nil
}

// checkClean: setting up the environment left the work tree clean
// (artefacts belong in .git/info/exclude).
func (p *prover) checkClean(ctx context.Context, box sandbox.Sandbox) (*Failure, error) {
	cmd := []string{"git", "-C", Workdir, "status", "--porcelain"}
	res, err := p.exec(ctx, box, sandbox.ExecRequest{Cmd: cmd})
	if err != nil {
		return nil, err
	}
	out := strings.TrimRight(string(res.Output), "\n")
	if res.ExitCode == 0 && out == "" {
		return nil, nil
	}
	f := &Failure{Stage: StageClean, Command: shellLine(cmd), Output: tail(out)}
	if res.ExitCode != 0 {
		f.Reason = fmt.Sprintf("git status fails in /testbed (exit %d): %s", res.ExitCode, reward.LastLine(out))
		return f, nil
	}
	modes, err := p.exec(ctx, box, sandbox.ExecRequest{Cmd: []string{"git", "-C", Workdir, "-c", "core.filemode=false", "status", "--porcelain"}})
	if err != nil {
		return nil, err
	}
	if modes.ExitCode == 0 && strings.TrimSpace(string(modes.Output)) == "" {
		f.Reason = "git status in /testbed shows file mode changes only (a chmod after the clone?): drop the chmod, or run git config core.filemode false in /testbed"
		return f, nil
	}
	lines := strings.Split(out, "\n")
	shown := lines
	if len(shown) > 5 {
		shown = append(slices.Clone(shown[:5]), fmt.Sprintf("and %d more", len(lines)-5))
	}
	f.Reason = fmt.Sprintf("git status in /testbed is not clean after the build (%s): list environment artefacts in /testbed/.git/info/exclude and leave tracked files unchanged",
		strings.Join(trimAll(shown), "; "))
	return f, nil
}

func trimAll(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = strings.TrimSpace(s)
	}
	return out
}

// shellLine renders argv for people.
func shellLine(argv []string) string {
	parts := make([]string, len(argv))
	for i, a := range argv {
		if a == "" || strings.ContainsAny(a, " \t\n'\"$;&|<>*?()") {
			a = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
		}
		parts[i] = a
	}
	return strings.Join(parts, " ")
}

// tail keeps the end of s, at most maxTail bytes, from a line start.
func tail(s string) string {
	if len(s) <= maxTail {
		return s
	}
	s = s[len(s)-maxTail:]
	if i := strings.IndexByte(s, '\n'); i >= 0 && i < 200 {
		s = s[i+1:]
	}
	return "[... earlier output cut ...]\n" + s
}

func withNewline(s string) string {
	if s == "" || strings.HasSuffix(s, "\n") {
		return s
	}
	return s + "\n"
}
