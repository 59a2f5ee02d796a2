package reward

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"path"
	"strings"
	"time"

	"github.com/swerve-dev/swerve/internal/sandbox"
)

// A user run is the tests phase of a phased run (phases.go) for graders
// that put the hidden tests in place themselves (r2e, swesmith): once the
// grader, as root, has applied the patch and put the tests and canaries
// where they run, the hidden test files become root's and read-only, and
// the test command runs sealed as GradingUser. The work tree's
// directories and untracked files are the grading user's (tests write
// caches and scratch files there), but the hidden files and the
// directories that lead to them are not.

// ApplyOnly applies patch in dir as Try does, without running anything
// after it: Attempt holds the apply log, ApplyFailed and Tree.
func ApplyOnly(ctx context.Context, box sandbox.Sandbox, dir, patch string) (*Attempt, error) {
	if dir == "" {
		dir = Workdir
	}
	start := time.Now()
	a := &Attempt{ScriptExit: -1}
	if patch == "" {
		return a, nil
	}
	patchFile, _ := Paths(box)
	before, err := MarkTree(ctx, box, dir)
	if err != nil {
		return nil, fmt.Errorf("mark the work tree: %w", err)
	}
	applied, applyLog, err := ApplyPatch(ctx, box, dir, patchFile, patch)
	if err != nil {
		return nil, fmt.Errorf("apply patch: %w", err)
	}
	a.ApplyLog = applyLog
	if !applied {
		a.ApplyFailed, a.Log, a.Duration = true, applyLog, time.Since(start)
		return a, nil
	}
	if a.Tree, err = AppliedTree(ctx, box, dir, before); err != nil {
		return nil, fmt.Errorf("read the applied tree: %w", err)
	}
	a.Duration = time.Since(start)
	return a, nil
}

// GradingDir makes a new directory for a grader's own files under
// scratch (the directory of the box's eval script, see Paths): root's,
// mode 0711, so the grading user can read a file in it only by its
// name and list nothing. It returns its path.
func GradingDir(ctx context.Context, box sandbox.Sandbox, scratch string) (string, error) {
	var b [8]byte
	_, _ = rand.Read(b[:])
	pd := path.Join(scratch, ".swerve-grading-"+hex.EncodeToString(b[:]))
	res, err := box.Exec(ctx, sandbox.ExecRequest{Cmd: []string{"mkdir", "-m", "0711", pd}, Timeout: time.Minute})
	if err != nil {
		return "", fmt.Errorf("make the grading directory: %w", err)
	}
	if res.ExitCode != 0 {
		return "", fmt.Errorf("make the grading directory: exit %d: %s", res.ExitCode, LastLine(string(res.Output)))
	}
	return pd, nil
}

// UserRun configures RunAsGradingUser.
type UserRun struct {
	// Dir is the work tree (absolute), the script's working directory.
	Dir string
	// Grading is a directory from GradingDir: the script and the grading
	// user's home go there.
	Grading string
	// Script is the bash script to run sealed, from File (root's, mode
	// 0644; Grading/tests.sh when empty). Bash names the file in its
	// error messages: the grader's usual eval script path keeps the log
	// as a run as root would print it.
	Script, File string
	// Lock are the hidden test files and directories (paths relative to
	// Dir or absolute): made root's and read-only (a directory all the
	// way down, and so is a file outside Dir), and the directories from
	// Dir down to the ones inside it root's and sticky (lockScript).
	Lock    []string
	Timeout time.Duration
	// Probe is a bash program run as the grading user, in Dir, before
	// the script (see CanRun): when it fails, the script runs as root
	// instead, with why.
	Probe string
}

