package run_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/swerve-dev/swerve/internal/agent"
	"github.com/swerve-dev/swerve/internal/llm"
	"github.com/swerve-dev/swerve/internal/run"
	"github.com/swerve-dev/swerve/internal/task"
	"github.com/swerve-dev/swerve/internal/testutil"
)

// An R2E-Gym-style task's hidden tests are gone from the agent's box (the
// agent looks for them and finds nothing) and back in the grading box (the
// fix it then makes is graded 1 against them).
func TestRunHidesR2ETests(t *testing.T) {
	testutil.NeedPytest(t)
	src := t.TempDir()
	os.MkdirAll(filepath.Join(src, "r2e_tests"), 0o755)
	os.WriteFile(filepath.Join(src, "calc.py"), []byte("def add(a, b):\n    return a - b\n"), 0o644)
	os.WriteFile(filepath.Join(src, "r2e_tests", "test_calc.py"), []byte("from calc import add\n\n\ndef test_add():\n    assert add(2, 2) == 4  # SECRET-ASSERTION\n"), 0o644)
	os.WriteFile(filepath.Join(src, "run_tests.sh"), []byte("PYTHONPATH=. /usr/bin/python3 -W ignore -m pytest -p no:cacheprovider -rA r2e_tests\n"), 0o644)
	tk := task.Task{InstanceID: "calc-hidden", Repo: "calc", SourceDir: src, Grader: task.GraderR2E, Dialect: task.DialectR2E,
		ExpectedOutput: map[string]string{"test_add": "PASSED"}}
	look := "```bash\nls r2e_tests; cat r2e_tests/test_calc.py; grep -r SECRET-ASSERTION . ; echo looked\n```\n"
	fix := "```bash\nsed -i 's/a - b/a + b/' calc.py && echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT\n```\n"
	o := options(t, []task.Task{tk}, "mini_swe_agent", agent.ModeText)
	o.ModelName = "replay/hidden"
	o.NewModel = func(*agent.Scaffold, *task.Task, string, agent.Mode) (llm.Client, error) {
		return llm.NewScripted("replay/hidden", []llm.Message{{Content: "Where are the tests?\n" + look}, {Content: "Fix it.\n" + fix}}), nil
	}
	if _, err := run.Run(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	recs, err := run.LoadRecords(o.TrajDir)
	if err != nil {
		t.Fatal(err)
	}
	rec := recs[tk.InstanceID]
	if rec == nil || rec.Trajectory == nil || len(rec.Trajectory.Steps) == 0 {
		t.Fatalf("record %+v", rec)
	}
	obs := rec.Trajectory.Steps[0].Observation
	if strings.Contains(obs, "SECRET-ASSERTION") || !strings.Contains(obs, "looked") {
		t.Errorf("the agent read the hidden tests:\n%s", obs)
	}
	if strings.Contains(rec.Patch, "r2e_tests") {
		t.Errorf("hiding the tests leaked into the patch:\n%s", rec.Patch)
	}
	if rec.Reward != 1 {
		t.Errorf("reward %v (%s), want 1: the grading box has the tests", rec.Reward, rec.RewardReason)
	}
}
