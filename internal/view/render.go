package view

import (
	"fmt"
	"html/template"
	"math"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// foldAt is the size past which an observation or output is folded.
const (
	foldBytes = 2000
	foldLines = 40
)

var funcs = template.FuncMap{
	"pct": func(f float64) string { return strconv.FormatFloat(100*f, 'f', 1, 64) + "%" },
	"reward": func(s *Summary) string {
		switch s.Outcome() {
		case "error":
			return "error"
		case "ungraded":
			return "–"
		}
		return strconv.FormatFloat(s.Reward, 'g', 3, 64)
	},
	"secs": secs,
	"when": func(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05 UTC") },
	"num":  func(f float64) string { return strconv.FormatFloat(f, 'f', 2, 64) },
	"prob": func(f float64) string {
		if math.IsNaN(f) {
			return "–"
		}
		return strconv.FormatFloat(f, 'f', 2, 64)
	},
	"money": func(f float64) string { return "$" + strconv.FormatFloat(f, 'f', 2, 64) },
	"short": func(n int) string { return short(float64(n)) },
	"size":  size,
	"long": func(s string) bool {
		return len(s) > foldBytes || strings.Count(s, "\n") > foldLines
	},
	"lines": func(s string) int { return strings.Count(s, "\n") + 1 },
	"taskURL": func(run int, key string) string {
		v := url.Values{"key": {key}}
		if run > 0 {
			v.Set("run", strconv.Itoa(run))
		}
		return "/task?" + v.Encode()
	},
	"rawURL": func(run int, name string) string {
		u := "/raw/" + (&url.URL{Path: name}).EscapedPath()
		if run > 0 {
			u += "?run=" + strconv.Itoa(run)
		}
		return u
	},
	"rowURL": func(run int, key string) string {
		v := url.Values{"key": {key}}
		if run > 0 {
			v.Set("run", strconv.Itoa(run))
		}
		return "/row?" + v.Encode()
	},
	"add":  func(a, b int) int { return a + b },
	"list": func(s ...string) []string { return s },
	"sub":  func(a, b int) int { return a - b },
	"sel": func(a, b string) template.HTMLAttr {
		if a == b {
			return "selected"
		}
		return ""
	},
	"arrow": func(q Query, col string) string {
		if q.Sort != col {
			return ""
		}
		if q.Desc {
			return " ▼"
		}
		return " ▲"
	},
	"signed": func(f float64) string {
		if f > 0 {
			return "+" + strconv.FormatFloat(f, 'g', 3, 64)
		}
		return strconv.FormatFloat(f, 'g', 3, 64)
	},
}

func secs(f float64) string {
	switch {
	case f >= 3600:
		return fmt.Sprintf("%dh%02dm", int(f)/3600, int(f)%3600/60)
	case f >= 60:
		return fmt.Sprintf("%dm%02ds", int(f)/60, int(f)%60)
	case f >= 10:
		return fmt.Sprintf("%.0fs", f)
	}
	return fmt.Sprintf("%.2fs", f)
}

func size(s string) string {
	n := len(s)
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}

// diffLine is one line of a patch and its class: file, hunk, add, del or
// ctx.
type diffLine struct {
	Class, Text string
}

func diffLines(patch string) []diffLine {
	if patch == "" {
		return nil
	}
	var out []diffLine
	for _, l := range strings.Split(strings.TrimRight(patch, "\n"), "\n") {
		c := "ctx"
		switch {
		case strings.HasPrefix(l, "diff --git"), strings.HasPrefix(l, "+++ "), strings.HasPrefix(l, "--- "), strings.HasPrefix(l, "index "),
			strings.HasPrefix(l, "new file"), strings.HasPrefix(l, "deleted file"):
			c = "file"
		case strings.HasPrefix(l, "@@"):
			c = "hunk"
		case strings.HasPrefix(l, "+"):
			c = "add"
		case strings.HasPrefix(l, "-"):
			c = "del"
		}
		out = append(out, diffLine{c, l})
	}
	return out
}

// testLine is one line of test output, marked when it names a failing
// FAIL_TO_PASS (f2p-fail) or PASS_TO_PASS (p2p-fail) test, or a passing
// FAIL_TO_PASS test (f2p-pass).
type testLine struct {
	Class, Text string
}

func testLines(d *Detail) []testLine {
	if d.TestOutput == "" {
		return nil
	}
	marks := []struct {
		class string
		names []string
	}{{"f2p-fail", d.FailF2P}, {"p2p-fail", d.FailP2P}, {"f2p-pass", d.PassF2P}}
	var out []testLine
	for _, l := range strings.Split(strings.TrimRight(d.TestOutput, "\n"), "\n") {
		tl := testLine{Text: l}
	mark:
		for _, m := range marks {
			for _, n := range m.names {
				if n != "" && strings.Contains(l, n) {
					tl.Class = m.class
					break mark
				}
			}
		}
		out = append(out, tl)
	}
	return out
}
