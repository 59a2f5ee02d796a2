package run

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/swerve-dev/swerve/internal/agent"
	"github.com/swerve-dev/swerve/internal/fsutil"
	"github.com/swerve-dev/swerve/internal/llm"
	"github.com/swerve-dev/swerve/internal/sandbox"
	"github.com/swerve-dev/swerve/internal/task"
)

// removeStaleTemps deletes the temporary files that a writer killed between
// creating and renaming them left under trajDir (its top level and each
// task's directory): those whose process is gone, and those without a
// process id in their name. A live process's are left alone.
func removeStaleTemps(trajDir string) {
	for _, pattern := range []string{filepath.Join(trajDir, ".*.tmp*"), filepath.Join(trajDir, "*", ".*.tmp*")} {
		matches, _ := filepath.Glob(pattern)
		for _, m := range matches {
			if pid, ok := fsutil.TempOwner(filepath.Base(m)); ok && sandbox.ProcessAlive(pid) {
				continue
			}
			os.Remove(m)
		}
	}
}

// Metadata is <instance_id>/metadata.json: the keys SWE-Factory's runner
// writes (instance_id, docker_image, repo, issue_number, reward,
// reward_calc_time, exit_reason, exp_name, test_timeout, token_usage with
// conversation_total), then swerve's.
type Metadata struct {
	InstanceID  string `json:"instance_id"`
	DockerImage string `json:"docker_image"`
	Repo        string `json:"repo"`
	// IssueNumber is the dataset row's issue_number (or the first of its
	// issue_numbers); null when it has none.
	IssueNumber    json.RawMessage `json:"issue_number"`
	Reward         float64         `json:"reward"`
	RewardCalcTime float64         `json:"reward_calc_time"`
	// ExitReason is in upstream's names; SwerveExitReason is swerve's own.
	ExitReason       string     `json:"exit_reason"`
	ExpName          string     `json:"exp_name"`
	TestTimeout      bool       `json:"test_timeout"`
	TokenUsage       TokenUsage `json:"token_usage"`
	SwerveExitReason string     `json:"swerve_exit_reason"`
	RewardReason     string     `json:"reward_reason"`
	Model            string     `json:"model"`
	Offline          bool       `json:"offline,omitempty"`
	// Signals counts the trajectory's audit flags by kind.
	Signals map[string]int `json:"signals,omitempty"`
	// Standing says whether the task was graded, or failed outside the
	// model: its reward is then no result (see Record).
	Standing
}

// TokenUsage is the token counts of metadata.json and reward_summary.json.
// ConversationTotal is the last step's total: the conversation's size at
// its end.
type TokenUsage struct {
	Input             int  `json:"input"`
	Output            int  `json:"output"`
	Total             int  `json:"total"`
	ConversationTotal int  `json:"conversation_total"`
	Estimated         bool `json:"estimated,omitempty"`
}

func usageOf(rec *Record) TokenUsage {
	u := rec.Usage()
	tu := TokenUsage{Input: u.InputTokens, Output: u.OutputTokens, Total: u.TotalTokens, Estimated: u.Estimated}
	tu.ConversationTotal = tu.Total
	if t := rec.Trajectory; t != nil && len(t.Steps) > 0 {
		tu.ConversationTotal = t.Steps[len(t.Steps)-1].TotalTokens
	}
	return tu
}

// upstreamExit is rec's exit reason in upstream's names.
func upstreamExit(rec *Record) string {
	if rec.Trajectory != nil {
		return rec.Trajectory.UpstreamExitReason()
	}
	return agent.UpstreamExitReason(agent.ExitReason(rec.ExitReason), -1, agent.DefaultMaxSteps)
}

// dsOf is the dataset row a record carries as "ds": the task's row as the
// dataset has it, with instance_id and docker_image added when the row
// names them otherwise (upstream's resume reads ds.docker_image and
// ds.instance_id).
func dsOf(t *task.Task) json.RawMessage {
	row := map[string]json.RawMessage{}
	if len(t.Raw) > 0 && json.Unmarshal(t.Raw, &row) != nil {
		row = map[string]json.RawMessage{}
	}
	put := func(k, v string) {
		if _, ok := row[k]; !ok {
			b, _ := json.Marshal(v)
			row[k] = b
		}
	}
	put("instance_id", t.InstanceID)
	put("docker_image", t.Image)
	put("repo", t.Repo)
	put("problem_statement", t.ProblemStatement)
	b, err := json.Marshal(row)
	if err != nil {
		return nil
	}
	return b
}

