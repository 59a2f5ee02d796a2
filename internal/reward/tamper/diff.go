package tamper

import (
	"strconv"
	"strings"

	"github.com/swerve-dev/swerve/internal/lazyre"
)

var (
	ctxOldRange = lazyre.New(`^\*\*\* \d+(,\d+)? \*\*\*\*$`)
	ctxNewRange = lazyre.New(`^--- \d+(,\d+)? ----$`)
	// normalDiffCmd is a command line of a normal diff or an ed script
	// ("12a13", "3,5c3,6", "7d"), a format patch(1) also applies.
	normalDiffCmd = lazyre.New(`^\d+(,\d+)?[acd](\d+(,\d+)?)?$`)
)

// fileChange is one file of a unified diff.
type fileChange struct {
	Path    string // the path after the change ("" never: a deleted file keeps its old path)
	OldPath string // the path before (differs from Path for a rename)
	Added   bool   // the diff creates the file
	Deleted bool   // the diff deletes the file
	// Plus and Minus are the added and removed lines, without their sign.
	Plus, Minus []string
	// Contexts are the hunk headers' trailing text (git's function
	// context: the enclosing class or def).
	Contexts []string
	// Binary: the diff carries the file as a binary hunk (git's "GIT
	// binary patch", or "Binary files ... differ"), whose content Plus
	// does not hold.
	Binary bool
	// Mode is the file's new mode when the diff sets one ("120000" is a
	// symbolic link).
	Mode string
	// Unread are lines of a hunk format the parser does not read (a
	// normal diff or an ed script, which patch(1) applies).
	Unread []string
}

