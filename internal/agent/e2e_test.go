package agent_test

// End-to-end episodes: every scaffold in every mode it supports, driven by
// the real HTTP clients (llm.New) against fake OpenAI and Anthropic servers
// (internal/llm/llmtest), in a local box and, when an engine answers, in a
// Docker box. Each scenario is a file in testdata/e2e: the model's script
// for each scaffold and mode, the limits, and what must come of it; the
// checks that hold for every episode (what the model was sent, tool call
// ids answered, tools offered) are here.

import (
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/swerve-dev/swerve/internal/agent"
	"github.com/swerve-dev/swerve/internal/llm"
	"github.com/swerve-dev/swerve/internal/llm/llmtest"
	"github.com/swerve-dev/swerve/internal/reward"
	"github.com/swerve-dev/swerve/internal/reward/swebench"
	"github.com/swerve-dev/swerve/internal/sandbox"
	"github.com/swerve-dev/swerve/internal/sandbox/docker"
	"github.com/swerve-dev/swerve/internal/task"
	"github.com/swerve-dev/swerve/internal/testutil"
)

// TestMain puts the system Python (which has pytest) first on PATH once
// for the whole package: local boxes inherit the environment, and the
// end-to-end tests run in parallel, where t.Setenv is not allowed.
func TestMain(m *testing.M) {
	if _, err := os.Stat("/usr/bin/python3"); err == nil {
		os.Setenv("PATH", "/usr/bin:"+os.Getenv("PATH"))
	}
	os.Exit(m.Run())
}

const (
	openAIModel    = "openai/gpt-4o-2024-08-06"
	anthropicModel = "anthropic/claude-sonnet-4-5-20250929"
	workdirVar     = "{{workdir}}"
	scenarioDir    = "testdata/e2e"
)

// scenario is one testdata/e2e/<name>.json file.
type scenario struct {
	Name  string `json:"-"`
	About string `json:"about"`
	// Backends the scenario runs on: local always, docker when listed.
	Backends []string `json:"backends"`
	// Anthropic lists the scaffold/mode pairs also run against the
	// Anthropic server.
	Anthropic []string `json:"anthropic"`
	Limits    struct {
		MaxSteps         int              `json:"max_steps"`
		MaxStepsAbsolute int              `json:"max_steps_absolute"`
		StepTimeout      llmtest.Duration `json:"step_timeout"`
		CollapseLimit    int              `json:"collapse_limit"`
		MaxFormatErrors  int              `json:"max_format_errors"`
	} `json:"limits"`
	MaxRetries int         `json:"max_retries"`
	Expect     expectation `json:"expect"`
	// Scripts are keyed by scaffold/mode ("r2egym/fn"), "bash" for the
	// text-only bash scaffolds (mini_swe_agent, live_swe_agent); a key
	// prefixed "anthropic/" overrides for the Anthropic server. Turns may
	// name a recorded body with "file" (relative to testdata/e2e), and
	// {{workdir}} anywhere stands for the repository in the box.
	Scripts map[string]json.RawMessage `json:"scripts"`
}

type expectation struct {
	Exit       agent.ExitReason `json:"exit"`
	ExitDetail string           `json:"exit_detail"`
	Steps      int              `json:"steps"`
	// Requests is what the server gets, retries included.
	Requests int `json:"requests"`
	// Patch is "gold" (the gold patch, which must resolve the task) or
	// "empty".
	Patch        string          `json:"patch"`
	FormatErrors []int           `json:"format_errors"`
	Retries      map[int]int     `json:"retries"`
	MinLLMSecs   map[int]float64 `json:"min_llm_seconds"`
	MaxStepSecs  map[int]float64 `json:"max_step_seconds"`
	// Observations by step number (from 1).
	Observations map[int]struct {
		Contains []string `json:"contains"`
		Lacks    []string `json:"lacks"`
	} `json:"observations"`
}

