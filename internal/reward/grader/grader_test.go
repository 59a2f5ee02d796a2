package grader

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/swerve-dev/swerve/internal/sandbox"
	"github.com/swerve-dev/swerve/internal/sandbox/local"
	"github.com/swerve-dev/swerve/internal/task"
	"github.com/swerve-dev/swerve/internal/testutil"
)

func TestFromImage(t *testing.T) {
	tests := map[string]task.Grader{
		"":                                    "",
		"ubuntu:24.04":                        "",
		"gabime__spdlog-3398_swefactory_root": task.GraderSWEFactory,
		"swesmith.x86_64.pandas-dev__pandas.95280573":                    task.GraderSWESmith,
		"jyangballin/swesmith.x86_64.pandas-dev_1776_pandas.95280573":    task.GraderSWESmith,
		"swebench/sweb.eval.x86_64.django_1776_django-16901:latest":      task.GraderSWEBench,
		"slimshetty/swebench-verified:sweb.eval.x86_64.astropy__astropy": task.GraderSWEBench,
		"xingyaoww/sweb.eval.x86_64.getmoto_s_moto-7365:latest":          task.GraderSWEBench,
		"namanjain12/aiohttp_final:2222222222":                           task.GraderR2E,
		"R2E-Gym/some_image:latest":                                      task.GraderR2E,
	}
	for image, want := range tests {
		if got := FromImage(image); got != want {
			t.Errorf("FromImage(%q) = %q, want %q", image, got, want)
		}
	}
}

