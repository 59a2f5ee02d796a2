package run

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/swerve-dev/swerve/internal/agent"
	"github.com/swerve-dev/swerve/internal/fsutil"
	"github.com/swerve-dev/swerve/internal/llm"
	"github.com/swerve-dev/swerve/internal/sandbox"
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

// Metadata is <instance_id>/metadata.json, in the SWE-Factory runner's
// shape.
type Metadata struct {
	InstanceID     string     `json:"instance_id"`
	DockerImage    string     `json:"docker_image"`
	Repo           string     `json:"repo"`
	Reward         float64    `json:"reward"`
	RewardReason   string     `json:"reward_reason"`
	RewardCalcTime float64    `json:"reward_calc_time"`
	ExitReason     string     `json:"exit_reason"`
	ExpName        string     `json:"exp_name"`
	TestTimeout    bool       `json:"test_timeout"`
	TokenUsage     TokenUsage `json:"token_usage"`
	Model          string     `json:"model"`
	Offline        bool       `json:"offline,omitempty"`
	// Standing says whether the task was graded, or failed outside the
	// model: its reward is then no result (see Record).
	Standing
}

// TokenUsage is the token counts of metadata.json.
type TokenUsage struct {
	Input     int  `json:"input"`
	Output    int  `json:"output"`
	Total     int  `json:"total"`
	Estimated bool `json:"estimated,omitempty"`
}

func usageOf(u llm.Usage) TokenUsage {
	return TokenUsage{Input: u.InputTokens, Output: u.OutputTokens, Total: u.TotalTokens, Estimated: u.Estimated}
}