// recordDS is rec's ds, made from the record for records of older
// versions, which kept none.
func recordDS(rec *Record) json.RawMessage {
	if len(rec.DS) > 0 {
		return rec.DS
	}
	return dsOf(&task.Task{InstanceID: rec.InstanceID, Image: rec.DockerImage, Repo: rec.Repo, ProblemStatement: rec.ProblemStatement})
}

// issueNumber reads a row's issue_number, or the first of its
// issue_numbers; null when there is none.
func issueNumber(ds json.RawMessage) json.RawMessage {
	var row struct {
		One  json.RawMessage   `json:"issue_number"`
		Many []json.RawMessage `json:"issue_numbers"`
	}
	if json.Unmarshal(ds, &row) == nil {
		if len(row.One) > 0 && string(row.One) != "null" {
			return row.One
		}
		if len(row.Many) > 0 {
			return row.Many[0]
		}
	}
	return json.RawMessage("null")
}

// writeTask writes a task's files, result.json last: once it exists the
// task is finished.
func writeTask(trajDir string, rec *Record) error {
	dir := TaskDir(trajDir, rec.InstanceID)
	rec.UpstreamExitReason = upstreamExit(rec)
	meta := Metadata{
		InstanceID: rec.InstanceID, DockerImage: rec.DockerImage, Repo: rec.Repo, IssueNumber: issueNumber(recordDS(rec)),
		Reward: rec.Reward, RewardReason: rec.RewardReason, RewardCalcTime: rec.RewardCalcTime,
		ExitReason: rec.UpstreamExitReason, SwerveExitReason: rec.ExitReason, ExpName: rec.ExpName, TestTimeout: rec.TestTimeout,
		TokenUsage: usageOf(rec), Model: rec.Model, Offline: rec.Offline, Signals: rec.Signals,
		Standing: rec.Standing,
	}
	mj, err := json.MarshalIndent(meta, "", "  ")
	if err != nil {
		return err
	}
	rj, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	files := []struct {
		name string
		data []byte
	}{
		{"agent.log", []byte(agentLog(rec))},
		{"output_patch.diff", []byte(rec.Patch)},
		{"test_output.log", []byte(rec.TestOutput)},
		{"metadata.json", mj},
		{"result.json", rj},
	}
	for _, f := range files {
		if err := fsutil.WriteFileAtomic(filepath.Join(dir, f.name), f.data, f.name == "result.json"); err != nil {
			return err
		}
	}
	return nil
}

