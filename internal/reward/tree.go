package reward

import (
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strconv"
	"strings"

	"github.com/swerve-dev/swerve/internal/lazyre"
)

// treeEntry is one line of the in-box helper's file listing (shim-tree).
type treeEntry struct {
	kind               byte // f d l p s c b ?, or ! for a directory that could not be read
	perm               uint32
	owner              string // uid:gid
	size, mtime, ctime int64
	ino                uint64
	link               string
	unreadable         string // the error, for a directory that could not be read
}

// parseTree reads a listing written by shim.WalkTree.
func parseTree(out string) (map[string]treeEntry, error) {
	m := map[string]treeEntry{}
	for _, line := range strings.Split(out, "\n") {
		if line == "" {
			continue
		}
		if rest, ok := strings.CutPrefix(line, "! "); ok {
			q, err := strconv.QuotedPrefix(rest)
			if err != nil {
				return nil, fmt.Errorf("file listing: %q: %w", line, err)
			}
			p, _ := strconv.Unquote(q)
			m[p] = treeEntry{kind: '!', unreadable: strings.TrimSpace(rest[len(q):])}
			continue
		}
		q, err := strconv.QuotedPrefix(line)
		if err != nil {
			return nil, fmt.Errorf("file listing: %q: %w", line, err)
		}
		p, _ := strconv.Unquote(q)
		f := strings.SplitN(strings.TrimPrefix(line[len(q):], " "), " ", 7)
		if len(f) != 7 || len(f[0]) < 2 {
			return nil, fmt.Errorf("file listing: %q: want 8 fields", line)
		}
		var e treeEntry
		e.kind = f[0][0]
		perm, err1 := strconv.ParseUint(f[0][1:], 8, 32)
		size, err2 := strconv.ParseInt(f[2], 10, 64)
		mt, err3 := strconv.ParseInt(f[3], 10, 64)
		ct, err4 := strconv.ParseInt(f[4], 10, 64)
		ino, err5 := strconv.ParseUint(f[5], 10, 64)
		link, err6 := strconv.Unquote(f[6])
		for _, err := range []error{err1, err2, err3, err4, err5, err6} {
			if err != nil {
				return nil, fmt.Errorf("file listing: %q: %w", line, err)
			}
		}
		e.perm, e.owner, e.size, e.mtime, e.ctime, e.ino, e.link = uint32(perm), f[1], size, mt, ct, ino, link
		m[p] = e
	}
	return m, nil
}

// treeRules say which changes outside the work tree an honest install
// makes: in the Python environment's site-packages, the editable install's
// own files; in its scripts directory, rewritten console scripts.
type treeRules struct {
	workdir  string
	sitePkgs []string
	scripts  []string
}

// editableName matches the names an editable install of project NAME
// writes into site-packages, with NAME in the first group that is set.
var editableName = lazyre.New(`^(?:__editable__\.(.+?)-[^-]*\.pth|__editable___(.+?)_[0-9][0-9A-Za-z_]*_finder\.py|(.+?)\.egg-link|(.+?)-[^-]*\.dist-info|(.+?)\.egg-info)$`)

// projectOf is the normalised project name an editable-install file is
// for, or "".
func projectOf(name string) string {
	m := editableName.FindStringSubmatch(name)
	if m == nil {
		return ""
	}
	for _, g := range m[1:] {
		if g != "" {
			return strings.NewReplacer("-", "_", ".", "_").Replace(strings.ToLower(g))
		}
	}
	return ""
}

