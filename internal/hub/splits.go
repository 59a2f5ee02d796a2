package hub

import (
	"path"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/swerve-dev/swerve/internal/lazyre"
)

// The rules below are the datasets library's: a README "configs" entry
// wins; else files named data/<split>-NNNNN-of-NNNNN.*; else a split
// keyword in a directory name; else in a file name; else every file is
// "train".

// dataExts are the file types swerve's loader reads.
var dataExts = []string{".parquet", ".jsonl", ".json"}

func isDataFile(p string) bool {
	for _, part := range strings.Split(p, "/") {
		// Hidden files and "__" folders are left out, as upstream does.
		if strings.HasPrefix(part, ".") || strings.HasPrefix(part, "__") {
			return false
		}
	}
	return slices.Contains(dataExts, path.Ext(p))
}

var splitKeywords = []struct {
	split string
	words []string
}{
	{"train", []string{"train", "training"}},
	{"validation", []string{"validation", "valid", "dev", "val"}},
	{"test", []string{"test", "testing", "eval", "evaluation"}},
}

const nonWordChars = "-._ 0123456789"

var shardedRE = lazyre.New(`^data/(.+)-[0-9]{5}-of-[0-9]{5}[^/]*\.[^/]*$`)

// configSpec is the part of a README's "configs" entry that names files.
type configSpec struct {
	Name      string `json:"config_name"`
	Default   bool   `json:"default"`
	DataFiles any    `json:"data_files"`
}

// splitFiles maps each split to its data files, and returns the split
// names in a stable order. config picks a README config ("" for the
// default one).
func splitFiles(files []string, configs []configSpec, config string) (map[string][]string, []string) {
	var data []string
	for _, f := range files {
		if isDataFile(f) {
			data = append(data, f)
		}
	}
	sort.Strings(data)
	if c, ok := pickConfig(configs, config); ok {
		if m := fromConfig(data, c); len(m) > 0 {
			return m, keys(m)
		}
	}
	out := map[string][]string{}
	for _, f := range data {
		if m := shardedRE.FindStringSubmatch(f); m != nil && !strings.Contains(m[1], "/") {
			out[m[1]] = append(out[m[1]], f)
		}
	}
	if len(out) > 0 {
		return out, keys(out)
	}
	for _, inDir := range []bool{true, false} {
		for _, f := range data {
			for _, sk := range splitKeywords {
				if slices.ContainsFunc(sk.words, func(w string) bool { return keywordIn(f, w, inDir) }) {
					out[sk.split] = append(out[sk.split], f)
					break
				}
			}
		}
		if len(out) > 0 {
			return out, keys(out)
		}
	}
	if len(data) > 0 {
		out["train"] = data
	}
	return out, keys(out)
}

// keywordIn reports whether word stands alone (between non-word
// characters) in one of p's directory names, or at the start or middle of
// its file name followed by a non-word character.
func keywordIn(p, word string, inDir bool) bool {
	parts := strings.Split(p, "/")
	name := parts[len(parts)-1]
	if inDir {
		return slices.ContainsFunc(parts[:len(parts)-1], func(d string) bool { return hasWord(d, word, false) })
	}
	return hasWord(name, word, true)
}

func hasWord(s, word string, needSepAfter bool) bool {
	for i := 0; ; {
		j := strings.Index(s[i:], word)
		if j < 0 {
			return false
		}
		start, end := i+j, i+j+len(word)
		before := start == 0 || strings.IndexByte(nonWordChars, s[start-1]) >= 0
		after := end < len(s) && strings.IndexByte(nonWordChars, s[end]) >= 0
		if before && (after || (!needSepAfter && end == len(s))) {
			return true
		}
		i = start + 1
	}
}

func pickConfig(configs []configSpec, name string) (configSpec, bool) {
	for _, c := range configs {
		if name != "" && c.Name == name {
			return c, true
		}
	}
	if name != "" {
		return configSpec{}, false
	}
	for _, c := range configs {
		if c.Default || c.Name == "default" {
			return c, true
		}
	}
	if len(configs) == 1 {
		return configs[0], true
	}
	return configSpec{}, false
}

// fromConfig applies a config's data_files: a pattern, a list of patterns
// (the "train" split), or a list of {split, path} entries.
func fromConfig(data []string, c configSpec) map[string][]string {
	patterns := map[string][]string{}
	addPaths := func(split string, v any) {
		switch p := v.(type) {
		case string:
			patterns[split] = append(patterns[split], p)
		case []any:
			for _, e := range p {
				if s, ok := e.(string); ok {
					patterns[split] = append(patterns[split], s)
				}
			}
		}
	}
	switch df := c.DataFiles.(type) {
	case string:
		addPaths("train", df)
	case []any:
		for _, e := range df {
			switch v := e.(type) {
			case string:
				addPaths("train", v)
			case map[string]any:
				split, _ := v["split"].(string)
				if split == "" {
					split = "train"
				}
				addPaths(split, v["path"])
			}
		}
	case map[string]any:
		for split, v := range df {
			addPaths(split, v)
		}
	}
	out := map[string][]string{}
	for split, pats := range patterns {
		for _, pat := range pats {
			re := globRE(pat)
			for _, f := range data {
				if re.MatchString(f) && !slices.Contains(out[split], f) {
					out[split] = append(out[split], f)
				}
			}
		}
		sort.Strings(out[split])
	}
	for split, fs := range out {
		if len(fs) == 0 {
			delete(out, split)
		}
	}
	return out
}

// globRE turns an fsspec-style glob into a regexp: ** crosses folders,
// * and ? do not, [...] is a character class.
func globRE(pat string) *regexp.Regexp {
	var b strings.Builder
	b.WriteString("^")
	for i := 0; i < len(pat); i++ {
		switch c := pat[i]; c {
		case '*':
			if i+1 < len(pat) && pat[i+1] == '*' {
				i++
				if i+1 < len(pat) && pat[i+1] == '/' {
					i++
					b.WriteString("(?:.*/)?")
				} else {
					b.WriteString(".*")
				}
			} else {
				b.WriteString("[^/]*")
			}
		case '?':
			b.WriteString("[^/]")
		case '[':
			j := strings.IndexByte(pat[i:], ']')
			if j < 0 {
				b.WriteString(`\[`)
				continue
			}
			class := pat[i+1 : i+j]
			if strings.HasPrefix(class, "!") {
				class = "^" + class[1:]
			}
			b.WriteString("[" + strings.ReplaceAll(class, `\`, `\\`) + "]")
			i += j
		default:
			b.WriteString(regexp.QuoteMeta(string(c)))
		}
	}
	b.WriteString("$")
	re, err := regexp.Compile(b.String())
	if err != nil {
		return regexp.MustCompile(`^` + regexp.QuoteMeta(pat) + `$`)
	}
	return re
}

// keys returns the splits in the usual order: train, validation, test,
// then the others by name.
func keys(m map[string][]string) []string {
	rank := func(s string) int {
		for i, sk := range splitKeywords {
			if sk.split == s {
				return i
			}
		}
		return len(splitKeywords)
	}
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Slice(out, func(i, j int) bool {
		ri, rj := rank(out[i]), rank(out[j])
		if ri != rj {
			return ri < rj
		}
		return out[i] < out[j]
	})
	return out
}
