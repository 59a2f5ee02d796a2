package build

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/swerve-dev/swerve/internal/fsutil"
	"github.com/swerve-dev/swerve/internal/llm"
	"github.com/swerve-dev/swerve/internal/task"
)

// Statuses of an instance.
const (
	StatusSuccess = "success" // proven: in the transferred dataset
	StatusFailed  = "failed"  // not proven within --max-iterations, or filtered out
	StatusRunning = "running" // started, not finished: runs again next time
	// StatusError: the engine or the model API failed, not the task; the
	// instance counts as failed until a later run finishes it.
	StatusError = "error"
)

// Final reports whether status ends an instance for good. Only a success
// is kept by --skip-existing; the rest run again, as SWE-Factory retries
// its failures.
func Final(status string) bool { return status == StatusSuccess || status == StatusFailed }

// Files of an instance's directory. The names are SWE-Factory's; swerve
// adds build.log, check.log and result.json per iteration.
const (
	FileStatus             = "status.json"
	FileLog                = "instance.log"
	FileDockerfile         = "Dockerfile"
	FileDockerfileOriginal = "Dockerfile_original"
	FileDockerfileResolved = "Dockerfile.resolved"
	FileEvalScript         = "eval_script.sh"
	FileEvalOriginal       = "eval_script_original.sh"
	FileRunTests           = "run_tests.sh"
	FileRunTestsOriginal   = "run_tests_original.sh"
	// FileCheckSummary is the proving iteration's result, written on
	// success only (SWE-Factory's --skip-existing looks for it).
	FileCheckSummary = "summary.json"
	FileMetadata     = "metadata.json"
	FileBuildLog     = "build.log"
	FileCheckLog     = "check.log"
	FileResult       = "result.json"
	FileModelRequest = "model_request.json"
	FileModelReply   = "model_reply.md"
)

// Top-level files of a build's output directory.
const (
	FileSummary        = "summary.json"
	FileSummaryMain    = "summary_main.json"
	FileSummaryHistory = "summary_history.jsonl"
)

// IterationDir names the folder of attempt n (counted from 1). Folders
// count from 0, as SWE-Factory's do: attempt 1 is iteration_0.
func IterationDir(n int) string { return fmt.Sprintf("iteration_%d", n-1) }

// ExitReasonTimeout is status.json's exit_reason when an eval ran past
// --eval-timeout, SWE-Factory's name for it.
const ExitReasonTimeout = "timeout"

// Status is an instance's status.json: SWE-Factory's fields, then swerve's.
type Status struct {
	InstanceID string `json:"instance_id"`
	Status     string `json:"status"`
	// FinalIteration is the index (from 0) of the iteration that proved
	// the image, null when none did; LastIterationAttempted the index of
	// the last one tried, null when none was.
	FinalIteration         *int   `json:"final_iteration"`
	LastIterationAttempted *int   `json:"last_iteration_attempted"`
	Reason                 string `json:"reason"`
	// TotalIterations is how many attempts ran.
	TotalIterations int              `json:"total_iterations"`
	Aggregate       AggregateTotals  `json:"aggregate"`
	Iterations      []IterationEntry `json:"iterations"`
	// Artifacts maps SWE-Factory's artifact keys (dockerfile, run_tests,
	// eval_script, dockerfile_original, run_tests_original,
	// eval_script_original, checker_summary) to files of the directory.
	Artifacts    map[string]string `json:"artifacts"`
	ResponseLogs []string          `json:"response_logs"`
	GeneratedAt  string            `json:"generated_at,omitempty"`
	Mode         string            `json:"mode"`
	// ExitReason is "timeout" when an eval ran past --eval-timeout.
	ExitReason *string `json:"exit_reason"`

	// DockerImage is the tag swerve built.
	DockerImage   string `json:"docker_image"`
	MaxIterations int    `json:"max_iterations"`
	// Stage is where the final attempt failed ("" on success).
	Stage   string      `json:"stage,omitempty"`
	History []Iteration `json:"history"`
	// RepoCache lists the repositories cloned from --repo-cache.
	RepoCache []string   `json:"repo_cache,omitempty"`
	Timings   Timings    `json:"timings"`
	Model     ModelUsage `json:"model"`
	Started   time.Time  `json:"started_at"`
	Finished  time.Time  `json:"finished_at,omitzero"`
}

// AggregateTotals is status.json's aggregate: the repair model's totals.
type AggregateTotals struct {
	TotalCost         float64 `json:"total_cost"`
	TotalInputTokens  int     `json:"total_input_tokens"`
	TotalOutputTokens int     `json:"total_output_tokens"`
}

