package view

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

// sniff tells a row's format from its keys: trajectory_steps at the top is
// swerve's (and R2E-Gym's, SWE-Factory's) line, a trajectory object holding
// them is a result.json record, response with reward is a Gym rollout,
// messages with info is mini-swe-agent's.
func sniff(row []byte) (string, error) {
	var keys map[string]json.RawMessage
	if err := json.Unmarshal(row, &keys); err != nil {
		return "", fmt.Errorf("not a JSON object: %w", err)
	}
	has := func(k string) bool { _, ok := keys[k]; return ok }
	switch {
	case has("trajectory_steps"):
		return FormatSwerve, nil
	case has("swerve_exit_reason") || (has("trajectory") && has("instance_id")):
		return FormatRecord, nil
	case has("response") && (has("reward") || has("responses_create_params")):
		return FormatGym, nil
	case has("messages") && (has("info") || has("trajectory_format")):
		return FormatMini, nil
	}
	return "", fmt.Errorf("unknown row: none of trajectory_steps, trajectory, response, messages")
}

// rawStep is a step of swerve's trajectories (agent.Step's JSON form), the
// fields the viewer shows.
type rawStep struct {
	Index       int     `json:"step_idx"`
	Thought     string  `json:"thought"`
	Reasoning   string  `json:"reasoning"`
	Action      string  `json:"action"`
	Observation string  `json:"observation"`
	FormatError string  `json:"format_error"`
	Done        bool    `json:"done"`
	Prompt      int     `json:"token_usage_prompt"`
	Completion  int     `json:"token_usage_completion"`
	Total       int     `json:"token_usage_total"`
	LLMTime     float64 `json:"llm_exec_time"`
	EnvTime     float64 `json:"env_exec_time"`
	Signals     []Flag  `json:"signals"`
}

// stepFlags are the audit flags of steps, in order.
func stepFlags(steps []rawStep) []Flag {
	var out []Flag
	for _, s := range steps {
		out = append(out, s.Signals...)
	}
	return out
}

// signalCount sums a row's signal counts by kind.
func signalCount(m map[string]int) int {
	n := 0
	for _, c := range m {
		n += c
	}
	return n
}

func (r rawStep) step() Step {
	return Step{Index: r.Index, Thought: r.Thought, Reasoning: r.Reasoning, Action: r.Action, Observation: r.Observation,
		FormatError: r.FormatError, Done: r.Done, LLMTime: r.LLMTime, EnvTime: r.EnvTime, PromptTok: r.Prompt, OutputTok: r.Completion, TotalTok: r.Total,
		Signals: r.Signals}
}

// countOnly decodes a JSON array to its length without keeping its items:
// one pass over the bytes, counting the commas at the array's own depth
// (the decoder has already checked that the value is valid JSON).
type countOnly int

func (c *countOnly) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if len(b) < 2 || b[0] != '[' {
		*c = 0 // null or not an array: no steps
		return nil
	}
	n, depth, inString, empty := 0, 0, false, true
	for i := 1; i < len(b)-1; i++ {
		ch := b[i]
		if inString {
			switch ch {
			case '\\':
				i++
			case '"':
				inString = false
			}
			continue
		}
		switch ch {
		case ' ', '\t', '\n', '\r':
			continue
		case '"':
			inString = true
		case '[', '{':
			depth++
		case ']', '}':
			depth--
		case ',':
			if depth == 0 {
				n++
			}
		}
		empty = false
	}
	if !empty {
		n++
	}
	*c = countOnly(n)
	return nil
}

// swerveRow is a line of <exp_name>.jsonl.
type swerveRow struct {
	InstanceID   string          `json:"instance_id"`
	Scaffold     string          `json:"scaffold"`
	Model        string          `json:"model"`
	Reward       float64         `json:"reward"`
	ExitReason   string          `json:"exit_reason"`
	SwerveExit   string          `json:"swerve_exit_reason"`
	ExitDetail   string          `json:"exit_detail"`
	RewardReason string          `json:"reward_reason"`
	Offline      bool            `json:"offline"`
	Signals      map[string]int  `json:"signals"`
	Cost         float64         `json:"cost"`
	TotalTime    float64         `json:"total_time"`
	DS           json.RawMessage `json:"ds"`
	TokenUsage   struct {
		Total int `json:"total"`
	} `json:"token_usage"`
	AgentArgs struct {
		LLMName string `json:"llm_name"`
	} `json:"agent_args"`
}

