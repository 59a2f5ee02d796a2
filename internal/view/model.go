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
	// Status is "graded", or "error" for a task that failed outside the
	// model (its reward is no result).
	Status     string
	Reward     float64
	ExitReason string
	Error      string
	Turns      int
	Tokens     int
	Cost       float64
	Seconds    float64
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
	// Flags are the audit's flags, step by step.
	Flags []Flag
	Steps []Step
	// Raw are the task's files, relative to the run directory, that the
	// page links to.
	Raw []string
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