// compareTrees lists every difference between two listings that the rules
// do not allow, as "<path> <what>", sorted.
func compareTrees(before, after map[string]treeEntry, r treeRules) []string {
	// The projects installed in editable mode before the install ran: only
	// their files may change in site-packages.
	projects := map[string]bool{}
	for p, e := range before {
		for _, sp := range r.sitePkgs {
			if path.Dir(p) == sp && (e.kind == 'f' || e.kind == 'd') && !strings.HasSuffix(p, "-info") {
				if n := projectOf(path.Base(p)); n != "" {
					projects[n] = true
				}
			}
		}
	}
	allowed := func(p string, b, a *treeEntry) bool {
		if r.workdir != "" {
			if git := path.Join(r.workdir, ".git"); p == path.Join(git, "index") {
				return true // git refreshes it; it runs nothing
			}
		}
		for _, sp := range r.sitePkgs {
			if p == sp && (b == nil || b.kind == 'd') && (a == nil || a.kind == 'd') {
				return true // pip may stash it whole and make it anew
			}
			rel, ok := strings.CutPrefix(p, sp+"/")
			if !ok {
				continue
			}
			first, _, _ := strings.Cut(rel, "/")
			if first == "easy-install.pth" {
				return true
			}
			if first == "__pycache__" {
				if rel == "__pycache__" {
					// Made anew by the install's Python or pip; what is in
					// it is checked by name.
					return (b == nil || b.kind == 'd') && (a == nil || a.kind == 'd')
				}
				stem, _, _ := strings.Cut(path.Base(rel), ".")
				return strings.Count(rel, "/") == 1 && projects[projectOf(stem+".py")]
			}
			if n := projectOf(first); n != "" && projects[n] {
				return true
			}
		}
		for _, sd := range r.scripts {
			if path.Dir(p) != sd {
				continue
			}
			// A console script rewritten: small regular files that were
			// there already. Interpreters (links, large binaries) and new
			// names are not.
			if b != nil && b.kind == 'f' && b.size < 64<<10 && (a == nil || a.kind == 'f' && a.size < 64<<10) {
				return true
			}
		}
		return false
	}
	var out []string
	for _, p := range sortedPaths(before) {
		b := before[p]
		a, ok := after[p]
		switch {
		case !ok:
			if !allowed(p, &b, nil) && !underRemoved(p, before, after) {
				out = append(out, p+" removed")
			}
		default:
			if what := entryChange(b, a); what != "" && !allowed(p, &b, &a) {
				out = append(out, p+" "+what)
			}
		}
	}
	for _, p := range sortedPaths(after) {
		if _, ok := before[p]; ok {
			continue
		}
		a := after[p]
		if !allowed(p, nil, &a) && !underAdded(p, before, after) {
			out = append(out, p+" added")
		}
	}
	return out
}

// underRemoved says whether a parent of p was removed too (only the
// topmost removal is reported); underAdded the same for additions.
func underRemoved(p string, before, after map[string]treeEntry) bool {
	d := path.Dir(p)
	_, wasThere := before[d]
	_, isThere := after[d]
	return wasThere && !isThere
}

func underAdded(p string, before, after map[string]treeEntry) bool {
	d := path.Dir(p)
	_, wasThere := before[d]
	_, isThere := after[d]
	return isThere && !wasThere
}

// entryChange says what changed between two listings of one path, or "".
// A directory's size and times change with its entries, which are
// compared one by one.
func entryChange(b, a treeEntry) string {
	switch {
	case b.kind != a.kind:
		return fmt.Sprintf("changed type (%c to %c)", b.kind, a.kind)
	case b.perm != a.perm:
		return fmt.Sprintf("changed mode (%o to %o)", b.perm, a.perm)
	case b.owner != a.owner:
		return fmt.Sprintf("changed owner (%s to %s)", b.owner, a.owner)
	case b.ino != a.ino:
		return "replaced"
	case b.kind == 'l' && b.link != a.link:
		return fmt.Sprintf("changed link (%q to %q)", b.link, a.link)
	case b.kind == 'd':
		return ""
	case b.size != a.size:
		return fmt.Sprintf("changed size (%d to %d)", b.size, a.size)
	case b.mtime != a.mtime || b.ctime != a.ctime:
		return "modified"
	}
	return ""
}

func sortedPaths(m map[string]treeEntry) []string {
	out := make([]string, 0, len(m))
	for p := range m {
		out = append(out, p)
	}
	sort.Strings(out)
	return out
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for p := range m {
		out = append(out, p)
	}
	sort.Strings(out)
	return out
}

func sortedStrings(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for p := range m {
		out = append(out, p)
	}
	sort.Strings(out)
	return out
}

func fsMode(m int) fs.FileMode { return fs.FileMode(m) }