func TestChoose(t *testing.T) {
	tests := []struct {
		name    string
		task    task.Task
		force   string
		want    task.Grader
		wantErr string
	}{
		{"force wins", task.Task{InstanceID: "a", Grader: task.GraderSWEBench}, "swefactory", task.GraderSWEFactory, ""},
		{"task field", task.Task{InstanceID: "a", Grader: task.GraderR2E, Image: "swebench/sweb.eval.x"}, "", task.GraderR2E, ""},
		{"image", task.Task{InstanceID: "a", Image: "namanjain12/pillow_final:1"}, "", task.GraderR2E, ""},
		{"image swefactory", task.Task{InstanceID: "a", Image: "x_swefactory_root"}, "", task.GraderSWEFactory, ""},
		{"default", task.Task{InstanceID: "a", Image: "ubuntu"}, "", task.GraderSWEBench, ""},
		{"no image", task.Task{InstanceID: "a"}, "", task.GraderSWEBench, ""},
		{"unknown force", task.Task{InstanceID: "django__django-1"}, "magic", "",
			`task django__django-1: --reward: unknown grader "magic" (want one of swebench, swefactory, r2e, swesmith, harbor)`},
		{"unknown field", task.Task{InstanceID: "b", Grader: "nope"}, "", "", `task b: grader: unknown grader "nope" (want one of swebench, swefactory, r2e, swesmith, harbor)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Choose(&tt.task, tt.force)
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Errorf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Errorf("Choose = %q, %v; want %q", got, err, tt.want)
			}
		})
	}
}

func loadOne(t *testing.T, path, id string) *task.Task {
	t.Helper()
	res, err := task.Load(context.Background(), path, task.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range res.Tasks {
		if res.Tasks[i].InstanceID == id {
			return &res.Tasks[i]
		}
	}
	t.Fatalf("no task %s in %s", id, path)
	return nil
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestGradeLog grades real logs with every grader that reads logs alone.
func TestGradeLog(t *testing.T) {
	root := testutil.RepoRoot(t)
	reward := filepath.Join(root, "internal", "reward")
	shared := testutil.SharedDir(t)

	django := loadOne(t, filepath.Join(shared, "data", "swebench", "verified-test.parquet"), "django__django-16901")
	reports := filepath.Join(reward, "swebench", "testdata", "reports")
	aiohttp := loadOne(t, filepath.Join(root, "internal", "task", "testdata", "r2e.jsonl"), "aiohttp-222222222222")
	smith := &task.Task{InstanceID: "pandas-dev__pandas.95280573.x1", Grader: task.GraderSWESmith,
		FailToPass: []string{"tests/test_mod.py::test_fixed"}, PassToPass: []string{"tests/test_mod.py::test_error"}}
	factory := &task.Task{InstanceID: "gabime__spdlog-3398", Grader: task.GraderSWEFactory}

	tests := []struct {
		name       string
		task       *task.Task
		force, log string
		grader     task.Grader
		reward     float64
		reason     string
	}{
		{"swebench gold", django, "", readFile(t, filepath.Join(reports, "django__django-16901.gold", "test_output.txt")), task.GraderSWEBench, 1, "resolved"},
		{"swebench no patch", django, "", readFile(t, filepath.Join(reports, "django__django-16901.nopatch", "test_output.txt")), task.GraderSWEBench, 0, "FAIL_TO_PASS failed"},
		{"swefactory", factory, "", "+ echo OMNIGRIL_EXIT_CODE=0\nOMNIGRIL_EXIT_CODE=0\n", task.GraderSWEFactory, 1, "resolved"},
		{"swefactory marker missing", factory, "", "Traceback\n", task.GraderSWEFactory, 0, "no OMNIGRIL_EXIT_CODE=<n> line"},
		{"r2e", aiohttp, "", readFile(t, filepath.Join(reward, "r2e", "testdata", "logs", "aiohttp_buggy.log")), task.GraderR2E, 1, "resolved"},
		{"r2e mismatch", aiohttp, "", readFile(t, filepath.Join(reward, "r2e", "testdata", "logs", "aiohttp_fixed.log")), task.GraderR2E, 0, "tests failed: test_redirect"},
		{"swesmith", smith, "", readFile(t, filepath.Join(reward, "swesmith", "testdata", "logs", "pytest_verbose.log")), task.GraderSWESmith, 0, "tests failed: PASS_TO_PASS tests/test_mod.py::test_error"},
		{"forced swefactory on a swebench row", django, "swefactory", "OMNIGRIL_EXIT_CODE=0\n", task.GraderSWEFactory, 1, "resolved"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := GradeLog(tt.task, tt.force, tt.log)
			if err != nil {
				t.Fatal(err)
			}
			if out.Grader != tt.grader || out.Reward != tt.reward || out.Resolved != (tt.reward == 1) || !strings.HasPrefix(out.Reason, tt.reason) {
				t.Errorf("got %s %v %q; want %s %v %q", out.Grader, out.Reward, out.Reason, tt.grader, tt.reward, tt.reason)
			}
			if out.InstanceID != tt.task.InstanceID || !json.Valid(out.Report) {
				t.Errorf("outcome %+v", out)
			}
		})
	}
	// The swebench report is the harness's own.
	out, err := GradeLog(django, "", readFile(t, filepath.Join(reports, "django__django-16901.gold", "test_output.txt")))
	if err != nil {
		t.Fatal(err)
	}
	var got, want any
	json.Unmarshal(out.Report, &got)
	json.Unmarshal([]byte(readFile(t, filepath.Join(reports, "django__django-16901.gold", "report.json"))), &want)
	if !reflect.DeepEqual(got, want) {
		t.Errorf("swebench report %s", out.Report)
	}

	if _, err := GradeLog(&task.Task{InstanceID: "hello", Grader: task.GraderHarbor}, "", "x"); err == nil || !strings.Contains(err.Error(), "task hello: harbor grading reads the reward file") {
		t.Errorf("harbor GradeLog: %v", err)
	}
	if _, err := GradeLog(&task.Task{InstanceID: "r"}, "r2e", "x"); err == nil || !strings.Contains(err.Error(), "task r: expected_output_json") {
		t.Errorf("r2e GradeLog without expectation: %v", err)
	}
	if _, err := GradeLog(&task.Task{InstanceID: "q"}, "bogus", "x"); err == nil || !strings.Contains(err.Error(), "task q: --reward") {
		t.Errorf("unknown grader: %v", err)
	}
}

func localBackend(t *testing.T) *local.Backend {
	t.Helper()
	b, err := local.New(sandbox.Options{ShimPath: testutil.SwerveBinary(t)})
	if err != nil {
		t.Fatal(err)
	}
	b.TempDir = t.TempDir()
	return b
}

// TestGradeLocal runs Grade on the local backend: the shipped sample tasks
// (SWE-bench and SWE-Factory rows) and a Harbor task.
func TestGradeLocal(t *testing.T) {
	root := testutil.RepoRoot(t)
	b := localBackend(t)
	grade := func(t *testing.T, tk *task.Task, src string, opts Options) *Outcome {
		t.Helper()
		box, err := b.Open(context.Background(), sandbox.Spec{Image: src})
		if err != nil {
			t.Fatal(err)
		}
		defer box.Close(context.Background())
		out, err := Grade(context.Background(), box, tk, opts)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}

	t.Run("harbor", func(t *testing.T) {
		dir := filepath.Join(root, "internal", "reward", "harbor", "testdata", "tasks")
		hello, slow := loadOne(t, dir, "hello"), loadOne(t, dir, "slow")
		for _, tt := range []struct {
			name   string
			tk     *task.Task
			opts   Options
			reward float64
			reason string
		}{
			{"gold runs the solution", hello, Options{Gold: true}, 1, "resolved"},
			{"nothing", hello, Options{}, 0, "tests failed: reward 0 from reward.txt"},
			{"patch", hello, Options{Patch: "diff --git a/hello.txt b/hello.txt\nnew file mode 100644\n--- /dev/null\n+++ b/hello.txt\n@@ -0,0 +1 @@\n+Hello, world!\n"}, 1, "resolved"},
			{"bad patch", hello, Options{Patch: "diff --git a/x b/x\n--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\n"}, 0, "patch did not apply: "},
			{"timeout", slow, Options{EvalTimeout: time.Second}, 0, "eval timed out after 1 s"},
		} {
			t.Run(tt.name, func(t *testing.T) {
				out := grade(t, tt.tk, "", tt.opts)
				if out.Grader != task.GraderHarbor || out.Reward != tt.reward || !strings.HasPrefix(out.Reason, tt.reason) {
					t.Errorf("got %s %v %q; want %v %q\n%s", out.Grader, out.Reward, out.Reason, tt.reward, tt.reason, out.Log)
				}
				if tt.name == "timeout" && !out.TimedOut || tt.name == "bad patch" && !out.ApplyFailed {
					t.Errorf("flags: %+v", out)
				}
			})
		}
	})

	testutil.HostPytest(t)
	for _, file := range []string{"tasks.jsonl", "sample_transferred.json"} {
		tk := loadOne(t, filepath.Join(root, "examples", "sample", file), "sample__calc-1")
		t.Run(string(tk.Grader), func(t *testing.T) {
			gold := grade(t, tk, tk.SourceDir, Options{Gold: true, Workdir: "."})
			none := grade(t, tk, tk.SourceDir, Options{Workdir: "."})
			if gold.Reward != 1 || gold.Reason != "resolved" || none.Reward != 0 || none.Reason == "" {
				t.Errorf("gold %v (%s), none %v (%s)\n%s", gold.Reward, gold.Reason, none.Reward, none.Reason, none.Log)
			}
		})
	}
	t.Run("forced harbor on a swebench row", func(t *testing.T) {
		tk := loadOne(t, filepath.Join(root, "examples", "sample", "tasks.jsonl"), "sample__calc-1")
		box, err := b.Open(context.Background(), sandbox.Spec{Image: tk.SourceDir})
		if err != nil {
			t.Fatal(err)
		}
		defer box.Close(context.Background())
		if _, err := Grade(context.Background(), box, tk, Options{Force: "harbor"}); err == nil || !strings.Contains(err.Error(), "task sample__calc-1: task_dir") {
			t.Errorf("err = %v", err)
		}
		if _, err := Grade(context.Background(), box, &task.Task{InstanceID: "nogold"}, Options{Gold: true}); err == nil || !strings.Contains(err.Error(), "no gold patch") {
			t.Errorf("err = %v", err)
		}
	})
}

// TestFactoryCanariesUnavailable: a SWE-Factory row whose test command no
// parser reads (a C++ test binary), or that cannot run again as it is, gets
// no canaries, and says why; nothing is written to the box.
func TestFactoryCanariesUnavailable(t *testing.T) {
	script := func(cmd string) string {
		return "set -uxo pipefail\ncd /testbed\ngit checkout 0123456 tests/t.py\n" + cmd + "\nrc=$?\necho \"OMNIGRIL_EXIT_CODE=$rc\"\n"
	}
	for _, c := range []struct{ cmd, why string }{
		{"cd build\n./tests/spdlog-utests", "no log parser is known"},
		{"pytest tests/t.py", "without -rA"},
		{"cd sub && pytest -rA t.py", "not one simple command"},
	} {
		tk := &task.Task{InstanceID: "a__b-1", Grader: task.GraderSWEFactory, EvalScript: script(c.cmd)}
		can, inj, err := factoryCanaries(context.Background(), nil, tk, "")
		if err != nil || can.Available() || inj != "" || !strings.Contains(can.Unavailable, c.why) {
			t.Errorf("%q: canaries %+v, injector %q, %v; want none, saying %q", c.cmd, can, inj, err, c.why)
		}
	}
}