// agentLog renders a trajectory for people. Every entry starts with a
// header line in the shape of upstream's agent.log ("2006-01-02 15:04:05
// [INFO] file:line  message"), and the messages upstream's scripts look
// for (THOUGHT:, ACTION:, OBSERVATION:, the exit and reward lines) are
// there in its words' place.
func agentLog(rec *Record) string {
	var b strings.Builder
	at := rec.Started
	if t := rec.Trajectory; t != nil && !t.Started.IsZero() {
		at = t.Started
	}
	logf := func(when time.Time, level, src, format string, args ...any) {
		fmt.Fprintf(&b, "%s [%s] %s  ", when.UTC().Format("2006-01-02 15:04:05"), level, src)
		fmt.Fprintf(&b, format, args...)
		b.WriteString("\n")
	}
	head := fmt.Sprintf("instance %s · scaffold %s (%s) · model %s", rec.InstanceID, rec.Scaffold, rec.Mode, rec.Model)
	if rec.Offline {
		head += " (offline: not a real model)"
	}
	logf(at, "INFO", "edit.py:0", "%s", head)
	logf(at, "INFO", "edit.py:0", "Starting editagent on Docker image: %s", rec.DockerImage)
	logf(at, "INFO", "edit.py:0", "Using LLM: %s", rec.Model)
	if rec.Failed() {
		logf(at, "ERROR", "edit.py:0", "error (%s, during %s, attempt %d): %s", rec.ErrorKind, rec.ErrorStage, rec.Attempts, rec.Error)
	}
	if t := rec.Trajectory; t != nil {
		logf(at, "INFO", "edit.py:0", "Max Steps: %d", t.Bounds.MaxSteps)
		for i, m := range t.Messages[:min(2, len(t.Messages))] {
			label := "System Prompt"
			if i == 1 {
				label = "User Prompt"
			}
			logf(at, "INFO", "agent.py:0", "%s: %s", label, m.Content)
		}
		for _, s := range t.Steps {
			when := at.Add(time.Duration(s.TotalTime * float64(time.Second)))
			logf(when, "INFO", "agent.py:0", "=== step %d (model %.2fs, tools %.2fs, tokens in %d out %d)", s.Count, s.LLMTime, s.EnvTime, s.PromptTokens, s.OutputTokens)
			if s.Retries > 0 {
				logf(when, "WARNING", "agent.py:0", "the model call was retried %d times before this reply", s.Retries)
			}
			logf(when, "INFO", "agent.py:0", "Prompt Tokens: %d\nCompletion Tokens: %d\nTotal Tokens: %d", s.PromptTokens, s.OutputTokens, s.TotalTokens)
			logf(when, "INFO", "agent.py:0", "THOUGHT:\n%s\n", s.Thought)
			if s.FormatError != "" {
				logf(when, "WARNING", "agent.py:0", "Format error: %s", s.FormatError)
			} else {
				logf(when, "INFO", "agent.py:0", "ACTION:\n%s\n", s.RawAction)
			}
			logf(when, "INFO", "agent.py:0", "OBSERVATION:\n%s\n", s.Observation)
		}
		at = at.Add(time.Duration(t.Duration * float64(time.Second)))
		if line := exitLogLine(rec); line != "" {
			logf(at, "INFO", "agent.py:0", "%s", line)
		}
	}
	exit := fmt.Sprintf("=== exit: %s (swerve: %s)", rec.UpstreamExitReason, rec.ExitReason)
	if rec.ExitDetail != "" {
		exit += " " + rec.ExitDetail
	}
	logf(at, "INFO", "edit.py:0", "%s", exit)
	if rec.Failed() {
		given := "it runs again next time"
		if rec.GivenUp {
			given = "given up"
		}
		logf(at, "ERROR", "edit.py:0", "=== no reward: %s error (%s): %s", rec.ErrorKind, given, rec.Error)
		return b.String()
	}
	logf(at, "WARNING", "edit.py:0", "time taken to calculate reward in seconds: %.2f", rec.RewardCalcTime)
	logf(at, "INFO", "edit.py:0", "=== reward: %g (%s)", rec.Reward, rec.RewardReason)
	logf(at, "INFO", "edit.py:0", "editagent completed for Docker image: %s", rec.DockerImage)
	return b.String()
}

// exitLogLine is the line upstream's agent logs when an episode ends this
// way; "" for the reasons it has no line for.
func exitLogLine(rec *Record) string {
	t := rec.Trajectory
	n, max := len(t.Steps), t.Bounds.MaxSteps
	switch rec.UpstreamExitReason {
	case agent.UpstreamAgent:
		return fmt.Sprintf("Agent has finished naturally before step limit. current step count: %d. max steps: %d.", n, max)
	case agent.UpstreamMaxStepLimit:
		return fmt.Sprintf("Agent finised on reaching the maximum number of steps: %d. current step count: %d.", max, n)
	case agent.UpstreamAgentMaxStepLimit:
		return fmt.Sprintf("Agent has finished after continuing past the max steps: %d. current step count: %d.", max, n)
	case agent.UpstreamTokenLimit:
		return fmt.Sprintf("Agent reached max tokens: %d. Current token count: %d. Exiting.", t.Bounds.MaxTokenLimit, usageOf(rec).ConversationTotal)
	case agent.UpstreamAbsStepLimit:
		return fmt.Sprintf("Agent reached max steps: %d. Exiting.", t.Bounds.MaxStepsAbsolute)
	case agent.UpstreamTrajTimeLimit:
		return fmt.Sprintf("Agent reached max time: %d. Exiting.", t.Bounds.MaxTotalTime)
	case agent.UpstreamLLMQueryError:
		return "Error querying LLM: " + rec.ExitDetail
	}
	return ""
}

