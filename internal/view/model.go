// Package view is swerve's web viewer for runs and rollouts: a run
// overview with a filterable, sortable task table, a page per task (every
// step, the patch as a diff, the test output with the failing tests marked,
// the reward and its reason) and two runs side by side. It reads swerve's
// run directories and <exp_name>.jsonl (the R2E-Gym / SWE-Factory
// Trajectory rows), `swerve collect` rollout JSONL (NeMo Gym rows) and
// mini-swe-agent .traj.json files.
//
// The server never holds a run's trajectories: it builds, once per file, an
// index of one summary per task and where the task's row lies in its file,
// and reads a task's row again when its page is asked for. The index is
// rebuilt when the file's size or modification time changes.
package view

import (
	"encoding/json"
	"strings"
	"time"
)

// Formats the readers know.
const (
	FormatSwerve = "swerve" // <exp_name>.jsonl rows (R2E-Gym / SWE-Factory Trajectory)
	FormatRecord = "record" // a swerve run directory's <instance_id>/result.json
	FormatGym    = "gym"    // NeMo Gym rollout rows (swerve collect, ng_collect_rollouts)
	FormatMini   = "mini"   // mini-swe-agent .traj.json
)

// Summary is what the overview and the table know of a task: small, held in
// memory for every task of a run.
type Summary struct {
	// Key names the task in URLs: its instance id, with "#N" added for the
	// N-th further row of the same id (K rollouts of one task).
	Key        string
	InstanceID string
	Repo       string
	Scaffold   string
	Model      string
	// Offline is set when the row says its model was no real model
	// (replay/..., oracle/gold), or the name says so.
	Offline bool
	// Status is "graded", or "error" for a task that failed outside the
	// model (its reward is no result).
	Status     string
	Reward     float64
	ExitReason string
	Error      string
	// Reason is the grader's reason for the reward (reward_reason), when
	// the row has one.
	Reason  string
	Turns   int
	Tokens  int
	Cost    float64
	Seconds float64
	// Started and Finished bound the task's attempt (swerve's records
	// only; zero elsewhere).
	Started, Finished time.Time
	Tampered          bool
	// Signals counts the audit's flags on the trajectory (package
	// signals; swerve's rows only).
	Signals int

	// where the task's row is: file, and for a JSONL file the byte range of
	// its line.
	file   string
	offset int64
	length int64
	format string
}

// Resolved reports whether the task was graded with reward 1.
func (s *Summary) Resolved() bool { return s.Status != "error" && s.Reward == 1 }

// Outcome is "resolved", "unresolved", "error" or "ungraded" (a
// trajectory with no grade, such as mini-swe-agent's).
func (s *Summary) Outcome() string {
	switch {
	case s.Status == "error":
		return "error"
	case s.Status == "ungraded":
		return "ungraded"
	case s.Reward == 1:
		return "resolved"
	}
	return "unresolved"
}

// Why says why a task did not get reward 1, in a few words: the error of
// an error (its kind first), else the grader's reason, and the exit reason
// when the episode did not end by submitting. It is "" for a resolved or
// ungraded task.
func (s *Summary) Why() string {
	switch s.Outcome() {
	case "resolved", "ungraded":
		return ""
	case "error":
		if s.Error == "" {
			return "error (no detail recorded)"
		}
		return s.Error
	}
	var parts []string
	if s.Reason != "" && s.Reason != "resolved" {
		parts = append(parts, s.Reason)
	}
	if !normalExit(s.ExitReason) {
		parts = append(parts, "ended by "+s.ExitReason)
	}
	if len(parts) == 0 {
		return "no reason recorded"
	}
	return strings.Join(parts, "; ")
}

// normalExit reports whether an exit reason is the model's own ending
// (swerve's, upstream's and mini-swe-agent's names for it), or unknown.
func normalExit(e string) bool {
	switch e {
	case "", "submitted", "agent", "Submitted", "max_step_limit", "agent_max_step_limit":
		return true
	}
	return false
}

// Detail is one task read whole for its page.
type Detail struct {
	Summary
	ProblemStatement string
	Patch            string
	TestOutput       string
	RewardReason     string
	Tamper           []string
	ExitDetail       string
	// Failing are the tests of FAIL_TO_PASS and PASS_TO_PASS that failed,
	// from the grader's report; Passing the ones that passed.
	FailF2P, FailP2P []string
	PassF2P, PassP2P []string
	Report           json.RawMessage
	// Prompts are the conversation's opening messages, up to the first
	// user message: the system prompt and the task's prompt as sent.
	Prompts []Prompt
	// Flags are the audit's flags, step by step.
	Flags []Flag
	Steps []Step
	// Raw are the task's files, relative to the run directory, that the
	// page links to.
	Raw []string
}

// ShowProblem reports whether the problem statement needs showing apart:
// not when it is one of the prompts word for word (a Gym row's is its
// first user message).
func (d *Detail) ShowProblem() bool {
	if d.ProblemStatement == "" {
		return false
	}
	for _, p := range d.Prompts {
		if p.Text == d.ProblemStatement {
			return false
		}
	}
	return true
}

// Prompt is one message the model was given before its first turn.
type Prompt struct {
	Role, Text string
}

// Flag is one audit flag: the step, what it reached for, and the command.
type Flag struct {
	Step    int    `json:"step"`
	Kind    string `json:"kind"`
	Command string `json:"command"`
}

// Step is one model turn and what came of it.
type Step struct {
	Index       int
	Thought     string
	Reasoning   string
	Action      string
	Observation string
	FormatError string
	Done        bool
	LLMTime     float64
	EnvTime     float64
	PromptTok   int
	OutputTok   int
	TotalTok    int
	// Signals are the audit's flags for the step's calls.
	Signals []Flag

	// For the page (see forPage): the observation split, whether the
	// action gets a block of its own, and the action as a call.
	O    Obs
	Show bool
	Fn   *Call
}

// Kind names the step for the page: "submit", "format-error", "action" or
// "message" (a reply with no action).
func (s Step) Kind() string {
	switch {
	case s.FormatError != "":
		return "format-error"
	case s.Done:
		return "submit"
	case s.Action != "" && s.Action != "<function=>\n</function>":
		return "action"
	}
	return "message"
}
