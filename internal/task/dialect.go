package task

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
)

// convertRows detects the file's dialect and turns rows into tasks, filling
// res.Dialect, res.Tasks and res.Skipped.
func convertRows(ctx context.Context, res *LoadResult, rows []row, baseDir string, opts LoadOptions) error {
	dialect, err := detect(rows)
	if err != nil {
		return fmt.Errorf("%s: %w", res.Path, err)
	}
	res.Dialect = dialect
	conv := converter{dialect: dialect, baseDir: baseDir}

	var bad []RowError
	seen := make(map[string]int)
	for i, r := range rows {
		if i%256 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		if r.err != nil {
			bad = append(bad, *r.err)
			continue
		}
		f := &fields{m: r.m, raw: r.raw, native: r.native}
		t := conv.convert(f)
		if f.err != nil {
			id := t.InstanceID
			if id == "" {
				id = (&fields{m: r.m}).str("instance_id")
			}
			bad = append(bad, RowError{File: res.Path, Row: r.index, Line: r.line, InstanceID: id, Field: f.err.field, Reason: f.err.reason})
			continue
		}
		if err := CheckID(t.InstanceID); err != nil {
			bad = append(bad, RowError{File: res.Path, Row: r.index, Line: r.line, Field: "instance_id", Reason: err.Error()})
			continue
		}
		if first, dup := seen[t.InstanceID]; dup {
			bad = append(bad, RowError{File: res.Path, Row: r.index, Line: r.line, InstanceID: t.InstanceID, Field: "instance_id",
				Reason: fmt.Sprintf("duplicate of row %d", first)})
			continue
		}
		seen[t.InstanceID] = r.index
		if t.Raw == nil {
			t.Raw = r.raw
		}
		res.Tasks = append(res.Tasks, t)
	}
	if len(bad) > 0 && !opts.SkipInvalid {
		return &InvalidError{First: bad[0], More: len(bad) - 1}
	}
	res.Skipped = bad
	return nil
}

// detect recognises the dialect of a file from the fields its rows carry.
func detect(rows []row) (Dialect, error) {
	keys := make(map[string]bool)
	var first map[string]json.RawMessage
	for _, r := range rows {
		if r.m == nil {
			continue
		}
		if first == nil {
			first = r.m
		}
		for k := range r.m {
			keys[k] = true
		}
	}
	if first == nil {
		// Every row is broken; report them as rows.
		return DialectSWEBench, nil
	}
	has := func(names ...string) bool {
		for _, n := range names {
			if !keys[n] {
				return false
			}
		}
		return true
	}
	hasAny := func(names ...string) bool { return slices.ContainsFunc(names, func(n string) bool { return keys[n] }) }
	switch {
	case has("instance_id", "dialect", "grader"):
		return DialectSwerve, nil
	case has("responses_create_params", "response") && !keys["instance_id"]:
		return "", fmt.Errorf("a NeMo Gym rollouts file (rows of responses_create_params, response, reward), not a task dataset; load the task file the rollouts were collected from")
	case has("repo_content", "expected_patch"):
		return "", fmt.Errorf("the verl swe_agent recipe's simple cases (problem_statement, repo_content, expected_patch), not a task dataset: they carry no ids, tests or environment to grade with")
	case has("prompt", "extra_info") && !keys["instance_id"]:
		return "", fmt.Errorf("verl training rows (prompt, extra_info), not a task dataset; load the dataset they were made from")
	case has("responses_create_params", "instance_id"):
		return DialectNeMoGym, nil
	case hasAny("expected_output_json", "parsed_commit_content", "parsed_commit", "execution_result_content") || has("repo_name", "commit_hash"):
		return DialectR2E, nil
	case hasAny("dockerfile", "eval_script_skeleton", "docker_image", "docker_name"):
		return DialectSWEFactory, nil
	case keys["image_name"] && looksSWESmith(rows):
		return DialectSWESmith, nil
	case keys["instance_id"] && hasAny("FAIL_TO_PASS", "PASS_TO_PASS", "problem_statement"):
		return DialectSWEBench, nil
	}
	names := make([]string, 0, len(keys))
	for k := range keys {
		names = append(names, k)
	}
	sort.Strings(names)
	if len(names) > 12 {
		names = append(names[:12], "…")
	}
	return "", fmt.Errorf("not a task dataset swerve knows: rows have fields %s (expected SWE-bench, SWE-Factory, R2E-Gym, SWE-smith, SWE-Gym or NeMo Gym rows)", strings.Join(names, ", "))
}

// looksSWESmith reports whether the first row with an image_name or repo
// points at a SWE-smith image or mirror repository.
func looksSWESmith(rows []row) bool {
	for _, r := range rows {
		if r.m == nil {
			continue
		}
		f := &fields{m: r.m}
		image, repo := f.str("image_name"), f.str("repo")
		if image == "" && repo == "" {
			continue
		}
		return strings.Contains(image, "swesmith") || strings.HasPrefix(repo, "swesmith/")
	}
	return false
}

