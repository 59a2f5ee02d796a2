package cli

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/swerve-dev/swerve/internal/agent"
	"github.com/swerve-dev/swerve/internal/llm"
	"github.com/swerve-dev/swerve/internal/sandbox"
	"github.com/swerve-dev/swerve/internal/task"
)

// agentFlags are the flags of commands that run an agent (solve, run).
type agentFlags struct {
	Scaffold     string
	LLMName      string
	FnCalling    pyBool
	MaxSteps     int
	MaxStepsAbs  int
	MaxTokens    int
	StepTimeout  time.Duration
	WallTime     time.Duration
	CostLimit    float64
	Collapse     int
	Temperature  float64
	TopP         float64
	MaxOutTokens int
	FormatErrors int
	ArgsPath     string

	// override and overrideHash are what --args_path sets (see setup).
	override     *agent.Override
	overrideHash string
	// llmRetries and llmTimeout come from its other_args.
	llmRetries int
	llmTimeout time.Duration
	// SkipLLMCheck leaves out the request that checks the model's
	// endpoint before the first task (checkModel).
	SkipLLMCheck bool
	// retries, when set, is told about every retry of a model call, with
	// the task's id.
	retries func(id string, r llm.Retry)
}

func (f *agentFlags) register(fs *pflag.FlagSet) {
	fs.StringVar(&f.Scaffold, "scaffold", "mini_swe_agent", "agent scaffold: "+strings.Join(agent.Scaffolds(), ", "))
	fs.StringVar(&f.LLMName, "llm_name", "", "model, LiteLLM-style: openai/gpt-4o-mini, anthropic/<model>, openrouter/<vendor>/<model>, hosted_vllm/<model>, a bare name at $LLM_BASE_URL; offline: oracle/gold, replay/<file>")
	fs.Var(&f.FnCalling, "use_fn_calling", "True: function calling; False: actions in text (default: the scaffold's own mode)")
	fs.IntVar(&f.MaxSteps, "max_steps", agent.DefaultMaxSteps, "soft step limit: the model is told to finish")
	fs.IntVar(&f.MaxStepsAbs, "max_steps_absolute", agent.DefaultMaxStepsAbsolute, "hard step limit")
	fs.IntVar(&f.MaxTokens, "max_token_limit", agent.DefaultMaxTokens, "the conversation's size limit in tokens")
	fs.IntVar(&f.MaxTokens, "max_tokens", agent.DefaultMaxTokens, "same as --max_token_limit (upstream runner's name)")
	secondsVar(fs, &f.StepTimeout, "step_timeout", agent.DefaultStepTimeout, "time limit of one command")
	secondsVar(fs, &f.WallTime, "wall_time", 0, "time limit of one episode (0: none)")
	fs.Float64Var(&f.CostLimit, "cost_limit", 0, "cost budget of one episode in USD (0: none)")
	fs.IntVar(&f.Collapse, "collapse_limit", agent.DefaultCollapseLimit, "warn the model after the same command this many times in a row (-1: never)")
	fs.Float64Var(&f.Temperature, "temperature", 0, "sampling temperature")
	fs.Float64Var(&f.TopP, "top_p", 1, "nucleus sampling")
	fs.IntVar(&f.MaxOutTokens, "max_output_tokens", 0, "cap on one reply's tokens (0: the provider's default)")
	fs.IntVar(&f.FormatErrors, "max_format_errors", agent.DefaultMaxFormatErrors, "end the episode after this many unreadable replies in a row")
	fs.BoolVar(&f.SkipLLMCheck, "skip_llm_check", false, "do not ask the model's endpoint (GET /models, else a one-token completion) whether it answers, takes the key and serves the model before the first task")
	fs.StringVar(&f.ArgsPath, "args_path", "", "R2E-Gym's AgentArgs YAML: its system_prompt, instance_prompt and command_files replace the scaffold's (other_args max_retries and timeout set the model client's)")
	setFlagGroup(fs, groupAgent, "max_steps", "max_steps_absolute", "max_token_limit", "max_tokens", "step_timeout", "wall_time", "cost_limit",
		"collapse_limit", "temperature", "top_p", "max_output_tokens", "max_format_errors", "args_path")
}

// pyBool is a boolean flag that takes its value as the next word, the way
// Python runners spell it (--use_fn_calling False).
type pyBool struct {
	set bool
	val bool
}

func (b *pyBool) String() string {
	if !b.set {
		return ""
	}
	return strconv.FormatBool(b.val)
}
func (b *pyBool) Type() string { return "True|False" }
func (b *pyBool) Set(v string) error {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "true", "1", "yes", "on":
		b.val = true
	case "false", "0", "no", "off":
		b.val = false
	default:
		return fmt.Errorf("want True or False, got %q", v)
	}
	b.set = true
	return nil
}

