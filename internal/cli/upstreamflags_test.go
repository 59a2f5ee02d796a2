package cli

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/swerve-dev/swerve/internal/pyrand"
	"github.com/swerve-dev/swerve/internal/run"
	"github.com/swerve-dev/swerve/internal/task"
	"github.com/swerve-dev/swerve/internal/testutil"
)

// TestRunRefusesBeforeStarting: upstream flags swerve does not do, unknown
// backends and backends that cannot be used here are one line each before
// any task starts: --traj_dir is not even made.
func TestRunRefusesBeforeStarting(t *testing.T) {
	data := tasksSampleDataset(t)
	noKubeconfig := filepath.Join(t.TempDir(), "no-kubeconfig")
	t.Setenv("E2B_API_KEY", "")
	cfg := filepath.Join(t.TempDir(), "args.yaml")
	if err := os.WriteFile(cfg, []byte("k: 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	badTool := filepath.Join(t.TempDir(), "agent.yaml")
	if err := os.WriteFile(badTool, []byte("system_prompt: s\ninstance_prompt: i\ncommand_files: [tools/browser.py]\nllm_name: gpt-4o\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		args []string
		says string
	}{
		{[]string{"--num_restarts", "2"}, "--num_restarts 2: upstream splits --max_steps over restarts of the agent in one box; swerve does not: use --max_iterations 2"},
		{[]string{"--num_restarts", "0"}, "--num_restarts 0:"},
		{[]string{"--use_existing", "False"}, "--use_existing False: swerve always resumes"},
		{[]string{"--root_mode", "False"}, "--root_mode False: upstream then expects its tools preinstalled at /opt/tools"},
		{[]string{"--max_iterations", "0"}, "--max_iterations 0: want 1 or more"},
		{[]string{"--max_iterations", "2", "--run_golden"}, "--run_golden runs no episode to repeat"},
		// Upstream's names are the real backends', whose probes see the
		// flags.
		{[]string{"--backend", "kubernetes", "--k8s_kubeconfig", noKubeconfig}, "--backend kubernetes: not available here: k8s: no cluster configured"},
		{[]string{"--backend", "singularity", "--apptainer_binary", "/nonexistent/apptainer"}, "--backend singularity: not available here: --apptainer_binary /nonexistent/apptainer: no such program"},
		{[]string{"--backend", "e2b"}, "--backend e2b: not available here: E2B_API_KEY is not set"},
		{[]string{"--backend", "lokal"}, "--backend lokal: unknown backend (available: auto, apptainer (singularity), docker, e2b, k8s (kubernetes), local"},
		{[]string{"--args_path", cfg}, `unknown field "k"`},
		{[]string{"--args_path", badTool, "--scaffold", "r2egym"}, `command file "browser": scaffold r2egym has no tool of that name (it has file_editor, execute_bash, search, finish)`},
		{[]string{"--use_existing", "maybe"}, "want True or False"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			traj := filepath.Join(t.TempDir(), "out")
			args := append([]string{"run", "--dataset", data, "--llm_name", "oracle/gold", "--traj_dir", traj, "--exp_name", "e"}, tt.args...)
			_, _, err := execTasksCLI(t, args...)
			if err == nil || !strings.Contains(err.Error(), tt.says) || strings.Contains(err.Error(), "\n") {
				t.Fatalf("err %v; want one line saying %q", err, tt.says)
			}
			if _, err := os.Stat(traj); !os.IsNotExist(err) {
				t.Errorf("--traj_dir was made (%v): a task may have started", err)
			}
		})
	}
}

// TestBackendCheckedByEveryCommand: every command with --backend takes
// upstream's default kubernetes as the k8s backend, with the cluster its
// --k8s_kubeconfig names, and fails at once when there is none.
func TestBackendCheckedByEveryCommand(t *testing.T) {
	data := tasksSampleDataset(t)
	noKubeconfig := filepath.Join(t.TempDir(), "no-kubeconfig")
	id := "sample__calc-1"
	preds := filepath.Join(t.TempDir(), "preds.json")
	os.WriteFile(preds, []byte(`{"sample__calc-1":{"instance_id":"sample__calc-1","model_name_or_path":"m","model_patch":"x"}}`), 0o644)
	for _, args := range [][]string{
		{"solve", "--dataset", data, "--instance_id", id, "--llm_name", "oracle/gold"},
		{"shell", "--dataset", data, "--instance_id", id},
		{"exec", "--dataset", data, "--instance_id", id, "--backend", "kubernetes", "--", "true"},
		{"grade", "--dataset", data, "--instance_id", id, "--gold"},
		{"grade", "--dataset", data, "--predictions", preds, "--run_id", "r", "--report_dir", t.TempDir()},
		{"validate", "--dataset", data},
		{"run", "--dataset", data, "--llm_name", "oracle/gold", "--traj_dir", t.TempDir()},
	} {
		t.Run(args[0], func(t *testing.T) {
			// The sample tasks have no image; a pod needs one. Flags go
			// before exec's "--".
			flags := []string{"--k8s_kubeconfig", noKubeconfig, "--image", "swerve.test/none:1"}
			if !slices.Contains(args, "kubernetes") {
				flags = append(flags, "--backend", "kubernetes")
			}
			at := len(args)
			if i := slices.Index(args, "--"); i >= 0 {
				at = i
			}
			args = slices.Concat(args[:at:at], flags, args[at:])
			_, stderr, err := execTasksCLI(t, args...)
			if err == nil {
				t.Fatalf("%s: no error", args[0])
			}
			// A command that reports per task says it on stderr.
			said := err.Error()
			if ee, ok := err.(exitError); ok {
				said = strings.TrimSpace(stderr) + " " + ee.Error()
			}
			if !strings.Contains(said, "k8s: no cluster configured") || !strings.Contains(said, noKubeconfig) {
				t.Fatalf("%s: err %v (stderr %q); want a line saying the kubeconfig given holds no cluster", args[0], err, stderr)
			}
		})
	}
}

// TestRunUpstreamAliases: upstream's names set the same settings as
// swerve's.
func TestRunUpstreamAliases(t *testing.T) {
	tests := []struct {
		args        []string
		flag, value string
	}{
		{[]string{"--max_tokens", "1234"}, "max_token_limit", "1234"},
		{[]string{"--max_token_limit", "99"}, "max_tokens", "99"},
		{[]string{"--max_reward_calc_time", "77"}, "eval_timeout", "1m17s"},
		{[]string{"--eval_timeout", "20"}, "max_reward_calc_time", "20s"},
	}
	for _, tt := range tests {
		cmd := newRunCmd()
		if err := cmd.ParseFlags(tt.args); err != nil {
			t.Fatal(err)
		}
		if got := cmd.Flags().Lookup(tt.flag).Value.String(); got != tt.value {
			t.Errorf("%v: --%s = %s, want %s", tt.args, tt.flag, got, tt.value)
		}
	}
}

// TestConfig: --config reads the runner's argument names from YAML or
// JSON; flags on the command line win.
func TestConfig(t *testing.T) {
	dir := t.TempDir()
	for name, body := range map[string]string{
		"args.yaml": "k: 7\nmax_tokens: 4096\nuse_fn_calling: false\nmax_workers: null\nexp_name: from_file\n",
		"args.json": `{"k": 7, "max_tokens": 4096, "use_fn_calling": false, "max_workers": null, "exp_name": "from_file"}`,
	} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(dir, name)
			os.WriteFile(path, []byte(body), 0o644)
			cmd := newRunCmd()
			if err := cmd.ParseFlags([]string{"--exp_name", "from_flag"}); err != nil {
				t.Fatal(err)
			}
			if err := applyConfig(cmd.Flags(), path); err != nil {
				t.Fatal(err)
			}
			want := map[string]string{"k": "7", "max_token_limit": "4096", "use_fn_calling": "false", "max_workers": "1", "exp_name": "from_flag"}
			for f, v := range want {
				if got := cmd.Flags().Lookup(f).Value.String(); got != v {
					t.Errorf("--%s = %s, want %s", f, got, v)
				}
			}
		})
	}
	bad := filepath.Join(dir, "bad.yaml")
	os.WriteFile(bad, []byte("no_such_arg: 1\n"), 0o644)
	if err := applyConfig(newRunCmd().Flags(), bad); err == nil || !strings.Contains(err.Error(), `unknown key "no_such_arg"`) {
		t.Errorf("unknown key: %v", err)
	}
}

