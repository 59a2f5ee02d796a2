package view

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/swerve-dev/swerve/internal/fsutil"
)

// Run is one run the viewer shows: a run directory or a file. Its index is
// built on first use and rebuilt when the files under it change.
type Run struct {
	// Path is the directory or file as given.
	Path string
	// Name is what the pages call the run.
	Name string
	// Dir is the run directory raw files are served from ("" for a file:
	// then only the task's own row is served).
	Dir string
	// file is the run's file when it is one ("" for a directory).
	file string

	mu      sync.Mutex
	idx     *index
	checked time.Time
	// every is how long a check waits after the last: recheck, or 20
	// times what looking at the files took, whichever is longer.
	every time.Duration
	// now is time.Now, replaceable in tests.
	now func() time.Time
}

// recheck is how often at most the files are looked at again.
const recheck = time.Second

type index struct {
	stamp  string
	format string
	tasks  []Summary
	byKey  map[string]int
	info   Info
	groups []Group
}

// Open checks that path is something the viewer reads and returns its Run;
// the index is built on first use.
func Open(path string) (*Run, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("view: %w", err)
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("view: %w", err)
	}
	r := &Run{Path: abs, Name: filepath.Base(abs), now: time.Now}
	if st.IsDir() {
		r.Dir = abs
	} else {
		r.file = abs
	}
	if _, err := r.index(); err != nil {
		return nil, err
	}
	return r, nil
}

// files are the files the run's index is made from, and their format.
func (r *Run) files() ([]string, string, error) {
	if r.Dir == "" {
		if strings.HasSuffix(r.file, ".traj.json") || strings.HasSuffix(r.file, ".json") {
			return []string{r.file}, "json", nil
		}
		return []string{r.file}, "jsonl", nil
	}
	// swerve's own records first: they hold the errors too, which
	// <exp_name>.jsonl leaves out.
	if recs, _ := filepath.Glob(filepath.Join(r.Dir, "*", "result.json")); len(recs) > 0 {
		return recs, "json", nil
	}
	if trajs, _ := filepath.Glob(filepath.Join(r.Dir, "*", "*.traj.json")); len(trajs) > 0 {
		return trajs, "json", nil
	}
	if trajs, _ := filepath.Glob(filepath.Join(r.Dir, "*.traj.json")); len(trajs) > 0 {
		return trajs, "json", nil
	}
	jsonls, _ := filepath.Glob(filepath.Join(r.Dir, "*.jsonl"))
	for _, p := range jsonls {
		base := filepath.Base(p)
		if strings.HasPrefix(base, "trajectories") || strings.HasSuffix(base, "_materialized_inputs.jsonl") || strings.HasSuffix(base, "_failures.jsonl") {
			continue
		}
		if f, err := firstRow(p); err == nil {
			if format, err := sniff(f); err == nil && (format == FormatSwerve || format == FormatGym) {
				return []string{p}, "jsonl", nil
			}
		}
	}
	return nil, "", fmt.Errorf("view: %s holds no run: no */result.json, no .traj.json, no <exp_name>.jsonl or rollouts JSONL", r.Dir)
}

func firstRow(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	br := bufio.NewReaderSize(f, 1<<16)
	for {
		line, err := br.ReadBytes('\n')
		if t := bytes.TrimSpace(line); len(t) > 0 {
			return t, nil
		}
		if err != nil {
			return nil, err
		}
	}
}

// stampOf names the state of files: their names, sizes and times.
func stampOf(files []string) string {
	h := sha256.New()
	for _, p := range files {
		st, err := os.Stat(p)
		if err != nil {
			fmt.Fprintf(h, "%s missing\n", p)
			continue
		}
		fmt.Fprintf(h, "%s %d %d\n", p, st.Size(), st.ModTime().UnixNano())
	}
	return string(h.Sum(nil))
}

// index returns the run's index, rebuilt when its files changed (looked at
// no more than once a recheck).
func (r *Run) index() (*index, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := r.now()
	if r.idx != nil && now.Sub(r.checked) < max(recheck, r.every) {
		return r.idx, nil
	}
	began := time.Now()
	files, kind, err := r.files()
	if err != nil {
		if r.idx != nil {
			return r.idx, nil
		}
		return nil, err
	}
	stamp := stampOf(files)
	r.checked, r.every = now, 20*time.Since(began)
	if r.idx != nil && r.idx.stamp == stamp {
		return r.idx, nil
	}
	idx := &index{stamp: stamp, byKey: map[string]int{}}
	counts := map[string]int{}
	add := func(s Summary) {
		if s.InstanceID == "" {
			s.InstanceID = "row-" + strconv.Itoa(len(idx.tasks)+1)
		}
		s.Key = s.InstanceID
		if n := counts[s.InstanceID]; n > 0 {
			s.Key = s.InstanceID + "#" + strconv.Itoa(n)
		}
		counts[s.InstanceID]++
		idx.byKey[s.Key] = len(idx.tasks)
		idx.tasks = append(idx.tasks, s)
	}
	for _, p := range files {
		if kind == "json" {
			data, err := os.ReadFile(p)
			if err != nil {
				return nil, fmt.Errorf("view: %w", err)
			}
			format, err := sniff(data)
			if err != nil {
				return nil, fmt.Errorf("view: %s: %w", p, err)
			}
			s, err := summarize(format, data)
			if err != nil {
				return nil, fmt.Errorf("view: %s: %w", p, err)
			}
			if s.InstanceID == "" && format == FormatMini {
				s.InstanceID = strings.TrimSuffix(filepath.Base(p), ".traj.json")
			}
			s.file, s.offset, s.length, s.format = p, 0, -1, format
			idx.format = format
			add(s)
			continue
		}
		if err := scanJSONL(p, func(off int64, line []byte) error {
			if idx.format == "" {
				f, err := sniff(line)
				if err != nil {
					return err
				}
				idx.format = f
			}
			s, err := summarize(idx.format, line)
			if err != nil {
				return err
			}
			s.file, s.offset, s.length, s.format = p, off, int64(len(line)), idx.format
			add(s)
			return nil
		}); err != nil {
			return nil, fmt.Errorf("view: %s: %w", p, err)
		}
	}
	if kind == "json" {
		sort.SliceStable(idx.tasks, func(i, j int) bool { return idx.tasks[i].Key < idx.tasks[j].Key })
		for i, t := range idx.tasks {
			idx.byKey[t.Key] = i
		}
	}
	var row []byte
	if len(idx.tasks) > 0 {
		row, _ = readRow(&idx.tasks[0])
	}
	idx.info = infoOf(idx.tasks, idx.format, row)
	idx.groups = groupsOf(idx.tasks)
	r.idx = idx
	return idx, nil
}

