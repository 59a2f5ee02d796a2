package cli

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/swerve-dev/swerve/internal/sandbox/local"
	"github.com/swerve-dev/swerve/internal/testutil"
)

var warmLine = regexp.MustCompile(`warm pool +(\d+) boxes ready when asked for, (\d+) still opening, (\d+) opened on demand, (\d+) closed unused, (\d+) warm opens failed`)

// warmCounts reads run's warm pool line: hits, waits, misses, unused, failed.
func warmCounts(t *testing.T, stderr string) [5]int {
	t.Helper()
	m := warmLine.FindStringSubmatch(stderr)
	if m == nil {
		t.Fatalf("no warm pool line in:\n%s", stderr)
	}
	var n [5]int
	for i := range n {
		n[i], _ = strconv.Atoi(m[i+1])
	}
	return n
}

// TestRunPrewarm: with --prewarm every box a task opens (the agent's and
// the grading one) comes from the pool or on demand, results are those of
// a run without it, tasks finished before are skipped without a warm box,
// and no box is left.
func TestRunPrewarm(t *testing.T) {
	testutil.NeedPytest(t)
	work := t.TempDir()
	tmp := filepath.Join(work, "tmp")
	os.Mkdir(tmp, 0o755)
	env := e2eEnv(t, tmp)
	data, ids := e2eDataset(t, work, 1)
	traj := filepath.Join(work, "traj")
	args := []string{"run", "--dataset", data, "--llm_name", "oracle/gold", "--scaffold", "r2egym", "--backend", "local",
		"--traj_dir", traj, "--exp_name", "e"}

	// One task first: the prewarmed run must skip it.
	if _, stderr, code := runSwerve(t, env, work, 3*time.Minute, append(args, "--instance_ids", ids[0])...); code != 0 {
		t.Fatalf("first run: exit %d\n%s", code, stderr)
	}
	_, stderr, code := runSwerve(t, env, work, 5*time.Minute, append(args, "--prewarm", "2", "--max_workers", "1")...)
	if code != 0 {
		t.Fatalf("prewarmed run: exit %d\n%s", code, stderr)
	}
	checkFinished(t, traj, "e", ids)
	n := warmCounts(t, stderr)
	ran := len(ids) - 1
	if got := n[0] + n[1] + n[2]; got != 2*ran {
		t.Errorf("%d boxes opened through the pool, want 2 for each of the %d tasks that ran:\n%s", got, ran, stderr)
	}
	if n[0]+n[1] == 0 {
		t.Errorf("no box came from the pool:\n%s", stderr)
	}
	if n[3] != 0 || n[4] != 0 {
		t.Errorf("%d warm boxes unused, %d failed: the skipped task got one, or opens failed:\n%s", n[3], n[4], stderr)
	}
	noLocalBoxes(t, tmp, "after a prewarmed run")

	// The same command again: everything is finished, nothing opens.
	_, stderr, code = runSwerve(t, env, work, 3*time.Minute, append(args, "--prewarm", "2")...)
	if code != 0 {
		t.Fatalf("rerun: exit %d\n%s", code, stderr)
	}
	if n := warmCounts(t, stderr); n != [5]int{} {
		t.Errorf("a rerun with every task finished used the pool: %v", n)
	}
	noLocalBoxes(t, tmp, "after a rerun")

	if _, stderr, code := runSwerve(t, env, work, time.Minute, append(args, "--prewarm", "-1")...); code == 0 || !strings.Contains(stderr, "--prewarm -1: must be 0 or more") {
		t.Errorf("--prewarm -1: exit %d\n%s", code, stderr)
	}
}

// TestRunPrewarmKilled: a prewarmed run killed with SIGKILL leaves its warm
// boxes to swerve gc, which removes them all.
func TestRunPrewarmKilled(t *testing.T) {
	testutil.NeedPytest(t)
	work := t.TempDir()
	tmp := filepath.Join(work, "tmp")
	os.Mkdir(tmp, 0o755)
	env := e2eEnv(t, tmp)
	data, _ := e2eDataset(t, work, 2)
	p := startSwerve(t, env, work, nil, "run", "--dataset", data, "--llm_name", "oracle/gold", "--scaffold", "r2egym",
		"--backend", "local", "--traj_dir", filepath.Join(work, "traj"), "--exp_name", "e", "--prewarm", "4", "--max_workers", "1")
	deadline := time.Now().Add(2 * time.Minute)
	for {
		left, _ := local.Leftovers(context.Background(), tmp, true)
		if len(left) >= 3 { // the running task's and warm ones
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no warm boxes within 2 minutes\n%s", p.stderr.String())
		}
		time.Sleep(5 * time.Millisecond)
	}
	p.cmd.Process.Signal(syscall.SIGKILL)
	p.wait(t, time.Minute)
	// Only this run's boxes (its run id is cli-<pid>).
	out, stderr, code := runSwerve(t, env, work, time.Minute, "gc", "--run", "cli-"+strconv.Itoa(p.cmd.Process.Pid))
	if code != 0 {
		t.Fatalf("gc: exit %d\n%s%s", code, out, stderr)
	}
	if n := strings.Count(out, "removed"); n < 3 {
		t.Errorf("gc removed %d boxes, want the running and the warm ones:\n%s", n, out)
	}
	noLocalBoxes(t, tmp, "after gc")
}

