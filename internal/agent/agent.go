// Package agent runs coding agents: the step loop every scaffold shares.
//
// A Scaffold (registered by the packages under agent/scaffold) supplies the
// prompts, the tools and the action parser; Run drives a model through it in
// a sandbox: query the model, read its actions, run them in the box, show it
// what happened, until it submits or a limit ends the episode. The patch is
// then taken from the repository with git, never from what the model says.
package agent

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"text/template"
	"time"

	"github.com/swerve-dev/swerve/internal/agent/signals"
	"github.com/swerve-dev/swerve/internal/llm"
	"github.com/swerve-dev/swerve/internal/sandbox"
	"github.com/swerve-dev/swerve/internal/stop"
	"github.com/swerve-dev/swerve/internal/task"
)

// ExitReason says why an episode ended. The set is closed.
type ExitReason string

const (
	ExitSubmitted        ExitReason = "submitted"          // the model submitted
	ExitMaxSteps         ExitReason = "max_steps"          // the step limit, with no grace steps after it
	ExitMaxStepsAbsolute ExitReason = "max_steps_absolute" // the hard step limit, after the soft one's warning
	ExitContextLimit     ExitReason = "context_limit"      // the provider refused: the prompt exceeds the model's context
	ExitTokenLimit       ExitReason = "token_limit"        // the conversation outgrew max_token_limit
	ExitWallTime         ExitReason = "wall_time"          // the episode ran out of time
	ExitCostLimit        ExitReason = "cost_limit"         // the cost budget is spent
	ExitFormatErrors     ExitReason = "format_errors"      // too many unreadable replies in a row
	ExitLLMError         ExitReason = "llm_error"          // the model failed past its retries
	ExitSandboxError     ExitReason = "sandbox_error"      // the box died or could not run a tool
)

// ExitReasons lists the closed set, in a stable order.
var ExitReasons = []ExitReason{ExitSubmitted, ExitMaxSteps, ExitMaxStepsAbsolute, ExitContextLimit, ExitTokenLimit, ExitWallTime, ExitCostLimit, ExitFormatErrors, ExitLLMError, ExitSandboxError}

// ErrInterrupted is returned when Options.Stop ended the episode early: the
// trajectory is incomplete and must not be graded.
var ErrInterrupted = errors.New("agent: interrupted")

// Limits bound an episode. Zero values take the defaults noted.
type Limits struct {
	// MaxSteps is the soft limit (default 40): once reached, the model is
	// told it must finish, and it gets the steps up to MaxStepsAbsolute.
	MaxSteps int
	// MaxStepsAbsolute is the hard limit (default 50). When it is not above
	// MaxSteps, the episode ends at MaxSteps.
	MaxStepsAbsolute int
	// MaxTokens caps the conversation's size in tokens (default 65536).
	MaxTokens int
	// WallTime caps the episode's duration (zero: none).
	WallTime time.Duration
	// CostLimit caps the model's reported cost in USD (zero: none).
	CostLimit float64
	// CollapseLimit warns the model when it runs the same command this many
	// times in a row (default 3; negative: never).
	CollapseLimit int
	// MaxFormatErrors ends the episode after this many unreadable replies in
	// a row (default 3).
	MaxFormatErrors int
	// StepTimeout kills a command after this long (default 90 s).
	StepTimeout time.Duration
}

// Defaults of Limits.
const (
	DefaultMaxSteps         = 40
	DefaultMaxStepsAbsolute = 50
	DefaultMaxTokens        = 65536
	DefaultCollapseLimit    = 3
	DefaultMaxFormatErrors  = 3
	DefaultStepTimeout      = 90 * time.Second
)