type swerveSummaryRow struct {
	swerveRow
	Steps countOnly `json:"trajectory_steps"`
}

type swerveDetailRow struct {
	swerveRow
	Steps            []rawStep       `json:"trajectory_steps"`
	History          []rawMessage    `json:"history"`
	ProblemStatement string          `json:"problem_statement"`
	Patch            string          `json:"output_patch"`
	TestOutput       string          `json:"test_output"`
	Report           json.RawMessage `json:"report"`
}

func (r *swerveRow) summary(turns int) Summary {
	s := Summary{InstanceID: r.InstanceID, Scaffold: r.Scaffold, Model: r.Model, Status: "graded", Reward: r.Reward,
		ExitReason: r.ExitReason, Turns: turns, Tokens: r.TokenUsage.Total, Cost: r.Cost, Seconds: r.TotalTime,
		Tampered: strings.HasPrefix(r.RewardReason, "tampered"), Signals: signalCount(r.Signals), Reason: r.RewardReason}
	if s.Model == "" {
		s.Model = r.AgentArgs.LLMName
	}
	s.Offline = r.Offline || offlineModel(s.Model)
	var ds struct {
		Repo string `json:"repo"`
	}
	_ = json.Unmarshal(r.DS, &ds)
	s.Repo = ds.Repo
	return s
}

// recordRow is a run directory's <instance_id>/result.json.
type recordRow struct {
	InstanceID   string          `json:"instance_id"`
	Repo         string          `json:"repo"`
	Scaffold     string          `json:"scaffold"`
	Model        string          `json:"model"`
	Offline      bool            `json:"offline"`
	Status       string          `json:"status"`
	ErrorKind    string          `json:"error_kind"`
	Error        string          `json:"error"`
	Reward       float64         `json:"reward"`
	RewardReason string          `json:"reward_reason"`
	Tampered     []string        `json:"tampered"`
	Signals      map[string]int  `json:"signals"`
	ExitReason   string          `json:"exit_reason"`
	SwerveExit   string          `json:"swerve_exit_reason"`
	ExitDetail   string          `json:"exit_detail"`
	Patch        string          `json:"output_patch"`
	Report       json.RawMessage `json:"report"`
	Problem      string          `json:"problem_statement"`
	Started      time.Time       `json:"started"`
	Finished     time.Time       `json:"finished"`
}

type recordTraj struct {
	Usage struct {
		Total int `json:"total"`
	} `json:"token_usage"`
	Cost     float64 `json:"cost"`
	Duration float64 `json:"total_time"`
}

type recordSummaryRow struct {
	recordRow
	Trajectory *struct {
		recordTraj
		Steps countOnly `json:"trajectory_steps"`
	} `json:"trajectory"`
}

type recordDetailRow struct {
	recordRow
	Trajectory *struct {
		recordTraj
		Steps    []rawStep    `json:"trajectory_steps"`
		Messages []rawMessage `json:"messages"`
	} `json:"trajectory"`
}

// rawMessage is a chat message: its content a string, or a list of parts
// with text.
type rawMessage struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

func (m *rawMessage) text() string {
	var s string
	if json.Unmarshal(m.Content, &s) == nil {
		return s
	}
	var parts []struct {
		Text string `json:"text"`
	}
	_ = json.Unmarshal(m.Content, &parts)
	var out []string
	for _, p := range parts {
		out = append(out, p.Text)
	}
	return strings.Join(out, "\n")
}

// prompts are the opening messages of a conversation, up to the first
// user message.
func prompts(msgs []rawMessage) []Prompt {
	var out []Prompt
	for i := range msgs {
		m := &msgs[i]
		if m.Role == "assistant" {
			break
		}
		out = append(out, Prompt{Role: m.Role, Text: m.text()})
		if m.Role == "user" {
			break
		}
	}
	return out
}

