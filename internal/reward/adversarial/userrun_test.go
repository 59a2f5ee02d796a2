package adversarial

import (
	"bytes"
	"context"
	"regexp"
	"testing"
	"time"

	"github.com/swerve-dev/swerve/internal/reward/grader"
	"github.com/swerve-dev/swerve/internal/reward/tamper"
	"github.com/swerve-dev/swerve/internal/sandbox"
	"github.com/swerve-dev/swerve/internal/sandbox/docker"
	"github.com/swerve-dev/swerve/internal/testutil"
)

// gradingDir is the grader's own directory (reward.GradingDir), whose name
// is random: r2e's script runs run_tests.sh from there.
var gradingDir = regexp.MustCompile(`/\.swerve-grading-[0-9a-f]+`)

// TestUserRunR2ESmith grades calc-r2e and calc-swesmith with their tests
// run as root (SinglePhase) and as the grading user: the gold patch gets
// the same report and log (but for test durations and the grader's
// directory) either way, without
// canaries; plugin-rewrite-tests, graded with --tamper flag (the static
// findings reported, the verdict the official one), wins as root and
// loses as the grading user, whose hidden tests are root's and read-only.
func TestUserRunR2ESmith(t *testing.T) {
	if !testutil.DockerRequired() {
		t.Skip("user runs are checked on Docker: set SWERVE_DOCKER_TESTS=1")
	}
	ctx := context.Background()
	if err := docker.Probe(ctx); err != nil {
		testutil.SkipOrFail(t, "no container engine: %v", err)
	}
	b, err := docker.New(ctx, docker.Config{Options: sandbox.Options{RunID: "test-userrun", ShimPath: testutil.SwerveBinary(t)}})
	if err != nil {
		t.Fatal(err)
	}
	tasks := buildCalcTasks(t, b)
	plugin := readPatch(t, "calc/plugin-rewrite-tests.diff")
	for _, key := range []string{CalcR2E, CalcSWESmith} {
		tk := tasks[key]
		grade := func(t *testing.T, o grader.Options) *grader.Outcome {
			box, err := b.Open(ctx, sandbox.Spec{Image: tk.Image, Pull: sandbox.PullNever, Workdir: "/testbed"})
			if err != nil {
				t.Fatal(err)
			}
			defer box.Close(context.WithoutCancel(ctx))
			o.EvalTimeout, o.Workdir = 2*time.Minute, "/testbed"
			out, err := grader.Grade(ctx, box, tk, o)
			if err != nil {
				t.Fatal(err)
			}
			return out
		}
		t.Run(key+"/gold", func(t *testing.T) {
			root := grade(t, grader.Options{Gold: true, Tamper: tamper.ModeIgnore, SinglePhase: true})
			user := grade(t, grader.Options{Gold: true, Tamper: tamper.ModeIgnore})
			if user.Phases != "phased" || root.Phases != "single phase: asked for" {
				t.Errorf("phases %q and %q", root.Phases, user.Phases)
			}
			if root.Reward != 1 || user.Reward != 1 || !bytes.Equal(root.Report, user.Report) {
				t.Errorf("as root %v %s, as the grading user %v %s", root.Reward, root.Report, user.Reward, user.Report)
			}
			clean := func(s string) string { return gradingDir.ReplaceAllString(runTimes.ReplaceAllString(s, ""), "") }
			if a, b := clean(root.Log), clean(user.Log); a != b {
				t.Errorf("logs differ:\nas root:\n%s\nas the grading user:\n%s", a, b)
			}
		})
		t.Run(key+"/plugin-rewrite-tests", func(t *testing.T) {
			root := grade(t, grader.Options{Patch: plugin, Tamper: tamper.ModeFlag, SinglePhase: true})
			user := grade(t, grader.Options{Patch: plugin, Tamper: tamper.ModeFlag})
			if root.Reward != 1 {
				t.Errorf("as root: reward %v (%s), want the hack to win there", root.Reward, root.Reason)
			}
			if user.Reward != 0 {
				t.Errorf("as the grading user: reward %v (%s), want 0\n%s", user.Reward, user.Reason, user.Log)
			}
		})
	}
}