// Line is one line of <exp_name>.jsonl: a row of R2E-Gym's and
// SWE-Factory's trajectory files (their Trajectory model, with "history",
// the whole conversation, as SWE-Factory's runner adds it), then swerve's
// own fields.
type Line struct {
	TrajectorySteps  []agent.Step   `json:"trajectory_steps"`
	ProblemStatement string         `json:"problem_statement"`
	DockerImage      string         `json:"docker_image"`
	ExpName          string         `json:"exp_name"`
	EnvArgs          map[string]any `json:"env_args"`
	AgentArgs        AgentArgs      `json:"agent_args"`
	// DS is the task's dataset row.
	DS json.RawMessage `json:"ds"`
	agent.Bounds
	// MaxLLMTime is 0: swerve's agent puts no bound of its own on a model
	// call (the provider's timeout does).
	MaxLLMTime     int             `json:"max_llm_time"`
	ExitReason     string          `json:"exit_reason"`
	OutputPatch    string          `json:"output_patch"`
	Reward         float64         `json:"reward"`
	RewardCalcTime float64         `json:"reward_calc_time"`
	TestOutput     string          `json:"test_output"`
	History        []llm.Message   `json:"history"`
	CustomTests    map[string]any  `json:"custom_test_outputs"`
	Reproduction   []int           `json:"reproduction_test_scores"`
	InstanceID     string          `json:"instance_id"`
	Scaffold       string          `json:"scaffold"`
	Mode           string          `json:"mode"`
	Model          string          `json:"model"`
	Offline        bool            `json:"offline,omitempty"`
	SwerveExit     string          `json:"swerve_exit_reason"`
	ExitDetail     string          `json:"exit_detail,omitempty"`
	RewardReason   string          `json:"reward_reason"`
	TestTimeout    bool            `json:"test_timeout"`
	TokenUsage     TokenUsage      `json:"token_usage"`
	Cost           float64         `json:"cost"`
	TotalTime      float64         `json:"total_time"`
	Tools          []llm.Tool      `json:"tools,omitempty"`
	Config         map[string]any  `json:"config,omitempty"`
	Report         json.RawMessage `json:"report,omitempty"`
	// Signals counts the audit flags by kind (swerve's field; the steps
	// list each flag).
	Signals map[string]int `json:"signals,omitempty"`
}

// AgentArgs is a line's agent_args, in the shape of upstream's: the
// prompts as sent, the model and, in function-calling mode,
// other_args.tools_schema, the tools offered (upstream's post-processing
// wraps the messages with them).
type AgentArgs struct {
	SystemPrompt   string         `json:"system_prompt"`
	InstancePrompt string         `json:"instance_prompt"`
	CommandFiles   []string       `json:"command_files"`
	LLMName        string         `json:"llm_name"`
	UseDemo        bool           `json:"use_demo"`
	OtherArgs      map[string]any `json:"other_args"`
}

// lineOf makes rec's line; testOutput is the task's test_output.log.
func lineOf(rec *Record, testOutput string) Line {
	l := Line{
		InstanceID: rec.InstanceID, DockerImage: rec.DockerImage, ExpName: rec.ExpName, Scaffold: rec.Scaffold, Mode: rec.Mode,
		Model: rec.Model, Offline: rec.Offline, ExitReason: upstreamExit(rec), SwerveExit: rec.ExitReason, ExitDetail: rec.ExitDetail, Signals: rec.Signals,
		OutputPatch: rec.Patch, Reward: rec.Reward, RewardReason: rec.RewardReason, RewardCalcTime: rec.RewardCalcTime,
		TestTimeout: rec.TestTimeout, TokenUsage: usageOf(rec), Config: rec.Config, Report: rec.Report,
		ProblemStatement: rec.ProblemStatement, TrajectorySteps: []agent.Step{}, TestOutput: testOutput,
		EnvArgs: map[string]any{"docker_image": rec.DockerImage}, DS: recordDS(rec), Bounds: agent.Limits{}.Bounds(),
		History: []llm.Message{}, CustomTests: map[string]any{}, Reproduction: []int{},
		AgentArgs: AgentArgs{LLMName: rec.Model, CommandFiles: []string{}, OtherArgs: map[string]any{}},
	}
	if t := rec.Trajectory; t != nil {
		l.Tools, l.Cost, l.TotalTime, l.Bounds = t.Tools, t.Cost, t.Duration, t.Bounds
		if t.Steps != nil {
			l.TrajectorySteps = t.Steps
		}
		if t.Messages != nil {
			l.History = t.Messages
		}
		if len(t.Messages) > 0 {
			l.AgentArgs.SystemPrompt = t.Messages[0].Content
		}
		if len(t.Messages) > 1 {
			l.AgentArgs.InstancePrompt = t.Messages[1].Content
		}
		if len(t.Tools) > 0 {
			l.AgentArgs.OtherArgs["tools_schema"] = t.Tools
		}
	}
	return l
}

