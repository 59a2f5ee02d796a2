package cli

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	"github.com/spf13/cobra"

	"github.com/swerve-dev/swerve/internal/agent"
	"github.com/swerve-dev/swerve/internal/episode"
	"github.com/swerve-dev/swerve/internal/fsutil"
	"github.com/swerve-dev/swerve/internal/llm"
	"github.com/swerve-dev/swerve/internal/reward/grader"
	"github.com/swerve-dev/swerve/internal/sandbox"
	"github.com/swerve-dev/swerve/internal/serve"
	"github.com/swerve-dev/swerve/internal/task"
)

// runRollouts runs each /run rollout through internal/episode, the episode
// swerve run uses: the same integrity rules and error classes.
type runRollouts struct {
	af       *agentFlags
	bf       *boxFlags
	sf       *serveFlags
	scaffold *agent.Scaffold
	mode     agent.Mode
	limits   agent.Limits
	sampling agent.Sampling
	tasks    *serve.Tasks // --dataset, by instance_id, else each row's own fields
	// datasetName is --dataset as given, recorded in each row's metadata.
	datasetName string
	dataset     []task.Task
	stderr      io.Writer
}

func newRunRollouts(cmd *cobra.Command, df *datasetFlags, bf *boxFlags, af *agentFlags, sf *serveFlags) (*runRollouts, error) {
	ctx := cmd.Context()
	ro := &runRollouts{af: af, bf: bf, sf: sf, stderr: cmd.ErrOrStderr()}
	var err error
	if sf.RunGolden || af.LLMName == "" {
		// Without --llm_name every row must bring its policy_base_url.
		if ro.scaffold, err = agent.Lookup(af.Scaffold); err != nil {
			return nil, fmt.Errorf("--scaffold: %w", err)
		}
		if ro.mode, err = agent.ModeFor(ro.scaffold, af.FnCalling.ptr()); err != nil {
			return nil, fmt.Errorf("--use_fn_calling: %w", err)
		}
	} else if ro.scaffold, ro.mode, err = af.setup(); err != nil {
		return nil, err
	} else if err := af.checkModel(ctx); err != nil {
		return nil, err
	}
	af.retries = func(id string, r llm.Retry) { fmt.Fprintf(ro.stderr, "swerve: %s: model %s\n", id, r) }
	if _, err := bf.resolve(ctx); err != nil {
		return nil, err
	}
	ro.limits = af.limits()
	fs := cmd.Flags()
	if !fs.Changed("max_steps") && !fs.Changed("max_steps_absolute") {
		ro.limits.MaxSteps, ro.limits.MaxStepsAbsolute = sf.StepLimit, sf.StepLimit
	}
	ro.sampling = af.sampling(fs.Changed)
	var dataset []task.Task
	if df.Dataset != "" {
		if dataset, err = df.load(cmd); err != nil {
			return nil, err
		}
		for i := range dataset {
			if _, err := grader.Choose(&dataset[i], sf.Reward); err != nil {
				return nil, err
			}
		}
	}
	if err := bf.checkTasks(ctx, dataset); err != nil {
		return nil, err
	}
	ro.tasks = serve.NewTasks(dataset)
	ro.datasetName = df.Dataset
	ro.dataset = dataset
	cleanupOrphans(ctx, bf.options(), ro.stderr)
	return ro, nil
}

// Queued expects the boxes of a queued row's task (--prewarm): they open
// while the row waits for a slot, and those not used close when it ends.
func (ro *runRollouts) Queued(req *serve.RolloutRequest) func() {
	if ro.bf.warm == nil || req.Task == nil {
		return func() {}
	}
	return ro.bf.warm.expect(context.Background(), ro.bf, req.Task, warmBoxes(ro.sf.RunGolden, episode.GradeFresh), !ro.sf.RunGolden)
}

// open opens a task's box with the box flags and finds the repository in it.
func (ro *runRollouts) open(ctx context.Context, t *task.Task) (sandbox.Sandbox, string, error) {
	return ro.bf.openRepo(ctx, t)
}

// Rollout answers from --results_dir under --skip_if_exists, else runs the
// rollout and keeps its result there.
func (ro *runRollouts) Rollout(ctx context.Context, req *serve.RolloutRequest) (*serve.RolloutResult, error) {
	path := ro.resultPath(req)
	if path != "" && ro.sf.SkipIfExists {
		if data, err := os.ReadFile(path); err == nil {
			var res serve.RolloutResult
			if err := json.Unmarshal(data, &res); err == nil {
				return &res, nil
			}
		}
	}
	res, err := ro.rollout(ctx, req)
	if err == nil && path != "" && res.InfraError == "" {
		if data, e := json.Marshal(res); e == nil {
			if e := fsutil.WriteFileAtomic(path, data, false); e != nil {
				fmt.Fprintf(ro.stderr, "swerve serve: keep result: %v\n", e)
			}
		}
	}
	return res, err
}

// resultPath is Gym's results/{subset}/{model}/{id}/{id}.json under
// --results_dir ("" when results are not kept or the row names no task).
func (ro *runRollouts) resultPath(req *serve.RolloutRequest) string {
	if ro.sf.ResultsDir == "" || req.InstanceID == "" || strings.ContainsAny(req.InstanceID, "/\\") || strings.HasPrefix(req.InstanceID, ".") {
		return ""
	}
	model := cmp.Or(ro.af.LLMName, cmp.Or(req.Params.Model, "policy"))
	if ro.sf.RunGolden {
		model = "golden"
	}
	model = strings.NewReplacer("/", "_", "\\", "_").Replace(model)
	subset := strings.NewReplacer("/", "_", "\\", "_", "..", "_").Replace(cmp.Or(req.Row.String("subset"), "default"))
	return filepath.Join(ro.sf.ResultsDir, subset, model, req.InstanceID, req.InstanceID+".json")
}

