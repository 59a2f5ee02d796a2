package harbor

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/swerve-dev/swerve/internal/reward"
	"github.com/swerve-dev/swerve/internal/sandbox"
	"github.com/swerve-dev/swerve/internal/sandbox/local"
	"github.com/swerve-dev/swerve/internal/task"
	"github.com/swerve-dev/swerve/internal/testutil"
)

func TestReadReward(t *testing.T) {
	b := func(s string) []byte { return []byte(s) }
	tests := []struct {
		name        string
		files       Files
		wantReward  float64
		wantSource  string
		wantRewards map[string]float64
		wantReason  string
	}{
		{"text one", Files{Text: b("1\n")}, 1, RewardText, map[string]float64{"reward": 1}, "resolved"},
		{"text zero", Files{Text: b("0")}, 0, RewardText, map[string]float64{"reward": 0}, "tests failed: reward 0 from reward.txt"},
		{"text float with spaces", Files{Text: b("  0.25 \n")}, 0.25, RewardText, map[string]float64{"reward": 0.25}, "tests failed: reward 0.25 from reward.txt"},
		{"text not a number", Files{Text: b("PASS\n")}, 0, RewardText, nil, `reward.txt does not hold a number: "PASS"`},
		{"text empty", Files{Text: b("")}, 0, RewardText, nil, "reward.txt is empty"},
		{"text nan", Files{Text: b("nan")}, 0, RewardText, nil, "not a finite number"},
		{"json reward key", Files{JSON: b(`{"reward": 1.0, "tests": 5, "ok": true, "name": "x"}`)}, 1, RewardJSON, map[string]float64{"reward": 1, "tests": 5}, "resolved"},
		{"json and text agree", Files{JSON: b(`{"reward": 1}`), Text: b("1.0\n")}, 1, RewardJSON, map[string]float64{"reward": 1}, "resolved"},
		// Harbor reads reward.json alone; swerve fails files that disagree.
		{"json and text disagree", Files{JSON: b(`{"reward": 0.5}`), Text: b("1")}, 0, RewardJSON, map[string]float64{"reward": 0.5}, "reward.json and reward.txt disagree: reward 0.5 and 1"},
		{"json 1, text forged 0", Files{JSON: b(`{"reward": 1}`), Text: b("0")}, 0, RewardJSON, map[string]float64{"reward": 1}, "reward.json and reward.txt disagree"},
		{"json 1, text not a number", Files{JSON: b(`{"reward": 1}`), Text: b("yes")}, 0, RewardJSON, map[string]float64{"reward": 1}, "reward.json and reward.txt disagree"},
		{"json only number", Files{JSON: b(`{"score": 1, "ok": false}`)}, 1, RewardJSON, map[string]float64{"score": 1}, "resolved"},
		{"json without reward takes the text's", Files{JSON: b(`{"a": 0.1, "b": 0.2}`), Text: b("1\n")}, 1, RewardJSON, map[string]float64{"a": 0.1, "b": 0.2, "reward": 1}, "resolved"},
		{"json several numbers", Files{JSON: b(`{"b": 0.2, "a": 0.1}`)}, 0, RewardJSON, map[string]float64{"a": 0.1, "b": 0.2}, "reward.json holds 2 numbers (a, b) and none is named reward"},
		{"json no numbers", Files{JSON: b(`{"ok": true}`)}, 0, RewardJSON, map[string]float64{}, "reward.json holds no number"},
		{"json not an object", Files{JSON: b(`[1]`)}, 0, RewardJSON, nil, "reward.json is not a JSON object"},
		{"json broken", Files{JSON: b(`{"reward": `)}, 0, RewardJSON, nil, "reward.json is not JSON"},
		{"json empty", Files{JSON: b("")}, 0, RewardJSON, nil, "reward.json is empty"},
		{"none", Files{}, 0, "", nil, "no reward file: test.sh wrote neither reward.json nor reward.txt"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := &Result{InstanceID: "x", ExitCode: 0}
			ReadReward(r, tt.files)
			if r.Reward != tt.wantReward || r.Source != tt.wantSource || r.Resolved != (tt.wantReward == 1) || !strings.Contains(r.Reason, tt.wantReason) {
				t.Errorf("got %+v; want reward %v from %q, reason containing %q", r, tt.wantReward, tt.wantSource, tt.wantReason)
			}
			if diff := cmp.Diff(tt.wantRewards, r.Rewards); diff != "" {
				t.Errorf("rewards:\n%s", diff)
			}
		})
	}
}