// RewardSummary is reward_summary.json: upstream's total, reward_1 and
// reward_0, then swerve's. Total, the reward lists, Accuracy, AverageTurns
// and the exit reasons cover the graded tasks only; the tasks that ended in
// an infrastructure error are counted apart (Errors and what follows);
// Tokens and Models cover both, as both spent tokens.
type RewardSummary struct {
	Total        int        `json:"total"`
	Reward1      IDs        `json:"reward_1"`
	Reward0      IDs        `json:"reward_0"`
	Accuracy     float64    `json:"accuracy"`
	AverageTurns float64    `json:"average_turns"`
	Tokens       TokenUsage `json:"tokens"`
	// ExitReasons counts upstream's exit reasons, SwerveExitReasons
	// swerve's own.
	ExitReasons       map[string]int `json:"exit_reasons"`
	SwerveExitReasons map[string]int `json:"swerve_exit_reasons"`
	Errors            int            `json:"errors"`
	ErrorIDs          []string       `json:"error_ids"`
	ErrorKinds        map[string]int `json:"error_kinds"`
	// ErrorReasons is each errored task's "<kind>: <error>".
	ErrorReasons map[string]string `json:"error_reasons"`
	// GivenUp lists the errored tasks at the attempt bound.
	GivenUp IDs      `json:"given_up"`
	Models  []string `json:"models"`
	Offline bool     `json:"offline,omitempty"`
	// Signals sums the tasks' audit flags by kind, errors included;
	// SignalIDs lists the tasks with any. Absent when no task has one.
	Signals   map[string]int `json:"signals,omitempty"`
	SignalIDs *IDs           `json:"signal_ids,omitempty"`
}

// IDs counts instance ids.
type IDs struct {
	Count       int      `json:"count"`
	InstanceIDs []string `json:"instance_ids"`
}

// pred is one SWE-bench prediction.
type pred struct {
	InstanceID string `json:"instance_id"`
	Model      string `json:"model_name_or_path"`
	Patch      string `json:"model_patch"`
}

// The run-level files WriteAggregates writes, besides <exp_name>.jsonl.
const (
	trajectoriesFile = "trajectories.jsonl"
	rejectionFile    = "trajectories_rejection_sampling.jsonl"
	summaryFile      = "reward_summary.json"
	predsFile        = "preds.json"
)