// parseDiff splits a git-style unified diff into its files. It is lenient:
// it reads what it recognises and skips the rest, since a check must not
// fail on a patch git would apply.
func parseDiff(diff string) []fileChange {
	var files []fileChange
	var cur *fileChange
	inHunk := false
	oldLeft, newLeft := 0, 0
	// A context diff (diff -c), which patch(1) applies when git apply
	// refuses the patch: ctx is set inside one, newSide in its new half.
	ctx, newSide := false, false
	lines := strings.Split(diff, "\n")
	for i, line := range lines {
		next := ""
		if i+1 < len(lines) {
			next = lines[i+1]
		}
		line = strings.TrimSuffix(line, "\r")
		if ctx && !inHunk {
			switch {
			case strings.HasPrefix(line, "***************"):
				newSide = false
				continue
			case ctxOldRange.MatchString(line):
				newSide = false
				continue
			case ctxNewRange.MatchString(line):
				newSide = true
				continue
			case strings.HasPrefix(line, "+ ") || line == "+":
				cur.Plus = append(cur.Plus, strings.TrimPrefix(line[1:], " "))
				continue
			case strings.HasPrefix(line, "! ") || line == "!":
				if newSide {
					cur.Plus = append(cur.Plus, strings.TrimPrefix(line[1:], " "))
				} else {
					cur.Minus = append(cur.Minus, strings.TrimPrefix(line[1:], " "))
				}
				continue
			case strings.HasPrefix(line, "- ") || line == "-":
				cur.Minus = append(cur.Minus, strings.TrimPrefix(line[1:], " "))
				continue
			case strings.HasPrefix(line, "  "), line == "":
				continue
			}
			ctx = false
		}
		if inHunk && (oldLeft > 0 || newLeft > 0) {
			switch {
			case strings.HasPrefix(line, "+"):
				cur.Plus = append(cur.Plus, line[1:])
				newLeft--
				continue
			case strings.HasPrefix(line, "-"):
				cur.Minus = append(cur.Minus, line[1:])
				oldLeft--
				continue
			case strings.HasPrefix(line, " "), line == "":
				oldLeft--
				newLeft--
				continue
			case strings.HasPrefix(line, `\`):
				continue
			}
			inHunk = false
		}
		switch {
		case strings.HasPrefix(line, "*** ") && !strings.HasPrefix(line, "****") && strings.HasPrefix(next, "--- ") && !inHunk:
			// A context diff's header: "*** old" then "--- new".
			files = append(files, fileChange{})
			cur = &files[len(files)-1]
			if p := diffPath(strings.TrimPrefix(line, "*** ")); p != "" {
				cur.OldPath = p
			} else {
				cur.Added = true
			}
			if p := diffPath(strings.TrimPrefix(next, "--- ")); p != "" {
				cur.Path = p
			} else {
				cur.Deleted = true
			}
			ctx, newSide = true, false
			lines[i+1] = "" // the "--- new" line is read
		case strings.HasPrefix(line, "Index: ") && !inHunk:
			// patch(1) takes the file name of the hunks that follow from
			// an Index: line.
			files = append(files, fileChange{Path: strings.TrimSpace(strings.TrimPrefix(line, "Index: "))})
			cur = &files[len(files)-1]
		case cur == nil && normalDiffCmd.MatchString(line):
			files = append(files, fileChange{Path: "(no file name)", Unread: []string{line}})
			cur = &files[len(files)-1]
		case strings.HasPrefix(line, "diff --git "):
			files = append(files, fileChange{})
			cur = &files[len(files)-1]
			inHunk = false
			a, b := gitHeaderPaths(strings.TrimPrefix(line, "diff --git "))
			cur.OldPath, cur.Path = a, b
		case strings.HasPrefix(line, "--- ") && !inHunk:
			if cur == nil || (cur.Path != "" && len(cur.Plus)+len(cur.Minus) > 0) {
				files = append(files, fileChange{})
				cur = &files[len(files)-1]
			}
			if p := diffPath(strings.TrimPrefix(line, "--- ")); p != "" {
				cur.OldPath = p
			} else {
				cur.Added = true
			}
		case strings.HasPrefix(line, "+++ ") && cur != nil && !inHunk:
			if p := diffPath(strings.TrimPrefix(line, "+++ ")); p != "" {
				cur.Path = p
			} else {
				cur.Deleted = true
			}
		case cur == nil:
		case strings.HasPrefix(line, "new file mode"):
			cur.Added = true
			cur.Mode = strings.TrimSpace(strings.TrimPrefix(line, "new file mode"))
		case strings.HasPrefix(line, "deleted file mode"):
			cur.Deleted = true
		case strings.HasPrefix(line, "new mode "):
			cur.Mode = strings.TrimSpace(strings.TrimPrefix(line, "new mode "))
		case strings.HasPrefix(line, "GIT binary patch"), strings.HasPrefix(line, "Binary files ") && strings.HasSuffix(line, " differ"):
			cur.Binary = true
		case normalDiffCmd.MatchString(line):
			cur.Unread = append(cur.Unread, line)
		case strings.HasPrefix(line, "rename from "):
			cur.OldPath = unquotePath(strings.TrimPrefix(line, "rename from "))
		case strings.HasPrefix(line, "rename to "):
			cur.Path = unquotePath(strings.TrimPrefix(line, "rename to "))
		case strings.HasPrefix(line, "copy to "):
			cur.Path = unquotePath(strings.TrimPrefix(line, "copy to "))
			cur.Added = true
		case strings.HasPrefix(line, "@@ "):
			o, n, ok := hunkCounts(line)
			if _, tail, found := strings.Cut(strings.TrimPrefix(line, "@@ "), " @@"); found && strings.TrimSpace(tail) != "" {
				cur.Contexts = append(cur.Contexts, strings.TrimSpace(tail))
			}
			if ok {
				inHunk, oldLeft, newLeft = true, o, n
			}
		}
	}
	out := files[:0]
	for _, f := range files {
		if f.Path == "" {
			f.Path = f.OldPath
		}
		if f.OldPath == "" {
			f.OldPath = f.Path
		}
		if f.Path != "" {
			out = append(out, f)
		}
	}
	return out
}

// gitHeaderPaths reads the two paths of a diff --git line. git quotes a
// path with unusual characters C-style ("a/con\146test.py") and applies it
// unquoted; and it strips the first component of each, whatever it is
// (x/conftest.py is conftest.py): so are they read here.
func gitHeaderPaths(s string) (string, string) {
	var a, b string
	if q, err := strconv.QuotedPrefix(s); err == nil && strings.HasPrefix(s, `"`) {
		a, b = unquotePath(q), unquotePath(strings.TrimSpace(s[len(q):]))
	} else if i := strings.Index(s, ` "`); i >= 0 && strings.HasSuffix(s, `"`) {
		a, b = s[:i], unquotePath(s[i+1:])
	} else {
		// Unquoted names have no spaces when the two differ; equal ones
		// (the usual case) split in the middle.
		a, b, _ = strings.Cut(s, " ")
		if n := len(s); n%2 == 1 && s[n/2] == ' ' && stripComponent(s[:n/2]) == stripComponent(s[n/2+1:]) {
			a, b = s[:n/2], s[n/2+1:]
		}
	}
	return stripComponent(a), stripComponent(b)
}

// stripComponent drops a path's first component, as git apply and
// patch -p1 do; a path without one is kept.
func stripComponent(p string) string {
	if _, rest, ok := strings.Cut(p, "/"); ok && rest != "" {
		return rest
	}
	return p
}

// unquotePath undoes git's C-style quoting of a path; other text is
// returned as it is.
func unquotePath(s string) string {
	if len(s) >= 2 && strings.HasPrefix(s, `"`) && strings.HasSuffix(s, `"`) {
		if u, err := strconv.Unquote(s); err == nil {
			return u
		}
		return strings.Trim(s, `"`)
	}
	return s
}

// diffPath reads the path of a ---/+++ (or context diff ***) line, its
// first component stripped; "" for /dev/null.
func diffPath(s string) string {
	s = strings.TrimSpace(s)
	if strings.HasPrefix(s, `"`) {
		if q, err := strconv.QuotedPrefix(s); err == nil {
			s = unquotePath(q)
		}
	} else {
		s, _, _ = strings.Cut(s, "\t")
	}
	if s == "/dev/null" {
		return ""
	}
	return stripComponent(s)
}

// hunkCounts reads the line counts of "@@ -a,b +c,d @@".
func hunkCounts(h string) (int, int, bool) {
	rest, ok := strings.CutPrefix(h, "@@ -")
	if !ok {
		return 0, 0, false
	}
	ranges, _, ok := strings.Cut(rest, " @@")
	if !ok {
		return 0, 0, false
	}
	o, n, ok := strings.Cut(ranges, " +")
	if !ok {
		return 0, 0, false
	}
	return count(o), count(n), true
}

func count(r string) int {
	_, c, ok := strings.Cut(r, ",")
	if !ok {
		return 1
	}
	n := 0
	for _, ch := range c {
		if ch < '0' || ch > '9' {
			return 0
		}
		n = n*10 + int(ch-'0')
	}
	return n
}
