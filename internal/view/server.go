package view

import (
	"bufio"
	"bytes"
	"embed"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"log/slog"
	"net/http"
	"os"
	"path"
	"sort"
	"strconv"
	"strings"
)

//go:embed templates/*.html
var templateFS embed.FS

//go:embed static
var staticFS embed.FS

// Server serves the viewer for one run, or two side by side.
type Server struct {
	runs []*Run
	tmpl *template.Template
	mux  *http.ServeMux
	log  *slog.Logger
}

// NewServer returns the viewer for runs (one or two); the first is "A".
func NewServer(log *slog.Logger, runs ...*Run) (*Server, error) {
	if len(runs) == 0 || len(runs) > 2 {
		return nil, fmt.Errorf("view: %d runs given, want 1 or 2", len(runs))
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	t, err := template.New("").Funcs(funcs).ParseFS(templateFS, "templates/*.html")
	if err != nil {
		return nil, fmt.Errorf("view: templates: %w", err)
	}
	s := &Server{runs: runs, tmpl: t, mux: http.NewServeMux(), log: log}
	static, _ := fs.Sub(staticFS, "static")
	s.mux.Handle("GET /static/", http.StripPrefix("/static/", http.FileServerFS(static)))
	s.mux.HandleFunc("GET /{$}", s.overview)
	s.mux.HandleFunc("GET /task", s.task)
	s.mux.HandleFunc("GET /compare", s.compare)
	s.mux.HandleFunc("GET /raw/{path...}", s.raw)
	s.mux.HandleFunc("GET /row", s.row)
	return s, nil
}

// ServeHTTP serves the viewer.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Security-Policy", "default-src 'self'; style-src 'self'; img-src 'self' data:; script-src 'self'")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	s.mux.ServeHTTP(w, r)
}

// runOf is the run a request names with ?run=0|1 (A by default).
func (s *Server) runOf(r *http.Request) (*Run, int, error) {
	i := 0
	if v := r.URL.Query().Get("run"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 || n >= len(s.runs) {
			return nil, 0, fmt.Errorf("no run %q", v)
		}
		i = n
	}
	return s.runs[i], i, nil
}

