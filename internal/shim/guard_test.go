package shim

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/swerve-dev/swerve/internal/sandbox"
)

// TestOOMGuard: commands start with the highest OOM priority, so that they
// die before the helper when memory runs out; a command that raises the
// helper's own priority finds it put back, and the raise is reported with
// that command's result (the helper is this process here).
func TestOOMGuard(t *testing.T) {
	own, err := readOOMScoreAdj()
	if err != nil {
		t.Skipf("no /proc/self/oom_score_adj: %v", err)
	}
	c := pair(t)
	ctx := context.Background()
	tests := []struct {
		name    string
		cmd     string
		out     string // the command's output, trimmed
		finding bool
	}{
		// The command's own process is raised right after it starts (a
		// sealed run's before it execs): what it starts after that moment
		// inherits the priority.
		{name: "a command starts at the highest priority", cmd: "sleep 0.05; cat /proc/self/oom_score_adj", out: "1000"},
		{name: "and so does what it starts", cmd: "sleep 0.05; sh -c 'cat /proc/self/oom_score_adj'", out: "1000"},
		{name: "raising the helper's is undone and reported",
			cmd: fmt.Sprintf("echo 1000 > /proc/%d/oom_score_adj && sleep 0.2 && cat /proc/%d/oom_score_adj", os.Getpid(), os.Getpid()),
			out: fmt.Sprint(own), finding: true},
		{name: "a raise at the very end is reported too",
			cmd: fmt.Sprintf("echo 999 > /proc/%d/oom_score_adj", os.Getpid()), finding: true},
		{name: "an honest command reports nothing", cmd: "true"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res, err := c.Exec(ctx, sandbox.ExecRequest{Cmd: []string{"sh", "-c", tc.cmd}, Timeout: 10 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			if got := strings.TrimSpace(string(res.Output)); got != tc.out {
				t.Errorf("output %q (exit %d), want %q", got, res.ExitCode, tc.out)
			}
			if got := len(res.Findings) > 0; got != tc.finding {
				t.Errorf("findings %q, want some: %v", res.Findings, tc.finding)
			}
			for _, f := range res.Findings {
				if !strings.HasPrefix(f, FindingOOMRaised) {
					t.Errorf("finding %q does not start with %q", f, FindingOOMRaised)
				}
			}
			if v, _ := readOOMScoreAdj(); v != own {
				t.Errorf("the helper's OOM priority is %d after the command, want %d", v, own)
			}
		})
	}
}
