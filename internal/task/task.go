// Package task defines swerve's Task, the one shape every later stage works
// with, and loads it from the datasets people already have.
//
// # Formats
//
// Load picks the format from the content, not the file name: parquet files
// start with the magic bytes "PAR1"; a JSON document starting with '[' is a
// list of rows; a document holding exactly one object is a single row (the
// way SWE-smith publishes an instance); several lines of objects are JSONL. A
// directory is a Harbor task (it holds task.toml) or a directory of them.
//
// # Dialects
//
// Each file is recognised as one dialect from the fields its rows carry, and
// the rows are read with that dialect's rules:
//
//   - swebench: SWE-bench, Lite, Verified and Multilingual (4.x rows and the
//     5.x parquet files with image, eval_script and log_parser), and raw
//     SWE-Gym rows. FAIL_TO_PASS / PASS_TO_PASS may be JSON-encoded strings or
//     real lists. A row without an image field gets the harness's image name
//     (see SWEBenchImage); an explicit empty image stays empty.
//   - swefactory: SWE-Factory SWE-Builder results and *_transferred.json rows
//     (dockerfile, eval_script, docker_image). Without docker_image (or
//     docker_name) the image is "<instance_id lowercased>_swefactory_root".
//   - r2e: R2E-Gym rows (docker_image, repo_name, commit_hash,
//     expected_output_json). Rows without instance_id get the id
//     "<repo_name>-<first 12 hex of commit_hash>".
//   - swesmith: SWE-smith instances (image_name, mirror repo). Their patch field
//     introduces the bug; it is kept in BugPatch and Patch holds its reverse,
//     the gold fix.
//   - nemogym: NeMo Gym resource rows (responses_create_params, subset, split)
//     around SWE-Gym or SWE-bench rows. Rows of the "gym" subset without an
//     image get SWE-Gym's image name (see SWEGymImage).
//   - harbor: Harbor task directories.
//   - swerve: the normalised rows `swerve tasks ls --json` prints, so its
//     output loads again unchanged.
//
// Files that are not task datasets are refused with an error that says what
// they are: NeMo Gym rollout files (rows of responses_create_params,
// response and reward), verl training rows (prompt, extra_info) and the verl
// swe_agent recipe's simple cases (problem_statement, repo_content,
// expected_patch). The simple cases carry no ids, no tests and no
// environment, so there is nothing to grade them with.
//
// # Errors
//
// A bad row (malformed JSON, a missing or mistyped field, a duplicate id) makes
// Load fail with a *RowError naming the file, the row (0-based, the index
// --start_idx counts in), the instance id when known and the field. With
// LoadOptions.SkipInvalid the bad rows are left out and listed in
// LoadResult.Skipped instead.
package task

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
)

// Grader names how a task's result is graded.
type Grader string

// The graders swerve knows.
const (
	// GraderSWEBench runs the eval script, parses the test log with the
	// task's log parser and checks FAIL_TO_PASS and PASS_TO_PASS.
	GraderSWEBench Grader = "swebench"
	// GraderSWEFactory reads the OMNIGRIL_EXIT_CODE line the eval script
	// prints.
	GraderSWEFactory Grader = "swefactory"
	// GraderR2E compares the parsed test results with expected_output_json.
	GraderR2E Grader = "r2e"
	// GraderSWESmith checks FAIL_TO_PASS with SWE-smith's rules (a test
	// missing from the log counts as passed).
	GraderSWESmith Grader = "swesmith"
	// GraderHarbor runs the task's tests/test.sh and reads its reward file.
	GraderHarbor Grader = "harbor"
)

// Graders lists every known grader.
var Graders = []Grader{GraderSWEBench, GraderSWEFactory, GraderR2E, GraderSWESmith, GraderHarbor}

// Valid reports whether g is a known grader.
func (g Grader) Valid() bool { return slices.Contains(Graders, g) }

// Dialect names the dataset flavour a task was read as.
type Dialect string

// The dialects Load recognises.
const (
	DialectSWEBench   Dialect = "swebench"
	DialectSWEFactory Dialect = "swefactory"
	DialectR2E        Dialect = "r2e"
	DialectSWESmith   Dialect = "swesmith"
	DialectNeMoGym    Dialect = "nemogym"
	DialectHarbor     Dialect = "harbor"
	// DialectSwerve is the normalised form swerve itself writes. A task read
	// from it keeps the dialect it was first read as.
	DialectSwerve Dialect = "swerve"
)

// Task is one software-engineering task: a repository at a commit, the issue
// to solve, and what it takes to grade a fix.
//
// The JSON form uses the upstream field names where there are some
// (instance_id, hints_text, FAIL_TO_PASS, …), so a normalised task is also a
// valid SWE-bench row. It carries the original row under "raw".
type Task struct {
	InstanceID       string `json:"instance_id"`
	Repo             string `json:"repo"`
	BaseCommit       string `json:"base_commit"`
	ProblemStatement string `json:"problem_statement"`
	Hints            string `json:"hints_text"`
	// Patch is the gold fix, as a unified diff.
	Patch string `json:"patch"`
	// TestPatch adds or changes the tests that grade the fix.
	TestPatch string `json:"test_patch"`
	// BugPatch is the diff that introduced the bug, for datasets that ship
	// that instead of the fix (SWE-smith); Patch is then its reverse.
	BugPatch   string   `json:"bug_patch,omitempty"`
	FailToPass []string `json:"FAIL_TO_PASS"`
	PassToPass []string `json:"PASS_TO_PASS"`
	// ExpectedOutput maps test names to their expected status (R2E-Gym's
	// expected_output_json, decoded).
	ExpectedOutput map[string]string `json:"expected_output,omitempty"`
	// Image is the container image the task runs in; empty when there is
	// none (a local-only task, or one built from Dockerfile).
	Image      string `json:"image"`
	Dockerfile string `json:"dockerfile,omitempty"`
	EvalScript string `json:"eval_script"`
	LogParser  string `json:"log_parser"`
	Version    string `json:"version"`
	Language   string `json:"language"`
	Grader     Grader `json:"grader"`
	// Dialect is the dataset flavour the task was recognised as.
	Dialect Dialect `json:"dialect"`
	// Split is a free label: the row's own split field, or the --split the
	// user gave.
	Split string `json:"split,omitempty"`
	// SourceDir is an absolute host directory holding the task's repository,
	// for the local sandbox backend. Datasets give it as source_dir relative
	// to the dataset file.
	SourceDir string `json:"source_dir,omitempty"`
	// TaskDir is the absolute path of a Harbor task directory (environment/,
	// tests/, solution/).
	TaskDir string `json:"task_dir,omitempty"`
	// Raw is the original row as a JSON object, byte for byte for JSON
	// input (parquet rows are rendered as JSON in column order; a Harbor
	// task's task.toml as a JSON object).
	Raw json.RawMessage `json:"raw,omitempty"`
}

// RawField returns one field of the original row.
func (t *Task) RawField(name string) (json.RawMessage, bool) {
	if len(t.Raw) == 0 {
		return nil, false
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(t.Raw, &m); err != nil {
		return nil, false
	}
	v, ok := m[name]
	return v, ok
}

// MarshalJSONL writes t as one line of JSON (without HTML escaping, so diffs
// and scripts stay readable), ending in a newline. With raw false the "raw"
// object is left out.
func (t Task) MarshalJSONL(raw bool) ([]byte, error) {
	if !raw {
		t.Raw = nil
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(t); err != nil {
		return nil, fmt.Errorf("encode task %s: %w", t.InstanceID, err)
	}
	return buf.Bytes(), nil
}