func (s *Server) render(w http.ResponseWriter, name string, data any) {
	var buf bytes.Buffer
	if err := s.tmpl.ExecuteTemplate(&buf, name, data); err != nil {
		s.log.Error("view: render", "page", name, "err", err)
		http.Error(w, "render "+name+": "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	_, _ = w.Write(buf.Bytes())
}

type Nav struct {
	Runs    []*Run
	Compare bool
	Title   string
}

func (s *Server) nav(title string) Nav {
	return Nav{Runs: s.runs, Compare: len(s.runs) == 2, Title: title}
}

type overviewData struct {
	Nav
	Run        *Run
	RunIndex   int
	Info       Info
	Stats      Stats
	GroupStats GroupStats
	// Grouped is set when the table shows one row per task (Groups)
	// rather than one per rollout (Page).
	Grouped bool
	Groups  GroupPage
	Query   Query
	Page    Page
	Path    string
}

func (s *Server) overview(w http.ResponseWriter, r *http.Request) {
	run, ri, err := s.runOf(r)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	tasks, err := run.Tasks()
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	info, err := run.Info()
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	groups, err := run.Groups()
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	q := ParseQuery(r.URL.Query())
	q.Run = ri
	data := overviewData{Nav: s.nav(run.Name), Run: run, RunIndex: ri, Info: info, Stats: Summarize(tasks), GroupStats: SummarizeGroups(groups),
		Query: q, Path: "/"}
	if data.GroupStats.Repeated && !q.Rollouts {
		data.Grouped, data.Groups = true, SelectGroups(groups, q)
	} else {
		data.Page = Select(tasks, q)
	}
	s.render(w, "overview.html", data)
}

type taskData struct {
	Nav
	Run      *Run
	RunIndex int
	Task     *Detail
	Diff     []diffLine
	Tests    []testLine
	Back     string
}

func (s *Server) task(w http.ResponseWriter, r *http.Request) {
	run, ri, err := s.runOf(r)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	key := r.URL.Query().Get("key")
	d, steps, err := run.TaskStream(key)
	if errors.Is(err, ErrNoTask) {
		http.Error(w, err.Error(), http.StatusNotFound)
		return
	}
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	back := "/"
	if ri > 0 {
		back = "/?run=" + strconv.Itoa(ri)
	}
	// The page up to the steps is rendered whole (an error is still a
	// 500); the steps are then written as they are read from the file.
	data := taskData{Nav: s.nav(d.Key + " · " + run.Name), Run: run, RunIndex: ri, Task: d, Diff: diffLines(d.Patch), Tests: testLines(d), Back: back}
	var head bytes.Buffer
	if err := s.tmpl.ExecuteTemplate(&head, "task.html", data); err != nil {
		s.log.Error("view: render", "page", "task.html", "err", err)
		http.Error(w, "render task.html: "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	bw := bufio.NewWriterSize(w, 64<<10)
	_, _ = bw.Write(head.Bytes())
	if err := steps(func(st Step) error { return s.tmpl.ExecuteTemplate(bw, "step", st.forPage()) }); err != nil {
		s.log.Error("view: steps", "task", key, "err", err)
		fmt.Fprintf(bw, `<li class="step format-error"><div class="format-msg">could not read the remaining steps: %s</div></li>`, template.HTMLEscapeString(err.Error()))
	}
	if err := s.tmpl.ExecuteTemplate(bw, "task-end", data); err != nil {
		s.log.Error("view: render", "page", "task-end", "err", err)
	}
	_ = bw.Flush()
}

// Pair is one task in both runs of a comparison.
type Pair struct {
	Key     string
	A, B    *Summary
	Changed bool
	// Delta is B's reward less A's (errors and absences count as 0).
	Delta float64
}

type compareData struct {
	Nav
	Query                Query
	Pairs                []Pair
	Matched, Changed     int
	Better, Worse        int
	OnlyA, OnlyB         int
	StatsA, StatsB       Stats
	Offset, Limit, Total int
}

// compare pairs the runs' tasks by key, changed ones first.
func (s *Server) compare(w http.ResponseWriter, r *http.Request) {
	if len(s.runs) != 2 {
		http.Error(w, "compare needs two runs: swerve view RUN_A RUN_B", http.StatusNotFound)
		return
	}
	ta, err := s.runs[0].Tasks()
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	tb, err := s.runs[1].Tasks()
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	q := ParseQuery(r.URL.Query())
	data := compareData{Nav: s.nav("compare"), Query: q, StatsA: Summarize(ta), StatsB: Summarize(tb)}
	pairs := Pairs(ta, tb)
	var rows []Pair
	for _, p := range pairs {
		if p.Changed {
			data.Changed++
			if p.Delta > 0 {
				data.Better++
			} else if p.Delta < 0 {
				data.Worse++
			}
		}
		if p.A == nil {
			data.OnlyB++
		}
		if p.B == nil {
			data.OnlyA++
		}
		if q.Changed && !p.Changed {
			continue
		}
		if q.Q != "" && !strings.Contains(strings.ToLower(p.Key), strings.ToLower(q.Q)) {
			continue
		}
		rows = append(rows, p)
	}
	data.Matched, data.Offset, data.Limit, data.Total = len(rows), q.Offset, q.Limit, len(pairs)
	if q.Offset < len(rows) {
		data.Pairs = rows[q.Offset:min(len(rows), q.Offset+q.Limit)]
	}
	s.render(w, "compare.html", data)
}

// Pairs joins two runs' tasks by key: changed first (B worse than A
// first, then better, then a task missing from one side), then by key.
func Pairs(a, b []Summary) []Pair {
	m := map[string]*Pair{}
	var order []string
	for i := range a {
		k := a[i].Key
		m[k] = &Pair{Key: k, A: &a[i]}
		order = append(order, k)
	}
	for i := range b {
		k := b[i].Key
		if p, ok := m[k]; ok {
			p.B = &b[i]
		} else {
			m[k] = &Pair{Key: k, B: &b[i]}
			order = append(order, k)
		}
	}
	out := make([]Pair, 0, len(order))
	val := func(s *Summary) (float64, string) {
		if s == nil {
			return 0, "missing"
		}
		return s.Reward, s.Outcome()
	}
	for _, k := range order {
		p := m[k]
		ra, oa := val(p.A)
		rb, ob := val(p.B)
		p.Delta = rb - ra
		p.Changed = ra != rb || oa != ob
		out = append(out, *p)
	}
	rank := func(p *Pair) int {
		switch {
		case !p.Changed:
			return 3
		case p.Delta < 0:
			return 0
		case p.Delta > 0:
			return 1
		}
		return 2
	}
	sort.SliceStable(out, func(i, j int) bool {
		ri, rj := rank(&out[i]), rank(&out[j])
		if ri != rj {
			return ri < rj
		}
		return out[i].Key < out[j].Key
	})
	return out
}

// raw serves a file of the run directory, read-only and as plain text;
// nothing outside the directory is reachable (os.Root refuses "..",
// absolute paths and symlinks that leave it).
func (s *Server) raw(w http.ResponseWriter, r *http.Request) {
	run, _, err := s.runOf(r)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	if run.Dir == "" {
		http.Error(w, "this run is a file: only its rows are served (/row)", http.StatusNotFound)
		return
	}
	name := r.PathValue("path")
	if name == "" || path.Clean(name) != name || strings.HasPrefix(name, "/") {
		http.Error(w, "bad path", http.StatusBadRequest)
		return
	}
	root, err := os.OpenRoot(run.Dir)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	defer root.Close()
	f, err := root.Open(name)
	if err != nil {
		http.Error(w, "not found", http.StatusNotFound)
		return
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil || !st.Mode().IsRegular() {
		http.Error(w, "not a file", http.StatusNotFound)
		return
	}
	ctype := "text/plain; charset=utf-8"
	if strings.HasSuffix(name, ".json") || strings.HasSuffix(name, ".jsonl") {
		ctype = "application/json"
	}
	w.Header().Set("Content-Type", ctype)
	http.ServeContent(w, r, "", st.ModTime(), f)
}

// row serves a task's row as its file holds it.
func (s *Server) row(w http.ResponseWriter, r *http.Request) {
	run, _, err := s.runOf(r)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	_, row, err := run.rowOf(r.URL.Query().Get("key"))
	if errors.Is(err, ErrNoTask) {
		http.Error(w, err.Error(), http.StatusNotFound)
		return
	}
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(row)
}
