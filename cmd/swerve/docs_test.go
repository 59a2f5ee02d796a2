package main

import (
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode"
)

// TestDocLinks checks every relative link in README.md, docs/ and the
// packages' README.md files: the file it names exists, and the heading it
// points at (#anchor, in GitHub's spelling) is in that file. Links to other
// sites are not followed.
func TestDocLinks(t *testing.T) {
	root := filepath.Join("..", "..")
	var files []string
	for _, top := range []string{"docs", "internal", "integrations", "examples"} {
		err := filepath.WalkDir(filepath.Join(root, top), func(p string, d os.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() && d.Name() == "testdata" {
				return filepath.SkipDir
			}
			if !d.IsDir() && strings.HasSuffix(p, ".md") {
				files = append(files, p)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	files = append(files, filepath.Join(root, "README.md"))

	link := regexp.MustCompile(`!?\[[^\]]*\]\(([^)\s]+)\)`)
	anchors := map[string]map[string]bool{}
	checked := 0
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for n, line := range proseLines(string(b)) {
			for _, m := range link.FindAllStringSubmatch(line, -1) {
				target := m[1]
				if u, err := url.Parse(target); err == nil && u.Scheme != "" {
					continue
				}
				checked++
				path, frag, _ := strings.Cut(target, "#")
				dest := f
				if path != "" {
					dest = filepath.Join(filepath.Dir(f), path)
					if _, err := os.Stat(dest); err != nil {
						t.Errorf("%s:%d: link %q: %v", rel(root, f), n+1, target, err)
						continue
					}
				}
				if frag == "" {
					continue
				}
				if _, ok := anchors[dest]; !ok {
					anchors[dest] = headingAnchors(t, dest)
				}
				if !anchors[dest][frag] {
					t.Errorf("%s:%d: link %q: no heading with anchor %q in %s", rel(root, f), n+1, target, frag, rel(root, dest))
				}
			}
		}
	}
	if checked < 20 {
		t.Errorf("only %d relative links found: the walk missed the documentation", checked)
	}
}

// proseLines returns the file's lines with those inside fenced code blocks
// and inline code spans blanked, so that examples are not read as links;
// line numbers are kept.
func proseLines(s string) []string {
	lines := strings.Split(s, "\n")
	code := regexp.MustCompile("`[^`]*`")
	fence := false
	for i, l := range lines {
		if strings.HasPrefix(strings.TrimSpace(l), "```") {
			fence = !fence
			lines[i] = ""
			continue
		}
		if fence {
			lines[i] = ""
			continue
		}
		lines[i] = code.ReplaceAllString(l, "")
	}
	return lines
}

// headingAnchors lists the anchors GitHub gives the headings of a Markdown
// file: the text lower-cased, everything but letters, digits, spaces, '-'
// and '_' dropped, spaces made '-', and "-1", "-2", ... added to repeats.
func headingAnchors(t *testing.T, path string) map[string]bool {
	t.Helper()
	if !strings.HasSuffix(path, ".md") {
		return map[string]bool{}
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	heading := regexp.MustCompile(`^#{1,6} (.+)$`)
	out := map[string]bool{}
	seen := map[string]int{}
	fence := false
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(strings.TrimSpace(l), "```") {
			fence = !fence
			continue
		}
		m := heading.FindStringSubmatch(l)
		if fence || m == nil {
			continue
		}
		slug := githubSlug(strings.TrimSpace(m[1]))
		if k := seen[slug]; k > 0 {
			out[fmt.Sprintf("%s-%d", slug, k)] = true
		} else {
			out[slug] = true
		}
		seen[slug]++
	}
	return out
}

func githubSlug(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(heading) {
		switch {
		case unicode.IsLetter(r), unicode.IsDigit(r), r == '-', r == '_':
			b.WriteRune(r)
		case r == ' ':
			b.WriteByte('-')
		}
	}
	return b.String()
}

func rel(root, p string) string {
	if r, err := filepath.Rel(root, p); err == nil {
		return r
	}
	return p
}

func TestGithubSlug(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"Apptainer / Singularity (`--backend apptainer`)", "apptainer--singularity---backend-apptainer"},
		{"Kubernetes (`--backend k8s`)", "kubernetes---backend-k8s"},
		{"Audit signals", "audit-signals"},
		{"What `grade` prints", "what-grade-prints"},
		{"Upstream's runner flags", "upstreams-runner-flags"},
	} {
		if got := githubSlug(c.in); got != c.want {
			t.Errorf("githubSlug(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}
