package adversarial

import (
	"context"
	"fmt"
	"os"
	"path"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/swerve-dev/swerve/internal/reward"
	"github.com/swerve-dev/swerve/internal/reward/grader"
	"github.com/swerve-dev/swerve/internal/reward/tamper"
	"github.com/swerve-dev/swerve/internal/sandbox"
	"github.com/swerve-dev/swerve/internal/sandbox/docker"
	"github.com/swerve-dev/swerve/internal/task"
	"github.com/swerve-dev/swerve/internal/testutil"
)

// runTimes are the parts of an eval log that change from run to run: test
// durations, and the digests and temporary directories of pip's wheels.
var runTimes = regexp.MustCompile(`in \d+\.\d+s|sha256=[0-9a-f]{64}|/tmp/pip-[\w-]+`)

// pipAsRoot is pip's warning when it runs as root, which a phased run's
// install, run as the grading user, does not print.
var pipAsRoot = regexp.MustCompile(`(?m)^WARNING: Running pip as the 'root' user .*\n`)

// TestPhasedMatchesSinglePhase grades the gold patch of the phased tasks
// (calc-swebench, calc-swefactory; the django kit tasks with SWERVE_REALTASKS=1) once in one
// run as root and once in phases, without canaries, and requires the same
// report and the same log but for test durations, pip's wheel digests and
// temporary directories, and pip's warning about running as root (the
// install is not root's any more), and no finding in phases.
// SWERVE_PHASE_RUNS=N
// grades each way N times, alternating, and logs the median of each.
func TestPhasedMatchesSinglePhase(t *testing.T) {
	if !testutil.DockerRequired() {
		t.Skip("phased runs are checked on Docker: set SWERVE_DOCKER_TESTS=1")
	}
	ctx := context.Background()
	if err := docker.Probe(ctx); err != nil {
		testutil.SkipOrFail(t, "no container engine: %v", err)
	}
	b, err := docker.New(ctx, docker.Config{Options: sandbox.Options{RunID: "test-phases", ShimPath: testutil.SwerveBinary(t)}})
	if err != nil {
		t.Fatal(err)
	}
	calc := buildCalcTasks(t, b)
	tasks := []*task.Task{calc[CalcSWEBench], calc[CalcSWEFactory]}
	if os.Getenv("SWERVE_REALTASKS") == "1" {
		real := loadRealTasks(t, b, realTasks)
		for _, id := range realTasks {
			tasks = append(tasks, real[id])
		}
	}
	runs := 1
	if v := os.Getenv("SWERVE_PHASE_RUNS"); v != "" {
		if runs, err = strconv.Atoi(v); err != nil || runs < 1 {
			t.Fatalf("SWERVE_PHASE_RUNS=%q: want a positive number", v)
		}
	}
	for _, tk := range tasks {
		t.Run(tk.InstanceID, func(t *testing.T) {
			grade := func(single bool) (*grader.Outcome, time.Duration) {
				box, err := b.Open(ctx, sandbox.Spec{Image: tk.Image, Pull: sandbox.PullNever, Workdir: "/testbed"})
				if err != nil {
					t.Fatalf("open a box from %s: %v", tk.Image, err)
				}
				defer box.Close(context.WithoutCancel(ctx))
				begin := time.Now()
				out, err := grader.Grade(ctx, box, tk, grader.Options{Gold: true, Tamper: tamper.ModeIgnore, SinglePhase: single, EvalTimeout: 5 * time.Minute, Workdir: "/testbed"})
				if err != nil {
					t.Fatalf("grade (single phase %v): %v", single, err)
				}
				return out, time.Since(begin)
			}
			var one, phased []time.Duration
			for i := 0; i < runs; i++ {
				so, sd := grade(true)
				po, pd := grade(false)
				one, phased = append(one, sd), append(phased, pd)
				if po.Phases != "phased" {
					t.Fatalf("phases: %q, want phased", po.Phases)
				}
				if len(po.Tampered) > 0 {
					t.Errorf("gold in phases: findings %q, want none", po.Tampered)
				}
				if so.Reward != 1 || po.Reward != 1 {
					t.Errorf("gold: reward %v in one run, %v in phases (%s); want 1 and 1", so.Reward, po.Reward, po.Reason)
				}
				if string(so.Report) != string(po.Report) {
					t.Errorf("reports differ:\none run:\n%s\nphases:\n%s", so.Report, po.Report)
				}
				if a, b := runTimes.ReplaceAllString(pipAsRoot.ReplaceAllString(so.Log, ""), "<varies>"), runTimes.ReplaceAllString(po.Log, "<varies>"); a != b {
					t.Errorf("logs differ (beyond test durations):\n%s", firstDiff(a, b))
				}
			}
			t.Logf("%s: grade of the gold patch, median of %d: one run %s, phases %s", tk.InstanceID, runs, median(one), median(phased))
		})
	}
}