func (l Limits) withDefaults() Limits {
	if l.MaxSteps <= 0 {
		l.MaxSteps = DefaultMaxSteps
	}
	if l.MaxStepsAbsolute == 0 {
		l.MaxStepsAbsolute = DefaultMaxStepsAbsolute
	}
	if l.MaxTokens <= 0 {
		l.MaxTokens = DefaultMaxTokens
	}
	if l.CollapseLimit == 0 {
		l.CollapseLimit = DefaultCollapseLimit
	}
	if l.MaxFormatErrors <= 0 {
		l.MaxFormatErrors = DefaultMaxFormatErrors
	}
	if l.StepTimeout <= 0 {
		l.StepTimeout = DefaultStepTimeout
	}
	return l
}

// Sampling is passed through to the model.
type Sampling struct {
	Temperature *float64
	TopP        *float64
	MaxTokens   int // per reply
}

// Options configure Run.
type Options struct {
	Scaffold *Scaffold
	Mode     Mode
	Model    llm.Client
	Box      sandbox.Sandbox
	Task     *task.Task
	// Workdir is the repository in the box (default /testbed).
	Workdir  string
	Limits   Limits
	Sampling Sampling
	// Env is added to every command the agent runs.
	Env []string
	// OnStep, if set, sees every step as soon as it is done.
	OnStep func(*Step)
	// Stop, when closed, ends the episode after the current step with
	// ErrInterrupted (a graceful shutdown).
	Stop <-chan struct{}
}

// Step is one model call and what came of it. Its JSON form is a step of
// R2E-Gym's and SWE-Factory's trajectory files (their TrajectoryStep), plus
// swerve's own fields.
type Step struct {
	// Index counts the steps from 0 (step_idx); Count is Index+1, the
	// number of steps taken once this one is done (step_count).
	Index int `json:"step_idx"`
	Count int `json:"step_count"`
	// Thought is the reply's text; Reasoning its separate reasoning.
	Thought   string `json:"thought"`
	Reasoning string `json:"reasoning,omitempty"`
	// Action is the step's action(s) in the <function=NAME>
	// <parameter=KEY>VALUE</parameter> </function> form that upstream's
	// parsed_action reads, for every scaffold (mini's bash block is
	// <function=bash> with parameter command); an unreadable reply's is the
	// empty <function=></function>. RawAction is the action as the model
	// wrote it (the bash block's command, the markup, the call's JSON).
	Action    string `json:"action"`
	RawAction string `json:"raw_action,omitempty"`
	Calls     []Call `json:"calls,omitempty"`
	// Observation is what the model was shown in reply.
	Observation string `json:"observation"`
	FormatError string `json:"format_error,omitempty"`
	Done        bool   `json:"done"`
	// Info is the step's environment info: total_time, the seconds the
	// tools took (upstream's info dict).
	Info map[string]any `json:"info"`

	Usage        llm.Usage `json:"token_usage"`
	PromptTokens int       `json:"token_usage_prompt"`
	OutputTokens int       `json:"token_usage_completion"`
	TotalTokens  int       `json:"token_usage_total"`
	Retries      int       `json:"llm_retries,omitempty"`
	// Signals are the audit's flags for the step's calls (see package
	// signals); they never change the reward.
	Signals []signals.Flag `json:"signals,omitempty"`
	// Times in seconds.
	LLMTime   float64 `json:"llm_exec_time"`
	EnvTime   float64 `json:"env_exec_time"`
	StepTime  float64 `json:"total_step_time"`
	TotalTime float64 `json:"total_time_traj"`
}

// ActionMarkup writes calls in the <function=...> form of Step.Action, one
// block per call; no calls give the empty block upstream records for an
// unreadable reply.
func ActionMarkup(calls []Call) string {
	if len(calls) == 0 {
		return "<function=>\n</function>"
	}
	parts := make([]string, len(calls))
	for i, c := range calls {
		parts[i] = RenderFunction(c.Name, c.Args, markupOrder)
	}
	return strings.Join(parts, "\n")
}

// markupOrder is the parameters put first when a call is written out.
var markupOrder = []string{"command", "cmd", "path", "search_term", "old_str", "new_str", "file_text", "insert_line", "view_range"}

