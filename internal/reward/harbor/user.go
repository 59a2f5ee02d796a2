package harbor

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"path"
	"strings"
	"time"

	"github.com/swerve-dev/swerve/internal/lazyre"
	"github.com/swerve-dev/swerve/internal/reward"
	"github.com/swerve-dev/swerve/internal/reward/swebench"
	"github.com/swerve-dev/swerve/internal/reward/tamper"
	"github.com/swerve-dev/swerve/internal/sandbox"
)

// How test.sh runs. Where the box can run a command as another user and
// test.sh installs no system packages, it runs as reward.GradingUser: the
// copied tests/ are root's and read-only, the verifier directory (emptied
// first) is the grading user's, its home a fresh directory. The code under
// test, which runs inside test.sh's test process, can still write the
// reward file there: the verdict is that file only together with the
// grader's record of the tests' results (evidence.go) and the canaries.
// Elsewhere test.sh runs as the box's own user (root), and the result's
// Phases says why.
type runAs struct {
	user   string   // "" for the box's own
	env    []string // what the run adds to the environment
	home   string
	phases string
}

// rootNeeds are the commands that need root (or write where the grading
// user cannot): a test.sh that runs one, itself or in a script of tests/,
// runs as root. A test.sh that resets or patches the repository as
// another user would fail to, and then test code the run did not mean.
var rootNeeds = []struct {
	re   *lazyre.Regexp
	what string
}{
	{lazyre.New(`(^|[\s;&|(])(apt-get|apt|apk|yum|dnf|microdnf|zypper|sudo)\s`), "needs root"},
	{lazyre.New(`\bgit(\s+-[cC]\s+\S+)*\s+(apply|checkout|reset|restore|stash|clean|am)\b|(^|[\s;&|(])patch\s`), "changes the repository"},
	{lazyre.New(`\bpip3?\s+install\b|\s-m\s+pip\s+install\b`), "installs Python packages"},
}

// rootNeed says which command of scripts needs root, or "".
func rootNeed(scripts string) string {
	for _, n := range rootNeeds {
		if m := n.re.FindString(scripts); m != "" {
			return n.what + " (" + strings.TrimLeft(m, " \t\n;&|(") + ")"
		}
	}
	return ""
}

// prepareUser decides how test.sh runs; scripts is test.sh and the other
// shell scripts of tests/.
func prepareUser(ctx context.Context, box sandbox.Sandbox, l layout, scripts string) (runAs, error) {
	if why := rootNeed(scripts); why != "" {
		return runAs{phases: "single phase: test.sh " + why}, nil
	}
	if l.rewrite {
		// The tests live in the box's scratch directory on the host, which
		// only its owner may enter.
		return runAs{phases: "single phase: the box's files are the host's (a scratch directory)"}, nil
	}
	ok, err := reward.CanRunAsGradingUser(ctx, box)
	if err != nil {
		return runAs{}, err
	}
	if !ok {
		return runAs{phases: "single phase: the box cannot run a command as another user"}, nil
	}
	var b [8]byte
	_, _ = rand.Read(b[:])
	u := runAs{user: reward.GradingUser, home: "/tmp/.swerve-home-" + hex.EncodeToString(b[:]),
		phases: "unprivileged: test.sh ran as the grading user"}
	u.env = []string{"HOME=" + u.home}
	prog := reward.GradingUserScript(u.home) + lockScript(l, u.user)
	if err := rootRun(ctx, box, "prepare the grading user", prog); err != nil {
		return runAs{}, err
	}
	return u, nil
}

// lockScript makes the tests root's and read-only, and the (empty)
// verifier directory user's.
func lockScript(l layout, user string) string {
	return fmt.Sprintf("chown -hR 0:0 %[1]s && chmod -R a+rX,go-w %[1]s && chown %[3]s %[2]s && chmod 0755 %[2]s\n",
		quote(l.tests), quote(l.verifier), user)
}

// clean, between two runs of test.sh, deletes everything the grading user
// owns outside the tests (what the first run left in /tmp, its home, the
// verifier directory, ...) and empties the verifier directory.
func (u runAs) clean(ctx context.Context, box sandbox.Sandbox, l layout) error {
	prog := fmt.Sprintf("find %[1]s -mindepth 1 -delete\n", quote(l.verifier))
	if u.user != "" {
		uid, _, _ := strings.Cut(u.user, ":")
		prog += fmt.Sprintf("for r in / /tmp /var/tmp /dev/shm /run; do [ -d \"$r\" ] && find \"$r\" -xdev -depth -user %[1]s ! -path %[2]s -print0 2>/dev/null | xargs -0r rm -rf --; done\n", uid, quote(l.verifier))
		prog += reward.GradingUserScript(u.home) + lockScript(l, u.user)
	}
	return rootRun(ctx, box, "clean up after the first run", prog)
}

// inject puts can into the test file in the box, as root; why says why
// not when the box has no Python to run the injector.
func inject(ctx context.Context, box sandbox.Sandbox, l layout, can *tamper.Canaries) (string, error) {
	var b [6]byte
	_, _ = rand.Read(b[:])
	inj := path.Join(path.Dir(l.tests), "."+hex.EncodeToString(b[:])+".py")
	if err := box.WriteFile(ctx, inj, can.Injector(), 0o600); err != nil {
		return "", fmt.Errorf("write the canary injector: %w", err)
	}
	prog := fmt.Sprintf(`py=$(command -v python3 || command -v python) || { rm -f %[2]s; echo "no python"; exit 3; }; cd %[1]s && "$py" %[2]s; rc=$?; rm -f %[2]s; exit $rc`, quote(l.tests), quote(inj))
	res, err := box.Exec(ctx, sandbox.ExecRequest{Cmd: []string{"/bin/bash", "-c", prog}, Timeout: time.Minute, KillOthers: true})
	if err != nil {
		return "", fmt.Errorf("inject the canaries: %w", err)
	}
	if res.ExitCode != 0 {
		return "the injector failed: " + reward.LastLine(string(res.Output)), nil
	}
	return "", nil
}

func rootRun(ctx context.Context, box sandbox.Sandbox, what, prog string) error {
	res, err := box.Exec(ctx, sandbox.ExecRequest{Cmd: []string{"/bin/bash", "-c", prog}, Timeout: 5 * time.Minute, KillOthers: true})
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	if res.ExitCode != 0 {
		return fmt.Errorf("%s: exit %d: %s", what, res.ExitCode, reward.LastLine(string(res.Output)))
	}
	return nil
}

// parsePytest is SWE-bench's parse_log_pytest (the worst line about a
// test wins).
func parsePytest(log string) swebench.StatusMap {
	p, err := swebench.LookupParser("parse_log_pytest")
	if err != nil {
		panic("harbor: " + err.Error())
	}
	return p(log, nil)
}
