package sandboxtest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/swerve-dev/swerve/internal/testutil"
)

// TestMutants runs parts of the suite against the fake with one deliberate
// bug each, in a child test process, and checks that the suite fails the
// subtest that should catch it: evidence that the assertions can fail.
func TestMutants(t *testing.T) {
	if testing.Short() {
		t.Skip("slow: runs the suite in child processes")
	}
	if os.Getenv("SBT_FAKE_BUG") != "" {
		t.Skip("in a mutant child")
	}
	testutil.HostPython(t) // the fake backend's boxes are host processes, and the suite runs python3 in them
	box := func(group, leaf string) string { return "Box/" + group + "/" + leaf }
	for _, m := range []struct {
		bug, subtest string
	}{
		{"separate-pipes", box("Exec", "MergedOutput")},
		{"signal-raw", box("Exec", "Signal")},
		{"no-duration", box("Exec", "Duration")},
		{"lossy-output", box("Exec", "BinaryOutput")},
		{"no-waitdelay", box("Exec", "BackgroundHoldsOutput")},
		{"env-order", box("Env", "SpecAndRequest")},
		{"cwd-ignored", box("Cwd", "Relative")},
		{"leader-only-kill", box("Timeout", "KillsGroup")},
		{"term-grace", box("Timeout", "IgnoresTERM")},
		{"ignore-ctx", box("Context", "AlreadyCancelled")},
		{"cancel-no-kill", box("Context", "Cancel")},
		{"no-marker", box("Output", "Capped")},
		{"zero-uncapped", box("Output", "DefaultCapElides")},
		{"serial", box("Concurrency", "SameBox")},
		{"ignore-mode", box("Files", "Mode")},
		{"no-truncate", box("Files", "OverwriteTruncates")},
		{"no-mkdir", box("Files", "ParentDirs")},
		{"notfound-plain", box("Files", "Missing")},
		{"workdir-ignored", box("Spec", "Workdir")},
		{"closed-plain", "Close/UseAfterClose"},
		{"close-no-kill", "NoLeaksAfterClose"},
		{"no-sweep", box("Contain", "DoubleFork")},
		{"no-sweep", box("Contain", "DoubleForkTimeout")},
		{"no-sweep", box("Contain", "ClearedEnv")},
		{"no-sweep", box("Contain", "ParentWatcher")},
		{"no-sweep", box("Contain", "Cancel")},
		{"no-kill-others", box("Contain", "KillOthers")},
		{"claims-isolation", "Network/NoneIsolated"},
	} {
		t.Run(m.bug+"/"+m.subtest, func(t *testing.T) {
			t.Parallel()
			pattern := "^TestSuite$"
			for _, part := range strings.Split(m.subtest, "/") {
				pattern += "/^" + regexp.QuoteMeta(part) + "$"
			}
			if m.subtest == "NoLeaksAfterClose" {
				pattern = "^TestSuite$/^(Close|NoLeaksAfterClose)$"
			}
			token := fmt.Sprintf("mutant-%s-%d", m.bug, time.Now().UnixNano())
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, os.Args[0], "-test.run", pattern, "-test.count=1", "-test.v")
			cmd.Env = append(os.Environ(), "SBT_FAKE_BUG="+m.bug, "SBT_FAKE_TOKEN="+token)
			out, err := cmd.CombinedOutput()
			// Whatever the bug left running goes now.
			for _, pid := range processesWith("SANDBOXTEST_FAKE=" + token) {
				syscall.Kill(pid, syscall.SIGKILL)
			}
			want := "--- FAIL: TestSuite/" + m.subtest + " "
			if err == nil || !strings.Contains(string(out), want) {
				t.Fatalf("with bug %q the suite should fail %s; exit %v, output:\n%s", m.bug, m.subtest, err, out)
			}
			if testing.Verbose() {
				t.Logf("caught by %s:\n%s", m.subtest, failures(string(out)))
			}
		})
	}
}

// failures picks the error lines out of a child's test output.
func failures(out string) string {
	var lines []string
	for _, l := range strings.Split(out, "\n") {
		if strings.Contains(l, ".go:") {
			lines = append(lines, l)
		}
	}
	return strings.Join(lines, "\n")
}