// CanRun is a bash test that the grading user can run command word w
// (a name on PATH or a path): the file it resolves to, and the
// interpreter its #! line names, can be executed by that user. An image
// whose interpreter lives under root's 0700 home fails it.
func CanRun(w string) string {
	return fmt.Sprintf(`__w=$(command -v %s) && [ -x "$__w" ] && { __s=$(head -n 1 "$__w" 2>/dev/null | head -c 256); case "$__s" in '#!'*) __i=${__s#??}; __i=${__i# }; __i=${__i%%%% *}; [ -x "$__i" ] ;; esac; } || { echo "the grading user cannot run "%s; false; }`, shq(w), shq(w))
}

// RunAsGradingUser runs r.Script sealed as GradingUser with the hidden
// test files locked. When the box cannot run a command as another user
// (or the work tree has no absolute path) it returns nil and why, having
// changed nothing; the caller then runs the script as root (RunScript).
func RunAsGradingUser(ctx context.Context, box sandbox.Sandbox, r UserRun) (*ScriptRun, string, error) {
	if r.Dir == "." || !path.IsAbs(r.Dir) {
		return nil, "the work tree has no absolute path in the box", nil
	}
	if ok, err := CanRunAsGradingUser(ctx, box); err != nil || !ok {
		return nil, "the box cannot run a command as another user", err
	}
	home := path.Join(r.Grading, "home")
	var in []string
	for _, f := range r.Lock {
		if !path.IsAbs(f) {
			f = path.Join(r.Dir, f)
		}
		if strings.HasPrefix(f, r.Dir+"/") {
			in = append(in, strings.TrimPrefix(f, r.Dir+"/"))
		}
	}
	var b strings.Builder
	b.WriteString(userGrantScript(r.Dir, home))
	b.WriteString(lockScript(r.Dir, in))
	for _, f := range r.Lock {
		if !path.IsAbs(f) {
			f = path.Join(r.Dir, f)
		}
		// A directory of hidden tests (and whatever lies outside the
		// work tree): root's and read-only all the way down, nothing can
		// be added to it.
		fmt.Fprintf(&b, "if [ ! -L %[1]s ] && { [ -d %[1]s ] || { [ %[2]s = out ] && [ -e %[1]s ]; }; }; then chown -R 0:0 %[1]s && chmod -R a-w,a+rX %[1]s; fi\n", shq(f), map[bool]string{true: "in", false: "out"}[strings.HasPrefix(f, r.Dir+"/")])
	}
	if err := rootRun(ctx, box, "lock", "set -e\n"+b.String()); err != nil {
		return nil, "", err
	}
	if err := box.WriteFile(ctx, path.Join(r.Grading, "gitconfig"), []byte("[safe]\n\tdirectory = *\n"), 0o644); err != nil {
		return nil, "", fmt.Errorf("write the grading user's git configuration: %w", err)
	}
	env := []string{"HOME=" + home, "GIT_CONFIG_GLOBAL=" + path.Join(r.Grading, "gitconfig")}
	if r.Probe != "" {
		res, err := box.Exec(ctx, sandbox.ExecRequest{Cmd: []string{"/bin/bash", "-c", r.Probe}, Cwd: r.Dir, User: GradingUser, Env: env, Timeout: time.Minute, KillOthers: true})
		if err != nil {
			return nil, "", fmt.Errorf("probe the test command as the grading user: %w", err)
		}
		if res.ExitCode != 0 {
			why := LastLine(string(res.Output))
			if why == "" {
				why = fmt.Sprintf("exit %d", res.ExitCode)
			}
			return nil, "the grading user cannot run the tests: " + why, nil
		}
	}
	file := r.File
	if file == "" {
		file = path.Join(r.Grading, "tests.sh")
	}
	run, err := runSealed(ctx, box, sealedRun{dir: r.Dir, file: file, script: r.Script, timeout: r.Timeout, user: GradingUser, env: env, mode: 0o644})
	if err != nil {
		return nil, "", err
	}
	return run, "", nil
}