func loadScenarios(t *testing.T) []*scenario {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(scenarioDir, "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no scenarios in %s (%v)", scenarioDir, err)
	}
	var out []*scenario
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		sc := &scenario{Name: strings.TrimSuffix(filepath.Base(f), ".json")}
		dec := json.NewDecoder(strings.NewReader(string(b)))
		dec.DisallowUnknownFields()
		if err := dec.Decode(sc); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if sc.Expect.Exit == "" || !slices.Contains(agent.ExitReasons, sc.Expect.Exit) {
			t.Fatalf("%s: expect.exit %q is not an exit reason", f, sc.Expect.Exit)
		}
		out = append(out, sc)
	}
	return out
}

// scriptKey is the scripts entry for a scaffold and mode.
func scriptKey(scaffold string, mode agent.Mode) string {
	s, _ := agent.Lookup(scaffold)
	if len(s.Modes) == 1 && s.Modes[0] == agent.ModeText && s.Tools[0].Def.Name == "bash" {
		return "bash"
	}
	return scaffold + "/" + mode.String()
}

// script returns the turns for one episode, with {{workdir}} filled in and
// recorded bodies read.
func (sc *scenario) script(t *testing.T, provider, key, workdir string) []llmtest.Turn {
	t.Helper()
	raw, ok := sc.Scripts[provider+"/"+key]
	if !ok {
		raw, ok = sc.Scripts[key]
	}
	if !ok {
		t.Fatalf("scenario %s has no script for %s", sc.Name, key)
	}
	fill := func(b []byte) []byte { return []byte(strings.ReplaceAll(string(b), workdirVar, workdir)) }
	var turns []llmtest.Turn
	if err := json.Unmarshal(fill(raw), &turns); err != nil {
		t.Fatalf("scenario %s, script %s: %v", sc.Name, key, err)
	}
	for i, turn := range turns {
		if turn.File == "" {
			continue
		}
		b, err := os.ReadFile(filepath.Join(scenarioDir, turn.File))
		if err != nil {
			t.Fatal(err)
		}
		if !json.Valid(b) {
			t.Fatalf("%s is not JSON", turn.File)
		}
		turns[i].Body, turns[i].File = fill(b), ""
	}
	return turns
}

func (sc *scenario) limits() agent.Limits {
	l := sc.Limits
	return agent.Limits{
		MaxSteps:         l.MaxSteps,
		MaxStepsAbsolute: l.MaxStepsAbsolute,
		StepTimeout:      time.Duration(l.StepTimeout),
		CollapseLimit:    l.CollapseLimit,
		MaxFormatErrors:  l.MaxFormatErrors,
	}
}

// boxOpener opens a fresh box holding the sample task's repository and
// says where the repository is, for episodes and for grading.
type boxOpener struct {
	name string
	open func(t *testing.T, tk *task.Task) (sandbox.Sandbox, string)
	// gradeDir is swebench.RunOptions.Workdir in a fresh box.
	gradeDir string
}

var localOpener = boxOpener{name: "local", open: func(t *testing.T, tk *task.Task) (sandbox.Sandbox, string) {
	return openLocal(t, tk)
}, gradeDir: "."}

var dockerOpener = boxOpener{name: "docker", open: openDocker, gradeDir: "/testbed"}

var (
	dockerOnce sync.Once
	dockerBE   *docker.Backend
	dockerErr  error
)

// requireDocker skips (or fails, under SWERVE_DOCKER_TESTS=1) when no
// engine answers or the test image is missing.
func requireDocker(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	if err := docker.Probe(ctx); err != nil {
		testutil.SkipOrFail(t, "no container engine: %v", err)
	}
	shim := testutil.SwerveBinary(t)
	dockerOnce.Do(func() {
		dockerBE, dockerErr = docker.New(ctx, docker.Config{Options: sandbox.Options{ShimPath: shim, RunID: fmt.Sprintf("agent-e2e-%d", os.Getpid())}})
	})
	if dockerErr != nil {
		t.Fatal(dockerErr)
	}
	if _, err := dockerBE.Client().ImageInspect(ctx, testutil.TestImage()); err != nil {
		testutil.SkipOrFail(t, "test image %s missing (build it with scripts/test-image.sh): %v", testutil.TestImage(), err)
	}
}