func TestPyFloat(t *testing.T) {
	tests := []struct {
		in   string
		want float64
		ok   bool
	}{
		{"1", 1, true}, {" -0.5\n", -0.5, true}, {"+2", 2, true}, {".5", 0.5, true}, {"5.", 5, true}, {"1e-3", 0.001, true},
		{"1_000", 1000, true}, {"1__0", 0, false}, {"_1", 0, false}, {"1_", 0, false}, {"0x10", 0, false}, {"--1", 0, false},
		{"", 0, false}, {"1 2", 0, false}, {"one", 0, false}, {"\u00a01\u2003", 1, true},
	}
	for _, tt := range tests {
		got, ok := pyFloat(tt.in)
		if ok != tt.ok || (ok && got != tt.want) {
			t.Errorf("pyFloat(%q) = %v, %v; want %v, %v", tt.in, got, ok, tt.want, tt.ok)
		}
	}
	if v, ok := pyFloat("inf"); !ok || v < 1e308 {
		t.Errorf("inf: %v %v", v, ok)
	}
}

func TestRewritePaths(t *testing.T) {
	l := layout{tests: "/s/harbor/tests", solution: "/s/harbor/solution", verifier: "/s/harbor/logs/verifier", rewrite: true}
	in := "source /tests/count.sh; bash /tests\necho 1 > /logs/verifier/reward.txt\ncd src/tests; ls $HOME/tests ${D}/tests /testsuite /tests.txt\n" +
		"cp x /solution/ '/tests/a b' \"/logs/verifier\"\n"
	want := "source /s/harbor/tests/count.sh; bash /s/harbor/tests\necho 1 > /s/harbor/logs/verifier/reward.txt\ncd src/tests; ls $HOME/tests ${D}/tests /testsuite /tests.txt\n" +
		"cp x /s/harbor/solution/ '/s/harbor/tests/a b' \"/s/harbor/logs/verifier\"\n"
	if got := string(l.rewritePaths([]byte(in))); got != want {
		t.Errorf("rewritePaths:\n%s\nwant:\n%s", got, want)
	}
	bin := []byte("/tests\x00")
	if got := l.rewritePaths(bin); string(got) != string(bin) {
		t.Errorf("binary file rewritten: %q", got)
	}
}

func loadTasks(t *testing.T, dir string) map[string]*task.Task {
	t.Helper()
	res, err := task.Load(context.Background(), dir, task.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]*task.Task{}
	for i := range res.Tasks {
		out[res.Tasks[i].InstanceID] = &res.Tasks[i]
	}
	return out
}

