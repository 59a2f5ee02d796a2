package reward

import (
	"fmt"
	"path"
	"regexp"
	"strings"

	"github.com/swerve-dev/swerve/internal/lazyre"
)

// The install step may write the editable install's own files in
// site-packages (compareTrees allows them by name). Their names are not
// enough: a .pth line that starts with `import` runs at every interpreter
// start-up, root's too, and the finder is a Python module. So what an
// added or changed one holds is checked against what an editable install
// writes there:
//
//   - a .pth file: blank lines, comments, and paths into the work tree; in
//     an `__editable__.*.pth` file also the one line that imports and
//     installs the finder of the same name, which must be there;
//   - a finder, `__editable___<name>_finder.py`: setuptools' template, read
//     from the setuptools the box's Python imports (in the setup, before
//     the patch's code ran), filled with a MAPPING and NAMESPACES of
//     paths into the work tree and a plain name;
//   - an `.egg-link`: paths into the work tree.
//
// Byte-code caches the install wrote are not checked but removed (see
// sweepScript): a cache is regenerated from its source.

// editableKind says which of the editable install's files a name in
// site-packages is: "pth", "finder", "egg-link", or "".
func editableKind(name string) string {
	switch {
	case name == "easy-install.pth" || strings.HasPrefix(name, "__editable__.") && strings.HasSuffix(name, ".pth"):
		return "pth"
	case strings.HasPrefix(name, "__editable___") && strings.HasSuffix(name, "_finder.py"):
		return "finder"
	case strings.HasSuffix(name, ".egg-link"):
		return "egg-link"
	}
	return ""
}

// underTree says whether p, cleaned, is dir or lies under it.
func underTree(p, dir string) bool {
	p = path.Clean(p)
	return p == dir || strings.HasPrefix(p, dir+"/")
}

// finderLine is the line setuptools writes into an editable install's .pth
// file to load its finder.
var finderLine = lazyre.New(`^import (__editable___[A-Za-z0-9_]+_finder); ([A-Za-z0-9_]+)\.install\(\)$`)

// checkPth names what in a .pth file (its path in the box, its content) an
// editable install does not write, "" when nothing; finders gets the
// finder modules its lines load (their names, without .py).
func checkPth(file, content, workdir string, finders map[string]bool) []string {
	var out []string
	base := path.Base(file)
	for i, l := range strings.Split(content, "\n") {
		l = strings.TrimRight(l, " \t\r")
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		if m := finderLine.FindStringSubmatch(l); m != nil && m[1] == m[2] && strings.HasPrefix(base, "__editable__.") {
			finders[m[1]] = true
			continue
		}
		// site runs every line that starts with "import" and a blank; a
		// path line must not look like one either.
		if strings.HasPrefix(strings.TrimLeft(l, " \t"), "import") {
			out = append(out, fmt.Sprintf("%s line %d runs code at interpreter start-up (%s)", file, i+1, clipLine(l)))
			continue
		}
		p := l
		if !path.IsAbs(p) {
			p = path.Join(path.Dir(file), p)
		}
		if !underTree(p, workdir) {
			out = append(out, fmt.Sprintf("%s line %d puts a path outside the work tree on sys.path (%s)", file, i+1, clipLine(l)))
		}
	}
	return out
}

// checkEggLink names what in an .egg-link is not a path into the work tree.
func checkEggLink(file, content, workdir string) []string {
	var out []string
	first := ""
	for i, l := range strings.Split(content, "\n") {
		l = strings.TrimRight(l, " \t\r")
		if l == "" {
			continue
		}
		p := l
		switch {
		case first == "":
			first = l
		case !path.IsAbs(p):
			p = path.Join(first, p)
		}
		if !path.IsAbs(p) || !underTree(p, workdir) {
			out = append(out, fmt.Sprintf("%s line %d is not a path into the work tree (%s)", file, i+1, clipLine(l)))
		}
	}
	return out
}