func median(d []time.Duration) time.Duration {
	s := slices.Clone(d)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[len(s)/2].Round(10 * time.Millisecond)
}

// firstDiff shows the first line where a and b differ, with its neighbours.
func firstDiff(a, b string) string {
	la, lb := splitLines(a), splitLines(b)
	for i := 0; i < max(len(la), len(lb)); i++ {
		x, y := at(la, i), at(lb, i)
		if x != y {
			return fmt.Sprintf("line %d:\n  one run: %q\n  phases:  %q", i+1, x, y)
		}
	}
	return "(same lines)"
}

func splitLines(s string) []string { return regexp.MustCompile("\n").Split(s, -1) }

func at(l []string, i int) string {
	if i < len(l) {
		return l[i]
	}
	return "<end>"
}

// TestInstallLeftovers runs the calc task's eval script in phases with an
// install step that leaves files in places anyone may write (outside the
// trees the check lists) and appends to a world-writable file root made
// before the run: what it made must be gone before the tests run (and be
// reported as swept), the changed file a finding.
func TestInstallLeftovers(t *testing.T) {
	if !testutil.DockerRequired() {
		t.Skip("phased runs are checked on Docker: set SWERVE_DOCKER_TESTS=1")
	}
	ctx := context.Background()
	if err := docker.Probe(ctx); err != nil {
		testutil.SkipOrFail(t, "no container engine: %v", err)
	}
	b, err := docker.New(ctx, docker.Config{Options: sandbox.Options{RunID: "test-leftovers", ShimPath: testutil.SwerveBinary(t)}})
	if err != nil {
		t.Fatal(err)
	}
	tk := buildCalcTasks(t, b)[CalcSWEBench]
	plant := "echo x >/tmp/left.py; mkdir -p /dev/shm/d/e; ln -s /etc/passwd /var/tmp/link; "
	check := "ls -d /tmp/left.py /dev/shm/d /var/tmp/link"
	for _, c := range []struct {
		name, install string
		tampered      string
	}{
		{"made", plant + "true", ""},
		{"changed", plant + "echo y >>/tmp/shared", "/tmp/shared"},
	} {
		t.Run(c.name, func(t *testing.T) {
			box, err := b.Open(ctx, sandbox.Spec{Image: tk.Image, Pull: sandbox.PullNever, Workdir: "/testbed"})
			if err != nil {
				t.Fatal(err)
			}
			defer box.Close(context.WithoutCancel(ctx))
			if res, err := box.Exec(ctx, sandbox.ExecRequest{Cmd: []string{"sh", "-c", "echo a >/tmp/shared && chmod 666 /tmp/shared"}, Timeout: time.Minute}); err != nil || res.ExitCode != 0 {
				t.Fatalf("make /tmp/shared: %v %s", err, res.Output)
			}
			script := withInstall(harnessScript(tk.BaseCommit, tk.TestPatch, []string{"tests/test_add.py"}, check), tk.BaseCommit, c.install)
			_, evalFile := reward.Paths(box)
			pr, why, err := reward.RunPhased(ctx, box, "/testbed", path.Dir(evalFile), script, reward.PhaseOptions{Timeout: 5 * time.Minute})
			if err != nil || pr == nil {
				t.Fatalf("RunPhased: %v %s", err, why)
			}
			if c.tampered != "" {
				if len(pr.Tampered) == 0 || !strings.HasPrefix(pr.Tampered[0], c.tampered+" ") {
					t.Fatalf("tampered %q, want %s first", pr.Tampered, c.tampered)
				}
				return
			}
			if len(pr.Tampered) > 0 {
				t.Fatalf("tampered %q, want none", pr.Tampered)
			}
			for _, p := range []string{"/tmp/left.py", "/dev/shm/d", "/var/tmp/link"} {
				if !slices.Contains(pr.Swept, p) {
					t.Errorf("swept %q, want %s in it", pr.Swept, p)
				}
				if !strings.Contains(pr.Log, "ls: cannot access '"+p+"': No such file or directory") {
					t.Errorf("%s is still there when the tests run:\n%s", p, pr.Log)
				}
			}
		})
	}
}