// WriteAggregates rebuilds the run-level files from the task records
// under trajDir, in task-directory order (instance-id order for ids made of
// safe characters). Each record is read, written to every file it belongs
// in and let go: only the summary's counters and id lists are held, so
// memory does not grow with the tasks' trajectories. Every file is written
// under a temporary name and renamed at the end.
//
// It first removes the temporary files of killed writers, and refuses
// (with ForeignError) to replace a file swerve did not write; see
// CheckAggregates.
func WriteAggregates(trajDir, expName string) (*RewardSummary, error) {
	removeStaleTemps(trajDir)
	man, err := checkAggregates(trajDir, expName)
	if err != nil {
		return nil, err
	}
	dirs, err := filepath.Glob(filepath.Join(trajDir, "*", "result.json"))
	if err != nil {
		return nil, err
	}
	// By task directory: instance-id order for ids of safe characters.
	sort.Slice(dirs, func(i, j int) bool {
		return filepath.Base(filepath.Dir(dirs[i])) < filepath.Base(filepath.Dir(dirs[j]))
	})
	names := aggregateNames(expName)
	outs := make(map[string]*streamFile, len(names))
	defer func() {
		for _, f := range outs {
			f.abort()
		}
	}()
	for _, name := range names {
		f, err := newStreamFile(filepath.Join(trajDir, name))
		if err != nil {
			return nil, err
		}
		outs[name] = f
	}
	exp, all, rs, preds := outs[expName+".jsonl"], outs[trajectoriesFile], outs[rejectionFile], outs[predsFile]
	sum := &RewardSummary{
		Reward1: IDs{InstanceIDs: []string{}}, Reward0: IDs{InstanceIDs: []string{}}, ExitReasons: map[string]int{}, SwerveExitReasons: map[string]int{},
		ErrorIDs: []string{}, ErrorKinds: map[string]int{}, ErrorReasons: map[string]string{}, GivenUp: IDs{InstanceIDs: []string{}},
		Models: []string{},
	}
	models := map[string]bool{}
	turns, npreds := 0, 0
	seen := map[string]bool{}
	for _, path := range dirs {
		rec, err := loadRecord(path)
		if err != nil {
			return nil, err
		}
		id := rec.InstanceID
		if seen[id] {
			continue
		}
		seen[id] = true
		u := usageOf(rec)
		sum.Tokens.Input += u.Input
		sum.Tokens.Output += u.Output
		sum.Tokens.Total += u.Total
		sum.Tokens.ConversationTotal += u.ConversationTotal
		sum.Tokens.Estimated = sum.Tokens.Estimated || u.Estimated
		sum.Offline = sum.Offline || rec.Offline
		if len(rec.Signals) > 0 {
			// Errors included: a flag stands whatever the outcome.
			if sum.Signals == nil {
				sum.Signals, sum.SignalIDs = map[string]int{}, &IDs{InstanceIDs: []string{}}
			}
			for k, n := range rec.Signals {
				sum.Signals[k] += n
			}
			sum.SignalIDs.Count++
			sum.SignalIDs.InstanceIDs = append(sum.SignalIDs.InstanceIDs, id)
		}
		if !models[rec.Model] {
			models[rec.Model] = true
			sum.Models = append(sum.Models, rec.Model)
		}
		if rec.Failed() {
			// No reward: in none of the files that carry rewards.
			sum.Errors++
			sum.ErrorIDs = append(sum.ErrorIDs, id)
			sum.ErrorKinds[string(rec.ErrorKind)]++
			sum.ErrorReasons[id] = string(rec.ErrorKind) + ": " + rec.Error
			if rec.GivenUp {
				sum.GivenUp.Count++
				sum.GivenUp.InstanceIDs = append(sum.GivenUp.InstanceIDs, id)
			}
			continue
		}
		sum.Total++
		if rec.Reward == 1 {
			sum.Reward1.Count++
			sum.Reward1.InstanceIDs = append(sum.Reward1.InstanceIDs, id)
		} else {
			sum.Reward0.Count++
			sum.Reward0.InstanceIDs = append(sum.Reward0.InstanceIDs, id)
		}
		sum.ExitReasons[rec.UpstreamExitReason]++
		sum.SwerveExitReasons[rec.ExitReason]++
		turns += rec.Steps()
		sep := ",\n"
		if npreds == 0 {
			sep = "[\n"
		}
		npreds++
		pj, err := json.MarshalIndent(pred{InstanceID: id, Model: rec.Model, Patch: rec.Patch}, "  ", "  ")
		if err != nil {
			return nil, err
		}
		preds.write([]byte(sep + "  "))
		preds.write(pj)
		testOutput, _ := os.ReadFile(filepath.Join(filepath.Dir(path), "test_output.log"))
		if err := exp.line(lineOf(rec, string(testOutput))); err != nil {
			return nil, err
		}
		if t := rec.Trajectory; t != nil {
			var v any = t.Messages
			if len(t.Tools) > 0 {
				v = map[string]any{"messages": t.Messages, "tools": t.Tools}
			}
			b, err := json.Marshal(v)
			if err != nil {
				return nil, err
			}
			b = append(b, '\n')
			all.write(b)
			if rec.Reward == 1 {
				rs.write(b)
			}
		}
	}
	if npreds == 0 {
		preds.write([]byte("[]"))
	} else {
		preds.write([]byte("\n]"))
	}
	if sum.Total > 0 {
		sum.Accuracy = float64(sum.Reward1.Count) / float64(sum.Total)
		sum.AverageTurns = float64(turns) / float64(sum.Total)
	}
	sort.Strings(sum.Models)
	sj, err := json.MarshalIndent(sum, "", "  ")
	if err != nil {
		return nil, err
	}
	outs[summaryFile].write(sj)
	for _, name := range names {
		if err := outs[name].finish(); err != nil {
			return nil, err
		}
	}
	// The manifest first accepts both the files on disk and the new ones,
	// so that a writer killed between two renames leaves a directory the
	// next run still recognises as its own; then only the new ones.
	next := manifest{Files: man.Files}
	for _, name := range names {
		next.Files[name] = append(slices.Clone(man.Files[name]), outs[name].stamp)
	}
	if err := next.write(trajDir); err != nil {
		return nil, err
	}
	for _, name := range names {
		if err := outs[name].commit(); err != nil {
			return nil, err
		}
	}
	for _, name := range names {
		st, err := stampOf(filepath.Join(trajDir, name))
		if err != nil {
			return nil, err
		}
		st.SHA256 = outs[name].stamp.SHA256
		next.Files[name] = []fileStamp{st}
	}
	if err := next.write(trajDir); err != nil {
		return nil, err
	}
	return sum, nil
}

