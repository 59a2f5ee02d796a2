package apptainer

import (
	"fmt"
	"strings"
)

// TemplateFields are the names a --sif_template may use:
//
//	{instance_id}  the task's instance id (django__django-16901)
//	{image}        the task's image with '/' and ':' turned into '_'
//	               (swebench_sweb.eval.x86_64.django_1776_django-16901_latest)
//
// NeMo Gym's cache_dir_template is the same form ("/images/...{instance_id}.sif"
// after Hydra); its shell-escaped spelling \{instance_id\} is accepted too,
// and {{ and }} stand for literal braces as in Python's str.format.
var TemplateFields = []string{"instance_id", "image"}

// ExpandTemplate fills tmpl for a task. An unknown field, an unclosed brace
// or a field whose value is empty (no task id, no image) is an error naming
// the template.
func ExpandTemplate(tmpl, instanceID, image string) (string, error) {
	t := strings.NewReplacer(`\{`, "{", `\}`, "}").Replace(tmpl)
	var out strings.Builder
	for i := 0; i < len(t); i++ {
		c := t[i]
		switch {
		case c == '{' && i+1 < len(t) && t[i+1] == '{':
			out.WriteByte('{')
			i++
		case c == '}' && i+1 < len(t) && t[i+1] == '}':
			out.WriteByte('}')
			i++
		case c == '{':
			end := strings.IndexByte(t[i:], '}')
			if end < 0 {
				return "", fmt.Errorf("--%s %q: unclosed {", ParamSIFTemplate, tmpl)
			}
			field := t[i+1 : i+end]
			var v string
			switch field {
			case "instance_id":
				v = instanceID
			case "image":
				v = strings.NewReplacer("/", "_", ":", "_").Replace(image)
			default:
				return "", fmt.Errorf("--%s %q: unknown field {%s} (known: {%s})", ParamSIFTemplate, tmpl, field, strings.Join(TemplateFields, "}, {"))
			}
			if v == "" {
				return "", fmt.Errorf("--%s %q: the box has no %s to fill {%s} with", ParamSIFTemplate, tmpl, strings.ReplaceAll(field, "_", " "), field)
			}
			out.WriteString(v)
			i += end
		case c == '}':
			return "", fmt.Errorf("--%s %q: unmatched }", ParamSIFTemplate, tmpl)
		default:
			out.WriteByte(c)
		}
	}
	return out.String(), nil
}