// converter turns one row into a Task with its dialect's rules.
type converter struct {
	dialect Dialect
	baseDir string
}

func (c *converter) convert(f *fields) Task {
	switch c.dialect {
	case DialectSwerve:
		return c.swerve(f)
	case DialectSWEFactory:
		return c.swefactory(f)
	case DialectR2E:
		return c.r2e(f)
	case DialectSWESmith:
		return c.swesmith(f)
	case DialectNeMoGym:
		return c.nemogym(f)
	default:
		return c.swebench(f)
	}
}

// common reads the SWE-bench-shaped fields most dialects share.
func (c *converter) common(f *fields) Task {
	t := Task{
		InstanceID:       f.str("instance_id"),
		Repo:             f.str("repo"),
		BaseCommit:       f.str("base_commit"),
		ProblemStatement: f.str("problem_statement"),
		Hints:            f.str("hints_text"),
		Patch:            f.str("patch"),
		TestPatch:        f.str("test_patch"),
		FailToPass:       f.list("FAIL_TO_PASS"),
		PassToPass:       f.list("PASS_TO_PASS"),
		Dockerfile:       f.str("dockerfile"),
		EvalScript:       f.str("eval_script"),
		LogParser:        f.str("log_parser"),
		Version:          f.scalar("version"),
		Language:         f.str("language"),
		Split:            f.str("split"),
		Dialect:          c.dialect,
	}
	if f.has("instance_id") && t.InstanceID == "" {
		f.fail("instance_id", "empty")
	}
	if g := f.str("grader"); g != "" {
		if !Grader(g).Valid() {
			f.fail("grader", "unknown grader %q (want one of %s)", g, graderList())
		}
		t.Grader = Grader(g)
	}
	if dir := f.str("source_dir"); dir != "" {
		t.SourceDir = c.sourceDir(f, dir)
	}
	return t
}

// sourceDir makes a row's source_dir absolute and checks it is a directory.
func (c *converter) sourceDir(f *fields, dir string) string {
	if !filepath.IsAbs(dir) {
		dir = filepath.Join(c.baseDir, dir)
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		f.fail("source_dir", "%v", err)
		return ""
	}
	fi, err := os.Stat(abs)
	switch {
	case err != nil:
		f.fail("source_dir", "%s does not exist", abs)
	case !fi.IsDir():
		f.fail("source_dir", "%s is not a directory", abs)
	}
	return abs
}

// requireTests insists the row names its FAIL_TO_PASS tests (the list may be
// empty, but the field must be there).
func requireTests(f *fields) {
	if !f.has("FAIL_TO_PASS") {
		f.fail("FAIL_TO_PASS", "missing")
	}
}

// swebench reads SWE-bench, Lite, Verified, Multilingual and raw SWE-Gym rows.
func (c *converter) swebench(f *fields) Task {
	f.required("instance_id")
	t := c.common(f)
	f.required("repo")
	f.present("problem_statement")
	requireTests(f)
	if t.SourceDir == "" {
		f.required("base_commit")
	}
	switch {
	case f.has("image"):
		t.Image = f.str("image")
	case f.has("image_name"):
		t.Image = f.str("image_name")
	default:
		t.Image = SWEBenchImage(t.InstanceID)
	}
	t.fillDefaults(GraderSWEBench)
	return t
}

// nemogym reads NeMo Gym resource rows: SWE-bench or SWE-Gym rows with the
// Responses-API request added.
func (c *converter) nemogym(f *fields) Task {
	f.required("instance_id")
	t := c.common(f)
	f.required("repo")
	f.present("problem_statement")
	requireTests(f)
	if t.SourceDir == "" {
		f.required("base_commit")
	}
	gym := f.str("subset") == "gym"
	switch {
	case f.has("image"):
		t.Image = f.str("image")
	case f.has("image_name"):
		t.Image = f.str("image_name")
	case gym:
		t.Image = SWEGymImage(t.InstanceID)
	default:
		t.Image = SWEBenchImage(t.InstanceID)
	}
	if gym {
		if t.LogParser == "" {
			t.LogParser = "parse_log_pytest"
		}
		if t.Language == "" {
			t.Language = "python"
		}
	}
	t.fillDefaults(GraderSWEBench)
	return t
}

// swefactory reads SWE-Factory results.json and *_transferred.json rows.
func (c *converter) swefactory(f *fields) Task {
	f.required("instance_id")
	t := c.common(f)
	f.required("repo")
	if t.SourceDir == "" {
		f.required("base_commit")
	}
	f.present("problem_statement")
	f.required("eval_script")
	switch {
	case f.has("docker_image"):
		t.Image = f.str("docker_image")
	case f.has("docker_name"):
		t.Image = f.str("docker_name")
	case t.InstanceID != "":
		t.Image = strings.ToLower(t.InstanceID) + "_swefactory_root"
	}
	t.fillDefaults(GraderSWEFactory)
	return t
}

