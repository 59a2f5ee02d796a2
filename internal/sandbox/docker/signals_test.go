package docker

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/swerve-dev/swerve/internal/sandbox"
	"github.com/swerve-dev/swerve/internal/testutil"
)

// TestHelperSurvivesSignals: code in the box sends the helper (the box's
// PID 1) every catchable signal that would end a Go program by default. The
// box must go on serving, and the commands it starts must still get the
// default dispositions (a process killing itself with SIGTERM dies of it).
// Otherwise a patch could turn a failing grade into a dead box, which is
// recorded as an infrastructure error rather than a 0.
func TestHelperSurvivesSignals(t *testing.T) {
	b := testBackend(t, fmt.Sprintf("test-signals-%d", os.Getpid()))
	ctx := context.Background()
	box, err := b.Open(ctx, sandbox.Spec{Image: testutil.TestImage(), Pull: sandbox.PullNever})
	if err != nil {
		t.Fatal(err)
	}
	defer box.Close(ctx)
	sigs := "HUP INT TERM QUIT ABRT USR1 USR2 ALRM VTALRM XCPU XFSZ SEGV BUS FPE ILL TRAP SYS PWR IO STKFLT"
	res, err := box.Exec(ctx, sandbox.ExecRequest{
		Cmd:     sandbox.Bash("for s in " + sigs + "; do kill -s $s 1 || echo failed $s; sleep 0.02; done; echo sent"),
		Timeout: time.Minute,
	})
	if err != nil {
		t.Fatalf("exec sending the signals: %v", err)
	}
	if got := strings.TrimSpace(string(res.Output)); got != "sent" || res.ExitCode != 0 {
		t.Fatalf("sending the signals: exit %d, output %q; want exit 0, %q", res.ExitCode, got, "sent")
	}
	res, err = box.Exec(ctx, sandbox.ExecRequest{Cmd: sandbox.Bash(`bash -c 'kill -TERM $$; echo not-killed'; echo "child=$?"`), Timeout: time.Minute})
	if err != nil {
		t.Fatalf("the helper did not survive the signals: %v", err)
	}
	// bash itself reports the child's death ("Terminated") first.
	if got := strings.TrimSpace(string(res.Output)); !strings.HasSuffix(got, "child=143") || strings.Contains(got, "not-killed") {
		t.Errorf("a command killing itself with SIGTERM: output %q, want %q (the helper's caught signals must not be inherited as ignored)", got, "child=143")
	}
}