// Bounds are the limits an episode ran under, recorded with it. Times are
// whole seconds; 0 means no bound.
type Bounds struct {
	MaxSteps         int `json:"max_steps"`
	MaxStepsAbsolute int `json:"max_steps_absolute"`
	MaxTokenLimit    int `json:"max_token_limit"`
	MaxExecTime      int `json:"max_exec_time"`
	MaxTotalTime     int `json:"max_total_time"`
}

// Bounds gives the limits, with their defaults filled in, as recorded.
func (l Limits) Bounds() Bounds {
	l = l.withDefaults()
	abs := l.MaxStepsAbsolute
	if abs <= l.MaxSteps {
		abs = l.MaxSteps // the episode ends at MaxSteps
	}
	return Bounds{
		MaxSteps: l.MaxSteps, MaxStepsAbsolute: abs, MaxTokenLimit: l.MaxTokens,
		MaxExecTime: int(l.StepTimeout.Round(time.Second) / time.Second), MaxTotalTime: int(l.WallTime.Round(time.Second) / time.Second),
	}
}

// Upstream exit reasons: the exit_reason values of R2E-Gym's and
// SWE-Factory's trajectory files.
const (
	UpstreamAgent             = "agent"                // the agent finished before the step limit
	UpstreamMaxStepLimit      = "max_step_limit"       // it finished on the step that reached the limit
	UpstreamAgentMaxStepLimit = "agent_max_step_limit" // it finished in the grace steps after it
	UpstreamAbsStepLimit      = "abs_step_limit"       // the hard step limit ended it
	UpstreamTokenLimit        = "token_limit"          // the conversation grew too long
	UpstreamTrajTimeLimit     = "traj_time_limit"      // the episode ran out of time
	UpstreamLLMQueryError     = "llm_query_error"      // the model could not be queried
	UpstreamCostLimit         = "cost_limit"           // swerve only: the cost budget is spent
	UpstreamFormatErrors      = "format_errors"        // swerve only: too many unreadable replies
	UpstreamSandboxError      = "sandbox_error"        // swerve only: the box failed
)

// UpstreamExitReason names reason the way upstream's runners do. A
// submission is "agent", "max_step_limit" or "agent_max_step_limit" after
// where the last step (0-based lastIdx) stands against the soft limit
// maxSteps; swerve's reasons that upstream has no limit for (cost_limit,
// format_errors, sandbox_error) keep their own name.
func UpstreamExitReason(reason ExitReason, lastIdx, maxSteps int) string {
	switch reason {
	case ExitSubmitted:
		switch left := maxSteps - lastIdx; {
		case left > 0:
			return UpstreamAgent
		case left == 0:
			return UpstreamMaxStepLimit
		default:
			return UpstreamAgentMaxStepLimit
		}
	case ExitMaxSteps, ExitMaxStepsAbsolute:
		return UpstreamAbsStepLimit
	case ExitTokenLimit, ExitContextLimit:
		return UpstreamTokenLimit
	case ExitWallTime:
		return UpstreamTrajTimeLimit
	case ExitLLMError:
		return UpstreamLLMQueryError
	case ExitCostLimit:
		return UpstreamCostLimit
	case ExitFormatErrors:
		return UpstreamFormatErrors
	case ExitSandboxError:
		return UpstreamSandboxError
	}
	return string(reason)
}

// UpstreamExitReason is t's exit reason in upstream's names.
func (t *Trajectory) UpstreamExitReason() string {
	maxSteps := t.Bounds.MaxSteps
	if maxSteps == 0 {
		maxSteps = DefaultMaxSteps
	}
	return UpstreamExitReason(t.ExitReason, len(t.Steps)-1, maxSteps)
}

// Upgrade brings a trajectory of an older swerve, whose steps counted from
// 1 and kept the action as the model wrote it, to today's form.
func (t *Trajectory) Upgrade() {
	if t.Bounds == (Bounds{}) {
		t.Bounds = Limits{}.Bounds()
	}
	for i := range t.Steps {
		s := &t.Steps[i]
		if s.Count != 0 {
			continue
		}
		s.Count, s.Index = s.Index, s.Index-1
		s.RawAction, s.Action = s.Action, ActionMarkup(s.Calls)
		if s.Info == nil {
			s.Info = map[string]any{"total_time": s.EnvTime}
		}
	}
}