// aggregateNames lists the run-level files, <exp_name>.jsonl first.
func aggregateNames(expName string) []string {
	return []string{expName + ".jsonl", trajectoriesFile, rejectionFile, predsFile, summaryFile}
}

// loadRecord reads one task record, brought up to date.
func loadRecord(path string) (*Record, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	rec := new(Record)
	if err := json.Unmarshal(data, rec); err != nil {
		return nil, fmt.Errorf("%s: not a swerve task record (%v); move it away to rerun that task", path, err)
	}
	upgrade(rec)
	return rec, nil
}

// streamFile is a file written through a buffer under a temporary name
// and renamed into place by commit; its first write error is kept.
type streamFile struct {
	path  string
	tmp   *os.File
	w     *bufio.Writer
	h     hash.Hash
	n     int64
	err   error
	stamp fileStamp
}

func newStreamFile(path string) (*streamFile, error) {
	tmp, err := fsutil.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-"+strconv.Itoa(os.Getpid())+"-*")
	if err != nil {
		return nil, err
	}
	f := &streamFile{path: path, tmp: tmp, h: sha256.New()}
	f.w = bufio.NewWriterSize(io.MultiWriter(tmp, f.h), 256<<10)
	return f, nil
}

func (f *streamFile) write(b []byte) {
	if f.err != nil {
		return
	}
	n, err := f.w.Write(b)
	f.n += int64(n)
	f.err = err
}

// line writes v as one JSON line.
func (f *streamFile) line(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	f.write(append(b, '\n'))
	return f.err
}

// finish flushes and closes the temporary file.
func (f *streamFile) finish() error {
	if f.err == nil {
		f.err = f.w.Flush()
	}
	if err := f.tmp.Close(); f.err == nil {
		f.err = err
	}
	if f.err != nil {
		return fmt.Errorf("write %s: %w", f.path, f.err)
	}
	f.stamp = fileStamp{Size: f.n, SHA256: hex.EncodeToString(f.h.Sum(nil))}
	return nil
}

func (f *streamFile) commit() error {
	if err := os.Rename(f.tmp.Name(), f.path); err != nil {
		return fmt.Errorf("write %s: %w", f.path, err)
	}
	f.tmp = nil
	return nil
}

// abort removes the temporary file of a file not committed.
func (f *streamFile) abort() {
	if f.tmp != nil {
		f.tmp.Close()
		os.Remove(f.tmp.Name())
	}
}
