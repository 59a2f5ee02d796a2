// Package mini is the mini_swe_agent and live_swe_agent scaffolds: the
// model writes one fenced bash block per reply, each command runs in a
// fresh `bash -lc`, and it submits by printing
// COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT as the first line of a command's
// output.
package mini

import (
	"context"
	_ "embed"
	"fmt"
	"strings"

	"github.com/swerve-dev/swerve/internal/agent"
	"github.com/swerve-dev/swerve/internal/lazyre"
	"github.com/swerve-dev/swerve/internal/llm"
)

var (
	//go:embed prompts/system.tmpl
	systemTmpl string
	//go:embed prompts/instance.tmpl
	instanceTmpl string
	//go:embed prompts/live_system.tmpl
	liveSystemTmpl string
	//go:embed prompts/live_instance.tmpl
	liveInstanceTmpl string
)

// Submit markers: the first line of a command's output.
const (
	SubmitMarker       = "COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"
	LegacySubmitMarker = "MINI_SWE_AGENT_FINAL_OUTPUT"
)

// ObservationLimit is the output length shown whole; longer output keeps
// its first and last half of this.
const ObservationLimit = 10000

// ReflectReminder ends every live_swe_agent observation.
const ReflectReminder = "Before your next command, look back at what you have done so far: would a new tool, or a better version of one you wrote, make the next steps easier or safer? If so, build it now."

func init() {
	agent.Register("mini_swe_agent", func() *agent.Scaffold { return build("mini_swe_agent", systemTmpl, instanceTmpl, "") })
	agent.Register("live_swe_agent", func() *agent.Scaffold {
		return build("live_swe_agent", liveSystemTmpl, liveInstanceTmpl, ReflectReminder)
	})
}

func build(name, system, instance, suffix string) *agent.Scaffold {
	return &agent.Scaffold{
		Name:              name,
		Modes:             []agent.Mode{agent.ModeText},
		System:            system,
		Instance:          instance,
		Tools:             []agent.Tool{{Def: llm.FunctionDef{Name: "bash", Description: "Run a shell command in the repository.", Parameters: []byte(`{"type":"object","properties":{"command":{"type":"string"}},"required":["command"]}`)}, Run: runBash}},
		ParseText:         Parse,
		FormatHelp:        formatHelp,
		ObservationSuffix: suffix,
		Oracle:            oracle,
	}
}

// blockRe finds fenced bash blocks (```bash, also mini-swe-agent 2's
// ```mswea_bash_command).
var blockRe = lazyre.New("(?s)```(?:bash|mswea_bash_command)[ \t]*\r?\n(.*?)\r?\n```")

// Parse reads the one bash block of a reply.
func Parse(content string) ([]agent.Call, error) {
	m := blockRe.FindAllStringSubmatch(content, -1)
	if len(m) != 1 {
		return nil, &agent.FormatError{Msg: fmt.Sprintf("expected exactly one ```bash block in the reply, found %d", len(m))}
	}
	cmd := strings.TrimSpace(m[0][1])
	if cmd == "" {
		return nil, &agent.FormatError{Msg: "the ```bash block is empty"}
	}
	return []agent.Call{{Name: "bash", Args: map[string]any{"command": cmd}, Raw: cmd}}, nil
}

func formatHelp(agent.Mode) string {
	return "Every reply must hold exactly one command, in a block like:\n\n```bash\nls -la\n```\n\nTo finish, run `echo " + SubmitMarker + " && git add -A && git diff --cached` as the only command."
}

func runBash(ctx context.Context, env *agent.Env, c agent.Call) (agent.Observation, error) {
	cmd, _ := c.Arg("command")
	res, err := env.Bash(ctx, cmd)
	if err != nil {
		return agent.Observation{}, err
	}
	out := string(res.Output)
	if first, rest, ok := firstLine(out); ok && (first == SubmitMarker || first == LegacySubmitMarker) && !res.TimedOut {
		return agent.Observation{Submitted: true, Submission: rest, Command: cmd, Text: out}, nil
	}
	return agent.Observation{Text: Render(res.ExitCode, res.TimedOut, env.StepTimeout.Seconds(), out), Command: cmd}, nil
}

func firstLine(out string) (string, string, bool) {
	out = strings.TrimLeft(out, " \t\r\n")
	if out == "" {
		return "", "", false
	}
	first, rest, _ := strings.Cut(out, "\n")
	return strings.TrimSpace(first), rest, true
}

// Render writes a command's result the way the model sees it.
func Render(code int, timedOut bool, limitSec float64, out string) string {
	var b strings.Builder
	if timedOut {
		fmt.Fprintf(&b, "<warning>The command did not finish within %.0f seconds and was killed, together with everything it started. Narrow it down (fewer tests, a smaller input) so it finishes in time: nothing a command starts outlives it, background jobs included.</warning>\n", limitSec)
	}
	fmt.Fprintf(&b, "<returncode>%d</returncode>\n", code)
	if len(out) <= ObservationLimit {
		fmt.Fprintf(&b, "<output>\n%s</output>", out)
		return b.String()
	}
	half := ObservationLimit / 2
	fmt.Fprintf(&b, "<warning>The output is %d characters long, too long to show whole: here are its first and last %d characters. Use head, tail, grep or sed -n to see the part you need.</warning>\n", len(out), half)
	fmt.Fprintf(&b, "<output_head>\n%s\n</output_head>\n<elided_chars>\n%d characters elided\n</elided_chars>\n<output_tail>\n%s\n</output_tail>", out[:half], len(out)-2*half, out[len(out)-half:])
	return b.String()
}

func oracle(patch, workdir string, _ agent.Mode) ([]llm.Message, error) {
	var msgs []llm.Message
	cmds := agent.ApplyCommands(patch, workdir)
	for i, c := range cmds {
		text := "I will apply the reference fix."
		if len(cmds) > 1 {
			text = fmt.Sprintf("I will apply the reference fix (part %d of %d).", i+1, len(cmds))
		}
		msgs = append(msgs, llm.Message{Role: llm.RoleAssistant, Content: text + "\n\n```bash\n" + c + "\n```"})
	}
	msgs = append(msgs, llm.Message{Role: llm.RoleAssistant, Content: "The fix is in place; submitting.\n\n```bash\necho " + SubmitMarker + " && git add -A && git diff --cached\n```"})
	return msgs, nil
}