// Trajectory is a finished episode.
type Trajectory struct {
	InstanceID string `json:"instance_id"`
	Scaffold   string `json:"scaffold"`
	Mode       string `json:"mode"`
	Model      string `json:"model"`
	// Offline is set when the model was replay/... or oracle/...: the
	// result says nothing about a real model.
	Offline bool `json:"offline,omitempty"`
	// Bounds are the limits the episode ran under.
	Bounds Bounds `json:"bounds"`
	Steps  []Step `json:"trajectory_steps"`
	// Messages is the whole conversation as sent to the model, plus the
	// last reply.
	Messages []llm.Message `json:"messages"`
	// Tools are the tool schemas exactly as sent (fn mode only).
	Tools      []llm.Tool `json:"tools,omitempty"`
	ExitReason ExitReason `json:"exit_reason"`
	// ExitDetail explains errors and limits in words.
	ExitDetail string `json:"exit_detail,omitempty"`
	// Err is the error behind an llm_error, context_limit or sandbox_error
	// exit, kept so that callers can tell a failure outside the model (a
	// provider outage, a box that died) from the model's own; not recorded.
	Err error `json:"-"`
	// Patch is `git diff --cached --binary` of the repository after the
	// episode, against the commit it started from.
	Patch      string    `json:"output_patch"`
	Submission string    `json:"submission,omitempty"`
	Usage      llm.Usage `json:"token_usage"`
	Cost       float64   `json:"cost"`
	LLMTime    float64   `json:"llm_time"`
	EnvTime    float64   `json:"env_time"`
	Duration   float64   `json:"total_time"`
	Started    time.Time `json:"started"`
}

// Signals are the audit flags of every step, in order.
func (t *Trajectory) Signals() []signals.Flag {
	if t == nil {
		return nil
	}
	var out []signals.Flag
	for _, s := range t.Steps {
		out = append(out, s.Signals...)
	}
	return out
}

// NumSteps is the number of model calls made.
func (t *Trajectory) NumSteps() int { return len(t.Steps) }

// PromptData is what prompt templates see.
type PromptData struct {
	Task             *task.Task
	ProblemStatement string
	Workdir          string
	MaxSteps         int
	Mode             string
	FnCalling        bool
}

// Run runs one episode. The error is non-nil only when the episode could
// not be recorded at all (bad options, ctx cancelled, Stop closed: then the
// partial trajectory comes back with the error); everything else, model
// failures and sandbox deaths included, is an exit reason.
func Run(ctx context.Context, opts Options) (*Trajectory, error) {
	if opts.Scaffold == nil || opts.Model == nil || opts.Box == nil || opts.Task == nil {
		return nil, errors.New("agent: Scaffold, Model, Box and Task are required")
	}
	if !opts.Scaffold.Supports(opts.Mode) {
		return nil, fmt.Errorf("agent: scaffold %s has no %s mode", opts.Scaffold.Name, opts.Mode)
	}
	r := &runner{opts: opts, lim: opts.Limits.withDefaults(), start: time.Now()}
	if r.opts.Workdir == "" {
		r.opts.Workdir = "/testbed"
	}
	r.audit = signals.New(r.opts.Workdir, opts.Task.TestPatch)
	r.env = &Env{Box: opts.Box, Workdir: r.opts.Workdir, StepTimeout: r.lim.StepTimeout, ExtraEnv: opts.Env, Task: opts.Task}
	r.traj = &Trajectory{
		InstanceID: opts.Task.InstanceID,
		Scaffold:   opts.Scaffold.Name,
		Mode:       opts.Mode.String(),
		Model:      opts.Model.Name(),
		Offline:    llm.IsOffline(opts.Model),
		Bounds:     opts.Limits.Bounds(),
		Started:    r.start,
	}
	if opts.Mode == ModeFn {
		r.tools = opts.Scaffold.ToolSchemas()
		r.traj.Tools = r.tools
	}
	err := r.run(ctx)
	r.traj.Duration = time.Since(r.start).Seconds()
	return r.traj, err
}