// IterationEntry is one iteration in status.json's iterations, as
// SWE-Factory lists them. Iteration counts from 0.
type IterationEntry struct {
	Iteration    int     `json:"iteration"`
	Status       string  `json:"status"`
	MetadataPath string  `json:"metadata_path"`
	Cost         float64 `json:"cost"`
	LLMCalls     int     `json:"llm_calls"`
	ResponseLog  *string `json:"response_log"`
}

// IterationMetadata is iteration_<n>/metadata.json, with SWE-Factory's
// keys.
type IterationMetadata struct {
	Iteration       int             `json:"iteration"`
	IterationDir    string          `json:"iteration_dir"`
	StartTime       string          `json:"start_time"`
	Status          string          `json:"status"`
	EndTime         string          `json:"end_time"`
	DurationSeconds float64         `json:"duration_seconds"`
	LLMCalls        int             `json:"llm_calls"`
	Cost            float64         `json:"cost"`
	InputTokens     int             `json:"input_tokens"`
	OutputTokens    int             `json:"output_tokens"`
	Error           *IterationError `json:"error,omitempty"`
}

// IterationError is metadata.json's error.
type IterationError struct {
	Type    string `json:"type"`
	Message string `json:"message"`
}

// Iteration is one attempt in Status.History.
type Iteration struct {
	// Iteration counts from 0, as the folders do.
	Iteration int `json:"iteration"`
	// Source is where its files came from: "original" (the row) or
	// "model" (a repair reply).
	Source       string  `json:"source"`
	OK           bool    `json:"ok"`
	Stage        string  `json:"stage,omitempty"`
	Reason       string  `json:"reason,omitempty"`
	BuildSeconds float64 `json:"build_seconds"`
	CheckSeconds float64 `json:"check_seconds"`
	// Notes are about the model reply the files came from.
	Notes []string `json:"notes,omitempty"`
}

// Timings add up an instance's time.
type Timings struct {
	TotalSeconds float64 `json:"total_seconds"`
	BuildSeconds float64 `json:"build_seconds"`
	CheckSeconds float64 `json:"check_seconds"`
	ModelSeconds float64 `json:"model_seconds"`
}

// ModelUsage is what the repair model was asked and what it cost.
type ModelUsage struct {
	Name    string    `json:"name,omitempty"`
	Offline bool      `json:"offline,omitempty"`
	Calls   int       `json:"calls"`
	Usage   llm.Usage `json:"usage"`
	Cost    float64   `json:"cost"`
}

// ReadStatus reads an instance's status.json; a missing one is nil.
// SWE-Factory's own status.json files read too.
func ReadStatus(dir string) (*Status, error) {
	data, err := os.ReadFile(filepath.Join(dir, FileStatus))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var s Status
	if err := json.Unmarshal(data, &s); err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(dir, FileStatus), err)
	}
	return &s, nil
}

// writeJSON writes v indented, without HTML escaping, atomically.
func writeJSON(path string, v any) error {
	data, err := marshalIndent(v)
	if err != nil {
		return err
	}
	return fsutil.WriteFileAtomic(path, data, false)
}

