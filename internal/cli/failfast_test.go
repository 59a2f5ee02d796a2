package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/swerve-dev/swerve/internal/testutil"
)

// imageDataset is the sample tasks, each naming an image (a task the local
// backend must not take in the image's place).
func imageDataset(t *testing.T) string {
	t.Helper()
	data, err := os.ReadFile(tasksSampleDataset(t))
	if err != nil {
		t.Fatal(err)
	}
	var out []byte
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		var row map[string]any
		if err := json.Unmarshal([]byte(line), &row); err != nil {
			t.Fatal(err)
		}
		row["image"] = "swerve-test/never-pulled:1"
		delete(row, "source_dir")
		row["base_commit"] = "0123456789abcdef0123456789abcdef01234567"
		b, _ := json.Marshal(row)
		out = append(append(out, b...), '\n')
	}
	p := filepath.Join(t.TempDir(), "tasks.jsonl")
	if err := os.WriteFile(p, out, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// execBounded runs a command in process for at most 20 s (a serve that
// should have refused to start is stopped) and returns its stderr and
// error.
func execBounded(t *testing.T, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var stdout, stderr bytes.Buffer
	root := NewRoot(&stdout, &stderr)
	root.SetArgs(args)
	err := root.ExecuteContext(ctx)
	if ctx.Err() != nil {
		t.Errorf("%s ran until stopped", args[0])
	}
	return stderr.String(), err
}

// deadEngine points Docker's and Podman's address at a socket nothing
// listens on.
func deadEngine(t *testing.T) {
	sock := "unix://" + filepath.Join(t.TempDir(), "no-engine.sock")
	t.Setenv("DOCKER_HOST", sock)
	t.Setenv("CONTAINER_HOST", sock)
}

// TestEngineDownAuto: with --backend auto, tasks that name an image and
// no engine that answers, every command that picks a backend stops before
// any task with one line — the engine's error and the way out — instead
// of running the tasks on the host (where they fail one by one).
func TestEngineDownAuto(t *testing.T) {
	deadEngine(t)
	data := imageDataset(t)
	id := "sample__calc-1"
	dir := t.TempDir()
	preds := filepath.Join(dir, "preds.jsonl")
	os.WriteFile(preds, []byte(`{"instance_id": "`+id+`", "model_name_or_path": "m", "model_patch": ""}`+"\n"), 0o644)
	traj := filepath.Join(dir, "traj")
	tests := []struct {
		name string
		args []string
	}{
		{"run", []string{"run", "--dataset", data, "--llm_name", "oracle/gold", "--traj_dir", traj, "--exp_name", "e"}},
		{"run --run_golden", []string{"run", "--dataset", data, "--run_golden", "--traj_dir", traj, "--exp_name", "g"}},
		{"solve", []string{"solve", "--dataset", data, "--instance_id", id, "--llm_name", "oracle/gold", "--out", filepath.Join(dir, "solve")}},
		{"validate", []string{"validate", "--dataset", data}},
		{"grade --gold", []string{"grade", "--dataset", data, "--instance_id", id, "--gold"}},
		{"grade --predictions", []string{"grade", "--dataset", data, "--predictions", preds, "--run_id", "r", "--log_dir", filepath.Join(dir, "logs"), "--report_dir", dir}},
		{"exec", []string{"exec", "--dataset", data, "--instance_id", id, "--", "true"}},
		{"shell", []string{"shell", "--dataset", data, "--instance_id", id, "--", "true"}},
		{"serve", []string{"serve", "--dataset", data, "--llm_name", "oracle/gold", "--listen", "127.0.0.1:0"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			start := time.Now()
			stderr, err := execBounded(t, tt.args...)
			took := time.Since(start)
			if err == nil {
				t.Fatalf("%s succeeded with no engine; stderr:\n%s", tt.name, stderr)
			}
			if _, ok := err.(exitError); ok {
				t.Fatalf("%s: %v, want the engine's one-line error; stderr:\n%s", tt.name, err, stderr)
			}
			msg := err.Error()
			for _, want := range []string{"no container engine answers", "no-engine.sock", "--backend local"} {
				if !strings.Contains(msg, want) {
					t.Errorf("%s: error %q lacks %q", tt.name, msg, want)
				}
			}
			if strings.Contains(msg, "\n") {
				t.Errorf("%s: error is not one line: %q", tt.name, msg)
			}
			if strings.Contains(stderr, "source_dir") || strings.Contains(msg, "source_dir:") {
				t.Errorf("%s: fell back to the local backend: %q %q", tt.name, msg, stderr)
			}
			if took > 5*time.Second {
				t.Errorf("%s: the error took %s", tt.name, took)
			}
			t.Logf("%s: %s to %q", tt.name, took.Round(time.Millisecond), msg)
		})
	}
	// No task started: the run wrote no task record.
	if m, _ := filepath.Glob(filepath.Join(traj, "*", "result.json")); len(m) > 0 {
		t.Errorf("a task ran with no engine: %v", m)
	}
}

// modelServer answers GET /v1/models with a list holding served, and
// chat completions with chat (nil: 404).
func modelServer(t *testing.T, served string, chat http.HandlerFunc) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path == "/v1/models" && served == "401":
			w.WriteHeader(http.StatusUnauthorized)
			w.Write([]byte(`{"error":{"message":"Incorrect API key provided","type":"invalid_request_error","code":"invalid_api_key"}}`))
		case r.URL.Path == "/v1/models":
			w.Write([]byte(`{"object":"list","data":[{"id":"` + served + `","object":"model"}]}`))
		case r.URL.Path == "/v1/chat/completions" && chat != nil:
			chat(w, r)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/v1"
}

