package cli

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// swerve collect end to end against a fake /run server: flags in both
// spellings, the profile on stdout, the files beside --output.
func TestCollectCommand(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/run" {
			http.NotFound(w, r)
			return
		}
		if r.Header.Get("Authorization") != "Bearer tok" {
			http.Error(w, "no token", http.StatusUnauthorized)
			return
		}
		var row map[string]any
		_ = json.NewDecoder(r.Body).Decode(&row)
		row["reward"] = 1.0
		row["metadata"] = map[string]any{"exit_reason": "submitted"}
		_ = json.NewEncoder(w).Encode(row)
	}))
	defer srv.Close()
	dir := t.TempDir()
	in := filepath.Join(dir, "in.jsonl")
	os.WriteFile(in, []byte(`{"instance_id":"a","responses_create_params":{"input":[]}}`+"\n"+`{"instance_id":"b","responses_create_params":{"input":[]}}`+"\n"), 0o644)
	out := filepath.Join(dir, "rollouts.jsonl")
	stdout, stderr, err := execTasksCLI(t, "collect", "--server", srv.URL, "--token", "tok", "-i", in, "-o", out, "--num-repeats", "3", "--concurrency", "2")
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	for _, s := range []string{"6 rollouts: 6 finished now", "Accuracy: 1.00", "Resolved: 6", "Total Instances: 6", "Average Turns: 0.0", "Exit reasons: submitted 6", "computed here", "rollouts_aggregate_metrics.json"} {
		if !strings.Contains(stdout, s) {
			t.Errorf("stdout lacks %q:\n%s", s, stdout)
		}
	}
	if n := strings.Count(stderr, "reward 1"); n != 6 {
		t.Errorf("%d progress lines:\n%s", n, stderr)
	}
	for _, f := range []string{"rollouts_materialized_inputs.jsonl", "rollouts_aggregate_metrics.json", "rollouts_failures.jsonl"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Error(err)
		}
	}
	// A rerun skips everything.
	stdout, _, err = execTasksCLI(t, "collect", "--server", srv.URL, "--token", "tok", "--input", in, "--output", out, "--num_repeats", "3", "-q")
	if err != nil || !strings.Contains(stdout, "6 rollouts: 0 finished now, 0 failed now, 6 done before") {
		t.Errorf("rerun: %v\n%s", err, stdout)
	}
	// --resume=false starts over.
	stdout, _, err = execTasksCLI(t, "collect", "--server", srv.URL, "--token", "tok", "--input", in, "--output", out, "--num_repeats", "3", "-q", "--resume=false")
	if err != nil || !strings.Contains(stdout, "6 rollouts: 6 finished now, 0 failed now, 0 done before") {
		t.Errorf("fresh rerun: %v\n%s", err, stdout)
	}
	if b, _ := os.ReadFile(out); strings.Count(string(b), "\n") != 6 {
		t.Errorf("fresh rerun left %d rows", strings.Count(string(b), "\n"))
	}
	// A wrong token stops the run with the server's answer.
	os.Remove(out)
	_, _, err = execTasksCLI(t, "collect", "--server", srv.URL, "--token", "bad", "-i", in, "-o", out)
	if err == nil || !strings.Contains(err.Error(), "status 401") {
		t.Errorf("bad token: %v", err)
	}
	// Help has an example.
	root := NewRoot(&strings.Builder{}, &strings.Builder{})
	c, _, err := root.Find([]string{"collect"})
	if err != nil || c.Example == "" || c.Long == "" {
		t.Errorf("collect help: %v", err)
	}
}
