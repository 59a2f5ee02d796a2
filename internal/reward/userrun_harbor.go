package reward

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/swerve-dev/swerve/internal/sandbox"
)

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
	uid, gid, _ := strings.Cut(GradingUser, ":")
	var b strings.Builder
	b.WriteString("set -e\n")
	fmt.Fprintf(&b, "grep -q '^%[1]s:' /etc/passwd || printf '%%s\\n' '%[1]s:x:%[2]s:%[3]s:swerve grading user:%[4]s:/bin/false' >>/etc/passwd\n", GradingUserName, uid, gid, home)
	fmt.Fprintf(&b, "grep -q '^%[1]s:' /etc/group || printf '%%s\\n' '%[1]s:x:%[2]s:' >>/etc/group\n", GradingUserName, gid)
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