func marshalIndent(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// SummaryEntry is one row of summary.json: an instance this run finished.
type SummaryEntry struct {
	InstanceID string  `json:"instance_id"`
	Success    bool    `json:"success"`
	Reason     string  `json:"reason,omitempty"`
	Cost       float64 `json:"cost"`
}

// SummaryMain is summary_main.json; summary_history.jsonl gets one per run,
// with InputFile set.
type SummaryMain struct {
	Total           int             `json:"total"`
	Succeeded       int             `json:"succeeded"`
	Failed          int             `json:"failed"`
	SuccessRate     float64         `json:"success_rate"`
	FailedInstances []FailedSummary `json:"failed_instances"`
	InputFile       string          `json:"input_file,omitempty"`
}

// FailedSummary names a failed instance in summary_main.json.
type FailedSummary struct {
	InstanceID string `json:"instance_id"`
	Reason     string `json:"reason"`
}

// Aggregates are the top-level files, made from every instance's
// status.json in input order.
type Aggregates struct {
	// Summary is summary.json: the instances this run finished.
	Summary     []SummaryEntry
	Main        SummaryMain
	Transferred string // path of <stem>_transferred.json
	FailedFile  string // path of <stem>_failed.json
}

// Reasons in <stem>_failed.json for rows without a final status.
const (
	ReasonNotRun      = "not run (the build stopped before it, or an earlier run was cut short); runs next time"
	ReasonInterrupted = "interrupted (runs again next time)"
	reasonErrorPrefix = "error (runs again next time): "
)

// AggregateOptions are WriteAggregates' inputs beyond the tasks.
type AggregateOptions struct {
	// Ran is summary.json: the instances this run finished.
	Ran []SummaryEntry
	// InputFile is recorded in summary_history.jsonl.
	InputFile string
}

// WriteAggregates writes summary.json, summary_main.json,
// <stem>_transferred.json and <stem>_failed.json in out, and appends one
// line to summary_history.jsonl, from the instances' directories in input
// order. Every row that did not succeed is in <stem>_failed.json with a
// failure_reason, rows never run included. The datasets are streamed row
// by row: memory does not grow with the number of rows beyond the failed
// instances' ids and reasons.
func WriteAggregates(out, stem string, tasks []task.Task, ao AggregateOptions) (*Aggregates, error) {
	agg := &Aggregates{
		Summary:     ao.Ran,
		Transferred: filepath.Join(out, stem+"_transferred.json"),
		FailedFile:  filepath.Join(out, stem+"_failed.json"),
	}
	if agg.Summary == nil {
		agg.Summary = []SummaryEntry{}
	}
	agg.Main.FailedInstances = []FailedSummary{}
	transferred, err := newRowWriter(agg.Transferred)
	if err != nil {
		return nil, err
	}
	defer transferred.abort()
	failed, err := newRowWriter(agg.FailedFile)
	if err != nil {
		return nil, err
	}
	defer failed.abort()
	for i := range tasks {
		t := &tasks[i]
		dir := InstanceDir(out, t.InstanceID)
		st, err := ReadStatus(dir)
		if err != nil {
			return nil, err
		}
		agg.Main.Total++
		if st != nil && st.Status == StatusSuccess {
			agg.Main.Succeeded++
			row, err := transferredRow(t, dir, st)
			if err != nil {
				return nil, fmt.Errorf("instance %s: %w", t.InstanceID, err)
			}
			if err := transferred.add(row); err != nil {
				return nil, err
			}
			continue
		}
		reason := failureReason(st)
		agg.Main.Failed++
		agg.Main.FailedInstances = append(agg.Main.FailedInstances, FailedSummary{InstanceID: t.InstanceID, Reason: reason})
		row, err := setFields(t.Raw, []field{
			{"failure_reason", reason},
			{"docker_image", rowImage(t, ImageTag(t.InstanceID))},
		})
		if err != nil {
			return nil, fmt.Errorf("instance %s: %w", t.InstanceID, err)
		}
		if err := failed.add(row); err != nil {
			return nil, err
		}
	}
	if agg.Main.Total > 0 {
		agg.Main.SuccessRate = float64(agg.Main.Succeeded) / float64(agg.Main.Total)
	}
	if err := errors.Join(transferred.commit(), failed.commit()); err != nil {
		return nil, err
	}
	for _, f := range []struct {
		name string
		v    any
	}{{FileSummary, agg.Summary}, {FileSummaryMain, agg.Main}} {
		if err := writeJSON(filepath.Join(out, f.name), f.v); err != nil {
			return nil, err
		}
	}
	hist := agg.Main
	hist.InputFile = ao.InputFile
	line, err := json.Marshal(hist)
	if err != nil {
		return nil, err
	}
	hf, err := os.OpenFile(filepath.Join(out, FileSummaryHistory), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return nil, err
	}
	_, werr := hf.Write(append(line, '\n'))
	if err := errors.Join(werr, hf.Close()); err != nil {
		return nil, fmt.Errorf("%s: %w", FileSummaryHistory, err)
	}
	return agg, nil
}

// failureReason is a failed row's failure_reason.
func failureReason(st *Status) string {
	switch {
	case st == nil:
		return ReasonNotRun
	case st.Status == StatusRunning:
		return ReasonInterrupted
	case st.Status == StatusError:
		return reasonErrorPrefix + st.Reason
	case st.Reason == "":
		return "failed (status.json gives no reason)"
	}
	return st.Reason
}

// transferredRow is a proven row with the files that proved it: dockerfile
// from Dockerfile, eval_script from run_tests.sh (eval_script.sh when there
// is none), and docker_image kept when the row has one, as SWE-Factory
// keeps it.
func transferredRow(t *task.Task, dir string, st *Status) (json.RawMessage, error) {
	dockerfile, err1 := os.ReadFile(filepath.Join(dir, FileDockerfile))
	script, err2 := os.ReadFile(filepath.Join(dir, FileRunTests))
	if errors.Is(err2, fs.ErrNotExist) {
		script, err2 = os.ReadFile(filepath.Join(dir, FileEvalScript))
	}
	if err := errors.Join(err1, err2); err != nil {
		return nil, err
	}
	built := st.DockerImage
	if built == "" {
		built = ImageTag(t.InstanceID)
	}
	return setFields(t.Raw, []field{
		{"dockerfile", string(dockerfile)},
		{"eval_script", string(script)},
		{"docker_image", rowImage(t, built)},
	})
}

// rowImage is the docker_image a row leaves the build with: its own
// docker_image, else its docker_name, else fallback (SWE-Factory's order).
// Empty strings count as missing: they name no image.
func rowImage(t *task.Task, fallback string) string {
	for _, key := range []string{"docker_image", "docker_name"} {
		raw, ok := t.RawField(key)
		if !ok {
			continue
		}
		var s string
		if json.Unmarshal(raw, &s) == nil && s != "" {
			return s
		}
	}
	return fallback
}

// rowWriter streams a JSON list of rows, indented as SWE-Factory writes its
// datasets, to a temporary file that commit renames into place.
type rowWriter struct {
	path string
	f    *os.File
	w    *bufio.Writer
	n    int
	buf  bytes.Buffer
}

func newRowWriter(path string) (*rowWriter, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, err
	}
	f, err := fsutil.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return nil, err
	}
	w := &rowWriter{path: path, f: f, w: bufio.NewWriterSize(f, 1<<16)}
	w.w.WriteByte('[')
	return w, nil
}