// TestModelEndpointChecked: run and solve ask the model's endpoint once
// before any task or box: nothing there, a refused key and a model the
// server does not serve are one line each, at once, and nothing starts.
func TestModelEndpointChecked(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	refused := "http://" + l.Addr().String() + "/v1"
	l.Close()
	data := tasksSampleDataset(t)
	id := "sample__calc-1"
	tests := []struct {
		name string
		base string
		want string
	}{
		{"unreachable", refused, "nothing answers at " + refused + ": connection refused"},
		{"unauthorised", modelServer(t, "401", nil), "refused the key (401 Unauthorized: Incorrect API key provided): check OPENAI_API_KEY"},
		{"unknown model", modelServer(t, "other-model", nil), `does not serve model "m" (it serves: other-model)`},
	}
	for _, tt := range tests {
		t.Setenv("LLM_BASE_URL", tt.base)
		t.Setenv("OPENAI_API_KEY", "sk-test")
		dir := t.TempDir()
		for _, args := range [][]string{
			{"run", "--dataset", data, "--backend", "local", "--llm_name", "hosted_vllm/m", "--traj_dir", filepath.Join(dir, "traj"), "--exp_name", "e"},
			{"solve", "--dataset", data, "--backend", "local", "--instance_id", id, "--llm_name", "hosted_vllm/m", "--out", filepath.Join(dir, "solve")},
			{"serve", "--dataset", data, "--backend", "local", "--llm_name", "hosted_vllm/m", "--listen", "127.0.0.1:0", "--results_dir", filepath.Join(dir, "results")},
		} {
			t.Run(tt.name+"/"+args[0], func(t *testing.T) {
				start := time.Now()
				stderr, err := execBounded(t, args...)
				took := time.Since(start)
				if err == nil {
					t.Fatalf("no error; stderr:\n%s", stderr)
				}
				if _, ok := err.(exitError); ok || !strings.Contains(err.Error(), tt.want) || strings.Contains(err.Error(), "\n") {
					t.Errorf("error %q; want one line with %q (stderr %q)", err, tt.want, stderr)
				}
				if took > 3*time.Second {
					t.Errorf("took %s", took)
				}
				if m, _ := filepath.Glob(filepath.Join(dir, "*", "*")); len(m) > 0 {
					t.Errorf("something started: %v", m)
				}
				t.Logf("%s to %q", took.Round(time.Millisecond), err)
			})
		}
	}
	// --skip_llm_check goes ahead (and meets the server's answer later).
	t.Setenv("LLM_BASE_URL", tests[2].base)
	_, _, err = execTasksCLI(t, "solve", "--dataset", data, "--backend", "local", "--instance_id", id, "--llm_name", "hosted_vllm/m", "--skip_llm_check", "--out", filepath.Join(t.TempDir(), "s"))
	if err != nil && strings.Contains(err.Error(), "does not serve") {
		t.Errorf("--skip_llm_check still checked: %v", err)
	}
}

