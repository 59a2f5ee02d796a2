package grader

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/swerve-dev/swerve/internal/reward"
	"github.com/swerve-dev/swerve/internal/reward/swebench"
	"github.com/swerve-dev/swerve/internal/sandbox"
	"github.com/swerve-dev/swerve/internal/sandbox/docker"
	"github.com/swerve-dev/swerve/internal/task"
	"github.com/swerve-dev/swerve/internal/testutil"
)

// nonceLike is what a sealed run's trace prefix left in a log would look like.
var nonceLike = regexp.MustCompile(`\+[0-9a-f]{32} `)

var realTaskIDs = []string{"django__django-15499", "django__django-16139", "django__django-16901", "django__django-16938", "django__django-17087"}

// realTasks opens the Docker engine and loads the five real SWE-bench
// Verified tasks, or skips (fails with SWERVE_REALTASKS=1) when their
// images are missing.
func realTasks(t *testing.T) (*docker.Backend, map[string]*task.Task) {
	t.Helper()
	required := os.Getenv("SWERVE_REALTASKS") == "1"
	ctx := context.Background()
	if err := docker.Probe(ctx); err != nil {
		if required {
			t.Fatalf("SWERVE_REALTASKS=1 but %v", err)
		}
		testutil.SkipOrFail(t, "no container engine: %v", err)
	}
	eng, err := docker.New(ctx, docker.Config{Options: sandbox.Options{RunID: "test-sealed-real", ShimPath: testutil.SwerveBinary(t)}})
	if err != nil {
		t.Fatal(err)
	}
	parquet := filepath.Join(testutil.SharedDir(t), "data", "swebench", "verified-test.parquet")
	tasks := map[string]*task.Task{}
	for _, id := range realTaskIDs {
		tk := loadOne(t, parquet, id)
		if ok, err := eng.ImageExists(ctx, tk.Image); err != nil || !ok {
			if required {
				t.Fatalf("SWERVE_REALTASKS=1 but image %s is missing (../shared/realtasks/build.sh): %v", tk.Image, err)
			}
			t.Skipf("image %s not built (../shared/realtasks/build.sh): %v", tk.Image, err)
		}
		tasks[id] = tk
	}
	return eng, tasks
}

// TestSealedRealTasks grades the real django tasks in sealed runs (as Grade
// does, through swebench.Run, to keep the trace at hand): the gold
// patch gets reward 1 and no patch 0, and read with the harness's strict
// names the sealed log gives the very report.json the harness wrote for
// the same task (testdata/reports in the swebench package).
func TestSealedRealTasks(t *testing.T) {
	eng, tasks := realTasks(t)
	reports := filepath.Join(testutil.RepoRoot(t), "internal", "reward", "swebench", "testdata", "reports")
	for _, id := range realTaskIDs {
		for _, gold := range []bool{true, false} {
			name := id + map[bool]string{true: ".gold", false: ".nopatch"}[gold]
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				ctx := context.Background()
				tk := tasks[id]
				box, err := eng.Open(ctx, sandbox.Spec{Image: tk.Image, Pull: sandbox.PullNever})
				if err != nil {
					t.Fatal(err)
				}
				defer box.Close(context.Background())
				patch := ""
				if gold {
					patch = tk.Patch
				}
				rr, err := swebench.Run(ctx, box, tk, swebench.RunOptions{RunOptions: reward.RunOptions{Patch: patch}})
				if err != nil {
					t.Fatal(err)
				}
				if want := map[bool]float64{true: 1, false: 0}[gold]; rr.Result.Reward() != want || rr.Trace == nil || !rr.Trace.Ended {
					t.Errorf("reward %v (%s), trace %v; want %v", rr.Result.Reward(), rr.Result.Reason, rr.Trace, want)
				}
				if rr.ScriptExit != 0 || nonceLike.MatchString(rr.Log) {
					t.Errorf("exit %d; log:\n%s", rr.ScriptExit, rr.Log)
				}
				if !strings.Contains(rr.Log, "\n+ : '>>>>> Start Test Output'\n") || !strings.Contains(rr.Log, "\n>>>>> Test Exit Code: ") {
					t.Errorf("the log is not in the harness's form:\n%s", rr.Log)
				}
				// The report the harness wrote for the same task and patch.
				strict, err := swebench.Evaluate(tk, rr.Log, swebench.Options{StrictNames: true, Trace: rr.Trace, ExitCodeRecorded: true})
				if err != nil {
					t.Fatal(err)
				}
				var got, want any
				json.Unmarshal(strict.Report(), &got)
				b, err := os.ReadFile(filepath.Join(reports, name, "report.json"))
				if err != nil {
					t.Fatal(err)
				}
				json.Unmarshal(b, &want)
				if diff := cmp.Diff(want, got); diff != "" {
					t.Errorf("report differs from the harness's (-harness +swerve):\n%s", diff)
				}
			})
		}
	}
}