// TestSampleTasks checks the Harbor tasks in shared/data load as gradable
// ones with the verifier timeout of their task.toml. (They install pytest
// with apt and uv at verification time, so they need a networked image.)
func TestSampleTasks(t *testing.T) {
	tasks := loadTasks(t, filepath.Join(testutil.SharedDir(t), "data", "harbor"))
	if len(tasks) != 2 {
		t.Fatalf("%d tasks", len(tasks))
	}
	for id, tk := range tasks {
		if tk.Grader != task.GraderHarbor {
			t.Errorf("%s: grader %s", id, tk.Grader)
		}
		if err := Check(tk); err != nil {
			t.Error(err)
		}
		if got := tomlSeconds(tk, "verifier", time.Hour); got != 120*time.Second {
			t.Errorf("%s: verifier timeout %v", id, got)
		}
		// Their test.sh installs with apt-get (so it runs as root) and runs
		// pytest -rA on one test file, whose tests the record must hold and
		// which can carry mutant canaries.
		script, err := os.ReadFile(filepath.Join(tk.TaskDir, "tests", TestScript))
		if err != nil {
			t.Fatal(err)
		}
		if why := rootNeed(string(script)); !strings.HasPrefix(why, "needs root (apt-get") {
			t.Errorf("%s: root need %q", id, why)
		}
		files, why := pytestFiles(tk.TaskDir, string(script))
		if len(files) != 1 || len(files[0].Tests) == 0 {
			t.Fatalf("%s: pytest files %+v (%s)", id, files, why)
		}
		if can := planCanaries(id, files[0]); !can.Available() || can.Original == "" {
			t.Errorf("%s: canaries %q (%s)", id, can.Unavailable, can.Template)
		}
	}
	if err := Check(&task.Task{InstanceID: "x"}); err == nil || !strings.Contains(err.Error(), "task x: task_dir") {
		t.Errorf("Check of a task without a directory: %v", err)
	}
}

// TestRunLocal grades the Harbor tasks in testdata/tasks on the local
// backend, where /tests and /logs/verifier would be the host's: the grader
// puts them in the box's scratch directory and points the scripts there.
func TestRunLocal(t *testing.T) {
	tasks := loadTasks(t, filepath.Join("testdata", "tasks"))
	b, err := local.New(sandbox.Options{ShimPath: testutil.SwerveBinary(t)})
	if err != nil {
		t.Fatal(err)
	}
	b.TempDir = t.TempDir()
	hello := "diff --git a/hello.txt b/hello.txt\nnew file mode 100644\n--- /dev/null\n+++ b/hello.txt\n@@ -0,0 +1 @@\n+Hello, world!\n"
	for _, tt := range []struct {
		name, task string
		opts       RunOptions
		want       float64
		source     string
		reason     string
		exit       int
	}{
		{"patch", "hello", RunOptions{RunOptions: reward.RunOptions{Patch: hello}}, 1, RewardText, "resolved", 0},
		{"solution", "hello", RunOptions{Solution: true}, 1, RewardText, "resolved", 0},
		{"nothing done", "hello", RunOptions{}, 0, RewardText, "tests failed: reward 0 from reward.txt", 0},
		{"patch that does not apply", "hello", RunOptions{RunOptions: reward.RunOptions{Patch: "diff --git a/nope.txt b/nope.txt\n--- a/nope.txt\n+++ b/nope.txt\n@@ -1 +1 @@\n-x\n+y\n"}}, 0, "", "patch did not apply", -1},
		{"json partial score", "scored", RunOptions{RunOptions: reward.RunOptions{Patch: "diff --git a/a.txt b/a.txt\nnew file mode 100644\n--- /dev/null\n+++ b/a.txt\n@@ -0,0 +1 @@\n+a\n"}}, 0.25, RewardJSON, "tests failed: reward 0.25 from reward.json", 0},
		{"json solution", "scored", RunOptions{Solution: true}, 1, RewardJSON, "resolved", 0},
		{"no reward file", "silent", RunOptions{}, 0, "", "no reward file", 3},
		{"timeout", "slow", RunOptions{RunOptions: reward.RunOptions{EvalTimeout: time.Second}}, 0, "", "eval timed out: thinking", -1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			box, err := b.Open(context.Background(), sandbox.Spec{})
			if err != nil {
				t.Fatal(err)
			}
			defer box.Close(context.Background())
			rr, err := Run(context.Background(), box, tasks[tt.task], tt.opts)
			if err != nil {
				t.Fatal(err)
			}
			if rr.Result.Reward != tt.want || rr.Result.Source != tt.source || rr.Result.ExitCode != tt.exit || !strings.HasPrefix(rr.Result.Reason, tt.reason) {
				t.Errorf("got reward %v from %q (exit %d), reason %q; want %v from %q (exit %d), %q\nlog:\n%s",
					rr.Result.Reward, rr.Result.Source, rr.Result.ExitCode, rr.Result.Reason, tt.want, tt.source, tt.exit, tt.reason, rr.Log)
			}
			if tt.name == "timeout" && !rr.TimedOut {
				t.Error("not marked timed out")
			}
		})
	}
	t.Run("verifier dir option", func(t *testing.T) {
		box, err := b.Open(context.Background(), sandbox.Spec{})
		if err != nil {
			t.Fatal(err)
		}
		defer box.Close(context.Background())
		dir := filepath.Join(t.TempDir(), "v")
		rr, err := Run(context.Background(), box, tasks["hello"], RunOptions{Solution: true, VerifierDir: dir})
		if err != nil {
			t.Fatal(err)
		}
		if rr.Result.Reward != 1 {
			t.Errorf("reward %v: %s\n%s", rr.Result.Reward, rr.Result.Reason, rr.Log)
		}
		if got, err := box.ReadFile(context.Background(), filepath.Join(dir, RewardText)); err != nil || string(got) != "1\n" {
			t.Errorf("reward.txt in the given directory: %q, %v", got, err)
		}
	})
}