// openDocker opens a container from the test image and makes /testbed the
// sample repository: its files written with WriteFile, then committed.
func openDocker(t *testing.T, tk *task.Task) (sandbox.Sandbox, string) {
	t.Helper()
	ctx := context.Background()
	box, err := dockerBE.Open(ctx, sandbox.Spec{Image: testutil.TestImage(), Workdir: "/testbed", Pull: sandbox.PullNever})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { box.Close(context.Background()) })
	err = filepath.WalkDir(tk.SourceDir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if d.Name() == ".git" {
				return filepath.SkipDir
			}
			return nil
		}
		rel, err := filepath.Rel(tk.SourceDir, p)
		if err != nil {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		return box.WriteFile(ctx, path.Join("/testbed", filepath.ToSlash(rel)), data, info.Mode().Perm())
	})
	if err != nil {
		t.Fatal(err)
	}
	res, err := box.Exec(ctx, sandbox.ExecRequest{Cmd: []string{"bash", "-c", "git init -q && git add -A && git commit -q -m 'sample repository'"}, Cwd: "/testbed", Timeout: time.Minute})
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("git init in the box: %v, exit %d: %s", err, res.ExitCode, res.Output)
	}
	return box, "/testbed"
}

// episode is one scenario run for one scaffold, mode, provider and backend.
type episode struct {
	sc       *scenario
	backend  boxOpener
	provider string
	scaffold string
	mode     agent.Mode
}

func TestEndToEnd(t *testing.T) {
	scenarios := loadScenarios(t)
	testutil.SwerveBinary(t) // build it once, before the parallel episodes
	for _, backend := range []boxOpener{localOpener, dockerOpener} {
		t.Run(backend.name, func(t *testing.T) {
			t.Parallel()
			if backend.name == "docker" {
				requireDocker(t)
			} else {
				testutil.NeedPytest(t) // local boxes grade with the host's pytest
			}
			for _, sc := range scenarios {
				if backend.name != "local" && !slices.Contains(sc.Backends, backend.name) {
					continue
				}
				t.Run(sc.Name, func(t *testing.T) {
					t.Parallel()
					// The episodes of a scenario run at the same time, beyond
					// -parallel: much of their time is spent waiting (on a
					// Retry-After, a step timeout, the container engine).
					var wg sync.WaitGroup
					for _, ep := range sc.episodes(backend) {
						wg.Go(func() {
							t.Run(ep.provider+"/"+ep.scaffold+"/"+ep.mode.String(), ep.run)
						})
					}
					wg.Wait()
				})
			}
		})
	}
}

// episodes lists the scenario's runs on backend: every scaffold in every
// mode with the OpenAI server, and the pairs it names with the Anthropic
// server too.
func (sc *scenario) episodes(backend boxOpener) []episode {
	var out []episode
	for _, name := range agent.Scaffolds() {
		s, _ := agent.Lookup(name)
		for _, mode := range s.Modes {
			out = append(out, episode{sc: sc, backend: backend, provider: llmtest.OpenAI, scaffold: name, mode: mode})
			if slices.Contains(sc.Anthropic, name+"/"+mode.String()) {
				out = append(out, episode{sc: sc, backend: backend, provider: llmtest.Anthropic, scaffold: name, mode: mode})
			}
		}
	}
	return out
}

func (ep episode) run(t *testing.T) {
	tk := sampleTasks(t)["sample__calc-1"]
	box, wd := ep.backend.open(t, tk)
	turns := ep.sc.script(t, ep.provider, scriptKey(ep.scaffold, ep.mode), wd)
	var srv *llmtest.Server
	model := openAIModel
	if ep.provider == llmtest.Anthropic {
		srv, model = llmtest.NewAnthropicServer(t, turns...), anthropicModel
	} else {
		srv = llmtest.NewOpenAIServer(t, turns...)
	}
	client, err := llm.New(model, llm.Options{
		BaseURL:    srv.URL,
		APIKey:     "test",
		BaseDelay:  time.Millisecond,
		MaxRetries: ep.sc.MaxRetries,
		Getenv:     func(string) string { return "" },
	})
	if err != nil {
		t.Fatal(err)
	}
	s, err := agent.Lookup(ep.scaffold)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	traj, err := agent.Run(ctx, agent.Options{Scaffold: s, Mode: ep.mode, Model: client, Box: box, Task: tk, Workdir: wd, Limits: ep.sc.limits()})
	if err != nil {
		t.Fatalf("agent.Run: %v", err)
	}
	defer func() {
		if t.Failed() {
			b, _ := json.MarshalIndent(traj.Steps, "", "  ")
			t.Logf("exit %s (%s); steps:\n%s", traj.ExitReason, traj.ExitDetail, b)
		}
	}()
	ep.checkOutcome(t, traj)
	ep.checkPatch(t, tk, traj)
	ep.checkRequests(t, srv, model, traj)
}