// ptr is nil when the flag was not given.
func (b *pyBool) ptr() *bool {
	if !b.set {
		return nil
	}
	v := b.val
	return &v
}

// setup resolves the scaffold and mode and checks the model name and its
// key, before any box starts.
func (f *agentFlags) setup() (*agent.Scaffold, agent.Mode, error) {
	s, err := agent.Lookup(f.Scaffold)
	if err != nil {
		return nil, 0, fmt.Errorf("--scaffold: %w", err)
	}
	if f.ArgsPath != "" {
		if err := f.loadArgsPath(s); err != nil {
			return nil, 0, err
		}
	}
	mode, err := agent.ModeFor(s, f.FnCalling.ptr())
	if err != nil {
		return nil, 0, fmt.Errorf("--use_fn_calling: %w", err)
	}
	if f.LLMName == "" {
		return nil, 0, fmt.Errorf("--llm_name: name a model (e.g. openai/gpt-4o-mini), or oracle/gold to apply the gold patch offline")
	}
	if f.LLMName != agent.OracleName {
		if err := llm.Check(f.LLMName, nil); err != nil {
			return nil, 0, fmt.Errorf("--llm_name %s: %w", f.LLMName, err)
		}
	}
	return s, mode, nil
}

// model builds the model for one task; oracle/gold needs the task and the
// repository's path in the box.
func (f *agentFlags) model(s *agent.Scaffold, t *task.Task, workdir string, mode agent.Mode) (llm.Client, error) {
	if f.LLMName == agent.OracleName {
		return agent.NewOracle(s, t, workdir, mode)
	}
	opts := llm.Options{MaxRetries: f.llmRetries, Timeout: f.llmTimeout}
	if f.retries != nil {
		id := t.InstanceID
		opts.OnRetry = func(r llm.Retry) { f.retries(id, r) }
	}
	return llm.New(f.LLMName, opts)
}

// checkModel asks the model's endpoint once, before any box opens,
// whether it answers, takes the key and serves the model (llm.Probe): one
// line when not. Offline models and --skip_llm_check ask nothing.
func (f *agentFlags) checkModel(ctx context.Context) error {
	if f.SkipLLMCheck || f.LLMName == "" || f.LLMName == agent.OracleName {
		return nil
	}
	err := llm.Probe(ctx, f.LLMName, llm.Options{})
	if errors.Is(err, llm.ErrUnauthorized) || errors.Is(err, llm.ErrUnknownModel) {
		// A server may answer its model list or a probe differently
		// from a real request: say how to go ahead anyway.
		return fmt.Errorf("%w (--skip_llm_check skips this check)", err)
	}
	return err
}

func (f *agentFlags) limits() agent.Limits {
	return agent.Limits{
		MaxSteps:         f.MaxSteps,
		MaxStepsAbsolute: f.MaxStepsAbs,
		MaxTokens:        f.MaxTokens,
		WallTime:         f.WallTime,
		CostLimit:        f.CostLimit,
		CollapseLimit:    f.Collapse,
		MaxFormatErrors:  f.FormatErrors,
		StepTimeout:      f.StepTimeout,
	}
}

func (f *agentFlags) sampling(changed func(string) bool) agent.Sampling {
	var s agent.Sampling
	t := f.Temperature
	s.Temperature = &t // temperature 0 is the runners' default, sent explicitly
	if changed("top_p") {
		p := f.TopP
		s.TopP = &p
	}
	s.MaxTokens = f.MaxOutTokens
	return s
}

// repoDir finds the repository in a freshly opened box: --workdir when
// given, else the box's working directory, with /testbed preferred over a
// bare "/".
func repoDir(ctx context.Context, box sandbox.Sandbox, flag string) (string, error) {
	if flag != "" {
		return flag, nil
	}
	res, err := box.Exec(ctx, sandbox.ExecRequest{Cmd: []string{"sh", "-c", `d=$(pwd); if [ "$d" = / ] && [ -d /testbed ]; then d=/testbed; fi; echo "$d"`}, Timeout: time.Minute})
	if err != nil {
		return "", fmt.Errorf("find the repository in the box: %w", err)
	}
	dir := strings.TrimSpace(string(res.Output))
	if res.ExitCode != 0 || !strings.HasPrefix(dir, "/") {
		return "", fmt.Errorf("find the repository in the box: %q (exit %d)", dir, res.ExitCode)
	}
	return dir, nil
}