// TestServePrewarmDrain: serve --prewarm opens the boxes of queued rows
// while they wait, reports hits and warm boxes in /metrics, and a drain
// closes the warm boxes of the rows it turns away.
func TestServePrewarmDrain(t *testing.T) {
	testutil.NeedPytest(t)
	work := t.TempDir()
	tmp := filepath.Join(work, "tmp")
	os.Mkdir(tmp, 0o755)
	env := e2eEnv(t, tmp)
	data, _ := e2eDataset(t, work, 2)
	p := startSwerve(t, env, work, nil, "serve", "--listen", "127.0.0.1:0", "--llm_name", "oracle/gold",
		"--scaffold", "r2egym", "--backend", "local", "--concurrency", "1", "--results_dir", "", "--prewarm", "2")
	base := waitListening(t, p)

	rows := readRows(t, data)
	codes := make(chan int, len(rows))
	for i, row := range rows {
		row["responses_create_params"] = map[string]any{"input": []any{}, "temperature": 0.0}
		row["_ng_task_index"], row["_ng_rollout_index"] = i, 0
		b, _ := json.Marshal(row)
		go func() {
			resp, err := http.Post(base+"/run", "application/json", strings.NewReader(string(b)))
			if err != nil {
				codes <- -1
				return
			}
			resp.Body.Close()
			codes <- resp.StatusCode
		}()
		time.Sleep(5 * time.Millisecond) // queued in this order
	}
	metric := func(text, name string) float64 {
		m := regexp.MustCompile(`(?m)^` + name + ` (\S+)$`).FindStringSubmatch(text)
		if m == nil {
			t.Fatalf("/metrics has no %s:\n%s", name, text)
		}
		v, _ := strconv.ParseFloat(m[1], 64)
		return v
	}
	// Wait until a rollout took a warm box and others wait warm.
	deadline := time.Now().Add(3 * time.Minute)
	for {
		text := scrapeText(t, base)
		if metric(text, "swerve_warm_hits_total")+metric(text, "swerve_warm_waits_total") >= 2 && metric(text, "swerve_warm_boxes") >= 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no warm hits within 3 minutes:\n%s\n%s", text, p.stderr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	p.cmd.Process.Signal(syscall.SIGTERM)
	if code := p.wait(t, 2*time.Minute); code != 0 {
		t.Errorf("exit %d after SIGTERM\n%s", code, p.stderr.String())
	}
	got := map[int]int{}
	for range rows {
		got[<-codes]++
	}
	if got[200] == 0 || got[503] == 0 || got[200]+got[503] != len(rows) {
		t.Errorf("answers %v: want some rollouts finished (200) and the queued ones turned away (503)", got)
	}
	noLocalBoxes(t, tmp, "after the drain")
}

// TestValidatePrewarm: validate --prewarm gives the same verdicts and
// leaves no box.
func TestValidatePrewarm(t *testing.T) {
	testutil.NeedPytest(t)
	work := t.TempDir()
	tmp := filepath.Join(work, "tmp")
	os.Mkdir(tmp, 0o755)
	env := e2eEnv(t, tmp)
	data, ids := e2eDataset(t, work, 1)
	out, stderr, code := runSwerve(t, env, work, 5*time.Minute, "validate", "--dataset", data, "--backend", "local", "--prewarm", "3", "--json")
	if code != 0 {
		t.Fatalf("validate --prewarm: exit %d\n%s", code, stderr)
	}
	for _, id := range ids {
		if !strings.Contains(out, id) {
			t.Errorf("no verdict for %s:\n%s", id, out)
		}
	}
	noLocalBoxes(t, tmp, "after validate --prewarm")
}