// TestArgsPath: --args_path is R2E-Gym's AgentArgs file. Its prompts
// replace the scaffold's (the instance prompt in str.format syntax), its
// command files pick the tools offered, and a run records them: the
// trajectory starts with exactly the file's prompts.
func TestArgsPath(t *testing.T) {
	testutil.HostPytest(t)
	t.Setenv("SWERVE_SHIM_BINARY", testutil.SwerveBinary(t))
	dir := t.TempDir()
	args := filepath.Join(dir, "agent.yaml")
	body := `system_prompt: |-
  You fix bugs. Use the tools.
instance_prompt: |-
  Issue:
  {problem_statement}
  Hint: {test_patch_hint}; braces {{kept}}.
command_files:
  - "./src/r2egym/agenthub/tools/file_editor.py"
  - "./src/r2egym/agenthub/tools/execute_bash.py"
  - "./src/r2egym/agenthub/tools/finish.py"
llm_name: "gpt-4o"
llm_base_url: null
demo_file: "./r2egym/agenthub/config/localizer-demo"
other_args:
  max_retries: 2
  timeout: 30
`
	if err := os.WriteFile(args, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	data := tasksSampleDataset(t)
	traj := filepath.Join(dir, "out")
	if _, _, err := execTasksCLI(t, "run", "--dataset", data, "--instance_ids", "sample__calc-1", "--llm_name", "oracle/gold",
		"--scaffold", "r2egym", "--use_fn_calling", "True", "--args_path", args, "--backend", "local", "--traj_dir", traj, "--exp_name", "e"); err != nil {
		res, _ := os.ReadFile(filepath.Join(traj, "sample__calc-1", "result.json"))
		t.Fatalf("%v\n%.2000s", err, res)
	}
	recs, err := run.LoadRecords(traj)
	if err != nil {
		t.Fatal(err)
	}
	rec := recs["sample__calc-1"]
	if rec == nil || rec.Trajectory == nil || len(rec.Trajectory.Messages) < 2 {
		t.Fatalf("no trajectory recorded: %+v", rec)
	}
	msgs := rec.Trajectory.Messages
	if msgs[0].Content != "You fix bugs. Use the tools." {
		t.Errorf("system message %q, want the file's system_prompt", msgs[0].Content)
	}
	if want := "Issue:\n" + rec.ProblemStatement + "\nHint: ; braces {kept}."; msgs[1].Content != want {
		t.Errorf("instance message\n%q\nwant\n%q", msgs[1].Content, want)
	}
	var tools []string
	for _, tool := range rec.Trajectory.Tools {
		tools = append(tools, tool.Function.Name)
	}
	if !slices.Equal(tools, []string{"file_editor", "execute_bash", "finish"}) {
		t.Errorf("tools offered %v, want the command files' file_editor, execute_bash, finish", tools)
	}
	if rec.Settings["args_path"] == "" {
		t.Errorf("settings %v lack the args_path file's hash: a rerun with another file would mix results", rec.Settings)
	}
	if rec.Reward != 1 {
		t.Errorf("reward %g (%s), want 1: the oracle's gold patch with the chosen tools", rec.Reward, rec.RewardReason)
	}

	for _, tt := range []struct{ body, says string }{
		{"instance_prompt: i\ncommand_files: []\nllm_name: m\n", "system_prompt is missing"},
		{"system_prompt: s\ninstance_prompt: '{repo}'\ncommand_files: [finish.py]\nllm_name: m\n", "instance_prompt: {repo}: upstream's runner fills only"},
		{"system_prompt: s\ninstance_prompt: i\ncommand_files: []\nllm_name: m\n", "command_files is empty"},
		{"system_prompt: s\ninstance_prompt: i\ncommand_files: [finish.py]\nllm_name: m\nother_args: {max_retries: 1.5}\n", "other_args.max_retries: want a whole number"},
	} {
		path := filepath.Join(dir, "bad.yaml")
		os.WriteFile(path, []byte(tt.body), 0o644)
		af := agentFlags{Scaffold: "r2egym", LLMName: "oracle/gold", ArgsPath: path}
		if _, _, err := af.setup(); err == nil || !strings.Contains(err.Error(), tt.says) {
			t.Errorf("%q: err %v, want it to say %q", tt.body, err, tt.says)
		}
	}
}

// TestSkipExisting reads rows the way upstream's --skip_existing does: the
// reward-1 rows' ds.docker_image in <traj_dir>/<exp_name minus one>*.jsonl.
func TestSkipExisting(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{
		"exp1.jsonl":  `{"reward": 1, "ds": {"docker_image": "img/a"}}` + "\n" + `{"reward": 0, "ds": {"docker_image": "img/b"}}` + "\n",
		"exp2.jsonl":  `{"reward": 1.0, "docker_image": "img/c", "ds": {}}` + "\n" + "not json\n",
		"other.jsonl": `{"reward": 1, "ds": {"docker_image": "img/d"}}` + "\n",
		"exp3.json":   `{"reward": 1, "ds": {"docker_image": "img/e"}}`,
		"expX.jsonl":  `[{"role": "user", "content": "hi"}]` + "\n",
	}
	for name, body := range files {
		os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644)
	}
	solved, err := solvedImages(dir, "exp9")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for img := range solved {
		got = append(got, img)
	}
	slices.Sort(got)
	if !slices.Equal(got, []string{"img/a", "img/c"}) {
		t.Errorf("solved %v, want img/a img/c", got)
	}
	tasks := []task.Task{{InstanceID: "1", Image: "img/a"}, {InstanceID: "2", Image: "img/b"}, {InstanceID: "3"}, {InstanceID: "4", Image: "img/c"}}
	kept, n := dropSolved(tasks, solved)
	if n != 2 || len(kept) != 2 || kept[0].InstanceID != "2" || kept[1].InstanceID != "3" {
		t.Errorf("kept %v, dropped %d", kept, n)
	}
	if s, err := solvedImages(filepath.Join(dir, "none"), "e"); err != nil || len(s) != 0 {
		t.Errorf("missing dir: %v %v", s, err)
	}
}