// checkOutcome checks the trajectory against the scenario's expectations.
func (ep episode) checkOutcome(t *testing.T, traj *agent.Trajectory) {
	t.Helper()
	want := ep.sc.Expect
	if traj.ExitReason != want.Exit {
		t.Errorf("exit %s (%s), want %s", traj.ExitReason, traj.ExitDetail, want.Exit)
	}
	if want.ExitDetail != "" && !strings.Contains(traj.ExitDetail, want.ExitDetail) {
		t.Errorf("exit detail %q lacks %q", traj.ExitDetail, want.ExitDetail)
	}
	if len(traj.Steps) != want.Steps {
		t.Fatalf("%d steps, want %d", len(traj.Steps), want.Steps)
	}
	if traj.Scaffold != ep.scaffold || traj.Mode != ep.mode.String() || traj.Offline || traj.InstanceID != "sample__calc-1" {
		t.Errorf("trajectory labels: scaffold %s, mode %s, offline %v, instance %s", traj.Scaffold, traj.Mode, traj.Offline, traj.InstanceID)
	}
	for i, st := range traj.Steps {
		n := i + 1
		if st.Index != i || st.Count != n {
			t.Errorf("step %d has step_idx %d and step_count %d, want %d and %d", n, st.Index, st.Count, i, n)
		}
		if _, ok := st.Info["total_time"]; !ok {
			t.Errorf("step %d: info %v has no total_time", n, st.Info)
		}
		if !strings.HasPrefix(st.Action, "<function=") || !strings.HasSuffix(st.Action, "</function>") {
			t.Errorf("step %d: action %q is not in the <function=...> form", n, st.Action)
		}
		if fe := slices.Contains(want.FormatErrors, n); fe != (st.FormatError != "") {
			t.Errorf("step %d: format error %q, want one: %v", n, st.FormatError, fe)
		} else if fe && !strings.Contains(st.Observation, st.FormatError) {
			t.Errorf("step %d: the observation does not say what was wrong (%q):\n%s", n, st.FormatError, st.Observation)
		}
		if r, ok := want.Retries[n]; ok && st.Retries != r {
			t.Errorf("step %d: %d retries, want %d", n, st.Retries, r)
		}
		if lo, ok := want.MinLLMSecs[n]; ok && st.LLMTime < lo {
			t.Errorf("step %d: the model call took %.2fs, want at least %.2fs", n, st.LLMTime, lo)
		}
		if hi, ok := want.MaxStepSecs[n]; ok && st.StepTime > hi {
			t.Errorf("step %d took %.2fs, want at most %.2fs", n, st.StepTime, hi)
		}
		if st.Usage.InputTokens == 0 || st.Usage.Estimated {
			t.Errorf("step %d: usage %+v, want the server's", n, st.Usage)
		}
		obs := want.Observations[n]
		for _, s := range obs.Contains {
			if !strings.Contains(st.Observation, s) {
				t.Errorf("step %d: observation lacks %q:\n%s", n, s, st.Observation)
			}
		}
		for _, s := range obs.Lacks {
			if strings.Contains(st.Observation, s) {
				t.Errorf("step %d: observation has %q:\n%s", n, s, st.Observation)
			}
		}
		if done := n == len(traj.Steps) && traj.ExitReason == agent.ExitSubmitted; st.Done != done {
			t.Errorf("step %d: done %v", n, st.Done)
		}
	}
}