func (r *recordRow) summary() Summary {
	s := Summary{InstanceID: r.InstanceID, Repo: r.Repo, Scaffold: r.Scaffold, Model: r.Model, Status: "graded", Reward: r.Reward,
		ExitReason: r.ExitReason, Tampered: len(r.Tampered) > 0 || strings.HasPrefix(r.RewardReason, "tampered"),
		Started: r.Started, Finished: r.Finished, Signals: signalCount(r.Signals), Reason: r.RewardReason,
		Offline: r.Offline || offlineModel(r.Model)}
	if r.ExitReason == "" {
		s.ExitReason = r.SwerveExit
	}
	if r.Status == "error" {
		s.Status, s.Reward = "error", 0
		s.Error = strings.TrimPrefix(r.ErrorKind+": "+r.Error, ": ")
	}
	return s
}

// gymRow is a NeMo Gym rollout row as swerve serve answers it (and as
// ng_collect_rollouts writes it).
type gymRow struct {
	InstanceID string          `json:"instance_id"`
	Reward     float64         `json:"reward"`
	TaskIndex  *int            `json:"_ng_task_index"`
	Rollout    *int            `json:"_ng_rollout_index"`
	Infra      json.RawMessage `json:"infra_error"`
	Metadata   struct {
		Patch      string          `json:"model_patch"`
		ExitReason string          `json:"exit_reason"`
		Steps      int             `json:"steps"`
		Report     json.RawMessage `json:"eval_report"`
		Signals    map[string]int  `json:"signals"`
		Flags      []Flag          `json:"signal_flags"`
		Timings    struct {
			Agent float64 `json:"agent_seconds"`
			Total float64 `json:"total_seconds"`
		} `json:"timings"`
		Repo     string    `json:"repo"`
		Scaffold string    `json:"scaffold"`
		Dataset  string    `json:"dataset"`
		Started  time.Time `json:"started"`
	} `json:"metadata"`
	Params struct {
		Input json.RawMessage `json:"input"`
	} `json:"responses_create_params"`
	Response struct {
		Model string `json:"model"`
		Usage *struct {
			Total int `json:"total_tokens"`
		} `json:"usage"`
		Output []gymItem `json:"output"`
		Error  *struct {
			Message string `json:"message"`
		} `json:"error"`
	} `json:"response"`
	Repo string `json:"repo"`
}

type gymItem struct {
	Type    string `json:"type"`
	Role    string `json:"role"`
	Content []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	} `json:"content"`
	Summary []struct {
		Text string `json:"text"`
	} `json:"summary"`
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
	Output    string `json:"output"`
}

func (it *gymItem) text() string {
	var parts []string
	for _, c := range it.Content {
		parts = append(parts, c.Text)
	}
	for _, c := range it.Summary {
		parts = append(parts, c.Text)
	}
	return strings.Join(parts, "\n")
}

func (r *gymRow) summary() Summary {
	s := Summary{InstanceID: r.InstanceID, Repo: r.Repo, Model: r.Response.Model, Status: "graded", Reward: r.Reward,
		ExitReason: r.Metadata.ExitReason, Turns: r.Metadata.Steps, Seconds: r.Metadata.Timings.Total, Signals: signalCount(r.Metadata.Signals),
		Scaffold: r.Metadata.Scaffold, Started: r.Metadata.Started}
	if s.Repo == "" {
		s.Repo = r.Metadata.Repo
	}
	if r.Metadata.Timings.Agent > 0 {
		s.Seconds = r.Metadata.Timings.Agent // the agent's time, as the other formats give it
	}
	s.Offline = offlineModel(s.Model)
	if r.Response.Usage != nil {
		s.Tokens = r.Response.Usage.Total
	}
	if s.Turns == 0 {
		for _, it := range r.Response.Output {
			if it.Role == "assistant" {
				s.Turns++
			}
		}
	}
	if r.Response.Error != nil {
		s.Reason = r.Response.Error.Message
	}
	if s.Reason == "" && r.Reward != 1 {
		s.Reason = reportReason(r.Metadata.Patch, r.Metadata.Report)
	}
	if len(r.Infra) > 0 && string(r.Infra) != "null" {
		var infra struct{ Kind, Detail string }
		_ = json.Unmarshal(r.Infra, &infra)
		s.Status, s.Reward, s.Error = "error", 0, strings.TrimPrefix(infra.Kind+": "+infra.Detail, ": ")
	}
	return s
}