// TestSolveLLMErrorExit: an episode that ends in llm_error exits 3, and
// every retry of the model's call is said on stderr as it happens.
func TestSolveLLMErrorExit(t *testing.T) {
	t.Setenv("SWERVE_SHIM_BINARY", testutil.SwerveBinary(t))
	var calls atomic.Int32
	base := modelServer(t, "m", func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1) == 1 {
			w.Header().Set("Retry-After", "0")
			w.WriteHeader(http.StatusServiceUnavailable)
			w.Write([]byte(`{"error":{"message":"overloaded"}}`))
			return
		}
		w.WriteHeader(http.StatusUnauthorized)
		w.Write([]byte(`{"error":{"message":"key revoked"}}`))
	})
	t.Setenv("LLM_BASE_URL", base)
	_, stderr, err := execTasksCLI(t, "solve", "--dataset", tasksSampleDataset(t), "--backend", "local", "--instance_id", "sample__calc-1",
		"--llm_name", "hosted_vllm/m", "--out", filepath.Join(t.TempDir(), "s"))
	if ee, ok := err.(exitError); !ok || ee.code != exitTaskErrors {
		t.Errorf("solve ending in llm_error: %v, want exit %d\n%s", err, exitTaskErrors, stderr)
	}
	for _, want := range []string{"swerve: model retry 2/7 in 0s: hosted_vllm: 503 Service Unavailable: overloaded", "swerve: the episode ended in llm_error"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
}

// TestRunStopsOnInfraRow: a model endpoint that goes away after the check
// (every call refused with 401) stops the run after
// --max_consecutive_infra_errors tasks, exit 1, saying how to resume; with
// 0 the run tries every task and exits 3. Retries are said as they happen.
func TestRunStopsOnInfraRow(t *testing.T) {
	t.Setenv("SWERVE_SHIM_BINARY", testutil.SwerveBinary(t))
	var calls atomic.Int32
	t.Setenv("LLM_BASE_URL", modelServer(t, "m", func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1) == 1 {
			w.Header().Set("Retry-After", "0")
			w.WriteHeader(http.StatusBadGateway)
			return
		}
		w.WriteHeader(http.StatusUnauthorized)
		w.Write([]byte(`{"error":{"message":"key revoked"}}`))
	}))
	data := tasksSampleDataset(t)
	for _, tc := range []struct {
		row      string
		code     int
		stderr   []string
		noStderr string
	}{
		{"2", 1, []string{"model retry 2/7 in 0s: hosted_vllm: 502 Bad Gateway", "swerve: stopped: 2 tasks in a row ended in a llm error", "swerve: to resume, rerun: "}, ""},
		{"0", exitTaskErrors, nil, "stopped"},
	} {
		t.Run(tc.row, func(t *testing.T) {
			_, stderr, err := execTasksCLI(t, "run", "--dataset", data, "--backend", "local", "--llm_name", "hosted_vllm/m", "--max_workers", "1",
				"--traj_dir", filepath.Join(t.TempDir(), "traj"), "--exp_name", "e", "--max_consecutive_infra_errors", tc.row)
			if ee, ok := err.(exitError); !ok || ee.code != tc.code {
				t.Errorf("run: %v, want exit %d\n%s", err, tc.code, stderr)
			}
			for _, want := range tc.stderr {
				if !strings.Contains(stderr, want) {
					t.Errorf("stderr lacks %q:\n%s", want, stderr)
				}
			}
			if tc.noStderr != "" && strings.Contains(stderr, tc.noStderr) {
				t.Errorf("stderr says %q:\n%s", tc.noStderr, stderr)
			}
		})
	}
}
