package cli

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/parquet-go/parquet-go"

	"github.com/swerve-dev/swerve/internal/hub/hubtest"
	"github.com/swerve-dev/swerve/internal/testutil"
)

// r2eRow has R2E-Gym-Lite's columns (modified_entity_summaries left out).
type r2eRow struct {
	RepoName               string   `json:"repo_name" parquet:"repo_name"`
	DockerImage            string   `json:"docker_image" parquet:"docker_image"`
	CommitHash             string   `json:"commit_hash" parquet:"commit_hash"`
	ParsedCommitContent    string   `json:"parsed_commit_content" parquet:"parsed_commit_content"`
	ExecutionResultContent string   `json:"execution_result_content" parquet:"execution_result_content"`
	ModifiedFiles          []string `json:"modified_files" parquet:"modified_files,list"`
	RelevantFiles          []string `json:"relevant_files" parquet:"relevant_files,list"`
	NumNonTestFiles        int64    `json:"num_non_test_files" parquet:"num_non_test_files"`
	NumNonTestFuncMethods  int64    `json:"num_non_test_func_methods" parquet:"num_non_test_func_methods"`
	NumNonTestLines        int64    `json:"num_non_test_lines" parquet:"num_non_test_lines"`
	Prompt                 string   `json:"prompt" parquet:"prompt"`
	ProblemStatement       string   `json:"problem_statement" parquet:"problem_statement"`
	ExpectedOutputJSON     string   `json:"expected_output_json" parquet:"expected_output_json"`
}

// r2eParquet writes the R2E-Gym rows of the task package's r2e.jsonl as
// parquet, with the JSONL file for comparison.
func r2eParquet(t *testing.T) (data []byte, jsonl string) {
	t.Helper()
	src := filepath.Join(testutil.RepoRoot(t), "internal", "task", "testdata", "r2e.jsonl")
	f, err := os.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var rows []r2eRow
	var kept bytes.Buffer
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		if !bytes.Contains(sc.Bytes(), []byte(`"expected_output_json"`)) {
			continue // the SWE-bench-shaped row
		}
		var r r2eRow
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatal(err)
		}
		rows = append(rows, r)
		kept.Write(sc.Bytes())
		kept.WriteByte('\n')
	}
	if len(rows) != 2 {
		t.Fatalf("%d R2E-Gym rows in %s, want 2", len(rows), src)
	}
	var buf bytes.Buffer
	if err := parquet.Write(&buf, rows); err != nil {
		t.Fatal(err)
	}
	jsonl = filepath.Join(t.TempDir(), "r2e.jsonl")
	if err := os.WriteFile(jsonl, kept.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes(), jsonl
}

// fakeHubEnv points the Hub variables at s and a fresh HF_HOME.
func fakeHubEnv(t *testing.T, s *hubtest.Server) string {
	home := t.TempDir()
	t.Setenv("HF_ENDPOINT", s.Hub.URL)
	t.Setenv("HF_HOME", home)
	for _, k := range []string{"HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE", "HF_TOKEN", "HUGGING_FACE_HUB_TOKEN", "HF_TOKEN_PATH", "HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE", "TRANSFORMERS_OFFLINE"} {
		t.Setenv(k, "")
	}
	return home
}

func TestHubDatasetR2EGym(t *testing.T) {
	data, jsonl := r2eParquet(t)
	s := hubtest.New(map[string]*hubtest.Repo{"R2E-Gym/R2E-Gym-Lite": {Revisions: map[string]map[string][]byte{"main": {
		"README.md":                         []byte("---\nlicense: mit\n---\n"),
		"data/train-00000-of-00001.parquet": data,
		"data/test-00000-of-00001.parquet":  data,
	}}}})
	defer s.Close()
	home := fakeHubEnv(t, s)

	want, _, err := execTasksCLI(t, "tasks", "ls", "--dataset", jsonl, "--split", "test", "--json", "--raw=false")
	if err != nil {
		t.Fatal(err)
	}
	// R2E-Gym's own datasets come in its runner's seed-42 order unless
	// --shuffle False; with two rows that order swaps them.
	shuffled, _, err := execTasksCLI(t, "tasks", "ls", "--dataset", "R2E-Gym/R2E-Gym-Lite", "--split", "test", "--json", "--raw=false")
	if err != nil {
		t.Fatal(err)
	}
	if lines := strings.Split(strings.TrimSpace(want), "\n"); len(lines) != 2 || shuffled != lines[1]+"\n"+lines[0]+"\n" {
		t.Errorf("R2E-Gym Hub dataset not in the seed-42 order:\n got %s\nwant the rows of %s swapped", shuffled, want)
	}
	got, stderr, err := execTasksCLI(t, "tasks", "ls", "--dataset", "R2E-Gym/R2E-Gym-Lite", "--split", "test", "--json", "--raw=false", "--shuffle", "False")
	if err != nil {
		t.Fatal(err)
	}
	if got != want {
		t.Errorf("the Hub's parquet loads differently from the same rows as JSONL:\n got %s\nwant %s", got, want)
	}
	if stderr != "" {
		t.Errorf("stderr not empty when not a terminal: %q", stderr)
	}
	if !strings.Contains(got, `"dialect":"r2e"`) {
		t.Errorf("rows not read as R2E-Gym: %s", got)
	}
	if _, err := os.Stat(filepath.Join(home, "hub", "datasets--R2E-Gym--R2E-Gym-Lite", "refs", "main")); err != nil {
		t.Errorf("not cached under HF_HOME/hub: %v", err)
	}

	// A split that does not exist names the ones that do.
	_, _, err = execTasksCLI(t, "tasks", "ls", "--dataset", "R2E-Gym/R2E-Gym-Lite", "--split", "dev")
	if err == nil || !strings.Contains(err.Error(), `no split "dev"; it has: train, test`) {
		t.Errorf("--split dev: %v", err)
	}
}

