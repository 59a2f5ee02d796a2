package agent

import (
	"fmt"
	"sort"
	"strings"

	"github.com/swerve-dev/swerve/internal/lazyre"
)

// The <function=NAME><parameter=P>value</parameter></function> text form
// R2E-Gym and OpenHands use for tool calls without function calling.

var (
	functionRe  = lazyre.New(`(?s)<function\s*=\s*([A-Za-z0-9_.\-]+)\s*>(.*?)</function>`)
	parameterRe = lazyre.New(`(?s)<parameter\s*=\s*([A-Za-z0-9_.\-]+)\s*>(.*?)</parameter>`)
	openFuncRe  = lazyre.New(`<function\s*=`)
)

// ParseFunction reads exactly one <function=...> call from text. Parameter
// values are kept as written except for one leading and one trailing
// newline; view_range and insert_line style values stay strings (tools
// convert them).
func ParseFunction(text string) (Call, error) {
	all := functionRe.FindAllStringSubmatchIndex(text, -1)
	switch {
	case len(all) == 0:
		if openFuncRe.MatchString(text) {
			return Call{}, &FormatError{"a <function=...> block was opened but never closed with </function>"}
		}
		return Call{}, &FormatError{"no <function=NAME> ... </function> block found in the reply"}
	case len(all) > 1:
		return Call{}, &FormatError{fmt.Sprintf("found %d <function=...> blocks; write exactly one per reply", len(all))}
	}
	m := all[0]
	c := Call{Name: text[m[2]:m[3]], Args: map[string]any{}, Raw: text[m[0]:m[1]]}
	body := text[m[4]:m[5]]
	for _, p := range parameterRe.FindAllStringSubmatch(body, -1) {
		v := strings.TrimPrefix(p[2], "\n")
		v = strings.TrimSuffix(v, "\n")
		c.Args[p[1]] = v
	}
	return c, nil
}

// RenderFunction writes a call in the text form; order lists parameters to
// put first, the rest follow sorted.
func RenderFunction(name string, args map[string]any, order []string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "<function=%s>\n", name)
	keys := make([]string, 0, len(args))
	for k := range args {
		keys = append(keys, k)
	}
	rank := func(k string) int {
		for i, o := range order {
			if o == k {
				return i
			}
		}
		return len(order)
	}
	sort.Slice(keys, func(i, j int) bool {
		ri, rj := rank(keys[i]), rank(keys[j])
		if ri != rj {
			return ri < rj
		}
		return keys[i] < keys[j]
	})
	for _, k := range keys {
		fmt.Fprintf(&b, "<parameter=%s>%s</parameter>\n", k, argText(args[k]))
	}
	b.WriteString("</function>")
	return b.String()
}

func argText(v any) string {
	switch v := v.(type) {
	case string:
		if strings.Contains(v, "\n") {
			return "\n" + v + "\n"
		}
		return v
	case []any:
		parts := make([]string, len(v))
		for i, x := range v {
			parts[i] = fmt.Sprint(x)
		}
		return "[" + strings.Join(parts, ", ") + "]"
	case nil:
		return ""
	}
	return fmt.Sprint(v)
}

// Elide keeps text whole up to limit characters, else its head and tail
// with a note of what was cut in between.
func Elide(text string, limit int) (string, bool) {
	if limit <= 0 || len(text) <= limit {
		return text, false
	}
	half := limit / 2
	head, tail := text[:half], text[len(text)-half:]
	return fmt.Sprintf("%s\n[... %d characters elided ...]\n%s", head, len(text)-2*half, tail), true
}