// checkPatch checks the patch; a gold one is also graded in a fresh box.
func (ep episode) checkPatch(t *testing.T, tk *task.Task, traj *agent.Trajectory) {
	t.Helper()
	switch ep.sc.Expect.Patch {
	case "empty":
		if traj.Patch != "" {
			t.Errorf("patch, want none:\n%s", traj.Patch)
		}
	case "gold":
		if strip(traj.Patch) != strip(tk.Patch) {
			t.Errorf("patch differs from the gold patch:\n%s", traj.Patch)
		}
		if g := ep.grade(t, tk, traj.Patch); !g.resolved {
			t.Errorf("not resolved: %s", g.log)
		}
	default:
		t.Fatalf("scenario %s: expect.patch %q (want gold or empty)", ep.sc.Name, ep.sc.Expect.Patch)
	}
}

// grading is the verdict on one patch in one backend.
type grading struct {
	once     sync.Once
	resolved bool
	log      string
}

// gradings caches verdicts: the episodes that solve the task produce the
// same patch byte for byte, and running the tests once per backend says
// all there is to say about it.
var gradings sync.Map // backend name + "\x00" + patch -> *grading

// grade runs the task's eval script on patch in a fresh box.
func (ep episode) grade(t *testing.T, tk *task.Task, patch string) *grading {
	t.Helper()
	v, _ := gradings.LoadOrStore(ep.backend.name+"\x00"+patch, &grading{})
	g := v.(*grading)
	g.once.Do(func() {
		g.log = "grading did not finish"
		box, _ := ep.backend.open(t, tk)
		rr, err := swebench.Run(context.Background(), box, tk, swebench.RunOptions{RunOptions: reward.RunOptions{Patch: patch, Workdir: ep.backend.gradeDir}})
		if err != nil {
			g.log = err.Error()
			return
		}
		g.resolved, g.log = rr.Result.Resolved, rr.Result.Reason+"\n"+rr.Log
	})
	return g
}

// call is one Complete call as the server saw it: its attempts (retries
// send the same body again) and the reply to the last one.
type call struct {
	attempts []llmtest.Request
	chat     llmtest.Chat
	reply    *llm.Message
}

