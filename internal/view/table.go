package view

import (
	"cmp"
	"fmt"
	"html/template"
	"math"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Query is the task table's filter, sort and page, as the URL carries them.
type Query struct {
	Q        string // substring of the instance id or repo
	Outcome  string // resolved, unresolved, error, ungraded
	Exit     string
	Scaffold string
	Repo     string
	Sort     string // a column name; "" is file order
	Desc     bool
	Limit    int
	Offset   int
	// Changed, on the compare page, keeps only tasks whose reward differs.
	Changed bool
	// Signals keeps only tasks with audit flags.
	Signals bool
	// Rollouts, for a run with several rollouts of a task, lists every
	// rollout instead of one row per task (group).
	Rollouts bool
	// Run is the run shown: 0 (A) or 1 (B).
	Run int
}

// Default and largest page sizes.
const (
	defaultLimit = 50
	maxLimit     = 1000
)

// ParseQuery reads a Query from URL values.
func ParseQuery(v url.Values) Query {
	q := Query{Q: strings.TrimSpace(v.Get("q")), Outcome: v.Get("outcome"), Exit: v.Get("exit"), Scaffold: v.Get("scaffold"),
		Repo: v.Get("repo"), Sort: v.Get("sort"), Desc: v.Get("desc") == "1", Changed: v.Get("changed") == "1", Signals: v.Get("signals") == "1",
		Rollouts: v.Get("rollouts") == "1"}
	q.Limit, _ = strconv.Atoi(v.Get("limit"))
	if q.Limit <= 0 {
		q.Limit = defaultLimit
	}
	q.Limit = min(q.Limit, maxLimit)
	q.Offset, _ = strconv.Atoi(v.Get("offset"))
	q.Offset = max(q.Offset, 0)
	q.Run, _ = strconv.Atoi(v.Get("run"))
	return q
}

// Values writes q back as URL values, leaving defaults out.
func (q Query) Values() url.Values {
	v := url.Values{}
	set := func(k, s string) {
		if s != "" {
			v.Set(k, s)
		}
	}
	set("q", q.Q)
	set("outcome", q.Outcome)
	set("exit", q.Exit)
	set("scaffold", q.Scaffold)
	set("repo", q.Repo)
	set("sort", q.Sort)
	if q.Desc {
		v.Set("desc", "1")
	}
	if q.Changed {
		v.Set("changed", "1")
	}
	if q.Signals {
		v.Set("signals", "1")
	}
	if q.Rollouts {
		v.Set("rollouts", "1")
	}
	if q.Run > 0 {
		v.Set("run", strconv.Itoa(q.Run))
	}
	if q.Limit != defaultLimit {
		v.Set("limit", strconv.Itoa(q.Limit))
	}
	if q.Offset > 0 {
		v.Set("offset", strconv.Itoa(q.Offset))
	}
	return v
}

// URL is path with q's query.
func (q Query) URL(path string) string {
	if e := q.Values().Encode(); e != "" {
		return path + "?" + e
	}
	return path
}

// SortURL is the URL that sorts by col: descending first for numbers,
// flipping when col is already the sort.
func (q Query) SortURL(path, col string) string {
	n := q
	n.Offset = 0
	if q.Sort == col {
		n.Desc = !q.Desc
	} else {
		n.Sort, n.Desc = col, col != "key" && col != "repo" && col != "scaffold" && col != "exit"
	}
	return n.URL(path)
}

// RolloutsURL is the URL of the table listing every rollout (on), or one
// row per task (off), from the first page.
func (q Query) RolloutsURL(path string, on bool) string {
	n := q
	n.Offset, n.Rollouts = 0, on
	return n.URL(path)
}

// PageURL is the URL of the page at offset.
func (q Query) PageURL(path string, offset int) string {
	n := q
	n.Offset = max(offset, 0)
	return n.URL(path)
}

// match reports whether s passes q's filters.
func (q *Query) match(s *Summary) bool {
	if q.Q != "" {
		needle := strings.ToLower(q.Q)
		if !strings.Contains(strings.ToLower(s.Key), needle) && !strings.Contains(strings.ToLower(s.Repo), needle) {
			return false
		}
	}
	return (q.Outcome == "" || s.Outcome() == q.Outcome) && (q.Exit == "" || s.ExitReason == q.Exit) &&
		(q.Scaffold == "" || s.Scaffold == q.Scaffold) && (q.Repo == "" || s.Repo == q.Repo) && (!q.Signals || s.Signals > 0)
}

// sortKey compares two summaries by col.
func sortKey(col string) func(a, b *Summary) int {
	switch col {
	case "key":
		return func(a, b *Summary) int { return strings.Compare(a.Key, b.Key) }
	case "reward":
		return func(a, b *Summary) int {
			return cmp.Or(cmp.Compare(outcomeRank(a), outcomeRank(b)), cmp.Compare(a.Reward, b.Reward))
		}
	case "exit":
		return func(a, b *Summary) int { return strings.Compare(a.ExitReason, b.ExitReason) }
	case "turns":
		return func(a, b *Summary) int { return cmp.Compare(a.Turns, b.Turns) }
	case "tokens":
		return func(a, b *Summary) int { return cmp.Compare(a.Tokens, b.Tokens) }
	case "cost":
		return func(a, b *Summary) int { return cmp.Compare(a.Cost, b.Cost) }
	case "time":
		return func(a, b *Summary) int { return cmp.Compare(a.Seconds, b.Seconds) }
	case "repo":
		return func(a, b *Summary) int { return strings.Compare(a.Repo, b.Repo) }
	case "scaffold":
		return func(a, b *Summary) int { return strings.Compare(a.Scaffold, b.Scaffold) }
	}
	return nil
}

func outcomeRank(s *Summary) int {
	switch s.Outcome() {
	case "error":
		return 0
	case "ungraded":
		return 1
	}
	return 2
}

// Page is one page of the task table.
type Page struct {
	Rows          []*Summary
	Matched       int
	Offset, Limit int
}

// Select filters, sorts and pages tasks. Only the matching rows' pointers
// are sorted; the page is a slice of them.
func Select(tasks []Summary, q Query) Page {
	rows := make([]*Summary, 0, len(tasks))
	for i := range tasks {
		if q.match(&tasks[i]) {
			rows = append(rows, &tasks[i])
		}
	}
	if less := sortKey(q.Sort); less != nil {
		slices.SortStableFunc(rows, func(a, b *Summary) int {
			c := less(a, b)
			if q.Desc {
				c = -c
			}
			return c
		})
	}
	p := Page{Matched: len(rows), Offset: q.Offset, Limit: q.Limit}
	if q.Offset < len(rows) {
		p.Rows = rows[q.Offset:min(len(rows), q.Offset+q.Limit)]
	}
	return p
}

// Stats are a run's overview figures.
type Stats struct {
	Tasks, Graded, Resolved, Errors, Ungraded, Tampered int
	// Signaled counts the tasks with audit flags, errors included.
	Signaled      int
	Accuracy      float64
	Cost, Seconds float64
	// Wall is the time from the first task's start to the last one's end,
	// when the rows say (swerve's records).
	Wall                    float64
	Tokens                  int
	ExitReasons             []Count
	ErrorReasons            []Count
	Scaffolds, Repos, Exits []string
	TurnsHist, TokensHist   template.HTML
}

// Count is a name and how many tasks have it.
type Count struct {
	Name string
	N    int
}

func counted(m map[string]int) []Count {
	out := make([]Count, 0, len(m))
	for k, n := range m {
		out = append(out, Count{k, n})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].N > out[j].N || out[i].N == out[j].N && out[i].Name < out[j].Name })
	return out
}

