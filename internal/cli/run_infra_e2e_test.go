package cli

import (
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/swerve-dev/swerve/internal/agent"
	"github.com/swerve-dev/swerve/internal/demo"
	"github.com/swerve-dev/swerve/internal/run"
	"github.com/swerve-dev/swerve/internal/testutil"
)

// TestRunInfraErrorRetried runs `swerve run` on tasks one of which cannot be
// graded (its row lost its eval script): that task is an error that keeps
// its trajectory — exit status 3, counted apart, in no file that carries
// rewards — the next runs try it again up to --max-attempts (either
// spelling), then give it up, and a larger --max_attempts once the row is
// repaired grades the same patch without running the model again.
func TestRunInfraErrorRetried(t *testing.T) {
	testutil.NeedPytest(t)
	work := t.TempDir()
	tmp := filepath.Join(work, "tmp")
	os.Mkdir(tmp, 0o755)
	env := e2eEnv(t, tmp)
	data, ids := e2eDataset(t, work, 1)
	victim := ids[0]
	good, err := os.ReadFile(data)
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	for _, row := range readRows(t, data) {
		if row["instance_id"] == victim {
			row["eval_script"] = ""
		}
		b, _ := json.Marshal(row)
		out.Write(append(b, '\n'))
	}
	os.WriteFile(data, []byte(out.String()), 0o644)
	traj := filepath.Join(work, "out")
	args := func(attempts ...string) []string {
		return append([]string{"run", "--dataset", data, "--llm_name", "oracle/gold", "--scaffold", "mini_swe_agent", "--backend", "local",
			"--max_workers", "2", "--traj_dir", traj, "--exp_name", "e"}, attempts...)
	}
	var first *agent.Trajectory
	others := slices.DeleteFunc(slices.Clone(ids), func(id string) bool { return id == victim })
	check := func(when string, attempts int, givenUp bool) {
		t.Helper()
		recs, err := run.LoadRecords(traj)
		if err != nil {
			t.Fatal(err)
		}
		r := recs[victim]
		if r == nil || !r.Failed() || r.ErrorKind != run.KindGrader || r.ErrorStage != run.StageGrade || r.Attempts != attempts || r.GivenUp != givenUp ||
			!strings.Contains(r.Error, "eval_script: empty") || r.Steps() == 0 || r.Patch == "" {
			t.Fatalf("%s: the victim's record: %+v", when, r)
		}
		if first == nil {
			first = r.Trajectory
		} else if !r.Trajectory.Started.Equal(first.Started) {
			t.Errorf("%s: the model ran again for a task whose grading failed", when)
		}
		var sum run.RewardSummary
		readJSONInto(t, filepath.Join(traj, "reward_summary.json"), &sum)
		if sum.Total != len(others) || sum.Reward1.Count != len(others) || sum.Accuracy != 1 || sum.Errors != 1 || !slices.Equal(sum.ErrorIDs, []string{victim}) || (sum.GivenUp.Count == 1) != givenUp {
			t.Errorf("%s: reward_summary.json: %+v", when, sum)
		}
		for _, f := range []string{"e.jsonl", "preds.json", "trajectories.jsonl"} {
			b, _ := os.ReadFile(filepath.Join(traj, f))
			if strings.Contains(string(b), victim) {
				t.Errorf("%s: %s names the errored task", when, f)
			}
		}
	}

	_, stderr, code := runSwerve(t, env, work, 5*time.Minute, args("--max-attempts", "2")...)
	if code != exitTaskErrors || !strings.Contains(stderr, "! "+victim+" error (") || !strings.Contains(stderr, "1 run again when the same command is rerun") {
		t.Fatalf("first run: exit %d\n%s", code, stderr)
	}
	check("first run", 1, false)
	checkConsistent(t, traj, "e")

	_, stderr, code = runSwerve(t, env, work, 5*time.Minute, args("--max-attempts", "2")...)
	if code != exitTaskErrors || !strings.Contains(stderr, "given up after 2 attempts") || !strings.Contains(stderr, "1 given up after --max_attempts: "+victim) {
		t.Fatalf("second run: exit %d\n%s", code, stderr)
	}
	check("second run", 2, true)

	_, stderr, code = runSwerve(t, env, work, 5*time.Minute, args("--max_attempts", "2")...)
	if code != exitTaskErrors || strings.Contains(stderr, "! "+victim) {
		t.Fatalf("third run: the given-up task ran again, or exit %d\n%s", code, stderr)
	}
	check("third run", 2, true)

	os.WriteFile(data, good, 0o644)
	_, stderr, code = runSwerve(t, env, work, 5*time.Minute, args("--max_attempts", "3")...)
	if code != 0 {
		t.Fatalf("fourth run: exit %d\n%s", code, stderr)
	}
	recs := checkFinished(t, traj, "e", ids)
	if r := recs[victim]; r.Failed() || r.Reward != 1 || r.Attempts != 3 || !r.Trajectory.Started.Equal(first.Started) {
		t.Errorf("fourth run: the victim's record: status %s, reward %g, attempts %d, the first trajectory %v", r.Status, r.Reward, r.Attempts, r.Trajectory.Started.Equal(first.Started))
	}
}

// TestRunDockerMissingImage: a task whose image is not there under --pull
// never is an image error, not a reward of 0, and the other tasks go on.
func TestRunDockerMissingImage(t *testing.T) {
	b := e2eDocker(t)
	base := testutil.TestImage()
	if ok, err := b.ImageExists(t.Context(), base); err != nil || !ok {
		testutil.SkipOrFail(t, "test image %s missing (scripts/test-image.sh): %v", base, err)
	}
	work := t.TempDir()
	tmp := filepath.Join(work, "tmp")
	os.Mkdir(tmp, 0o755)
	env := e2eEnv(t, tmp)
	dir := filepath.Join(work, "tasks")
	if _, err := demo.Extract(t.Context(), dir); err != nil {
		t.Fatal(err)
	}
	data, err := demo.Images(t.Context(), b, dir, base, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	victim := ""
	for _, row := range readRows(t, data) {
		if victim == "" {
			victim = row["instance_id"].(string)
			for _, k := range []string{"image", "image_name", "docker_image"} {
				if _, ok := row[k]; ok {
					row[k] = "swerve-test/no-such-image:never"
				}
			}
		}
		b, _ := json.Marshal(row)
		out.Write(append(b, '\n'))
	}
	os.WriteFile(data, []byte(out.String()), 0o644)
	traj := filepath.Join(work, "out")
	_, stderr, code := runSwerve(t, env, work, 5*time.Minute, "run", "--dataset", data, "--llm_name", "oracle/gold", "--scaffold", "r2egym",
		"--backend", "docker", "--pull", "never", "--max_workers", "2", "--traj_dir", traj, "--exp_name", "e")
	if code != exitTaskErrors {
		t.Fatalf("exit %d, want %d\n%s", code, exitTaskErrors, stderr)
	}
	recs, err := run.LoadRecords(traj)
	if err != nil {
		t.Fatal(err)
	}
	if r := recs[victim]; r == nil || !r.Failed() || r.ErrorKind != run.KindImage || !strings.Contains(r.Error, "no-such-image") {
		t.Fatalf("the task without an image: %+v", r)
	}
	var sum run.RewardSummary
	readJSONInto(t, filepath.Join(traj, "reward_summary.json"), &sum)
	if sum.Total != len(recs)-1 || sum.Reward1.Count != sum.Total || sum.Errors != 1 || sum.ErrorKinds["image"] != 1 {
		t.Errorf("reward_summary.json: %+v", sum)
	}
}