// checkRequests checks what the model was sent, call by call: the history
// grows by exactly the model's reply and the observation of each step,
// every tool call is answered by a tool message with its id, the tools
// offered are the trajectory's, and the trajectory's messages are what was
// sent.
func (ep episode) checkRequests(t *testing.T, srv *llmtest.Server, model string, traj *agent.Trajectory) {
	t.Helper()
	reqs := srv.Requests()
	if len(reqs) != ep.sc.Expect.Requests {
		t.Errorf("the server got %d requests, want %d", len(reqs), ep.sc.Expect.Requests)
	}
	var calls []call
	for _, r := range reqs {
		if n := len(calls); n > 0 && string(calls[n-1].attempts[0].Body) == string(r.Body) {
			calls[n-1].attempts = append(calls[n-1].attempts, r)
		} else {
			calls = append(calls, call{attempts: []llmtest.Request{r}, chat: r.MustDecode(t)})
		}
		c := &calls[len(calls)-1]
		c.reply = nil
		if msg, ok, err := r.Reply(); err != nil {
			t.Fatalf("the server's answer does not decode: %v\n%s", err, r.Response)
		} else if ok {
			c.reply = &msg
		}
		switch r.Provider {
		case llmtest.Anthropic:
			if r.Header.Get("X-Api-Key") != "test" || r.Header.Get("Anthropic-Version") == "" {
				t.Errorf("Anthropic request headers: %v", r.Header)
			}
		default:
			if r.Header.Get("Authorization") != "Bearer test" {
				t.Errorf("Authorization %q", r.Header.Get("Authorization"))
			}
		}
	}
	wantCalls := len(traj.Steps)
	if traj.ExitReason == agent.ExitLLMError || traj.ExitReason == agent.ExitContextLimit {
		wantCalls++ // the call that failed
	}
	if len(calls) != wantCalls {
		t.Fatalf("%d distinct model calls for %d steps (exit %s)", len(calls), len(traj.Steps), traj.ExitReason)
	}
	_, wantModel, _ := strings.Cut(model, "/")
	seen := map[string]bool{}
	for k, c := range calls {
		if c.chat.Model != wantModel {
			t.Errorf("call %d: model %q", k+1, c.chat.Model)
		}
		ep.checkTools(t, k, c.chat.Tools, traj.Tools)
		msgs := c.chat.Messages
		if k == 0 {
			if len(msgs) != 2 || msgs[0].Role != llm.RoleSystem || msgs[1].Role != llm.RoleUser || !strings.Contains(msgs[1].Content, "median() gives the wrong answer") {
				t.Fatalf("first call: %d messages, want the system prompt and the task", len(msgs))
			}
			continue
		}
		prev := calls[k-1]
		st := traj.Steps[k-1]
		if prev.reply == nil {
			t.Fatalf("call %d followed a call that got no reply", k+1)
		}
		if d := cmp.Diff(wire(prev.chat.Messages), wire(msgs[:min(len(msgs), len(prev.chat.Messages))])); d != "" {
			t.Fatalf("call %d does not extend the history of call %d (-before +now):\n%s", k+1, k, d)
		}
		added := msgs[len(prev.chat.Messages):]
		if len(added) == 0 {
			t.Fatalf("call %d added nothing to the history", k+1)
		}
		if d := cmp.Diff(wire([]llm.Message{*prev.reply}), wire(added[:1])); d != "" {
			t.Errorf("call %d: the model's reply was not sent back as it was (-reply +sent):\n%s", k+1, d)
		}
		if st.Thought != prev.reply.Content || st.Reasoning != prev.reply.Reasoning {
			t.Errorf("step %d: thought %q / reasoning %q, reply %q / %q", k, st.Thought, st.Reasoning, prev.reply.Content, prev.reply.Reasoning)
		}
		obs := added[1:]
		var shown []string
		if ep.mode == agent.ModeFn && len(prev.reply.ToolCalls) > 0 {
			// Every tool call the model made is answered, in order, by a
			// tool message carrying its id.
			if len(obs) != len(prev.reply.ToolCalls) {
				t.Fatalf("call %d: %d tool calls answered by %d messages", k+1, len(prev.reply.ToolCalls), len(obs))
			}
			for i, tc := range prev.reply.ToolCalls {
				if obs[i].Role != llm.RoleTool || obs[i].ToolCallID != tc.ID {
					t.Errorf("call %d: tool call %s (%s) answered by a %s message for %q", k+1, tc.ID, tc.Function.Name, obs[i].Role, obs[i].ToolCallID)
				}
				shown = append(shown, obs[i].Content)
			}
		} else {
			if len(obs) != 1 || obs[0].Role != llm.RoleUser {
				t.Fatalf("call %d: the observation of step %d came as %d messages, want one user message", k+1, k, len(obs))
			}
			shown = append(shown, obs[0].Content)
		}
		if got := strings.Join(shown, "\n\n"); got != st.Observation {
			t.Errorf("step %d: the model was shown\n%s\nbut the trajectory records\n%s", k, got, st.Observation)
		}
	}
	// Tool call ids are unique over the episode.
	for _, m := range traj.Messages {
		for _, tc := range m.ToolCalls {
			if seen[tc.ID] {
				t.Errorf("tool call id %s used twice", tc.ID)
			}
			seen[tc.ID] = true
		}
	}
	// The trajectory's conversation is what was sent, then what came after
	// the last call.
	last := calls[len(calls)-1]
	if len(traj.Messages) < len(last.chat.Messages) {
		t.Fatalf("the trajectory holds %d messages, the last call sent %d", len(traj.Messages), len(last.chat.Messages))
	}
	if d := cmp.Diff(wire(last.chat.Messages), wire(traj.Messages[:len(last.chat.Messages)])); d != "" {
		t.Errorf("trajectory messages differ from what was sent (-sent +trajectory):\n%s", d)
	}
	if last.reply != nil {
		rest := traj.Messages[len(last.chat.Messages):]
		if len(rest) == 0 || cmp.Diff(wire([]llm.Message{*last.reply}), wire(rest[:1])) != "" {
			t.Errorf("the trajectory does not end with the last reply")
		}
	} else if len(traj.Messages) != len(last.chat.Messages) {
		t.Errorf("the trajectory has %d messages after a failed call", len(traj.Messages)-len(last.chat.Messages))
	}
}