// Info is what the run was (model, dataset, scaffold, start, settings).
func (r *Run) Info() (Info, error) {
	idx, err := r.index()
	if err != nil {
		return Info{}, err
	}
	return idx.info, nil
}

// Groups are the run's tasks grouped by instance id, in first-seen order
// (several rollouts of one task, as swerve collect writes them).
func (r *Run) Groups() ([]Group, error) {
	idx, err := r.index()
	if err != nil {
		return nil, err
	}
	return idx.groups, nil
}

// scanJSONL calls fn with the offset and bytes of every non-empty line;
// line numbers are in its errors.
func scanJSONL(path string, fn func(off int64, line []byte) error) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	br := bufio.NewReaderSize(f, 1<<20)
	var off int64
	for n := 1; ; n++ {
		line, err := br.ReadBytes('\n')
		start := off
		off += int64(len(line))
		t := bytes.TrimRight(line, "\r\n")
		if len(bytes.TrimSpace(t)) > 0 {
			if ferr := fn(start, t); ferr != nil {
				return fmt.Errorf("line %d: %w", n, ferr)
			}
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// Tasks is every task's summary, in file order (task-directory order for a
// run directory). The slice must not be changed.
func (r *Run) Tasks() ([]Summary, error) {
	idx, err := r.index()
	if err != nil {
		return nil, err
	}
	return idx.tasks, nil
}

// ErrNoTask is returned for a key the run has no task for.
var ErrNoTask = errors.New("no such task")

// rowOf reads a task's row from its file: only that line of a JSONL file.
func (r *Run) rowOf(key string) (*Summary, []byte, error) {
	idx, err := r.index()
	if err != nil {
		return nil, nil, err
	}
	i, ok := idx.byKey[key]
	if !ok {
		return nil, nil, fmt.Errorf("%w: %q", ErrNoTask, key)
	}
	s := idx.tasks[i]
	row, err := readRow(&s)
	if err != nil {
		return nil, nil, err
	}
	return &s, row, nil
}

// readRow reads a task's row from its file: only its line of a JSONL file.
func readRow(s *Summary) ([]byte, error) {
	if s.length < 0 {
		return os.ReadFile(s.file)
	}
	f, err := os.Open(s.file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	buf := make([]byte, s.length)
	if _, err := f.ReadAt(buf, s.offset); err != nil {
		return nil, fmt.Errorf("read %s at %d: %w", s.file, s.offset, err)
	}
	return buf, nil
}

// Task reads one task whole for its page.
func (r *Run) Task(key string) (*Detail, error) {
	s, row, err := r.rowOf(key)
	if err != nil {
		return nil, err
	}
	d, err := detail(s.format, row)
	if err != nil {
		return nil, fmt.Errorf("task %s: %w", key, err)
	}
	r.finish(d, s)
	return d, nil
}

// finish adds what the row does not hold: the key, the task's raw files
// and its test output from the run directory.
func (r *Run) finish(d *Detail, s *Summary) {
	d.Summary.Key = s.Key
	if d.InstanceID == "" {
		d.InstanceID = s.InstanceID
	}
	if r.Dir != "" {
		dir := filepath.Join(r.Dir, fsutil.SafeName(d.InstanceID))
		if s.format == FormatRecord || s.format == FormatMini {
			dir = filepath.Dir(s.file)
		}
		if rel, err := filepath.Rel(r.Dir, dir); err == nil && rel != "." && !strings.HasPrefix(rel, "..") {
			if ents, err := os.ReadDir(dir); err == nil {
				for _, e := range ents {
					if e.Type().IsRegular() && !strings.HasPrefix(e.Name(), ".") {
						d.Raw = append(d.Raw, filepath.ToSlash(filepath.Join(rel, e.Name())))
					}
				}
			}
			if d.TestOutput == "" {
				if b, err := os.ReadFile(filepath.Join(dir, "test_output.log")); err == nil {
					d.TestOutput = string(b)
				}
			}
		}
	}
}