// TestShuffle: R2E-Gym datasets are put in datasets' shuffle(seed=42)
// order before --start_idx and --k; others keep theirs unless asked.
func TestShuffle(t *testing.T) {
	// Seven rows of a SWE-bench-style file.
	var rows []byte
	for i := range 7 {
		rows = fmt.Appendf(rows, `{"instance_id":"o__r-%d","repo":"o/r","base_commit":"abc","problem_statement":"p","patch":"x","test_patch":"y","FAIL_TO_PASS":["t"],"PASS_TO_PASS":[],"version":"1.0","image":"img:%d"}`+"\n", i, i)
	}
	data := filepath.Join(t.TempDir(), "tasks.jsonl")
	os.WriteFile(data, rows, 0o644)
	load := func(df *datasetFlags) []string {
		t.Helper()
		cmd := &cobra.Command{}
		cmd.SetContext(context.Background())
		cmd.SetErr(&bytes.Buffer{})
		tasks, err := df.load(cmd)
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, tk := range tasks {
			ids = append(ids, tk.InstanceID)
		}
		return ids
	}
	plain := load(&datasetFlags{Dataset: data})
	if len(plain) != 7 || plain[0] != "o__r-0" || plain[6] != "o__r-6" {
		t.Fatalf("without --shuffle: %v, want the file's order", plain)
	}
	var want []string
	for _, j := range pyrand.Permutation(42, len(plain)) {
		want = append(want, plain[j])
	}
	on := &datasetFlags{Dataset: data, StartIdx: 1, K: 2}
	on.Shuffle.Set("True")
	if got := load(on); !slices.Equal(got, want[1:3]) {
		t.Errorf("--shuffle True --start_idx 1 --k 2: %v, want %v", got, want[1:3])
	}
	for _, tt := range []struct {
		dataset, flag string
		want          bool
	}{
		{"R2E-Gym/R2E-Gym-Lite", "", true},
		{"r2e-gym/SWE-Bench-Verified", "", true},
		{"R2E-Gym/R2E-Gym-Lite", "False", false},
		{"princeton-nlp/SWE-bench_Verified", "", false},
		{"tasks.jsonl", "True", true},
	} {
		df := &datasetFlags{Dataset: tt.dataset}
		if tt.flag != "" {
			df.Shuffle.Set(tt.flag)
		}
		if got := df.shuffles(); got != tt.want {
			t.Errorf("%s --shuffle %q: %v, want %v", tt.dataset, tt.flag, got, tt.want)
		}
	}
}

// TestPrepull pulls through Docker: present images pass, missing ones are
// listed, and the run goes on.
func TestPrepull(t *testing.T) {
	if !testutil.DockerRequired() {
		t.Skip("needs Docker (SWERVE_DOCKER_TESTS=1)")
	}
	var stderr bytes.Buffer
	bf := &boxFlags{Backend: "docker", Pull: "never"}
	tasks := []task.Task{{InstanceID: "a", Image: testutil.TestImage()}, {InstanceID: "b", Image: "swerve-no-such-image:never"}, {InstanceID: "c", Image: testutil.TestImage()}}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := prepull(ctx, bf, tasks, 2, &stderr); err != nil {
		t.Fatal(err)
	}
	out := stderr.String()
	if !strings.Contains(out, "prepulling 2 images") || !strings.Contains(out, "prepull failed: swerve-no-such-image:never") || strings.Contains(out, "failed: "+testutil.TestImage()) {
		t.Errorf("stderr:\n%s", out)
	}
}
