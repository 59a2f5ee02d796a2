package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/swerve-dev/swerve/internal/testutil"
)

// TestServeLoad opens 1,000 /run requests at once against a real swerve
// serve (oracle/gold, local backend, concurrency 8), takes the first 40
// answers, then lets every other client go: each answer has reward 1, no
// request fails, every abandoned rollout is cancelled, no box is left, and
// the server's peak RSS stays under 300 MB. It takes about half a minute
// on two cores, so it runs only with SWERVE_LOAD_TESTS=1
// (SWERVE_LOAD_N changes the number of requests; SWERVE_LOAD_FINISH the
// answers waited for, "all" for every one: no client leaves).
func TestServeLoad(t *testing.T) {
	if os.Getenv("SWERVE_LOAD_TESTS") != "1" {
		t.Skip("load test: set SWERVE_LOAD_TESTS=1")
	}
	testutil.NeedPytest(t)
	n, finish := 1000, 40
	if v, err := strconv.Atoi(os.Getenv("SWERVE_LOAD_N")); err == nil && v > finish {
		n = v
	}
	switch v := os.Getenv("SWERVE_LOAD_FINISH"); v {
	case "":
	case "all":
		finish = n
	default:
		if f, err := strconv.Atoi(v); err == nil && f > 0 && f <= n {
			finish = f
		}
	}
	work := t.TempDir()
	tmp := filepath.Join(work, "tmp")
	os.Mkdir(tmp, 0o755)
	data, ids := e2eDataset(t, work, 1)
	p := startSwerve(t, e2eEnv(t, tmp), work, nil, "serve", "--listen", "127.0.0.1:0", "--dataset", data,
		"--llm_name", "oracle/gold", "--scaffold", "r2egym", "--backend", "local", "--concurrency", "8",
		"--queue", strconv.Itoa(n), "--results_dir", "")
	base := waitListening(t, p)

	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: n}}
	var answered, failed, gone atomic.Int64
	var firstAt time.Duration
	var hwmOpen string
	var once sync.Once
	start := time.Now()
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			row := fmt.Sprintf(`{"instance_id":%q,"responses_create_params":{"input":[]},"_ng_task_index":%d,"_ng_rollout_index":%d}`,
				ids[i%len(ids)], i%len(ids), i/len(ids))
			req, _ := http.NewRequestWithContext(ctx, http.MethodPost, base+"/run", strings.NewReader(row))
			resp, err := client.Do(req)
			if err != nil {
				if ctx.Err() != nil {
					gone.Add(1)
				} else {
					failed.Add(1)
					t.Errorf("request %d: %v", i, err)
				}
				return
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			var r struct {
				Reward float64         `json:"reward"`
				Infra  json.RawMessage `json:"infra_error"`
			}
			if err := json.Unmarshal(body, &r); err != nil || resp.StatusCode != 200 || r.Infra != nil || r.Reward != 1 {
				failed.Add(1)
				t.Errorf("request %d: %d %.300s", i, resp.StatusCode, body)
				return
			}
			if answered.Add(1) == int64(finish) {
				once.Do(func() {
					firstAt = time.Since(start)
					hwmOpen = procStatus(t, p.cmd.Process.Pid, "VmHWM")
					cancel()
				})
			}
		})
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(30 * time.Minute):
		cancel()
		t.Fatalf("not done in 30 minutes: %d answered", answered.Load())
	}
	deadline := time.Now().Add(2 * time.Minute)
	for !strings.Contains(scrapeText(t, base), "swerve_rollouts_running 0") {
		if time.Now().After(deadline) {
			t.Fatal("rollouts still running 2 minutes after the clients left")
		}
		time.Sleep(100 * time.Millisecond)
	}
	metrics := scrapeText(t, base)
	hwm := procStatus(t, p.cmd.Process.Pid, "VmHWM")
	t.Logf("%d requests open; first %d answers in %s; %d answered, %d abandoned, %d failed; VmHWM %s (at %d answers: %s)",
		n, finish, firstAt.Round(time.Millisecond), answered.Load(), gone.Load(), failed.Load(), hwm, finish, hwmOpen)
	t.Logf("server counters:\n%s", grepLines(metrics, "swerve_rollouts_"))
	if failed.Load() != 0 {
		t.Errorf("%d requests failed", failed.Load())
	}
	if kb, _ := strconv.Atoi(strings.TrimSuffix(hwm, " kB")); kb == 0 || kb > 300<<10 {
		t.Errorf("peak RSS %s, want at most 300 MB", hwm)
	}
	noLocalBoxes(t, tmp, "after the clients left")
	p.cmd.Process.Signal(syscall.SIGTERM)
	if code := p.wait(t, time.Minute); code != 0 {
		t.Errorf("exit %d after SIGTERM", code)
	}
	noLocalBoxes(t, tmp, "after serve stopped")
}

// procStatus returns one field of /proc/<pid>/status ("62156 kB").
func procStatus(t *testing.T, pid int, field string) string {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for l := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, field+":"); ok {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

func grepLines(s, prefix string) string {
	var out []string
	for l := range strings.SplitSeq(s, "\n") {
		if strings.HasPrefix(l, prefix) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