// add appends one row (a compact or indented JSON object).
func (w *rowWriter) add(row json.RawMessage) error {
	w.buf.Reset()
	if err := json.Indent(&w.buf, row, "  ", "  "); err != nil {
		return err
	}
	if w.n > 0 {
		w.w.WriteByte(',')
	}
	w.w.WriteString("\n  ")
	w.n++
	_, err := w.w.Write(w.buf.Bytes())
	return err
}

// commit ends the list and renames the file into place.
func (w *rowWriter) commit() error {
	if w.f == nil {
		return nil
	}
	if w.n > 0 {
		w.w.WriteByte('\n')
	}
	w.w.WriteString("]\n")
	err := w.w.Flush()
	if cerr := w.f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(w.f.Name(), w.path)
	}
	if err != nil {
		os.Remove(w.f.Name())
		err = fmt.Errorf("write %s: %w", w.path, err)
	}
	w.f = nil
	return err
}

// abort drops an uncommitted file.
func (w *rowWriter) abort() {
	if w.f != nil {
		w.f.Close()
		os.Remove(w.f.Name())
		w.f = nil
	}
}

// InstanceDir is where an instance's files go.
func InstanceDir(out, id string) string { return filepath.Join(out, fsutil.SafeName(id)) }

// field is one key and value for setFields.
type field struct {
	key   string
	value any
}

// setFields returns the JSON object raw with the fields set: existing keys
// keep their place, new ones go at the end, the other values stay byte for
// byte.
func setFields(raw json.RawMessage, set []field) (json.RawMessage, error) {
	type kv struct {
		key   string
		value json.RawMessage
	}
	var obj []kv
	dec := json.NewDecoder(bytes.NewReader(raw))
	tok, err := dec.Token()
	if err != nil || tok != json.Delim('{') {
		return nil, fmt.Errorf("row is not a JSON object")
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		key, _ := tok.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, err
		}
		obj = append(obj, kv{key, v})
	}
	for _, f := range set {
		var b bytes.Buffer
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(f.value); err != nil {
			return nil, err
		}
		v := json.RawMessage(bytes.TrimRight(b.Bytes(), "\n"))
		replaced := false
		for i := range obj {
			if obj[i].key == f.key {
				obj[i].value, replaced = v, true
			}
		}
		if !replaced {
			obj = append(obj, kv{f.key, v})
		}
	}
	var b bytes.Buffer
	b.WriteByte('{')
	for i, e := range obj {
		if i > 0 {
			b.WriteByte(',')
		}
		k, _ := json.Marshal(e.key)
		b.Write(k)
		b.WriteByte(':')
		b.Write(e.value)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// DatasetStem is the input file's name without its extensions, as the
// output datasets are named after it.
func DatasetStem(path string) string {
	base := filepath.Base(path)
	for _, ext := range []string{".json", ".jsonl", ".parquet"} {
		if strings.HasSuffix(base, ext) {
			return strings.TrimSuffix(base, ext)
		}
	}
	if i := strings.LastIndexByte(base, '.'); i > 0 {
		return base[:i]
	}
	return base
}