func TestHubDatasetVerifiedOffline(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(testutil.SharedDir(t), "data", "swebench", "verified-test.parquet"))
	if err != nil {
		t.Fatal(err)
	}
	s := hubtest.New(map[string]*hubtest.Repo{"princeton-nlp/SWE-bench_Verified": {Revisions: map[string]map[string][]byte{"main": {
		"data/test-00000-of-00001.parquet": data,
	}}}})
	defer s.Close()
	fakeHubEnv(t, s)
	args := []string{"tasks", "ls", "--dataset", "princeton-nlp/SWE-bench_Verified", "--json", "--raw=false", "--k", "2"}
	online, _, err := execTasksCLI(t, args...)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(online, `{"instance_id":"astropy__astropy-12907"`) || strings.Count(online, "\n") != 2 || !strings.Contains(online, `"split":"test"`) {
		t.Errorf("online load = %.300s", online)
	}
	s.Requests()
	t.Setenv("HF_HUB_OFFLINE", "1")
	offline, _, err := execTasksCLI(t, args...)
	if err != nil {
		t.Fatal(err)
	}
	if offline != online {
		t.Error("offline load differs from the online one")
	}
	if r := s.Requests(); len(r) != 0 {
		t.Errorf("offline load made %d requests", len(r))
	}
	_, _, err = execTasksCLI(t, "tasks", "ls", "--dataset", "SWE-bench/SWE-bench_Lite")
	if err == nil || !strings.Contains(err.Error(), "HF_HUB_OFFLINE") || !strings.Contains(err.Error(), "load it once online") {
		t.Errorf("offline, not cached: %v", err)
	}
}

func TestHubDatasetErrors(t *testing.T) {
	s := hubtest.New(map[string]*hubtest.Repo{
		"acme/gated": {Gated: true, Revisions: map[string]map[string][]byte{"main": {"test.parquet": []byte("PAR1")}}},
		"acme/bad":   {Revisions: map[string]map[string][]byte{"main": {"test.parquet": []byte("PAR1 not really parquet PAR1")}}},
	})
	defer s.Close()
	fakeHubEnv(t, s)
	cases := []struct {
		args []string
		want []string
	}{
		{[]string{"--dataset", "acme/nope"}, []string{"dataset acme/nope: not found", "HF_TOKEN", "no local file or directory acme/nope"}},
		{[]string{"--dataset", "acme/gated"}, []string{"dataset acme/gated: gated", "set HF_TOKEN"}},
		{[]string{"--dataset", "acme/bad"}, []string{"dataset acme/bad split test: cannot read test.parquet", "delete it and load again"}},
		{[]string{"--dataset", "acme/bad", "--revision", "v2"}, []string{"revision v2 not found"}},
		{[]string{"--dataset", "acme/bad@v1", "--revision", "v2"}, []string{"already names revision v1"}},
		{[]string{"--dataset", filepath.Join(t.TempDir(), "x.jsonl"), "--revision", "v2"}, []string{"only Hub datasets"}},
		{[]string{"--dataset", "missing/file.jsonl"}, []string{"file.jsonl"}},
	}
	for _, tc := range cases {
		_, _, err := execTasksCLI(t, append([]string{"tasks", "ls"}, tc.args...)...)
		if err == nil {
			t.Errorf("%q: no error", tc.args)
			continue
		}
		if strings.Contains(err.Error(), "\n") {
			t.Errorf("%q: error is not one line: %q", tc.args, err)
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%q: error %q lacks %q", tc.args, err, w)
			}
		}
	}
	for _, r := range s.Requests() {
		if strings.Contains(r.Path, "missing") {
			t.Errorf("a path ending in .jsonl was asked of the Hub: %s", r.Path)
		}
	}
}

func TestHubDatasetTokenFile(t *testing.T) {
	data, _ := r2eParquet(t)
	s := hubtest.New(map[string]*hubtest.Repo{"acme/gated": {Gated: true, Revisions: map[string]map[string][]byte{"main": {
		"data/test-00000-of-00001.parquet": data,
	}}}})
	s.Token = "hf_from_file"
	defer s.Close()
	home := fakeHubEnv(t, s)
	if err := os.WriteFile(filepath.Join(home, "token"), []byte("hf_from_file\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	out, _, err := execTasksCLI(t, "tasks", "ls", "--dataset", "acme/gated", "--json", "--raw=false")
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(out, "\n"); n != 2 {
		t.Errorf("%d tasks, want 2", n)
	}
	for _, r := range s.Requests() {
		if want := map[bool]string{true: "", false: "Bearer hf_from_file"}[r.CDN]; r.Auth != want {
			t.Errorf("%s %s (cdn %v): Authorization %q, want %q", r.Method, r.Path, r.CDN, r.Auth, want)
		}
	}
}
