package shim

import (
	"fmt"
	"os"
	"os/exec"
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
func ExecPrivate(argv []string) error {
	if len(argv) == 0 {
		return fmt.Errorf("%s: no command", ExecSubcommand)
	}
	path, err := exec.LookPath(argv[0])
	if err != nil {
		return fmt.Errorf("%s: %w", ExecSubcommand, err)
	}
	gid := os.Getgid()
	other := privateGID
	if gid == other {
		other = gid + 1
	}
	env := os.Environ()
	// Best effort: without the right to change groups the command still
	// runs, only readable as any other.
	if syscall.Setresgid(gid, other, gid) == nil {
		env = moveBashEnv(env)
	}
	// The command and all it starts die before the helper when memory
	// runs out (see guard_linux.go).
	DeprioritiseSelf()
	return syscall.Exec(path, argv, env)
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