// steps turns Responses output items into steps: an assistant message (and
// reasoning before it) opens a step; function calls are its action; the
// next user message or function_call_output is its observation.
func gymSteps(items []gymItem) []Step {
	var steps []Step
	var cur *Step
	var reasoning []string
	open := func() *Step {
		steps = append(steps, Step{Index: len(steps)})
		cur = &steps[len(steps)-1]
		cur.Reasoning = strings.Join(reasoning, "\n")
		reasoning = nil
		return cur
	}
	for i := range items {
		it := &items[i]
		switch {
		case it.Type == "reasoning":
			reasoning = append(reasoning, it.text())
		case it.Type == "message" && it.Role == "assistant":
			s := open()
			s.Thought = it.text()
			s.Action = bashBlock(s.Thought)
		case it.Type == "function_call":
			if cur == nil || cur.Observation != "" || len(reasoning) > 0 {
				open()
			}
			call := "<function=" + it.Name + ">\n" + it.Arguments + "\n</function>"
			if cur.Action != "" {
				cur.Action += "\n"
			}
			cur.Action += call
			if it.Name == "finish" || it.Name == "submit" {
				cur.Done = true
			}
		case it.Type == "function_call_output" || (it.Type == "message" && it.Role != "assistant"):
			out := it.Output
			if it.Type == "message" {
				out = it.text()
			}
			if cur == nil {
				continue
			}
			if cur.Observation != "" {
				cur.Observation += "\n"
			}
			cur.Observation += out
		}
	}
	for i := range steps {
		if strings.Contains(steps[i].Observation, "COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT") || strings.Contains(steps[i].Action, "COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT") {
			steps[i].Done = true
		}
	}
	return steps
}

// bashBlock is the first ```bash fenced block of a text-mode reply, the
// action of mini-swe-agent style scaffolds.
func bashBlock(text string) string {
	i := strings.Index(text, "```bash")
	if i < 0 {
		return ""
	}
	rest := text[i+len("```bash"):]
	j := strings.Index(rest, "```")
	if j < 0 {
		return ""
	}
	return strings.TrimSpace(rest[:j])
}

// miniTraj is mini-swe-agent's .traj.json.
type miniTraj struct {
	InstanceID string `json:"instance_id"`
	Info       struct {
		ExitStatus string `json:"exit_status"`
		Submission string `json:"submission"`
		Exception  string `json:"exception_str"`
		Stats      struct {
			Cost     float64 `json:"instance_cost"`
			APICalls int     `json:"api_calls"`
		} `json:"model_stats"`
		Config struct {
			Model struct {
				Name string `json:"model_name"`
			} `json:"model"`
			AgentType string `json:"agent_type"`
		} `json:"config"`
	} `json:"info"`
	Messages []miniMessage `json:"messages"`
}

type miniMessage struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
	Extra   struct {
		Actions []struct {
			Command string `json:"command"`
		} `json:"actions"`
		Cost       float64 `json:"cost"`
		ReturnCode *int    `json:"returncode"`
		Response   struct {
			Usage struct {
				Prompt     int `json:"prompt_tokens"`
				Completion int `json:"completion_tokens"`
				Total      int `json:"total_tokens"`
			} `json:"usage"`
		} `json:"response"`
	} `json:"extra"`
}

// text is a message's content: a string, or the text parts of a list.
func (m *miniMessage) text() string {
	var s string
	if json.Unmarshal(m.Content, &s) == nil {
		return s
	}
	var parts []struct {
		Text string `json:"text"`
	}
	_ = json.Unmarshal(m.Content, &parts)
	var out []string
	for _, p := range parts {
		out = append(out, p.Text)
	}
	return strings.Join(out, "\n")
}

func (t *miniTraj) summary() Summary {
	s := Summary{InstanceID: t.InstanceID, Model: t.Info.Config.Model.Name, Status: "ungraded", ExitReason: t.Info.ExitStatus,
		Cost: t.Info.Stats.Cost, Turns: t.Info.Stats.APICalls, Scaffold: "mini-swe-agent", Offline: offlineModel(t.Info.Config.Model.Name)}
	if s.Turns == 0 {
		for _, m := range t.Messages {
			if m.Role == "assistant" {
				s.Turns++
			}
		}
	}
	for _, m := range t.Messages {
		s.Tokens += m.Extra.Response.Usage.Total
	}
	if t.Info.Exception != "" && t.Info.ExitStatus != "Submitted" {
		s.Error = t.Info.Exception
	}
	return s
}

