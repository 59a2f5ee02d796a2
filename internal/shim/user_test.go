package shim

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/swerve-dev/swerve/internal/sandbox"
	"github.com/swerve-dev/swerve/internal/testutil"
)

const idsCmd = `grep -E '^(Uid|Gid|Groups):' /proc/$$/status | tr -s '\t ' ' '`

// TestExecUser: a command with ExecRequest.User runs as that user and
// group, every id of it, with no supplementary group, through the plain
// path and through the helper's binary (PrivateMemory).
func TestExecUser(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("switching users needs root")
	}
	want := "Uid: 65533 65533 65533 65533\nGid: 65533 65533 65533 65533\nGroups: \n"
	c := pair(t)
	res, err := c.Exec(context.Background(), sandbox.ExecRequest{Cmd: []string{"/bin/bash", "-c", idsCmd}, User: "65533:65533"})
	if err != nil || string(res.Output) != want {
		t.Errorf("exec as 65533:65533: %q, %v; want %q", res.Output, err, want)
	}
	res, err = c.Exec(context.Background(), sandbox.ExecRequest{Cmd: []string{"true"}, User: "nobody"})
	if err == nil || !strings.Contains(err.Error(), "UID:GID") {
		t.Errorf("exec as a named user: %q, exit %d, %v; want it refused", res.Output, res.ExitCode, err)
	}

	// What the helper runs for PrivateMemory, with a user.
	bin := testutil.SwerveBinary(t)
	out, err := exec.Command(bin, ExecSubcommand, "--user", "65533:65533", "--", "/bin/bash", "-c", idsCmd).CombinedOutput()
	if err != nil || string(out) != want {
		t.Errorf("%s --user: %q, %v; want %q", ExecSubcommand, out, err, want)
	}
}

func TestParseUser(t *testing.T) {
	for _, c := range []struct {
		in       string
		uid, gid uint32
		ok       bool
	}{
		{"65533:65533", 65533, 65533, true},
		{"0:0", 0, 0, true},
		{"1000", 0, 0, false},
		{"app:app", 0, 0, false},
		{"1:-1", 0, 0, false},
	} {
		uid, gid, err := ParseUser(c.in)
		if (err == nil) != c.ok || uid != c.uid || gid != c.gid {
			t.Errorf("ParseUser(%q) = %d, %d, %v", c.in, uid, gid, err)
		}
	}
}
