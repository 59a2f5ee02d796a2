package tamper

import (
	"fmt"
	"strconv"
	"strings"
)

// CreatedBy reports whether the diff creates file (so it has no base
// version to read).
func CreatedBy(diff, file string) bool {
	for _, f := range parseDiff(diff) {
		if f.Path == file {
			return f.Added
		}
	}
	return false
}

// ApplyTestPatch returns file as diff leaves it, given its text before
// (base, "" for a file the diff creates). A file the diff does not touch
// comes back unchanged. Every context and removed line must match the base
// where its hunk says, as git apply without fuzz requires; anything else
// is an error. Lines are compared with their line ends, so a last line
// without one ("\ No newline at end of file" after it in the diff) is
// matched and written as the diff says, on either side.
//
// It is the one applier swerve has for test patches: the canaries read
// test files with it, and the history proof computes with it the content
// a test patch gives the files it changes.
func ApplyTestPatch(diff, file, base string) (string, error) {
	lines := strings.Split(diff, "\n")
	start := -1
	for i, l := range lines {
		if strings.HasPrefix(l, "+++ ") && diffPath(strings.TrimPrefix(l, "+++ ")) == file {
			start = i + 1
			break
		}
	}
	if start < 0 {
		return base, nil
	}
	old := strings.SplitAfter(base, "\n")
	if old[len(old)-1] == "" {
		old = old[:len(old)-1]
	}
	var out strings.Builder
	pos := 0
	for i := start; i < len(lines); {
		l := lines[i]
		if !strings.HasPrefix(l, "@@ -") {
			break // the next file (or the end)
		}
		oldStart, oldN, newN, err := hunkHeader(l)
		if err != nil {
			return "", err
		}
		at := oldStart - 1
		if oldN == 0 {
			at = oldStart
		}
		if at < pos || at > len(old) {
			return "", fmt.Errorf("%s: hunk %q out of order", file, l)
		}
		out.WriteString(strings.Join(old[pos:at], ""))
		pos = at
		i++
		for oldN > 0 || newN > 0 {
			if i >= len(lines) {
				return "", fmt.Errorf("%s: hunk %q cut short", file, l)
			}
			h := lines[i]
			i++
			if strings.HasPrefix(h, `\`) {
				continue
			}
			text := "\n"
			if h != "" {
				text = h[1:] + "\n"
			}
			// The marker after a line says that line has no line end.
			if i < len(lines) && strings.HasPrefix(lines[i], `\`) {
				text = strings.TrimSuffix(text, "\n")
				i++
			}
			switch {
			case strings.HasPrefix(h, "+"):
				out.WriteString(text)
				newN--
			case strings.HasPrefix(h, "-"), strings.HasPrefix(h, " "), h == "":
				if pos >= len(old) || old[pos] != text {
					return "", fmt.Errorf("%s: line %d does not match the patch", file, pos+1)
				}
				pos++
				oldN--
				if !strings.HasPrefix(h, "-") {
					out.WriteString(text)
					newN--
				}
			default:
				return "", fmt.Errorf("%s: unexpected line %q in a hunk", file, h)
			}
		}
		for i < len(lines) && strings.HasPrefix(lines[i], `\`) {
			i++
		}
	}
	out.WriteString(strings.Join(old[pos:], ""))
	return out.String(), nil
}

// hunkHeader reads "@@ -a,b +c,d @@": the old start and both counts.
func hunkHeader(h string) (oldStart, oldN, newN int, err error) {
	rest, _ := strings.CutPrefix(h, "@@ -")
	ranges, _, ok := strings.Cut(rest, " @@")
	o, n, ok2 := strings.Cut(ranges, " +")
	if !ok || !ok2 {
		return 0, 0, 0, fmt.Errorf("bad hunk header %q", h)
	}
	a, b, hasB := strings.Cut(o, ",")
	if oldStart, err = strconv.Atoi(a); err != nil {
		return 0, 0, 0, fmt.Errorf("bad hunk header %q: %w", h, err)
	}
	oldN, newN = 1, 1
	if hasB {
		if oldN, err = strconv.Atoi(b); err != nil {
			return 0, 0, 0, fmt.Errorf("bad hunk header %q: %w", h, err)
		}
	}
	if _, d, hasD := strings.Cut(n, ","); hasD {
		if newN, err = strconv.Atoi(d); err != nil {
			return 0, 0, 0, fmt.Errorf("bad hunk header %q: %w", h, err)
		}
	}
	return oldStart, oldN, newN, nil
}