type runner struct {
	opts  Options
	lim   Limits
	env   *Env
	traj  *Trajectory
	tools []llm.Tool
	start time.Time

	audit     *signals.Auditor
	msgs      []llm.Message
	ctxTokens int // the conversation's size as of the last call, plus what was added since
	base      string
}

func (r *runner) exit(reason ExitReason, detail string) {
	r.traj.ExitReason, r.traj.ExitDetail = reason, detail
}

// exitErr ends the episode for err, keeping it in the trajectory.
func (r *runner) exitErr(reason ExitReason, prefix string, err error) {
	r.exit(reason, prefix+err.Error())
	r.traj.Err = err
}

func (r *runner) run(ctx context.Context) error {
	base, err := PrepareRepo(ctx, r.opts.Box, r.opts.Workdir)
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		r.exitErr(ExitSandboxError, "", err)
		return nil
	}
	r.base = base
	if err := r.seed(); err != nil {
		return err
	}
	if err := r.loop(ctx); err != nil {
		r.traj.Messages = r.msgs
		return err
	}
	r.traj.Messages = r.msgs
	// The patch is taken whatever ended the episode, unless the box is gone.
	pctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Minute)
	defer cancel()
	patch, err := ExtractPatch(pctx, r.opts.Box, r.opts.Workdir, r.base)
	if err != nil {
		if r.traj.ExitReason != ExitSandboxError {
			r.exitErr(ExitSandboxError, "taking the patch: ", err)
		}
		return nil
	}
	r.traj.Patch = patch
	return nil
}

func (r *runner) seed() error {
	data := PromptData{
		Task:             r.opts.Task,
		ProblemStatement: r.opts.Task.ProblemStatement,
		Workdir:          r.opts.Workdir,
		MaxSteps:         r.lim.MaxSteps,
		Mode:             r.opts.Mode.String(),
		FnCalling:        r.opts.Mode == ModeFn,
	}
	sys, err := render("system", r.opts.Scaffold.System, data)
	if err != nil {
		return err
	}
	inst, err := render("instance", r.opts.Scaffold.Instance, data)
	if err != nil {
		return err
	}
	r.msgs = []llm.Message{{Role: llm.RoleSystem, Content: sys}, {Role: llm.RoleUser, Content: inst}}
	r.ctxTokens = llm.EstimateTokens(r.msgs, r.tools)
	return nil
}

func render(name, src string, data PromptData) (string, error) {
	t, err := template.New(name).Option("missingkey=error").Parse(src)
	if err != nil {
		return "", fmt.Errorf("agent: %s template: %w", name, err)
	}
	var b strings.Builder
	if err := t.Execute(&b, data); err != nil {
		return "", fmt.Errorf("agent: %s template: %w", name, err)
	}
	return b.String(), nil
}

// hardLimit is the step count the episode may not pass, and the reason
// given when it does.
func (r *runner) hardLimit() (int, ExitReason) {
	if r.lim.MaxStepsAbsolute <= r.lim.MaxSteps {
		return r.lim.MaxSteps, ExitMaxSteps
	}
	return r.lim.MaxStepsAbsolute, ExitMaxStepsAbsolute
}

func (r *runner) stopRequested() bool { return stop.Chan(r.opts.Stop).Requested() }

