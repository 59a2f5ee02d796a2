package cli

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/cookiejar"
	"path/filepath"
	"strings"
	"testing"

	"github.com/swerve-dev/swerve/internal/testutil"
)

// TestServeSessions drives the trainer-side surfaces of a real swerve serve
// (local backend): a NeMo Gym session (seed, bash, verify, with the cookie
// on every answer) and a verl sandbox (create, execute, submit_solution,
// release), each applying the task's gold patch through bash and getting
// reward 1 from a fresh grading box; an untouched sandbox gets 0.
func TestServeSessions(t *testing.T) {
	testutil.NeedPytest(t)
	work := t.TempDir()
	env := e2eEnv(t, t.TempDir())
	data := filepath.Join(testutil.RepoRoot(t), "examples", "sample", "tasks.jsonl")
	var row map[string]any
	for _, r := range readRows(t, data) {
		if r["instance_id"] == "sample__calc-1" {
			row = r
		}
	}
	if row == nil {
		t.Fatal("sample__calc-1 not in the sample dataset")
	}
	patch, _ := row["patch"].(string)
	apply := map[string]any{"command": "git apply <<'SWERVE_EOF'\n" + patch + "SWERVE_EOF"}
	p := startSwerve(t, env, work, nil, "serve", "--listen", "127.0.0.1:0", "--dataset", data, "--llm_name", "oracle/gold",
		"--backend", "local", "--results_dir", "", "--token", "s3cret")
	base := waitListening(t, p)

	jar, _ := cookiejar.New(nil)
	client := &http.Client{Jar: jar}
	post := func(method, path string, body any) (int, string, http.Header) {
		t.Helper()
		b, _ := json.Marshal(body)
		req, _ := http.NewRequest(method, base+path, strings.NewReader(string(b)))
		req.Header.Set("Authorization", "Bearer s3cret")
		req.Header.Set("Content-Type", "application/json")
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v\nstderr:\n%s", method, path, err, p.stderr.String())
		}
		defer resp.Body.Close()
		out, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(out), resp.Header
	}

	// The token guards these routes too.
	if resp, err := http.Post(base+"/seed_session", "application/json", strings.NewReader(`{}`)); err != nil || resp.StatusCode != 401 {
		t.Errorf("seed_session without the token: %v %v, want 401", resp.StatusCode, err)
	}

	// NeMo Gym resources surface.
	seed := map[string]any{"instance_id": "sample__calc-1", "responses_create_params": map[string]any{"input": []any{}}}
	for _, step := range []struct {
		path string
		body any
	}{{"/seed_session", seed}, {"/bash", apply}} {
		code, out, hdr := post("POST", step.path, step.body)
		if code != 200 || !strings.Contains(hdr.Get("Set-Cookie"), "___") {
			t.Fatalf("%s: %d %s (Set-Cookie %q)", step.path, code, out, hdr.Get("Set-Cookie"))
		}
	}
	code, out, hdr := post("POST", "/verify", map[string]any{"instance_id": "sample__calc-1", "responses_create_params": map[string]any{"input": []any{}}, "response": map[string]any{}})
	var v struct {
		Reward   float64 `json:"reward"`
		Resolved bool    `json:"resolved"`
		Patch    string  `json:"model_patch"`
	}
	json.Unmarshal([]byte(out), &v)
	if code != 200 || v.Reward != 1 || !v.Resolved || !strings.Contains(v.Patch, "diff --git") || hdr.Get("Set-Cookie") == "" {
		t.Errorf("/verify: %d reward %g resolved %v patch %.60q\n%.500s", code, v.Reward, v.Resolved, v.Patch, out)
	}

	// verl's sandbox tools: one box per trajectory.
	for _, tt := range []struct {
		traj string
		fix  bool
		want float64
	}{{"traj-fixed", true, 1}, {"traj-untouched", false, 0}} {
		code, out, _ := post("POST", "/sandboxes", map[string]any{"request_id": tt.traj, "instance_id": "sample__calc-1"})
		var sb struct {
			ID string `json:"id"`
		}
		json.Unmarshal([]byte(out), &sb)
		if code/100 != 2 || sb.ID == "" {
			t.Fatalf("create %s: %d %s", tt.traj, code, out)
		}
		if tt.fix {
			if code, out, _ := post("POST", "/sandboxes/"+sb.ID+"/execute", map[string]any{"tool": "bash", "arguments": apply}); code != 200 {
				t.Fatalf("execute bash: %d %s", code, out)
			}
		}
		code, out, _ = post("POST", "/sandboxes/"+sb.ID+"/execute", map[string]any{"tool": "submit_solution", "arguments": map[string]any{}})
		var res struct {
			Reward float64 `json:"reward"`
		}
		json.Unmarshal([]byte(out), &res)
		if code != 200 || res.Reward != tt.want {
			t.Errorf("%s: submit_solution %d reward %g, want %g\n%.500s", tt.traj, code, res.Reward, tt.want, out)
		}
		for range 2 { // release is idempotent
			if code, out, _ := post("DELETE", "/sandboxes/"+sb.ID, nil); code/100 != 2 {
				t.Errorf("release %s: %d %s", tt.traj, code, out)
			}
		}
	}
}