// userGrantScript adds the grading user to the box, makes its home, and
// gives it the directories that hold tracked files of the work tree (the
// tests write caches and scratch files there). Unlike the phased install's
// grant, untracked and ignored trees (an environment in the work tree,
// build output) stay root's: no chown copies their files up in the
// overlay filesystem, and the tests cannot add to them.
func userGrantScript(dir, home string) string {
	u := GradingUser
	var b strings.Builder
	b.WriteString(gradingUserEntries(home))
	fmt.Fprintf(&b, "mkdir -m 0700 %[1]s && chown %[2]s %[1]s\n", shq(home), u)
	fmt.Fprintf(&b, "git -c safe.directory='*' -C %s ls-files -z | tr '\\0' '\\n' | awk -F/ '{p=\"\"; for (i = 1; i < NF; i++) { p = (i == 1 ? $i : p \"/\" $i); print p }}' | sort -u | (cd %s && xargs -r -d '\\n' chown -h %s --)\n", shq(dir), shq(dir), u)
	return b.String()
}

// GitHardening is the environment that keeps a root git command from
// running hooks or a file-system monitor the patch configured: for the
// grader's own git commands once the patch is applied.
func GitHardening() []string { return append([]string(nil), gitHardening...) }

// rootRun runs a bash program as root, unsealed; a non-zero exit is an
// error.
func rootRun(ctx context.Context, box sandbox.Sandbox, what, prog string) error {
	res, err := box.Exec(ctx, sandbox.ExecRequest{Cmd: []string{"/bin/bash", "-c", prog}, Timeout: 5 * time.Minute, KillOthers: true})
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	if res.ExitCode != 0 {
		return fmt.Errorf("%s: exit %d: %s", what, res.ExitCode, LastLine(string(res.Output)))
	}
	return nil
}

// gradingUserEntries is bash that names GradingUser in the box's passwd
// and group files, with home as its home directory, unless they name it.
func gradingUserEntries(home string) string {
	uid, gid, _ := strings.Cut(GradingUser, ":")
	return fmt.Sprintf("grep -q '^%[1]s:' /etc/passwd || printf '%%s\\n' '%[1]s:x:%[2]s:%[3]s:swerve grading user:%[4]s:/bin/false' >>/etc/passwd\n", GradingUserName, uid, gid, home) +
		fmt.Sprintf("grep -q '^%[1]s:' /etc/group || printf '%%s\\n' '%[1]s:x:%[2]s:' >>/etc/group\n", GradingUserName, gid)
}

// CanRunAsGradingUser reports whether box runs a command as GradingUser
// (a box whose backend cannot switch users runs everything as itself).
func CanRunAsGradingUser(ctx context.Context, box sandbox.Sandbox) (bool, error) {
	res, err := box.Exec(ctx, sandbox.ExecRequest{Cmd: []string{"id", "-u"}, User: GradingUser, Timeout: time.Minute})
	if err != nil {
		return false, fmt.Errorf("probe the grading user: %w", err)
	}
	uid, _, _ := strings.Cut(GradingUser, ":")
	return res.ExitCode == 0 && strings.TrimSpace(string(res.Output)) == uid, nil
}

// GradingUserScript is a bash program, run as root, that names GradingUser
// in the box's passwd and group files (with home as its home directory)
// and makes home, created if missing, the grading user's.
func GradingUserScript(home string) string {
	var b strings.Builder
	b.WriteString("set -e\n")
	b.WriteString(gradingUserEntries(home))
	fmt.Fprintf(&b, "mkdir -p %[1]s && chown %[2]s %[1]s && chmod 0700 %[1]s\n", shq(home), GradingUser)
	return b.String()
}

// RunScriptAs is RunScript as user (empty: the box's own), with env added
// to the environment. The script file is written readable by all, so
// that the user can source it; put it where the user cannot write.
func RunScriptAs(ctx context.Context, box sandbox.Sandbox, dir, file, script string, timeout time.Duration, user string, env []string) (*ScriptRun, error) {
	mode := 0o755
	if user != "" {
		mode = 0o644
	}
	return runSealed(ctx, box, sealedRun{dir: dir, file: file, script: script, timeout: timeout, user: user, env: env, mode: fsMode(mode)})
}