func (r *runner) loop(ctx context.Context) error {
	hard, hardReason := r.hardLimit()
	formatErrs := 0
	var lastCmd string
	repeats := 0
	for n := 1; ; n++ {
		if err := ctx.Err(); err != nil {
			return err
		}
		if r.stopRequested() {
			return ErrInterrupted
		}
		switch {
		case n > hard:
			r.exit(hardReason, fmt.Sprintf("%d steps taken", hard))
			return nil
		case r.lim.WallTime > 0 && time.Since(r.start) >= r.lim.WallTime:
			r.exit(ExitWallTime, fmt.Sprintf("the episode ran for %s, over the %s limit", time.Since(r.start).Round(time.Second), r.lim.WallTime))
			return nil
		case r.lim.CostLimit > 0 && r.traj.Cost >= r.lim.CostLimit:
			r.exit(ExitCostLimit, fmt.Sprintf("spent $%.4f of a $%.4f budget", r.traj.Cost, r.lim.CostLimit))
			return nil
		case r.ctxTokens > r.lim.MaxTokens:
			r.exit(ExitTokenLimit, fmt.Sprintf("the conversation holds about %d tokens, over max_token_limit %d", r.ctxTokens, r.lim.MaxTokens))
			return nil
		}

		stepStart := time.Now()
		step := Step{Index: n - 1, Count: n}
		resp, err := r.opts.Model.Complete(ctx, llm.Request{
			Messages:    r.msgs,
			Tools:       r.tools,
			Temperature: r.opts.Sampling.Temperature,
			TopP:        r.opts.Sampling.TopP,
			MaxTokens:   r.opts.Sampling.MaxTokens,
		})
		step.LLMTime = time.Since(stepStart).Seconds()
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if errors.Is(err, llm.ErrContextWindow) {
				r.exitErr(ExitContextLimit, "", err)
			} else {
				r.exitErr(ExitLLMError, "", err)
			}
			return nil
		}
		r.traj.Usage = r.traj.Usage.Add(resp.Usage)
		r.traj.Cost += resp.Cost
		r.traj.LLMTime += step.LLMTime
		step.Usage, step.Retries = resp.Usage, resp.Retries
		step.PromptTokens, step.OutputTokens, step.TotalTokens = resp.Usage.InputTokens, resp.Usage.OutputTokens, resp.Usage.TotalTokens
		if resp.Usage.InputTokens > 0 {
			r.ctxTokens = resp.Usage.InputTokens + resp.Usage.OutputTokens
		} else {
			r.ctxTokens += llm.EstimateTokens([]llm.Message{resp.Message}, nil)
		}
		reply := resp.Message
		reply.Role = llm.RoleAssistant
		r.msgs = append(r.msgs, reply)
		step.Thought, step.Reasoning = reply.Content, reply.Reasoning

		calls, perr := r.parse(reply)
		var obsMsgs []llm.Message
		submitted := false
		envStart := time.Now()
		if perr != nil {
			formatErrs++
			text := "Your last reply could not be carried out: " + perr.Error()
			if h := r.opts.Scaffold.FormatHelp; h != nil {
				text += "\n\n" + h(r.opts.Mode)
			}
			// An unreadable reply still uses up its step: at the soft
			// limit the model must hear about the budget all the same.
			text += r.softNotice(n, hard)
			step.FormatError = perr.Error()
			step.Observation = text
			step.Action, step.RawAction = ActionMarkup(nil), reply.Content
			obsMsgs = r.observationMessages(reply, nil, text)
		} else {
			formatErrs = 0
			var texts []string
			var actions []string
			for i, c := range calls {
				tool, _ := r.opts.Scaffold.Tool(c.Name)
				obs, err := tool.Run(ctx, r.env, c)
				if err != nil {
					if ctx.Err() != nil {
						return ctx.Err()
					}
					r.traj.EnvTime += time.Since(envStart).Seconds()
					step.Calls, step.Action, step.RawAction = calls, ActionMarkup(calls), joinActions(calls)
					step.Observation = "sandbox error: " + err.Error()
					r.finishStep(&step, stepStart)
					r.exitErr(ExitSandboxError, "", err)
					return nil
				}
				key := obs.Command
				if key == "" {
					key = c.Name + "\x00" + c.Raw
				}
				if key == lastCmd {
					repeats++
				} else {
					lastCmd, repeats = key, 1
				}
				if r.lim.CollapseLimit > 0 && repeats >= r.lim.CollapseLimit && !obs.Submitted {
					obs.Text += fmt.Sprintf("\n\nNote: you have now run this same action %d times in a row. Repeating it will not change the result; try something different.", repeats)
				}
				if obs.Submitted {
					submitted = true
					r.traj.Submission = obs.Submission
				}
				if r.opts.Scaffold.ObservationSuffix != "" && !obs.Submitted {
					obs.Text += "\n\n" + r.opts.Scaffold.ObservationSuffix
				}
				texts = append(texts, obs.Text)
				actions = append(actions, c.Raw)
				if submitted {
					calls = calls[:i+1]
					break
				}
			}
			if !submitted {
				texts[len(texts)-1] += r.softNotice(n, hard)
			}
			step.Calls = calls
			step.Action, step.RawAction = ActionMarkup(calls), strings.Join(actions, "\n")
			step.Observation = strings.Join(texts, "\n\n")
			obsMsgs = r.observationMessages(reply, calls, texts...)
		}
		r.traj.EnvTime += time.Since(envStart).Seconds()
		step.EnvTime = time.Since(envStart).Seconds()
		if !submitted {
			r.msgs = append(r.msgs, obsMsgs...)
			r.ctxTokens += llm.EstimateTokens(obsMsgs, nil)
		}
		step.Done = submitted
		r.finishStep(&step, stepStart)
		if submitted {
			r.exit(ExitSubmitted, "")
			return nil
		}
		if formatErrs >= r.lim.MaxFormatErrors {
			r.exit(ExitFormatErrors, fmt.Sprintf("%d unreadable replies in a row; last: %s", formatErrs, step.FormatError))
			return nil
		}
	}
}