// rollout runs one task's episode (internal/episode: the box, hidden tests
// removed, the agent, grading in a fresh box, tamper checks, failures
// outside the model kept apart) and turns its result into Gym's terms.
func (ro *runRollouts) rollout(ctx context.Context, req *serve.RolloutRequest) (*serve.RolloutResult, error) {
	start := time.Now()
	if req.Task == nil {
		return nil, fmt.Errorf("rollout %s: no task", req.RolloutID)
	}
	tc := *req.Task // Choose fills in the grader: on a copy
	t := &tc
	if _, err := grader.Choose(t, ro.sf.Reward); err != nil {
		return &serve.RolloutResult{InfraError: string(episode.KindTask), InfraDetail: err.Error()}, nil
	}
	name := ro.af.LLMName
	if name == "" {
		if req.PolicyBaseURL == "" && !ro.sf.RunGolden {
			return &serve.RolloutResult{InfraError: string(episode.KindLLM),
				InfraDetail: fmt.Sprintf("task %s: the row has no policy_base_url and swerve serve has no --llm_name", t.InstanceID)}, nil
		}
		name = "hosted_vllm/" + cmp.Or(req.Params.Model, "policy")
	}
	sampling := ro.sampling
	if p := req.Params.Temperature; p != nil {
		sampling.Temperature = p
	}
	if p := req.Params.TopP; p != nil {
		sampling.TopP = p
	}
	if p := req.Params.MaxOutputTokens; p != nil {
		sampling.MaxTokens = *p
	}
	newModel := func(s *agent.Scaffold, t *task.Task, workdir string, mode agent.Mode) (llm.Client, error) {
		if name == agent.OracleName {
			return agent.NewOracle(s, t, workdir, mode)
		}
		opts := llm.Options{BaseURL: req.PolicyBaseURL, APIKey: req.PolicyAPIKey, TokenIDs: ro.sf.TokenIDs}
		if report := ro.af.retries; report != nil {
			opts.OnRetry = func(r llm.Retry) { report(t.InstanceID, r) }
		}
		return llm.New(name, opts)
	}
	var boxOpen atomic.Int64 // nanoseconds the first box (the agent's) took to open
	opener := func(ctx context.Context, t *task.Task) (sandbox.Sandbox, string, error) {
		opened := time.Now()
		defer func() { boxOpen.CompareAndSwap(0, int64(time.Since(opened))) }()
		return ro.bf.openAgentRepo(ctx, t)
	}
	spec := episode.Spec{
		Task: t, Mode: ro.mode, NewModel: newModel, Open: opener, Limits: ro.limits, Sampling: sampling,
		Iterations: 1, Gold: ro.sf.RunGolden,
		Grade: episode.GradeOptions{Open: ro.open, In: episode.GradeFresh, Reward: ro.sf.Reward, EvalTimeout: ro.sf.EvalTimeout},
	}
	if !ro.sf.RunGolden {
		s, err := agent.Lookup(ro.scaffold.Name)
		if err != nil {
			return nil, fmt.Errorf("rollout %s: %w", req.RolloutID, err)
		}
		if o := ro.af.override; o != nil {
			if err := o.Apply(s); err != nil {
				return nil, fmt.Errorf("rollout %s: --args_path: %w", req.RolloutID, err)
			}
		}
		spec.Scaffold = s
	}
	ep, err := episode.Run(ctx, spec)
	if err != nil {
		return nil, fmt.Errorf("rollout %s: %w", req.RolloutID, err)
	}
	res := &serve.RolloutResult{Model: cmp.Or(ep.Model, name), Patch: ep.Patch, Reward: ep.Reward, Resolved: ep.Reward >= 1,
		EvalReport: ep.Report, ExitReason: string(ep.ExitReason), Scaffold: ro.scaffoldName(), Dataset: ro.datasetName, Started: start,
		Timings: serve.Timings{BoxOpen: time.Duration(boxOpen.Load()).Seconds(), Grade: ep.Timings.Grade.Seconds(),
			Total: time.Since(start).Seconds()}}
	if ep.History != nil {
		res.History, _ = json.Marshal(ep.History)
	}
	if f := ep.Failure; f != nil {
		res.InfraError, res.InfraDetail = cmp.Or(string(f.Kind), "error"), f.Err.Error()
		res.Reward, res.Resolved = 0, false
	}
	if tr := ep.Trajectory; tr != nil {
		var tokens []*serve.Tokens
		for _, m := range tr.Messages {
			if m.Role != llm.RoleAssistant {
				continue
			}
			var tk *serve.Tokens
			if m.HasTokenIDs() {
				tk = &serve.Tokens{PromptTokenIDs: m.PromptTokenIDs, GenerationTokenIDs: m.GenerationTokenIDs, GenerationLogProbs: m.GenerationLogProbs}
			}
			tokens = append(tokens, tk)
		}
		res.Input, res.Output = serve.FromChat(tr.Messages, tokens)
		res.Steps = len(tr.Steps)
		res.Signals = tr.Signals()
		var u llm.Usage
		for _, s := range tr.Steps {
			u = u.Add(s.Usage)
		}
		res.Usage = &serve.Usage{InputTokens: u.InputTokens, OutputTokens: u.OutputTokens, TotalTokens: u.TotalTokens}
		res.Timings.Agent = max(0, res.Timings.Total-res.Timings.Grade-res.Timings.BoxOpen)
	}
	return res, nil
}

// scaffoldName is the scaffold rollouts run, "golden" for --run_golden.
func (ro *runRollouts) scaffoldName() string {
	if ro.sf.RunGolden {
		return "golden"
	}
	if ro.scaffold == nil {
		return ""
	}
	return ro.scaffold.Name
}