// TestPhaseBudgets runs a SWE-Factory-shaped script whose test command
// and the grader's second run after its root line (the canaries') each
// take 3 s, with a 5 s eval timeout: with a budget of its own for the part
// after the root line the script is not timed out (its own part kept the
// row's timeout), and without one the two runs share the 5 s and it is.
func TestPhaseBudgets(t *testing.T) {
	if !testutil.DockerRequired() {
		t.Skip("phased runs are checked on Docker: set SWERVE_DOCKER_TESTS=1")
	}
	ctx := context.Background()
	if err := docker.Probe(ctx); err != nil {
		testutil.SkipOrFail(t, "no container engine: %v", err)
	}
	b, err := docker.New(ctx, docker.Config{Options: sandbox.Options{RunID: "test-budgets", ShimPath: testutil.SwerveBinary(t)}})
	if err != nil {
		t.Fatal(err)
	}
	tk := buildCalcTasks(t, b)[CalcSWEFactory]
	const rootLine = "true # the grader's own step"
	script := factoryScript(tk.BaseCommit, tk.TestPatch, []string{"tests/test_ops.py"}, "sleep 3")
	script = strings.Replace(script, "\"OMNIGRIL_EXIT_CODE=$rc\"\n", "\"OMNIGRIL_EXIT_CODE=$rc\"\n"+rootLine+"\nsleep 3\n", 1)
	for _, c := range []struct {
		name      string
		afterRoot time.Duration
		timedOut  bool
	}{
		{"own budget", 5 * time.Second, false},
		{"shared budget", 0, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			box, err := b.Open(ctx, sandbox.Spec{Image: tk.Image, Pull: sandbox.PullNever, Workdir: "/testbed"})
			if err != nil {
				t.Fatal(err)
			}
			defer box.Close(context.WithoutCancel(ctx))
			_, evalFile := reward.Paths(box)
			pr, why, err := reward.RunPhased(ctx, box, "/testbed", path.Dir(evalFile), script,
				reward.PhaseOptions{Timeout: 5 * time.Second, RootLines: []string{rootLine}, AfterRoot: c.afterRoot})
			if err != nil || pr == nil {
				t.Fatalf("RunPhased: %v %s", err, why)
			}
			if pr.TimedOut != c.timedOut {
				t.Errorf("timed out %v, want %v\n%s", pr.TimedOut, c.timedOut, pr.Log)
			}
			if !c.timedOut && !strings.Contains(pr.Log, "OMNIGRIL_EXIT_CODE=0") {
				t.Errorf("the script's own part did not end:\n%s", pr.Log)
			}
		})
	}
}
