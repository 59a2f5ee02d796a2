package task

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// ReverseDiff turns a git-style unified diff around, so that applying the
// result undoes the original: removed lines become added ones and the other
// way round, new files become deleted files, renames and mode changes swap
// sides. Binary patches and copies cannot be turned around and are refused.
func ReverseDiff(diff string) (string, error) {
	if diff == "" {
		return "", nil
	}
	// Work on whole lines; a missing final newline is put back at the end.
	unterminated := !strings.HasSuffix(diff, "\n")
	if unterminated {
		diff += "\n"
	}
	lines := strings.SplitAfter(diff, "\n")
	lines = lines[:len(lines)-1]
	var out strings.Builder
	out.Grow(len(diff))

	var header []string // the current file's header lines, reversed as a group
	for i := 0; i < len(lines); {
		line := lines[i]
		if !strings.HasPrefix(line, "@@ ") {
			if strings.HasPrefix(line, "diff --git ") {
				flushHeader(&out, header)
				header = header[:0]
			}
			if strings.HasPrefix(line, "GIT binary patch") || strings.HasPrefix(line, "Binary files ") {
				return "", errors.New("cannot reverse a binary diff")
			}
			if strings.HasPrefix(line, "copy from ") || strings.HasPrefix(line, "copy to ") {
				return "", errors.New("cannot reverse a diff that copies a file")
			}
			header = append(header, line)
			i++
			continue
		}
		flushHeader(&out, header)
		header = header[:0]
		n, err := reverseHunk(&out, lines[i:])
		if err != nil {
			return "", fmt.Errorf("hunk at line %d: %w", i+1, err)
		}
		i += n
	}
	flushHeader(&out, header)
	if unterminated {
		return strings.TrimSuffix(out.String(), "\n"), nil
	}
	return out.String(), nil
}

// flushHeader writes a file header with both sides swapped.
func flushHeader(out *strings.Builder, header []string) {
	var renameFrom, renameTo string
	for _, l := range header {
		if v, ok := strings.CutPrefix(l, "rename from "); ok {
			renameFrom = strings.TrimRight(v, "\n")
		}
		if v, ok := strings.CutPrefix(l, "rename to "); ok {
			renameTo = strings.TrimRight(v, "\n")
		}
	}
	var minus, plus string // the ---/+++ lines, written together
	for _, l := range header {
		body, nl := strings.CutSuffix(l, "\n")
		end := ""
		if nl {
			end = "\n"
		}
		switch {
		case strings.HasPrefix(body, "diff --git ") && renameFrom != "" && renameTo != "":
			out.WriteString("diff --git a/" + renameTo + " b/" + renameFrom + end)
		case strings.HasPrefix(body, "new file mode "):
			out.WriteString("deleted file mode " + strings.TrimPrefix(body, "new file mode ") + end)
		case strings.HasPrefix(body, "deleted file mode "):
			out.WriteString("new file mode " + strings.TrimPrefix(body, "deleted file mode ") + end)
		case strings.HasPrefix(body, "old mode "):
			out.WriteString("new mode " + strings.TrimPrefix(body, "old mode ") + end)
		case strings.HasPrefix(body, "new mode "):
			out.WriteString("old mode " + strings.TrimPrefix(body, "new mode ") + end)
		case strings.HasPrefix(body, "rename from "):
			out.WriteString("rename from " + renameTo + end)
		case strings.HasPrefix(body, "rename to "):
			out.WriteString("rename to " + renameFrom + end)
		case strings.HasPrefix(body, "index "):
			out.WriteString(reverseIndex(body) + end)
		case strings.HasPrefix(body, "--- "):
			minus = body
		case strings.HasPrefix(body, "+++ "):
			plus = body
			old := strings.TrimPrefix(minus, "--- ")
			nw := strings.TrimPrefix(plus, "+++ ")
			out.WriteString("--- " + swapSide(nw, "b/", "a/") + "\n")
			out.WriteString("+++ " + swapSide(old, "a/", "b/") + end)
		default:
			out.WriteString(l)
		}
	}
	if minus != "" && plus == "" {
		out.WriteString(minus + "\n")
	}
}