// checkTools: in fn mode every call offers exactly the trajectory's tools
// (the scaffold's schemas); in text mode none.
func (ep episode) checkTools(t *testing.T, k int, sent, recorded []llm.Tool) {
	t.Helper()
	if ep.mode != agent.ModeFn {
		if len(sent) != 0 || len(recorded) != 0 {
			t.Errorf("call %d: text mode sent %d tools, recorded %d", k+1, len(sent), len(recorded))
		}
		return
	}
	s, _ := agent.Lookup(ep.scaffold)
	if len(recorded) == 0 || !cmp.Equal(toolShapes(t, recorded), toolShapes(t, s.ToolSchemas())) {
		t.Errorf("Trajectory.Tools is not the scaffold's tools")
	}
	if d := cmp.Diff(toolShapes(t, recorded), toolShapes(t, sent)); d != "" {
		t.Errorf("call %d: tools sent differ from Trajectory.Tools (-trajectory +sent):\n%s", k+1, d)
	}
}

// toolShapes decodes schemas for comparison across wire formats. An empty
// required list is dropped: the Anthropic client leaves it out.
func toolShapes(t *testing.T, tools []llm.Tool) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, tl := range tools {
		var params map[string]any
		if err := json.Unmarshal(tl.Function.Parameters, &params); err != nil {
			t.Fatalf("tool %s: %v", tl.Function.Name, err)
		}
		if r, ok := params["required"].([]any); ok && len(r) == 0 {
			delete(params, "required")
		}
		out = append(out, map[string]any{"type": tl.Type, "name": tl.Function.Name, "description": tl.Function.Description, "parameters": params})
	}
	return out
}

// wireMsg is a message as both wire formats carry it: no reasoning (not
// sent back), no tool name (OpenAI tool messages have none), arguments
// compared as JSON when they are JSON.
type wireMsg struct {
	Role, Content, ToolCallID string
	Calls                     []string
}

func wire(msgs []llm.Message) []wireMsg {
	out := make([]wireMsg, len(msgs))
	for i, m := range msgs {
		w := wireMsg{Role: m.Role, Content: m.Content, ToolCallID: m.ToolCallID}
		for _, tc := range m.ToolCalls {
			args := tc.Function.Arguments
			var v any
			if json.Unmarshal([]byte(args), &v) == nil {
				b, _ := json.Marshal(v)
				args = string(b)
			}
			w.Calls = append(w.Calls, tc.ID+" "+tc.Function.Name+" "+args)
		}
		out[i] = w
	}
	return out
}

// TestScenarioFilesCoverEveryScaffold keeps testdata/e2e complete: every
// scenario has a script for every scaffold and mode, and names only
// scaffold/mode pairs that exist.
func TestScenarioFilesCoverEveryScaffold(t *testing.T) {
	for _, sc := range loadScenarios(t) {
		keys := map[string]bool{}
		for _, name := range agent.Scaffolds() {
			s, _ := agent.Lookup(name)
			for _, mode := range s.Modes {
				key := scriptKey(name, mode)
				keys[key] = true
				if _, ok := sc.Scripts[key]; !ok {
					t.Errorf("%s: no script for %s/%s (key %q)", sc.Name, name, mode, key)
				}
			}
		}
		for k := range sc.Scripts {
			if !keys[strings.TrimPrefix(k, llmtest.Anthropic+"/")] {
				t.Errorf("%s: script %q matches no scaffold and mode", sc.Name, k)
			}
		}
		for _, combo := range sc.Anthropic {
			name, mode, _ := strings.Cut(combo, "/")
			s, err := agent.Lookup(name)
			if err != nil || !slices.ContainsFunc(s.Modes, func(m agent.Mode) bool { return m.String() == mode }) {
				t.Errorf("%s: anthropic names %q, which is no scaffold and mode", sc.Name, combo)
			}
		}
		for _, b := range sc.Backends {
			if b != "local" && b != "docker" {
				t.Errorf("%s: unknown backend %q", sc.Name, b)
			}
		}
		for n := range sc.Expect.Observations {
			if n < 1 || n > sc.Expect.Steps {
				t.Errorf("%s: observation expectations for step %d of %d", sc.Name, n, sc.Expect.Steps)
			}
		}
	}
}
