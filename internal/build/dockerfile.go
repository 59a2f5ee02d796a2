package build

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/swerve-dev/swerve/internal/lazyre"
)

// ImageTag is the tag Stage 1 builds an instance's image under: the
// instance id lower-cased, with "/" and ":" written as "-", and the suffix
// "_swefactory_root" that makes Stage 2 grade it with the SWE-Factory rules.
func ImageTag(instanceID string) string {
	s := strings.NewReplacer("/", "-", ":", "-").Replace(strings.ToLower(instanceID))
	return s + "_swefactory_root"
}

// Where mirrors from the repo cache go in the build context and the image.
const (
	contextRepos = ".swerve-repos"
	imageRepos   = "/swerve-repos"
)

// Mirror is one repository the build clones from the repo cache instead of
// from GitHub.
type Mirror struct {
	Repo string // owner/name
	Host string // the mirror on the host
	// Context is its path in the build context; Image its path in the image.
	Context string
	Image   string
}

// Offline is a Dockerfile rewritten to clone from the repo cache.
type Offline struct {
	// Dockerfile is what is built: the original with the clone URLs of
	// cached repositories pointing at the copied mirrors.
	Dockerfile string
	// Mirrors are the repositories taken from the cache, in order of use.
	Mirrors []Mirror
	// Missing are GitHub repositories the Dockerfile clones that the cache
	// does not hold (their clone still needs the network).
	Missing []string
}

// githubURL matches a GitHub repository URL as git clone takes it; the last
// group is the character after it, kept as it is.
var githubURL = lazyre.New(`(?:https?://(?:[^/@\s]+@)?github\.com/|git@github\.com:)([A-Za-z0-9_.-]+)/([A-Za-z0-9_.-]+?)(?:\.git)?/?([\s"';&|)]|$)`)

// UseRepoCache rewrites the git clones of GitHub repositories in the RUN
// instructions of dockerfile to clone from the mirrors in cacheDir
// (<owner>__<name>.git or <owner>/<name>.git), and adds a COPY of each
// mirror before the first instruction of each stage that clones it. With an
// empty cacheDir, or nothing to rewrite, the Dockerfile is returned as it
// is.
func UseRepoCache(dockerfile, cacheDir string) (*Offline, error) {
	off := &Offline{Dockerfile: dockerfile}
	if cacheDir == "" {
		return off, nil
	}
	lines := strings.Split(dockerfile, "\n")
	var out []string
	found := map[string]*Mirror{} // by owner/name
	missing := map[string]bool{}
	copied := map[string]bool{} // in the current stage
	for i := 0; i < len(lines); {
		j := instructionEnd(lines, i)
		inst := lines[i:j]
		keyword := instructionKeyword(inst)
		if keyword == "FROM" {
			copied = map[string]bool{}
		}
		if keyword != "RUN" || !strings.Contains(strings.Join(inst, "\n"), "clone") {
			out = append(out, inst...)
			i = j
			continue
		}
		var copies []string
		rewritten := make([]string, len(inst))
		for k, line := range inst {
			rewritten[k] = githubURL.ReplaceAllStringFunc(line, func(m string) string {
				sub := githubURL.FindStringSubmatch(m)
				repo := sub[1] + "/" + sub[2]
				mir, ok := found[repo]
				if !ok {
					host, ok := findMirror(cacheDir, sub[1], sub[2])
					if !ok {
						if !missing[repo] {
							missing[repo] = true
							off.Missing = append(off.Missing, repo)
						}
						return m
					}
					base := sub[1] + "__" + sub[2] + ".git"
					mir = &Mirror{Repo: repo, Host: host, Context: contextRepos + "/" + base, Image: imageRepos + "/" + base}
					found[repo] = mir
					off.Mirrors = append(off.Mirrors, *mir)
				}
				if !copied[repo] {
					copied[repo] = true
					copies = append(copies, fmt.Sprintf("COPY %s %s", mir.Context, mir.Image))
				}
				return "file://" + mir.Image + sub[3]
			})
		}
		out = append(out, copies...)
		out = append(out, rewritten...)
		i = j
	}
	off.Dockerfile = strings.Join(out, "\n")
	return off, nil
}

// instructionEnd returns the index after the instruction that starts at
// line i: continuation lines (a trailing backslash) and heredoc bodies
// belong to it. Blank and comment lines stand alone.
func instructionEnd(lines []string, i int) int {
	first := strings.TrimSpace(lines[i])
	if first == "" || strings.HasPrefix(first, "#") {
		return i + 1
	}
	j := i
	for j < len(lines) {
		line := strings.TrimRight(lines[j], " \t\r")
		j++
		if !strings.HasSuffix(line, `\`) {
			break
		}
	}
	text := strings.Join(lines[i:j], "\n")
	for _, m := range heredoc.FindAllStringSubmatch(text, -1) {
		word := m[1]
		for j < len(lines) {
			line := strings.TrimSpace(lines[j])
			j++
			if line == word {
				break
			}
		}
	}
	return j
}

var heredoc = lazyre.New(`<<-?\s*["']?([A-Za-z_][A-Za-z0-9_]*)["']?`)

// instructionKeyword is the upper-cased first word of an instruction.
func instructionKeyword(inst []string) string {
	f := strings.Fields(inst[0])
	if len(f) == 0 || strings.HasPrefix(f[0], "#") {
		return ""
	}
	return strings.ToUpper(f[0])
}

// findMirror looks for owner/name's git mirror in the cache.
func findMirror(cacheDir, owner, name string) (string, bool) {
	for _, p := range []string{
		filepath.Join(cacheDir, owner+"__"+name+".git"),
		filepath.Join(cacheDir, owner, name+".git"),
		filepath.Join(cacheDir, owner+"__"+name),
		filepath.Join(cacheDir, owner, name),
	} {
		if isGitDir(p) {
			return p, true
		}
	}
	return "", false
}

// isGitDir reports whether p is a bare repository or a work tree.
func isGitDir(p string) bool {
	if fi, err := os.Stat(filepath.Join(p, "HEAD")); err == nil && fi.Mode().IsRegular() {
		if fi, err := os.Stat(filepath.Join(p, "objects")); err == nil && fi.IsDir() {
			return true
		}
	}
	fi, err := os.Stat(filepath.Join(p, ".git"))
	return err == nil && fi.IsDir()
}