// TestRunSealed: test.sh runs sealed with $0 and BASH_SOURCE as under
// `bash /tests/test.sh`, and reward files left in the verifier directory
// before the run do not count.
func TestRunSealed(t *testing.T) {
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "tests"), 0o755)
	os.WriteFile(filepath.Join(dir, "tests", "data.txt"), []byte("fixed\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "tests", TestScript), []byte(`#!/bin/bash
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
[ "$here/test.sh" -ef "$0" ] || { echo "bad \$0: $0"; exit 1; }
if grep -q fixed "$here/data.txt" && [ -f fixed.txt ]; then echo 1 > /logs/verifier/reward.txt; fi
exit 4
`), 0o755)
	tk := &task.Task{InstanceID: "sealed-1", TaskDir: dir}
	b, err := local.New(sandbox.Options{ShimPath: testutil.SwerveBinary(t)})
	if err != nil {
		t.Fatal(err)
	}
	b.TempDir = t.TempDir()
	fix := "diff --git a/fixed.txt b/fixed.txt\nnew file mode 100644\n--- /dev/null\n+++ b/fixed.txt\n@@ -0,0 +1 @@\n+yes\n"
	for _, tt := range []struct {
		name, patch string
		want        float64
		reason      string
	}{
		{"fix", fix, 1, "resolved"},
		{"stale reward files", "", 0, "no reward file"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			box, err := b.Open(context.Background(), sandbox.Spec{})
			if err != nil {
				t.Fatal(err)
			}
			defer box.Close(context.Background())
			verifier := layoutFor(box, "").verifier
			for name, body := range map[string]string{RewardText: "1\n", RewardJSON: `{"reward": 1}`, "junk/x": "x"} {
				if err := box.WriteFile(context.Background(), filepath.Join(verifier, name), []byte(body), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			rr, err := Run(context.Background(), box, tk, RunOptions{RunOptions: reward.RunOptions{Patch: tt.patch}})
			if err != nil {
				t.Fatal(err)
			}
			if rr.Result.Reward != tt.want || !strings.HasPrefix(rr.Result.Reason, tt.reason) || rr.Result.ExitCode != 4 || rr.Trace == nil {
				t.Errorf("reward %v (%s), exit %d; want %v %q, exit 4\nlog:\n%s", rr.Result.Reward, rr.Result.Reason, rr.Result.ExitCode, tt.want, tt.reason, rr.Log)
			}
		})
	}
}
