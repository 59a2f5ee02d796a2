package view

import (
	"encoding/json"
	"sort"
	"strconv"
	"strings"
	"unicode"
)

// An observation as the model saw it carries its command's exit status
// in one of the scaffolds' wrappers: mini-swe-agent's
// <returncode>N</returncode> and <output>...</output> tags, swerve's
// "[exit code N]" line, R2E-Gym's "Exit code: N" and "Execution output
// of [tool]:" lines. The page shows the status as a badge and the output
// without the wrapper; the row's own bytes stay as they were (/row).

// Obs is an observation split for the page.
type Obs struct {
	// Code is the exit status, "" when the observation names none.
	Code string
	// Notes are the wrapper's warnings (a timeout, elided output).
	Notes []string
	// Body is the output without the wrapper.
	Body string
}

// outputTags are mini-swe-agent's wrapper tags around the output.
var outputTags = []string{"output", "output_head", "output_tail", "elided_chars"}

// splitObs takes an observation's wrapper off.
func splitObs(s string) Obs {
	var o Obs
	rest := s
	// Warnings before or after the status line (mini-swe-agent).
	for {
		t := strings.TrimLeft(rest, "\n")
		if !strings.HasPrefix(t, "<warning>") {
			break
		}
		end := strings.Index(t, "</warning>")
		if end < 0 {
			break
		}
		o.Notes = append(o.Notes, strings.TrimSpace(t[len("<warning>"):end]))
		rest = t[end+len("</warning>"):]
	}
	t := strings.TrimLeft(rest, "\n")
	switch {
	case strings.HasPrefix(t, "<returncode>"):
		end := strings.Index(t, "</returncode>")
		if end < 0 {
			return Obs{Body: s}
		}
		code := strings.TrimSpace(t[len("<returncode>"):end])
		if _, err := strconv.Atoi(code); err != nil {
			return Obs{Body: s}
		}
		o.Code = code
		body := t[end+len("</returncode>"):]
		// More warnings may follow the status (a long output's).
		for {
			bt := strings.TrimLeft(body, "\n")
			if !strings.HasPrefix(bt, "<warning>") {
				break
			}
			e := strings.Index(bt, "</warning>")
			if e < 0 {
				break
			}
			o.Notes = append(o.Notes, strings.TrimSpace(bt[len("<warning>"):e]))
			body = bt[e+len("</warning>"):]
		}
		for _, tag := range outputTags {
			body = stripTag(body, tag)
		}
		o.Body = strings.Trim(body, "\n")
		return o
	case strings.HasPrefix(t, "[exit code "):
		line, body, _ := strings.Cut(t, "\n")
		code := strings.TrimSuffix(strings.TrimPrefix(line, "[exit code "), "]")
		if _, err := strconv.Atoi(code); err != nil || !strings.HasSuffix(line, "]") {
			return Obs{Body: s}
		}
		o.Code, o.Body = code, body
		return o
	case strings.HasPrefix(t, "Exit code: "):
		line, body, _ := strings.Cut(t, "\n")
		code := strings.TrimSpace(strings.TrimPrefix(line, "Exit code: "))
		if _, err := strconv.Atoi(code); err != nil {
			return Obs{Body: s}
		}
		if first, after, ok := strings.Cut(body, "\n"); strings.HasPrefix(first, "Execution output of [") && strings.HasSuffix(first, "]:") {
			body = after
			if !ok {
				body = ""
			}
		}
		o.Code, o.Body = code, body
		return o
	}
	// swerve's bash tool puts a timeout line before its status line.
	if first, after, ok := strings.Cut(t, "\n"); ok && strings.HasPrefix(after, "[exit code ") && !strings.Contains(first, "[exit code") {
		if in := splitObs(after); in.Code != "" {
			in.Notes = append(append(o.Notes, first), in.Notes...)
			return in
		}
	}
	return Obs{Body: s}
}