func keys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		if k != "" {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

// Summarize computes the overview figures. Errors are counted apart: they
// are in no accuracy, exit reason or histogram.
func Summarize(tasks []Summary) Stats {
	st := Stats{Tasks: len(tasks)}
	exits, errs := map[string]int{}, map[string]int{}
	scaffolds, repos, exitNames := map[string]bool{}, map[string]bool{}, map[string]bool{}
	var turns, tokens []float64
	var first, last time.Time
	for i := range tasks {
		t := &tasks[i]
		if !t.Started.IsZero() && (first.IsZero() || t.Started.Before(first)) {
			first = t.Started
		}
		if t.Finished.After(last) {
			last = t.Finished
		}
		st.Cost += t.Cost
		st.Seconds += t.Seconds
		st.Tokens += t.Tokens
		scaffolds[t.Scaffold], repos[t.Repo], exitNames[t.ExitReason] = true, true, true
		if t.Signals > 0 {
			st.Signaled++
		}
		switch t.Outcome() {
		case "error":
			st.Errors++
			kind := t.Error
			if i := strings.IndexByte(kind, ':'); i > 0 {
				kind = kind[:i]
			}
			errs[kind]++
			continue
		case "ungraded":
			st.Ungraded++
		default:
			st.Graded++
			if t.Resolved() {
				st.Resolved++
			}
		}
		if t.Tampered {
			st.Tampered++
		}
		exits[t.ExitReason]++
		turns = append(turns, float64(t.Turns))
		tokens = append(tokens, float64(t.Tokens))
	}
	if !first.IsZero() && last.After(first) {
		st.Wall = last.Sub(first).Seconds()
	}
	if st.Graded > 0 {
		st.Accuracy = float64(st.Resolved) / float64(st.Graded)
	}
	st.ExitReasons, st.ErrorReasons = counted(exits), counted(errs)
	st.Scaffolds, st.Repos, st.Exits = keys(scaffolds), keys(repos), keys(exitNames)
	st.TurnsHist = histogram(turns, "turns")
	st.TokensHist = histogram(tokens, "tokens")
	return st
}

// histogram draws values as an inline SVG bar chart of up to 12 bins.
func histogram(values []float64, label string) template.HTML {
	const w, h, bins = 360.0, 120.0, 12
	if len(values) == 0 {
		return template.HTML(`<p class="muted">no ` + label + `</p>`)
	}
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, v := range values {
		lo, hi = math.Min(lo, v), math.Max(hi, v)
	}
	n := bins
	width := (hi - lo) / float64(n)
	perValue := hi-lo < bins && hi == math.Trunc(hi) && lo == math.Trunc(lo)
	if perValue {
		// small whole numbers: one bin per value, each labelled
		n, width = int(hi-lo)+1, 1
	}
	counts := make([]int, n)
	for _, v := range values {
		i := int((v - lo) / width)
		if i >= n || i < 0 {
			i = n - 1
		}
		counts[i]++
	}
	top := slices.Max(counts)
	var b strings.Builder
	const top0 = 14.0 // room for the counts above the bars
	fmt.Fprintf(&b, `<svg class="hist" role="img" aria-label="histogram of %s" viewBox="0 0 %g %g" width="%g" height="%g">`, label, w, h+top0+30, w, h+top0+30)
	bw := w / float64(n)
	for i, c := range counts {
		bh := h * float64(c) / float64(top)
		from := lo + float64(i)*width
		x := float64(i) * bw
		fmt.Fprintf(&b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f"><title>%s %s–%s: %d</title></rect>`,
			x+1, top0+h-bh, bw-2, bh, label, short(from), short(from+width), c)
		if c > 0 {
			fmt.Fprintf(&b, `<text class="count" x="%.1f" y="%.1f" text-anchor="middle">%d</text>`, x+bw/2, top0+h-bh-3, c)
		}
		if perValue {
			fmt.Fprintf(&b, `<text x="%.1f" y="%g" text-anchor="middle">%s</text>`, x+bw/2, top0+h+13, short(from))
		}
	}
	if !perValue {
		fmt.Fprintf(&b, `<text x="0" y="%g">%s</text><text x="%g" y="%g" text-anchor="end">%s</text>`, top0+h+13, short(lo), w, top0+h+13, short(hi))
	}
	fmt.Fprintf(&b, `<text x="%g" y="%g" text-anchor="middle">%s of %d tasks</text></svg>`, w/2, top0+h+28, label, len(values))
	return template.HTML(b.String())
}

// short writes a number compactly: 1234567 → 1.2M.
func short(v float64) string {
	switch a := math.Abs(v); {
	case a >= 1e6:
		return strconv.FormatFloat(v/1e6, 'f', 1, 64) + "M"
	case a >= 1e4:
		return strconv.FormatFloat(v/1e3, 'f', 0, 64) + "k"
	case a >= 1e3:
		return strconv.FormatFloat(v/1e3, 'f', 1, 64) + "k"
	case v == math.Trunc(v):
		return strconv.FormatFloat(v, 'f', 0, 64)
	}
	return strconv.FormatFloat(v, 'f', 1, 64)
}