// r2e reads R2E-Gym rows, including its copies of SWE-bench.
func (c *converter) r2e(f *fields) Task {
	t := c.common(f)
	if t.Repo == "" {
		t.Repo = f.str("repo_name")
	}
	if t.InstanceID == "" {
		name, commit := f.str("repo_name"), f.str("commit_hash")
		switch {
		case name == "":
			f.fail("repo_name", "missing (needed for an id: the row has no instance_id)")
		case commit == "":
			f.fail("commit_hash", "missing (needed for an id: the row has no instance_id)")
		default:
			t.InstanceID = name + "-" + commit[:min(12, len(commit))]
		}
	}
	t.Image = f.required("docker_image")
	f.present("problem_statement")
	if t.BaseCommit == "" && f.has("parsed_commit_content") {
		t.BaseCommit = parsedCommitBase(f)
	}
	if t.Language == "" {
		t.Language = "python"
	}
	t.fillDefaults(GraderR2E)
	if f.has("expected_output_json") || t.Grader == GraderR2E {
		t.ExpectedOutput = expectedOutput(f)
	}
	if t.Grader == GraderSWEBench {
		requireTests(f)
	}
	return t
}

// parsedCommitBase takes the parent commit out of R2E-Gym's
// parsed_commit_content (a string holding a ParsedCommit as JSON).
func parsedCommitBase(f *fields) string {
	s := f.str("parsed_commit_content")
	var pc struct {
		OldCommitHash string `json:"old_commit_hash"`
	}
	if err := json.Unmarshal([]byte(s), &pc); err != nil {
		f.fail("parsed_commit_content", "not a JSON string holding an object")
		return ""
	}
	return pc.OldCommitHash
}

// expectedOutput decodes expected_output_json: a string holding a JSON object
// that maps test names to statuses.
func expectedOutput(f *fields) map[string]string {
	const want = "not a JSON string holding an object of test names to statuses"
	v := f.value("expected_output_json")
	if v == nil {
		f.fail("expected_output_json", "missing")
		return nil
	}
	var s string
	if err := json.Unmarshal(v, &s); err != nil {
		f.fail("expected_output_json", "%s (got %s)", want, kindOf(v))
		return nil
	}
	var out map[string]string
	if err := json.Unmarshal([]byte(s), &out); err != nil || out == nil {
		f.fail("expected_output_json", "%s", want)
		return nil
	}
	return out
}

// swesmith reads SWE-smith task instances.
func (c *converter) swesmith(f *fields) Task {
	f.required("instance_id")
	t := c.common(f)
	f.required("repo")
	t.Image = f.required("image_name")
	bug := f.required("patch")
	requireTests(f)
	if f.err == nil {
		fix, err := ReverseDiff(bug)
		if err != nil {
			f.fail("patch", "%v", err)
		}
		t.BugPatch, t.Patch = bug, fix
	}
	t.fillDefaults(GraderSWESmith)
	return t
}

// swerve reads the normalised rows swerve writes.
func (c *converter) swerve(f *fields) Task {
	f.required("instance_id")
	var t Task
	if err := json.Unmarshal(f.raw, &t); err != nil {
		f.fail("", "not a normalised swerve task: %v", err)
		return t
	}
	if !t.Grader.Valid() {
		f.fail("grader", "unknown grader %q (want one of %s)", t.Grader, graderList())
	}
	if t.Dialect == "" {
		f.fail("dialect", "empty")
	}
	if t.FailToPass == nil {
		t.FailToPass = []string{}
	}
	if t.PassToPass == nil {
		t.PassToPass = []string{}
	}
	if t.SourceDir != "" {
		t.SourceDir = c.sourceDir(f, t.SourceDir)
	}
	if len(t.Raw) == 0 {
		t.Raw = nil
	}
	return t
}

// fillDefaults completes the grader, language and log parser from what the
// row left out. The grader comes from an explicit field (already set), else
// the image name as upstream runtimes decide it, else the dialect.
func (t *Task) fillDefaults(dialectGrader Grader) {
	if t.Grader == "" {
		t.Grader = graderFromImage(t.Image, len(t.FailToPass)+len(t.PassToPass) > 0)
	}
	if t.Grader == "" {
		t.Grader = dialectGrader
	}
	if t.LogParser == "" {
		t.LogParser = repoLogParser[t.Repo]
	}
	if t.Language == "" {
		t.Language = languageOf(t)
	}
}

func graderList() string {
	names := make([]string, len(Graders))
	for i, g := range Graders {
		names[i] = string(g)
	}
	return strings.Join(names, ", ")
}