// softNotice is what the model is told on step n when it reaches the soft
// step limit and grace steps follow; "" on every other step.
func (r *runner) softNotice(n, hard int) string {
	if n != r.lim.MaxSteps || hard <= r.lim.MaxSteps {
		return ""
	}
	return fmt.Sprintf("\n\nYou have used %d steps, the step budget. Finish now: make your final edits and submit within the next few steps, or the episode ends without your work being checked.", n)
}

func joinActions(calls []Call) string {
	var s []string
	for _, c := range calls {
		s = append(s, c.Raw)
	}
	return strings.Join(s, "\n")
}

func (r *runner) finishStep(step *Step, stepStart time.Time) {
	step.StepTime = time.Since(stepStart).Seconds()
	step.TotalTime = time.Since(r.start).Seconds()
	if step.Info == nil {
		step.Info = map[string]any{"total_time": step.EnvTime}
	}
	for _, c := range step.Calls {
		step.Signals = append(step.Signals, r.audit.Call(step.Index, c.Name, c.Args)...)
	}
	r.traj.Steps = append(r.traj.Steps, *step)
	if r.opts.OnStep != nil {
		r.opts.OnStep(&r.traj.Steps[len(r.traj.Steps)-1])
	}
}

// observationMessages turns observations into the messages the model sees:
// in fn mode one tool message per call of the reply (every call must be
// answered), in text mode one user message.
func (r *runner) observationMessages(reply llm.Message, calls []Call, texts ...string) []llm.Message {
	if r.opts.Mode != ModeFn || len(reply.ToolCalls) == 0 {
		return []llm.Message{{Role: llm.RoleUser, Content: strings.Join(texts, "\n\n")}}
	}
	out := make([]llm.Message, 0, len(reply.ToolCalls))
	for i, tc := range reply.ToolCalls {
		text := texts[0]
		if calls != nil {
			if i < len(texts) {
				text = texts[i]
			} else {
				text = "This call was not run: an earlier call in the same reply ended the episode."
			}
		}
		out = append(out, llm.Message{Role: llm.RoleTool, ToolCallID: tc.ID, Name: tc.Function.Name, Content: text})
	}
	return out
}
