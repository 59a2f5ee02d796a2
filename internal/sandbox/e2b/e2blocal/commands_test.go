package e2blocal_test

import (
	"bufio"
	"context"
	"encoding/json"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/swerve-dev/swerve/internal/reward/grader/kittest"
	"github.com/swerve-dev/swerve/internal/testutil"
)

// TestCommands runs swerve's own commands with --backend e2b on one real
// kit task through the local plane, as a user would with E2B_API_URL and
// E2B_SANDBOX_URL pointing at it: validate (gold 1, empty 0), grade
// --gold, run with the offline oracle model, and serve answering collect.
func TestCommands(t *testing.T) {
	needEnvd(t)
	if os.Getenv("SWERVE_REALTASKS") != "1" {
		testutil.SkipOrFail(t, "SWERVE_REALTASKS not set: the real django images may be missing")
	}
	tasks := kittest.Tasks(t)
	const id = "django__django-15499"
	tk := tasks[id]
	if tk == nil {
		t.Fatalf("no kit task %s", id)
	}
	srv := startPlane(t, nil)
	bin := testutil.SwerveBinary(t)
	dataset := filepath.Join(testutil.SharedDir(t), "realtasks", "instances.jsonl")
	work := t.TempDir()
	maps := filepath.Join(work, "templates.yaml")
	// The plane takes image names as template ids; the map says so.
	if err := os.WriteFile(maps, []byte(tk.Image+": "+tk.Image+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	env := append(os.Environ(),
		"E2B_API_KEY="+srv.APIKey(), "E2B_API_URL="+srv.URL, "E2B_SANDBOX_URL="+srv.URL, "E2B_DOMAIN=e2b.local",
		"SWERVE_E2B_TEMPLATE_MAP="+maps)
	swerve := func(args ...string) string {
		t.Helper()
		cmd := exec.Command(bin, args...)
		cmd.Env = env
		cmd.Dir = work // results/ and the like stay out of the work tree
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("swerve %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	common := []string{"--dataset", dataset, "--backend", "e2b"}

	out := swerve(append([]string{"validate", "--instance_ids", id}, common...)...)
	if !strings.Contains(out, id+": gold 1, empty 0") {
		t.Errorf("validate:\n%s", out)
	}
	out = swerve(append([]string{"grade", "--instance_id", id, "--gold"}, common...)...)
	if !strings.Contains(out, id+": resolved") {
		t.Errorf("grade --gold:\n%s", out)
	}
	traj := filepath.Join(work, "run")
	swerve(append([]string{"run", "--instance_ids", id, "--llm_name", "oracle/gold", "--scaffold", "r2egym", "--traj_dir", traj, "--exp_name", "e2b"}, common...)...)
	var summary struct {
		Reward1 struct {
			InstanceIDs []string `json:"instance_ids"`
		} `json:"reward_1"`
	}
	data, err := os.ReadFile(filepath.Join(traj, "reward_summary.json"))
	if err == nil {
		err = json.Unmarshal(data, &summary)
	}
	if err != nil || len(summary.Reward1.InstanceIDs) != 1 {
		t.Errorf("run: reward_summary.json %s (%v): want %s resolved", data, err, id)
	}

	// serve, fed by collect.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	rows := filepath.Join(work, "rows.jsonl")
	swerve("convert", "gym", "--dataset", dataset, "--instance_ids", id, "--output", rows)
	serve := exec.Command(bin, append([]string{"serve", "--llm_name", "oracle/gold", "--listen", addr}, common...)...)
	serve.Env = env
	serve.Dir = work
	var serveLog strings.Builder
	serve.Stdout, serve.Stderr = &serveLog, &serveLog
	if err := serve.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		serve.Process.Signal(os.Interrupt)
		serve.Wait()
	}()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for ctx.Err() == nil {
		if resp, err := http.Get("http://" + addr + "/"); err == nil {
			resp.Body.Close()
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	rollouts := filepath.Join(work, "rollouts.jsonl")
	swerve("collect", "--server", "http://"+addr, "-i", rows, "-o", rollouts)
	f, err := os.Open(rollouts)
	if err != nil {
		t.Fatalf("collect wrote nothing: %v\nserve:\n%s", err, serveLog.String())
	}
	defer f.Close()
	var n int
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 64<<20)
	for sc.Scan() {
		var r struct {
			ID     string  `json:"instance_id"`
			Reward float64 `json:"reward"`
		}
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatal(err)
		}
		n++
		if r.ID != id || r.Reward != 1 {
			t.Errorf("serve: rollout %s reward %v, want %s 1\nserve:\n%s", r.ID, r.Reward, id, serveLog.String())
		}
	}
	if n != 1 {
		t.Errorf("serve: %d rollouts, want 1", n)
	}
	if left := srv.Running(); left != 0 {
		t.Errorf("%d sandboxes still running after the commands", left)
	}
}