// writeTask writes a task's files, result.json last: once it exists the
// task is finished.
func writeTask(trajDir string, rec *Record) error {
	dir := TaskDir(trajDir, rec.InstanceID)
	meta := Metadata{
		InstanceID: rec.InstanceID, DockerImage: rec.DockerImage, Repo: rec.Repo,
		Reward: rec.Reward, RewardReason: rec.RewardReason, RewardCalcTime: rec.RewardCalcTime,
		ExitReason: rec.ExitReason, ExpName: rec.ExpName, TestTimeout: rec.TestTimeout,
		TokenUsage: usageOf(rec.Usage()), Model: rec.Model, Offline: rec.Offline,
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

// agentLog renders a trajectory for people.
func agentLog(rec *Record) string {
	var b strings.Builder
	fmt.Fprintf(&b, "instance %s · scaffold %s (%s) · model %s", rec.InstanceID, rec.Scaffold, rec.Mode, rec.Model)
	if rec.Offline {
		b.WriteString(" (offline: not a real model)")
	}
	b.WriteString("\n")
	if rec.Failed() {
		fmt.Fprintf(&b, "error (%s, during %s, attempt %d): %s\n", rec.ErrorKind, rec.ErrorStage, rec.Attempts, rec.Error)
	}
	if t := rec.Trajectory; t != nil {
		for _, m := range t.Messages[:min(2, len(t.Messages))] {
			fmt.Fprintf(&b, "\n=== %s\n%s\n", m.Role, m.Content)
		}
		for _, s := range t.Steps {
			fmt.Fprintf(&b, "\n=== step %d (model %.2fs, tools %.2fs, tokens in %d out %d)\n", s.Index, s.LLMTime, s.EnvTime, s.PromptTokens, s.OutputTokens)
			if s.Thought != "" {
				fmt.Fprintf(&b, "%s\n", s.Thought)
			}
			if s.FormatError != "" {
				fmt.Fprintf(&b, "--- format error: %s\n", s.FormatError)
			}
			if s.Action != "" && s.FormatError == "" {
				fmt.Fprintf(&b, "--- action\n%s\n", s.Action)
			}
			fmt.Fprintf(&b, "--- observation\n%s\n", s.Observation)
		}
	}
	fmt.Fprintf(&b, "\n=== exit: %s", rec.ExitReason)
	if rec.ExitDetail != "" {
		fmt.Fprintf(&b, " (%s)", rec.ExitDetail)
	}
	if rec.Failed() {
		given := "it runs again next time"
		if rec.GivenUp {
			given = "given up"
		}
		fmt.Fprintf(&b, "\n=== no reward: %s error (%s): %s\n", rec.ErrorKind, given, rec.Error)
		return b.String()
	}
	fmt.Fprintf(&b, "\n=== reward: %g (%s)\n", rec.Reward, rec.RewardReason)
	return b.String()
}

// Line is one line of <exp_name>.jsonl: the R2E-Gym trajectory fields,
// plus swerve's.
type Line struct {
	InstanceID       string          `json:"instance_id"`
	TrajectorySteps  []agent.Step    `json:"trajectory_steps"`
	ProblemStatement string          `json:"problem_statement,omitempty"`
	DockerImage      string          `json:"docker_image"`
	ExpName          string          `json:"exp_name"`
	Scaffold         string          `json:"scaffold"`
	Mode             string          `json:"mode"`
	Model            string          `json:"model"`
	Offline          bool            `json:"offline,omitempty"`
	ExitReason       string          `json:"exit_reason"`
	ExitDetail       string          `json:"exit_detail,omitempty"`
	OutputPatch      string          `json:"output_patch"`
	Reward           float64         `json:"reward"`
	RewardReason     string          `json:"reward_reason"`
	RewardCalcTime   float64         `json:"reward_calc_time"`
	TestTimeout      bool            `json:"test_timeout"`
	TokenUsage       TokenUsage      `json:"token_usage"`
	Cost             float64         `json:"cost"`
	TotalTime        float64         `json:"total_time"`
	History          []llm.Message   `json:"history"`
	Tools            []llm.Tool      `json:"tools,omitempty"`
	Config           map[string]any  `json:"config,omitempty"`
	Report           json.RawMessage `json:"report,omitempty"`
}

func lineOf(rec *Record) Line {
	l := Line{
		InstanceID: rec.InstanceID, DockerImage: rec.DockerImage, ExpName: rec.ExpName, Scaffold: rec.Scaffold, Mode: rec.Mode,
		Model: rec.Model, Offline: rec.Offline, ExitReason: rec.ExitReason, ExitDetail: rec.ExitDetail,
		OutputPatch: rec.Patch, Reward: rec.Reward, RewardReason: rec.RewardReason, RewardCalcTime: rec.RewardCalcTime,
		TestTimeout: rec.TestTimeout, TokenUsage: usageOf(rec.Usage()), Config: rec.Config, Report: rec.Report,
		ProblemStatement: rec.ProblemStatement, TrajectorySteps: []agent.Step{},
	}
	if t := rec.Trajectory; t != nil {
		l.TrajectorySteps, l.History, l.Tools, l.Cost, l.TotalTime = t.Steps, t.Messages, t.Tools, t.Cost, t.Duration
	}
	return l
}

// RewardSummary is reward_summary.json. Total, the reward lists,
// Accuracy, AverageTurns and ExitReasons cover the graded tasks only; the
// tasks that ended in an infrastructure error are counted apart (Errors and
// what follows); Tokens and Models cover both, as both spent tokens.
type RewardSummary struct {
	Total        int            `json:"total"`
	Reward1      IDs            `json:"reward_1"`
	Reward0      IDs            `json:"reward_0"`
	Accuracy     float64        `json:"accuracy"`
	AverageTurns float64        `json:"average_turns"`
	Tokens       TokenUsage     `json:"tokens"`
	ExitReasons  map[string]int `json:"exit_reasons"`
	Errors       int            `json:"errors"`
	ErrorIDs     []string       `json:"error_ids"`
	ErrorKinds   map[string]int `json:"error_kinds"`
	// ErrorReasons is each errored task's "<kind>: <error>".
	ErrorReasons map[string]string `json:"error_reasons"`
	// GivenUp lists the errored tasks at the attempt bound.
	GivenUp IDs      `json:"given_up"`
	Models  []string `json:"models"`
	Offline bool     `json:"offline,omitempty"`
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

// WriteAggregates rebuilds the run-level files from the task records
// under trajDir, each written atomically, in instance-id order. It first
// removes the temporary files of killed writers.
func WriteAggregates(trajDir, expName string) (*RewardSummary, error) {
	removeStaleTemps(trajDir)
	recs, err := LoadRecords(trajDir)
	if err != nil {
		return nil, err
	}
	ids := make([]string, 0, len(recs))
	for id := range recs {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	sum := &RewardSummary{
		Reward1: IDs{InstanceIDs: []string{}}, Reward0: IDs{InstanceIDs: []string{}}, ExitReasons: map[string]int{},
		ErrorIDs: []string{}, ErrorKinds: map[string]int{}, ErrorReasons: map[string]string{}, GivenUp: IDs{InstanceIDs: []string{}},
		Models: []string{},
	}
	var preds []pred
	models := map[string]bool{}
	turns := 0
	expPath := filepath.Join(trajDir, expName+".jsonl")
	w := newAtomicLines()
	all, rs := newAtomicLines(), newAtomicLines()
	for _, id := range ids {
		rec := recs[id]
		u := usageOf(rec.Usage())
		sum.Tokens.Input += u.Input
		sum.Tokens.Output += u.Output
		sum.Tokens.Total += u.Total
		sum.Tokens.Estimated = sum.Tokens.Estimated || u.Estimated
		sum.Offline = sum.Offline || rec.Offline
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
		sum.ExitReasons[rec.ExitReason]++
		turns += rec.Steps()
		preds = append(preds, pred{InstanceID: id, Model: rec.Model, Patch: rec.Patch})
		if err := w.add(lineOf(rec)); err != nil {
			return nil, err
		}
		if t := rec.Trajectory; t != nil {
			var v any = t.Messages
			if len(t.Tools) > 0 {
				v = map[string]any{"messages": t.Messages, "tools": t.Tools}
			}
			if err := all.add(v); err != nil {
				return nil, err
			}
			if rec.Reward == 1 {
				if err := rs.add(v); err != nil {
					return nil, err
				}
			}
		}
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
	if preds == nil {
		preds = []pred{}
	}
	pj, err := json.MarshalIndent(preds, "", "  ")
	if err != nil {
		return nil, err
	}
	for _, f := range []struct {
		path string
		data []byte
	}{
		{expPath, w.bytes()},
		{filepath.Join(trajDir, "trajectories.jsonl"), all.bytes()},
		{filepath.Join(trajDir, "trajectories_rejection_sampling.jsonl"), rs.bytes()},
		{filepath.Join(trajDir, "reward_summary.json"), sj},
		{filepath.Join(trajDir, "preds.json"), pj},
	} {
		if err := fsutil.WriteFileAtomic(f.path, f.data, false); err != nil {
			return sum, err
		}
	}
	return sum, nil
}

type atomicLines struct {
	buf strings.Builder
}

func newAtomicLines() *atomicLines { return &atomicLines{} }

func (a *atomicLines) add(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	a.buf.Write(b)
	a.buf.WriteByte('\n')
	return nil
}

func (a *atomicLines) bytes() []byte { return []byte(a.buf.String()) }
