package serve

import (
	"context"
	"encoding/json"
	"time"

	"github.com/swerve-dev/swerve/internal/agent/signals"
	"github.com/swerve-dev/swerve/internal/task"
)

// Rollouts runs one episode per call: open the task's box, let the policy
// work, take the patch, grade it in a fresh box, and report. Rollout must
// return when ctx is cancelled (a client that went away, a hard stop),
// having removed every box it opened. An error return means the rollout could
// not run at all; the server turns it into an infrastructure-error row, never
// a 5xx. A model failure is not an error: it is a result with reward 0 and its
// exit reason.
type Rollouts interface {
	Rollout(ctx context.Context, req *RolloutRequest) (*RolloutResult, error)
}

// Queuer is implemented by Rollouts that want to hear of a rollout as soon
// as it is admitted (its task found), before it waits for a slot: a warm
// pool opens its boxes meanwhile. The function Queued returns is called
// once the request ends, whether it ran, was cancelled or left in a drain.
type Queuer interface {
	Queued(req *RolloutRequest) (ended func())
}

// RolloutsFunc adapts a function to Rollouts.
type RolloutsFunc func(ctx context.Context, req *RolloutRequest) (*RolloutResult, error)

// Rollout calls f.
func (f RolloutsFunc) Rollout(ctx context.Context, req *RolloutRequest) (*RolloutResult, error) {
	return f(ctx, req)
}

// RolloutRequest is what one POST /run asks for.
type RolloutRequest struct {
	// Row is the whole Gym row as posted (task fields, wrapper fields,
	// responses_create_params).
	Row Row
	// Task is the row's task, found by Options.Tasks (in the dataset by
	// instance_id, else from the row's fields); nil when the server has no
	// Tasks.
	Task *task.Task
	// InstanceID is the row's instance_id ("" when it has none).
	InstanceID string
	// RolloutID names the rollout in logs: _ng_rollout_id, else
	// {task}-{rollout} from _ng_task_index and _ng_rollout_index.
	RolloutID string
	// Params is responses_create_params: input, tools and sampling.
	Params CreateParams
	// PolicyBaseURL and PolicyAPIKey, when set, point this rollout's model
	// calls at the trainer's policy server.
	PolicyBaseURL string
	PolicyAPIKey  string
}

// RolloutResult is what one rollout produced.
type RolloutResult struct {
	// Input, when set, replaces responses_create_params.input in the
	// answer: the system and user messages the harness actually sent.
	Input json.RawMessage
	// Model is the policy's model name, for response.model.
	Model string
	// Output is the trajectory as Responses output items; token fields sit
	// on the last item of each model call when the policy server gave them.
	Output []OutputItem
	Usage  *Usage
	// Steps is the number of model calls.
	Steps int

	Patch      string
	Reward     float64
	Resolved   bool
	EvalReport json.RawMessage
	// ExitReason is why the agent stopped (submitted, step_limit, format
	// error, ...), in swerve's names.
	ExitReason string
	Timings    Timings
	// History is the proof that the agent's box held nothing past the
	// base commit (package history), as JSON.
	History json.RawMessage
	// Signals are the audit's flags for the trajectory (package signals),
	// kept whatever the outcome; they never change the reward.
	Signals []signals.Flag

	// Scaffold, Dataset and Started say what ran the rollout and when, for
	// readers of the rows (swerve view's header); empty when unknown.
	Scaffold string
	Dataset  string
	Started  time.Time

	// InfraError, when set, is the kind of infrastructure failure (box,
	// image, engine, provider, grader, disk) that kept this rollout from a
	// verdict; InfraDetail says what happened. Such a rollout has reward 0
	// and is reported apart: it says nothing about the policy.
	InfraError  string
	InfraDetail string
}
