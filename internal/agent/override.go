package agent

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Override replaces parts of a scaffold, the way R2E-Gym's runner lets an
// AgentArgs file (--args_path) replace its agent's prompts and tools.
type Override struct {
	// System is the system message, used as written (no placeholders).
	System *string
	// Instance is the first user message in Python's str.format syntax:
	// {problem_statement}, {gt_patch} (the task's test patch, as upstream
	// fills it), {test_patch_hint}, {candidate_patch} (both empty) and
	// {candidate_patch_correctness} ("incorrect"); {{ and }} are braces.
	Instance *string
	// Tools names the tools offered, in order (nil: the scaffold's own).
	Tools []string
}

// instanceFields maps the placeholders R2E-Gym's runner fills in its
// instance prompt to the template source that fills them here.
var instanceFields = map[string]string{
	"problem_statement":           "{{.ProblemStatement}}",
	"gt_patch":                    "{{.Task.TestPatch}}",
	"test_patch_hint":             "",
	"candidate_patch":             "",
	"candidate_patch_correctness": `{{"incorrect"}}`,
}

// Apply changes s in place. It fails, naming what, on a placeholder the
// upstream runner would not fill or a tool the scaffold does not have.
func (o Override) Apply(s *Scaffold) error {
	if o.System != nil {
		s.System = literal(*o.System)
	}
	if o.Instance != nil {
		src, err := pyFormatTemplate(*o.Instance)
		if err != nil {
			return fmt.Errorf("instance_prompt: %w", err)
		}
		s.Instance = src
	}
	if o.Tools != nil {
		if len(o.Tools) == 0 {
			return fmt.Errorf("command_files is empty: an agent with no tools cannot act")
		}
		tools := make([]Tool, 0, len(o.Tools))
		for _, name := range o.Tools {
			t, ok := s.Tool(name)
			if !ok {
				var have []string
				for _, t := range s.Tools {
					have = append(have, t.Def.Name)
				}
				return fmt.Errorf("command file %q: scaffold %s has no tool of that name (it has %s)", name, s.Name, strings.Join(have, ", "))
			}
			if !slices.ContainsFunc(tools, func(x Tool) bool { return x.Def.Name == t.Def.Name }) {
				tools = append(tools, *t)
			}
		}
		s.Tools = tools
	}
	return nil
}

// literal is a text/template source that renders as text.
func literal(text string) string {
	if text == "" {
		return ""
	}
	return "{{" + strconv.Quote(text) + "}}"
}

// pyFormatTemplate turns a Python str.format string into a text/template
// source. Only bare named fields are taken: a conversion (!r), a format
// spec (:>10), an index or an attribute is refused, as is a name the
// upstream runner does not pass (Python raises KeyError on it).
func pyFormatTemplate(f string) (string, error) {
	var b, lit strings.Builder
	flush := func() {
		b.WriteString(literal(lit.String()))
		lit.Reset()
	}
	for i := 0; i < len(f); i++ {
		c := f[i]
		switch {
		case c == '{' && i+1 < len(f) && f[i+1] == '{':
			lit.WriteByte('{')
			i++
		case c == '}' && i+1 < len(f) && f[i+1] == '}':
			lit.WriteByte('}')
			i++
		case c == '{':
			end := strings.IndexByte(f[i:], '}')
			if end < 0 {
				return "", fmt.Errorf("a { at byte %d is never closed", i)
			}
			name := f[i+1 : i+end]
			fill, ok := instanceFields[name]
			if !ok {
				return "", fmt.Errorf("{%s}: upstream's runner fills only {%s}", name, strings.Join(sortedKeys(instanceFields), "}, {"))
			}
			flush()
			b.WriteString(fill)
			i += end
		case c == '}':
			return "", fmt.Errorf("a lone } at byte %d (write }} for a brace)", i)
		default:
			lit.WriteByte(c)
		}
	}
	flush()
	return b.String(), nil
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
