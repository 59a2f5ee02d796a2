package build

import (
	"bytes"
	"embed"
	"strings"
	"sync"
	"text/template"

	"github.com/swerve-dev/swerve/internal/lazyre"
	"github.com/swerve-dev/swerve/internal/task"
)

//go:embed prompts/*.md
var promptFS embed.FS

// The prompts are read and parsed on first use, not at every start of the
// binary.
var (
	systemPrompt = sync.OnceValue(func() string { return mustRead("prompts/system.md") })
	repairTmpl   = sync.OnceValue(func() *template.Template {
		return template.Must(template.New("repair.md").Funcs(template.FuncMap{"fence": fence}).ParseFS(promptFS, "prompts/repair.md"))
	})
)

func mustRead(name string) string {
	b, err := promptFS.ReadFile(name)
	if err != nil {
		panic(err)
	}
	return strings.TrimSpace(string(b))
}

// SystemPrompt is the repair model's system message.
func SystemPrompt() string { return systemPrompt() }

// repairInput fills the repair prompt.
type repairInput struct {
	Iteration, MaxIterations int
	InstanceID, Repo         string
	BaseCommit               string
	Stage, Reason            string
	Command, Output          string
	PatchFiles               string
	Dockerfile, EvalScript   string
}

// repairPrompt is the user message that reports a failed attempt.
func repairPrompt(t *task.Task, iteration, max int, f *Failure, dockerfile, script string) string {
	in := repairInput{
		Iteration: iteration, MaxIterations: max,
		InstanceID: t.InstanceID, Repo: t.Repo, BaseCommit: t.BaseCommit,
		Stage: f.Stage, Reason: f.Reason, Command: f.Command, Output: strings.TrimRight(f.Output, "\n"),
		PatchFiles: strings.Join(patchFiles(t.Patch), ", "),
		Dockerfile: strings.TrimRight(dockerfile, "\n"), EvalScript: strings.TrimRight(script, "\n"),
	}
	var b bytes.Buffer
	if err := repairTmpl().Execute(&b, in); err != nil {
		panic(err) // the template is ours and the input plain strings
	}
	return b.String()
}

// fence wraps s in a fenced block long enough not to be closed by any
// backtick run inside it.
func fence(lang, s string) string {
	n := 3
	run := 0
	for _, c := range s {
		if c == '`' {
			run++
			n = max(n, run+1)
		} else {
			run = 0
		}
	}
	f := strings.Repeat("`", n)
	return f + lang + "\n" + s + "\n" + f
}

// Proposal is what a repair reply asks for.
type Proposal struct {
	// Dockerfile and EvalScript are the new files; empty when the reply
	// leaves that file as it is.
	Dockerfile string
	EvalScript string
	// Notes say which blocks were ignored and why.
	Notes []string
}

var openFence = lazyre.New("^\\s{0,3}(`{3,}|~{3,})\\s*([A-Za-z0-9_+.-]*)[^`]*$")

// ParseReply takes the new Dockerfile (a block tagged dockerfile or docker)
// and eval script (bash, sh or shell) out of a model's reply; the last
// block of each kind wins. A Dockerfile without FROM, or a script without
// the OMNIGRIL_EXIT_CODE line, is a snippet, not a whole file, and is
// ignored with a note.
func ParseReply(reply string) Proposal {
	var p Proposal
	lines := strings.Split(strings.ReplaceAll(reply, "\r\n", "\n"), "\n")
	for i := 0; i < len(lines); i++ {
		m := openFence.FindStringSubmatch(lines[i])
		if m == nil {
			continue
		}
		marker, lang := m[1], strings.ToLower(m[2])
		var body []string
		j := i + 1
		for ; j < len(lines); j++ {
			t := strings.TrimSpace(lines[j])
			if strings.HasPrefix(t, marker[:1]) && strings.Trim(t, marker[:1]) == "" && len(t) >= len(marker) {
				break
			}
			body = append(body, lines[j])
		}
		i = j
		text := strings.TrimSpace(strings.Join(body, "\n")) + "\n"
		switch lang {
		case "dockerfile", "docker":
			if !hasFrom(text) {
				p.Notes = append(p.Notes, "ignored a dockerfile block without a FROM line (not a whole Dockerfile)")
				continue
			}
			p.Dockerfile = text
		case "bash", "sh", "shell":
			if !strings.Contains(text, "OMNIGRIL_EXIT_CODE") {
				p.Notes = append(p.Notes, "ignored a bash block that does not print OMNIGRIL_EXIT_CODE (not a whole eval script)")
				continue
			}
			p.EvalScript = text
		}
	}
	return p
}

func hasFrom(dockerfile string) bool {
	for line := range strings.SplitSeq(dockerfile, "\n") {
		f := strings.Fields(line)
		if len(f) > 0 && strings.EqualFold(f[0], "FROM") {
			return true
		}
	}
	return false
}

// patchFiles lists the files a unified diff changes.
func patchFiles(diff string) []string {
	var files []string
	for line := range strings.SplitSeq(diff, "\n") {
		rest, ok := strings.CutPrefix(line, "diff --git ")
		if !ok {
			continue
		}
		if i := strings.LastIndex(rest, " b/"); i >= 0 {
			files = append(files, strings.TrimSpace(rest[i+3:]))
		}
	}
	return files
}