// finderTemplate reads setuptools' finder template out of the source of
// its editable_wheel module: the string assigned to _FINDER_TEMPLATE, as
// a pattern for a finder made from it (each replacement field matches the
// rest of a line, its name in the group), or nil when it is not there in
// a form this reader knows.
func finderTemplate(src string) *regexp.Regexp {
	const open = "_FINDER_TEMPLATE = \"\"\"\\\n"
	at := strings.Index(src, "\n"+open)
	if at < 0 {
		return nil
	}
	body := src[at+1+len(open):]
	end := strings.Index(body, `"""`)
	if end < 0 {
		return nil
	}
	body = body[:end]
	if strings.Contains(body, `\`) {
		return nil // escapes this reader does not undo
	}
	var re strings.Builder
	re.WriteString(`^`)
	lit := strings.Builder{}
	flush := func() {
		re.WriteString(regexp.QuoteMeta(lit.String()))
		lit.Reset()
	}
	for i := 0; i < len(body); i++ {
		c := body[i]
		switch {
		case c == '{' && i+1 < len(body) && body[i+1] == '{', c == '}' && i+1 < len(body) && body[i+1] == '}':
			lit.WriteByte(c)
			i++
		case c == '{':
			j := strings.IndexByte(body[i:], '}')
			if j < 0 {
				return nil
			}
			field := body[i+1 : i+j]
			name, _, _ := strings.Cut(field, "!")
			name, _, _ = strings.Cut(name, ":")
			if !fieldName.MatchString(name) {
				return nil
			}
			flush()
			re.WriteString(`(?P<` + name + `>[^\n]*)`)
			i += j
		case c == '}':
			return nil
		default:
			lit.WriteByte(c)
		}
	}
	flush()
	re.WriteString(`$`)
	r, err := regexp.Compile(re.String())
	if err != nil {
		return nil
	}
	return r
}

var (
	fieldName  = lazyre.New(`^[a-z_]+$`)
	pyStr      = `'[^'\\\n]*'`
	pyStrList  = `\[(?:` + pyStr + `(?:, ` + pyStr + `)*)?\]`
	mappingLit = lazyre.New(`^\{(?:` + pyStr + `: ` + pyStr + `(?:, ` + pyStr + `: ` + pyStr + `)*)?\}$`)
	nsLit      = lazyre.New(`^\{(?:` + pyStr + `: ` + pyStrList + `(?:, ` + pyStr + `: ` + pyStrList + `)*)?\}$`)
	nameLit    = lazyre.New(`^` + pyStr + `$`)
	pyStrOne   = lazyre.New(pyStr)
)

// checkFinder names what in a finder module (its path, its content) is not
// setuptools' template (tmpl, from finderTemplate) filled with paths into
// the work tree, or "" when it is.
func checkFinder(file, content string, tmpl *regexp.Regexp, workdir string) string {
	if tmpl == nil {
		return file + " cannot be checked: no setuptools finder template in the box"
	}
	m := tmpl.FindStringSubmatch(content)
	if m == nil {
		return file + " is not setuptools' editable finder"
	}
	for i, name := range tmpl.SubexpNames() {
		if i == 0 {
			continue
		}
		v := m[i]
		switch name {
		case "name":
			if !nameLit.MatchString(v) {
				return fmt.Sprintf("%s: its name is not a plain string (%s)", file, clipLine(v))
			}
		case "mapping", "namespaces":
			lit := mappingLit
			if name == "namespaces" {
				lit = nsLit
			}
			if !lit.MatchString(v) {
				return fmt.Sprintf("%s: its %s is not a plain table of paths (%s)", file, strings.ToUpper(name), clipLine(v))
			}
			// Keys are module names; every value, or list item, a path.
			for _, s := range pyStrOne.FindAllStringIndex(v, -1) {
				str := v[s[0]+1 : s[1]-1]
				isValue := strings.HasPrefix(v[s[1]:], ",") || strings.HasPrefix(v[s[1]:], "]") || strings.HasPrefix(v[s[1]:], "}")
				if !isValue {
					continue
				}
				if !path.IsAbs(str) || !underTree(str, workdir) {
					return fmt.Sprintf("%s: its %s maps to a path outside the work tree (%s)", file, strings.ToUpper(name), clipLine(str))
				}
			}
		default:
			return fmt.Sprintf("%s: the template has a field this check does not know (%s)", file, name)
		}
	}
	return ""
}

func clipLine(s string) string {
	if len(s) > 80 {
		return s[:77] + "..."
	}
	return s
}

// entryPoints reads an entry_points.txt: the names in each group.
func entryPoints(content string) map[string][]string {
	out := map[string][]string{}
	group := ""
	for _, l := range strings.Split(content, "\n") {
		l = strings.TrimSpace(l)
		switch {
		case l == "" || strings.HasPrefix(l, "#") || strings.HasPrefix(l, ";"):
		case strings.HasPrefix(l, "[") && strings.HasSuffix(l, "]"):
			group = strings.TrimSpace(l[1 : len(l)-1])
		default:
			name, _, ok := strings.Cut(l, "=")
			if ok {
				out[group] = append(out[group], strings.TrimSpace(name))
			}
		}
	}
	return out
}
