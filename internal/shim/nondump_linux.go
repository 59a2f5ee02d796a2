package shim

import (
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
)

// ExecSubcommand is the swerve subcommand the helper re-executes itself as
// to start a command with PrivateMemory: `swerve shim-exec -- CMD ARG...`.
const ExecSubcommand = "shim-exec"

// privateGID is the effective group a PrivateMemory command is started
// with when its real group is not it (see ExecPrivate).
const privateGID = 65534

// ExecPrivate replaces the calling process with argv, started so that the
// kernel marks it non-dumpable: its effective group differs from its real
// group at execve, which makes the new program's memory, environment and
// file descriptors unreadable through /proc and ptrace to every other
// process without CAP_SYS_PTRACE — boxes drop that capability. bash, seeing
// the two groups differ, sets its effective group back to the real one as
// it starts; it stays non-dumpable, and so do the subshells it forks, while
// the programs it execs are ordinary again. That is what keeps a sealed
// eval run's nonce (see reward.RunScript) out of reach of the tests.
//
// Only a process allowed to change its groups (root, or CAP_SETGID) can do
// this; otherwise argv is started as it is. It returns only on failure.
//
// With user ("UID:GID", see sandbox.ExecRequest.User) the command runs as
// that user with no supplementary groups; that needs root, and failing to
// switch is an error, never a run as root.
func ExecPrivate(user string, argv []string) error {
	if len(argv) == 0 {
		return fmt.Errorf("%s: no command", ExecSubcommand)
	}
	path, err := exec.LookPath(argv[0])
	if err != nil {
		return fmt.Errorf("%s: %w", ExecSubcommand, err)
	}
	gid := os.Getgid()
	uid := -1
	if user != "" {
		u, g, err := ParseUser(user)
		if err != nil {
			return fmt.Errorf("%s: %w", ExecSubcommand, err)
		}
		uid, gid = int(u), int(g)
		if err := syscall.Setgroups(nil); err != nil {
			return fmt.Errorf("%s: drop supplementary groups: %w", ExecSubcommand, err)
		}
	}
	other := privateGID
	if gid == other {
		other = gid + 1
	}
	env := os.Environ()
	// Best effort: without the right to change groups the command still
	// runs, only readable as any other.
	if err = syscall.Setresgid(gid, other, gid); err == nil {
		env = moveBashEnv(env)
	} else if user != "" {
		return fmt.Errorf("%s: switch to group %d: %w", ExecSubcommand, gid, err)
	}
	if uid >= 0 {
		// Every uid switched: no way back to root, and no capabilities.
		if err := syscall.Setresuid(uid, uid, uid); err != nil {
			return fmt.Errorf("%s: switch to user %d: %w", ExecSubcommand, uid, err)
		}
	}
	// The command and all it starts die before the helper when memory
	// runs out (see guard_linux.go).
	DeprioritiseSelf()
	return syscall.Exec(path, argv, env)
}

// ParseUser reads a numeric "UID:GID" (sandbox.ExecRequest.User).
func ParseUser(s string) (uid, gid uint32, err error) {
	u, g, ok := strings.Cut(s, ":")
	if !ok {
		return 0, 0, fmt.Errorf("user %q: want numeric UID:GID", s)
	}
	un, err1 := strconv.ParseUint(u, 10, 32)
	gn, err2 := strconv.ParseUint(g, 10, 32)
	if err1 != nil || err2 != nil {
		return 0, 0, fmt.Errorf("user %q: want numeric UID:GID", s)
	}
	return uint32(un), uint32(gn), nil
}

// moveBashEnv renames BASH_ENV to SWERVE_BASH_ENV: bash started with
// differing groups does not source BASH_ENV, so the sealed runner sources
// it itself (and exports it again for the script) — once, either way.
func moveBashEnv(env []string) []string {
	for i, kv := range env {
		if v, ok := strings.CutPrefix(kv, "BASH_ENV="); ok {
			env[i] = "SWERVE_BASH_ENV=" + v
		}
	}
	return env
}