// TestSealedCost measures what sealing costs per grade on a real task, in
// one run: django__django-16901's eval script, with its gold patch applied
// once, run and graded ten times in the same box, alternately sealed (as
// Run does: RunScript, Evaluate on the trace) and the way swerve ran it
// before (`/bin/bash /eval.sh` with the dataset's script unchanged, the
// log graded unsealed). Set SWERVE_SEALED_COST=1 to run it; it logs the
// medians of five each.
func TestSealedCost(t *testing.T) {
	if os.Getenv("SWERVE_SEALED_COST") != "1" {
		t.Skip("set SWERVE_SEALED_COST=1 to measure the cost of sealed runs on a real task")
	}
	eng, tasks := realTasks(t)
	tk := tasks["django__django-16901"]
	ctx := context.Background()
	box, err := eng.Open(ctx, sandbox.Spec{Image: tk.Image, Pull: sandbox.PullNever})
	if err != nil {
		t.Fatal(err)
	}
	defer box.Close(context.Background())
	if ok, log, err := reward.ApplyPatch(ctx, box, reward.Workdir, reward.PatchFile, tk.Patch); err != nil || !ok {
		t.Fatalf("apply: %v %s", err, log)
	}
	grade := func(sealed bool) time.Duration {
		start := time.Now()
		if sealed {
			script, recorded := swebench.RecordTestExitCode(tk.EvalScript)
			run, err := reward.RunScript(ctx, box, reward.Workdir, reward.EvalFile, script, reward.DefaultEvalTimeout)
			if err != nil {
				t.Fatal(err)
			}
			r, err := swebench.Evaluate(tk, run.Log, swebench.Options{Trace: run.Trace, ExitCodeRecorded: recorded})
			if err != nil || !r.Resolved {
				t.Fatalf("sealed: %v %+v", err, r)
			}
			return time.Since(start)
		}
		if err := box.WriteFile(ctx, reward.EvalFile, []byte(tk.EvalScript), 0o755); err != nil {
			t.Fatal(err)
		}
		res, err := box.Exec(ctx, sandbox.ExecRequest{Cmd: []string{"/bin/bash", reward.EvalFile}, Cwd: reward.Workdir, Timeout: reward.DefaultEvalTimeout, MaxOutput: reward.MaxLog})
		if err != nil {
			t.Fatal(err)
		}
		r, err := swebench.Evaluate(tk, string(res.Output), swebench.Options{})
		if err != nil || !r.Resolved {
			t.Fatalf("unsealed: %v %+v", err, r)
		}
		return time.Since(start)
	}
	var sealed, plain []time.Duration
	for i := range 10 {
		if i%2 == 0 {
			plain = append(plain, grade(false))
		} else {
			sealed = append(sealed, grade(true))
		}
	}
	// The part of the cost that does not drown in the tests' own time: an
	// empty script run sealed and plain in the same box.
	var emptySealed, emptyPlain []time.Duration
	for range 9 {
		start := time.Now()
		if _, err := reward.RunScript(ctx, box, reward.Workdir, reward.EvalFile+".empty", "true\n", time.Minute); err != nil {
			t.Fatal(err)
		}
		emptySealed = append(emptySealed, time.Since(start))
		start = time.Now()
		if _, err := box.Exec(ctx, sandbox.ExecRequest{Cmd: []string{"/bin/bash", reward.EvalFile + ".empty"}, Cwd: reward.Workdir}); err != nil {
			t.Fatal(err)
		}
		emptyPlain = append(emptyPlain, time.Since(start))
	}
	t.Logf("empty script, median of 9: sealed %v, plain %v (the sealed run also writes the script)", median(emptySealed).Round(time.Microsecond), median(emptyPlain).Round(time.Microsecond))
	ms, mp := median(sealed), median(plain)
	t.Logf("django__django-16901 gold, eval script run and graded, median of 5: sealed %v, unsealed %v, difference %v (%+.1f%%); sealed %v, unsealed %v",
		ms.Round(time.Millisecond), mp.Round(time.Millisecond), (ms - mp).Round(time.Millisecond), 100*float64(ms-mp)/float64(mp), sealed, plain)
}

// median is the middle of the durations (the upper one of an even count).
func median(d []time.Duration) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)/2]
}