// swapSide moves a ---/+++ path from one side's prefix to the other's.
func swapSide(path, from, to string) string {
	if rest, ok := strings.CutPrefix(path, from); ok {
		return to + rest
	}
	return path
}

// reverseIndex swaps the blob ids of an "index A..B [mode]" line.
func reverseIndex(line string) string {
	rest := strings.TrimPrefix(line, "index ")
	ids, mode, _ := strings.Cut(rest, " ")
	a, b, ok := strings.Cut(ids, "..")
	if !ok {
		return line
	}
	s := "index " + b + ".." + a
	if mode != "" {
		s += " " + mode
	}
	return s
}

// reverseHunk writes the hunk starting at lines[0] reversed and returns how
// many lines it used.
func reverseHunk(out *strings.Builder, lines []string) (int, error) {
	head := strings.TrimRight(lines[0], "\n")
	oldStart, oldN, newStart, newN, tail, err := parseHunkHeader(head)
	if err != nil {
		return 0, err
	}
	fmt.Fprintf(out, "@@ -%s +%s @@%s\n", hunkRange(newStart, newN), hunkRange(oldStart, oldN), tail)

	type change struct{ line, marker string }
	var removed, added []change // a run of changes, signs already swapped
	flush := func() {
		for _, c := range removed {
			out.WriteString(c.line + c.marker)
		}
		for _, c := range added {
			out.WriteString(c.line + c.marker)
		}
		removed, added = removed[:0], added[:0]
	}
	i := 1
	for ; i < len(lines) && (oldN > 0 || newN > 0); i++ {
		l := lines[i]
		marker := ""
		if i+1 < len(lines) && strings.HasPrefix(lines[i+1], `\`) {
			marker = lines[i+1]
		}
		switch {
		case strings.HasPrefix(l, "-"):
			added = append(added, change{"+" + l[1:], marker})
			oldN--
		case strings.HasPrefix(l, "+"):
			removed = append(removed, change{"-" + l[1:], marker})
			newN--
		case strings.HasPrefix(l, " "), l == "\n":
			flush()
			out.WriteString(l + marker)
			oldN--
			newN--
		default:
			return 0, fmt.Errorf("unexpected line %q inside a hunk", strings.TrimRight(l, "\n"))
		}
		if marker != "" {
			i++
		}
	}
	flush()
	if oldN != 0 || newN != 0 {
		return 0, errors.New("hunk is shorter than its header says")
	}
	// A marker after the hunk's last line was consumed above; any other
	// stray marker is copied through.
	for i < len(lines) && strings.HasPrefix(lines[i], `\`) {
		out.WriteString(lines[i])
		i++
	}
	return i, nil
}

// parseHunkHeader reads "@@ -a,b +c,d @@ tail".
func parseHunkHeader(h string) (oldStart, oldN, newStart, newN int, tail string, err error) {
	rest, ok := strings.CutPrefix(h, "@@ -")
	if !ok {
		return 0, 0, 0, 0, "", fmt.Errorf("bad hunk header %q", h)
	}
	ranges, tail, ok := strings.Cut(rest, " @@")
	if !ok {
		return 0, 0, 0, 0, "", fmt.Errorf("bad hunk header %q", h)
	}
	oldR, newR, ok := strings.Cut(ranges, " +")
	if !ok {
		return 0, 0, 0, 0, "", fmt.Errorf("bad hunk header %q", h)
	}
	if oldStart, oldN, err = parseRange(oldR); err != nil {
		return 0, 0, 0, 0, "", fmt.Errorf("bad hunk header %q", h)
	}
	if newStart, newN, err = parseRange(newR); err != nil {
		return 0, 0, 0, 0, "", fmt.Errorf("bad hunk header %q", h)
	}
	return oldStart, oldN, newStart, newN, tail, nil
}

func parseRange(s string) (start, n int, err error) {
	a, b, hasCount := strings.Cut(s, ",")
	if start, err = strconv.Atoi(a); err != nil {
		return 0, 0, err
	}
	n = 1
	if hasCount {
		if n, err = strconv.Atoi(b); err != nil {
			return 0, 0, err
		}
	}
	return start, n, nil
}

func hunkRange(start, n int) string {
	if n == 1 {
		return strconv.Itoa(start)
	}
	return strconv.Itoa(start) + "," + strconv.Itoa(n)
}