func (t *miniTraj) steps() []Step {
	var steps []Step
	for i := range t.Messages {
		m := &t.Messages[i]
		switch {
		case m.Role == "assistant":
			text := m.text()
			st := Step{Index: len(steps), Thought: text, PromptTok: m.Extra.Response.Usage.Prompt,
				OutputTok: m.Extra.Response.Usage.Completion, TotalTok: m.Extra.Response.Usage.Total}
			for _, a := range m.Extra.Actions {
				if st.Action != "" {
					st.Action += "\n"
				}
				st.Action += a.Command
			}
			if st.Action == "" {
				st.Action = bashBlock(text)
			}
			steps = append(steps, st)
		case len(steps) > 0 && (m.Role == "tool" || m.Role == "user"):
			st := &steps[len(steps)-1]
			if st.Observation != "" {
				st.Observation += "\n"
			}
			st.Observation += m.text()
			if strings.Contains(st.Observation, "COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT") {
				st.Done = true
			}
			if st.Action == "" && strings.Contains(st.Observation, "format") {
				st.FormatError = firstLine(st.Observation)
			}
		}
	}
	if n := len(steps); n > 0 && t.Info.ExitStatus == "Submitted" {
		steps[n-1].Done = true
	}
	return steps
}

// offlineModel reports whether a model name is one of swerve's offline
// models: recorded replies (replay/...) or a scripted policy (oracle/...).
func offlineModel(name string) bool {
	return strings.HasPrefix(name, "replay/") || strings.HasPrefix(name, "oracle/")
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

// summarize reads a row's summary in the given format.
func summarize(format string, row []byte) (Summary, error) {
	if s, ok, err := fastSummary(format, row); ok {
		return s, err
	}
	return slowSummary(format, row)
}

// slowSummary decodes the whole row with encoding/json: the reference
// fastSummary is tested against, and the path of the small formats.
func slowSummary(format string, row []byte) (Summary, error) {
	switch format {
	case FormatSwerve:
		var r swerveSummaryRow
		if err := json.Unmarshal(row, &r); err != nil {
			return Summary{}, err
		}
		return r.summary(int(r.Steps)), nil
	case FormatRecord:
		var r recordSummaryRow
		if err := json.Unmarshal(row, &r); err != nil {
			return Summary{}, err
		}
		s := r.summary()
		if t := r.Trajectory; t != nil {
			s.Turns, s.Tokens, s.Cost, s.Seconds = int(t.Steps), t.Usage.Total, t.Cost, t.Duration
		}
		return s, nil
	case FormatGym:
		var r gymRow
		if err := json.Unmarshal(row, &r); err != nil {
			return Summary{}, err
		}
		return r.summary(), nil
	case FormatMini:
		var t miniTraj
		if err := json.Unmarshal(row, &t); err != nil {
			return Summary{}, err
		}
		return t.summary(), nil
	}
	return Summary{}, fmt.Errorf("unknown format %q", format)
}

// detail reads a whole row for the task's page.
func detail(format string, row []byte) (*Detail, error) {
	d := &Detail{}
	switch format {
	case FormatSwerve:
		var r swerveDetailRow
		if err := json.Unmarshal(row, &r); err != nil {
			return nil, err
		}
		d.Summary = r.summary(len(r.Steps))
		d.ProblemStatement, d.Patch, d.TestOutput, d.Report = r.ProblemStatement, r.Patch, r.TestOutput, r.Report
		d.RewardReason, d.ExitDetail = r.RewardReason, r.ExitDetail
		if strings.HasPrefix(r.RewardReason, "tampered") {
			d.Tamper = []string{strings.TrimSpace(strings.TrimPrefix(strings.TrimPrefix(r.RewardReason, "tampered"), ":"))}
		}
		for _, s := range r.Steps {
			d.Steps = append(d.Steps, s.step())
		}
		d.Flags = stepFlags(r.Steps)
		d.Prompts = prompts(r.History)
	case FormatRecord:
		var r recordDetailRow
		if err := json.Unmarshal(row, &r); err != nil {
			return nil, err
		}
		d.Summary = r.summary()
		d.ProblemStatement, d.Patch, d.Report, d.RewardReason, d.Tamper, d.ExitDetail = r.Problem, r.Patch, r.Report, r.RewardReason, r.Tampered, r.ExitDetail
		if t := r.Trajectory; t != nil {
			d.Turns, d.Tokens, d.Cost, d.Seconds = len(t.Steps), t.Usage.Total, t.Cost, t.Duration
			for _, s := range t.Steps {
				d.Steps = append(d.Steps, s.step())
			}
			d.Flags = stepFlags(t.Steps)
			d.Prompts = prompts(t.Messages)
		}
	case FormatGym:
		var r gymRow
		if err := json.Unmarshal(row, &r); err != nil {
			return nil, err
		}
		d.Summary = r.summary()
		d.Patch, d.Report, d.Flags = r.Metadata.Patch, r.Metadata.Report, r.Metadata.Flags
		d.Steps = gymSteps(r.Response.Output)
		if d.Turns == 0 {
			d.Turns = len(d.Steps)
		}
		if r.Response.Error != nil {
			d.ExitDetail = r.Response.Error.Message
		}
		var msgs []rawMessage
		if json.Unmarshal(r.Params.Input, &msgs) == nil {
			d.Prompts = prompts(msgs)
		}
		var input []gymItem
		if json.Unmarshal(r.Params.Input, &input) == nil {
			for _, it := range input {
				if it.Role == "user" {
					d.ProblemStatement = it.text()
					break
				}
			}
		}
		// Upstream rows put the content as a plain string.
		if d.ProblemStatement == "" {
			var plain []struct{ Role, Content string }
			if json.Unmarshal(r.Params.Input, &plain) == nil {
				for _, it := range plain {
					if it.Role == "user" {
						d.ProblemStatement = it.Content
						break
					}
				}
			}
		}
	case FormatMini:
		var t miniTraj
		if err := json.Unmarshal(row, &t); err != nil {
			return nil, err
		}
		d.Summary = t.summary()
		d.Patch = t.Info.Submission
		d.ExitDetail = t.Info.Exception
		d.Steps = t.steps()
		for _, m := range t.Messages {
			if m.Role == "assistant" {
				break
			}
			d.Prompts = append(d.Prompts, Prompt{Role: m.Role, Text: m.text()})
			if m.Role == "user" {
				break
			}
		}
		for _, m := range t.Messages {
			if m.Role == "user" {
				d.ProblemStatement = m.text()
				break
			}
		}
	default:
		return nil, fmt.Errorf("unknown format %q", format)
	}
	d.FailF2P, d.FailP2P, d.PassF2P, d.PassP2P = testsOf(d.Report)
	return d, nil
}

// reportReason says why a rollout without a reason of its own failed,
// from its patch and its grader's report: an empty patch, or how many of
// its FAIL_TO_PASS and PASS_TO_PASS tests failed.
func reportReason(patch string, report json.RawMessage) string {
	if strings.TrimSpace(patch) == "" {
		return "empty patch"
	}
	failF2P, failP2P, _, _ := testsOf(report)
	var parts []string
	if n := len(failF2P); n > 0 {
		parts = append(parts, fmt.Sprintf("FAIL_TO_PASS failed: %d", n))
	}
	if n := len(failP2P); n > 0 {
		parts = append(parts, fmt.Sprintf("PASS_TO_PASS failed: %d", n))
	}
	return strings.Join(parts, ", ")
}

// testsOf reads the SWE-bench harness report ({id: {tests_status:
// {FAIL_TO_PASS: {success, failure}, PASS_TO_PASS: {...}}}}, or the inner
// object alone).
func testsOf(report json.RawMessage) (failF2P, failP2P, passF2P, passP2P []string) {
	if len(report) == 0 {
		return
	}
	type lists struct {
		Success []string `json:"success"`
		Failure []string `json:"failure"`
	}
	type inner struct {
		Status *struct {
			F2P lists `json:"FAIL_TO_PASS"`
			P2P lists `json:"PASS_TO_PASS"`
		} `json:"tests_status"`
	}
	var one inner
	if json.Unmarshal(report, &one) == nil && one.Status != nil {
		return one.Status.F2P.Failure, one.Status.P2P.Failure, one.Status.F2P.Success, one.Status.P2P.Success
	}
	var many map[string]json.RawMessage
	if json.Unmarshal(report, &many) != nil {
		return
	}
	for _, v := range many {
		var in inner
		if json.Unmarshal(v, &in) == nil && in.Status != nil {
			return in.Status.F2P.Failure, in.Status.P2P.Failure, in.Status.F2P.Success, in.Status.P2P.Success
		}
	}
	return
}