// stripTag removes <tag> and </tag> and the line break right after each.
func stripTag(s, tag string) string {
	for _, t := range []string{"<" + tag + ">", "</" + tag + ">"} {
		s = strings.ReplaceAll(s, t+"\n", "")
		s = strings.ReplaceAll(s, t, "")
	}
	return s
}

// Obs is the step's observation split for the page.
func (s Step) Obs() Obs { return splitObs(s.Observation) }

// ShowAction reports whether the step's action needs a block of its own:
// not when the reply already shows it (text-mode scaffolds write the call,
// or the ```bash block, in the reply itself).
func (s Step) ShowAction() bool {
	if s.Action == "" || s.Action == "<function=>\n</function>" {
		return false
	}
	return !replyShows(s.Thought, s.Action)
}

// replyShows reports whether reply already shows action: the action's
// text (white space aside); for a <function=name> call, the function's
// name and every parameter's value; for a plain command, a ```bash block
// (the command was read from it).
func replyShows(reply, action string) bool {
	if reply == "" {
		return false
	}
	if strings.Contains(reply, action) {
		return true
	}
	r := squash(reply)
	if strings.Contains(r, squash(action)) {
		return true
	}
	name, params, ok := parseCall(action)
	if !ok {
		// A plain command comes from the reply's ```bash block (text-mode
		// scaffolds such as mini-swe-agent's), which the reply shows.
		return bashBlock(reply) != ""
	}
	if !strings.Contains(r, squash("<function="+name+">")) {
		return false
	}
	for _, p := range params {
		if !strings.Contains(r, squash(p.Value)) {
			return false
		}
	}
	return true
}

// squash drops all white space, so that a call re-indented still matches.
func squash(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	for _, r := range s {
		if !unicode.IsSpace(r) {
			b.WriteRune(r)
		}
	}
	return b.String()
}

// parseCall reads a "<function=name>" call's name and parameters
// ("<parameter=p>value</parameter>"); ok is false for anything else.
func parseCall(action string) (name string, params []Setting, ok bool) {
	a := strings.TrimSpace(action)
	if !strings.HasPrefix(a, "<function=") || !strings.HasSuffix(a, "</function>") {
		return "", nil, false
	}
	head, rest, found := strings.Cut(a[len("<function="):], ">")
	if !found || head == "" {
		return "", nil, false
	}
	rest = strings.TrimSuffix(rest, "</function>")
	if !strings.Contains(rest, "<parameter=") {
		// A Responses function call: its arguments are a JSON object.
		body := strings.TrimSpace(rest)
		var args map[string]any
		if json.Unmarshal([]byte(body), &args) == nil {
			for k, v := range args {
				params = append(params, Setting{Name: k, Value: settingText(v)})
			}
			sort.Slice(params, func(i, j int) bool { return params[i].Name < params[j].Name })
		} else if body != "" {
			params = append(params, Setting{Name: "arguments", Value: body})
		}
		return head, params, true
	}
	for {
		i := strings.Index(rest, "<parameter=")
		if i < 0 {
			break
		}
		rest = rest[i+len("<parameter="):]
		pname, after, found := strings.Cut(rest, ">")
		if !found {
			return "", nil, false
		}
		val, after2, found := strings.Cut(after, "</parameter>")
		if !found {
			return "", nil, false
		}
		params = append(params, Setting{Name: pname, Value: strings.Trim(val, "\n")})
		rest = after2
	}
	return head, params, true
}

// Call is the step's action read as a function call, for the page.
type Call struct {
	Name   string
	Params []Setting
}

// Call is the step's action as a function call, nil when it is not one
// (a plain command, as mini-swe-agent's).
func (s Step) Call() *Call {
	name, params, ok := parseCall(s.Action)
	if !ok {
		return nil
	}
	return &Call{Name: name, Params: params}
}

// forPage works out what the step's template needs, once: the
// observation split, whether the action gets a block, the call.
func (s Step) forPage() *Step {
	s.O, s.Show = splitObs(s.Observation), s.ShowAction()
	if s.Show {
		s.Fn = s.Call()
	}
	return &s
}
