package task

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// Each bad fixture must fail with one error naming the file, the row, the
// id when known and the field.
func TestLoadBadInput(t *testing.T) {
	bad := filepath.Join("testdata", "bad")
	for _, tc := range []struct {
		file string
		want string // the whole error message, file path omitted
		row  *RowError
		// loaded and skipped under SkipInvalid; -1 when the file as a whole
		// is refused
		loaded, skipped int
	}{
		{file: "f2p_string.jsonl", want: "row 2 (django__django-1234): FAIL_TO_PASS: not a JSON list of strings",
			row: &RowError{Row: 2, Line: 3, InstanceID: "django__django-1234", Field: "FAIL_TO_PASS", Reason: "not a JSON list of strings"}, loaded: 2, skipped: 1},
		{file: "f2p_numbers.jsonl", want: "row 2 (django__django-1234): FAIL_TO_PASS: not a JSON list of strings (item 0 is a number)", loaded: 2, skipped: 1},
		{file: "missing_id.jsonl", want: "row 2 (line 3): instance_id: missing",
			row: &RowError{Row: 2, Line: 3, Field: "instance_id", Reason: "missing"}, loaded: 2, skipped: 1},
		{file: "missing_f2p.jsonl", want: "row 0 (django__django-1): FAIL_TO_PASS: missing", loaded: 1, skipped: 1},
		{file: "duplicate.jsonl", want: "row 2 (django__django-1): instance_id: duplicate of row 0", loaded: 2, skipped: 1},
		{file: "malformed.jsonl", want: "row 2 (line 3): invalid JSON: unexpected end of JSON input", loaded: 3, skipped: 1},
		{file: "repo_number.jsonl", want: "row 2 (django__django-7): repo: not a string (got a number)", loaded: 2, skipped: 1},
		{file: "bad_grader.jsonl", want: `row 2 (django__django-8): grader: unknown grader "magic" (want one of swebench, swefactory, r2e, swesmith, harbor)`, loaded: 2, skipped: 1},
		{file: "not_object.json", want: "row 2 (line 18): not a JSON object (got a string)", loaded: 2, skipped: 1},
		{file: "two_bad.jsonl", want: "row 2 (django__django-5): FAIL_TO_PASS: not a JSON list of strings (and 1 more invalid row)", loaded: 2, skipped: 2},
		{file: "r2e_expected.jsonl", want: "row 1 (aiohttp-222222222222): expected_output_json: not a JSON string holding an object of test names to statuses", loaded: 1, skipped: 1},
		{file: "r2e_no_repo_name.jsonl", want: "row 1 (line 2): repo_name: missing (needed for an id: the row has no instance_id)", loaded: 1, skipped: 1},
		{file: "swefactory_no_eval.json", want: "row 1 (Acme__Widgets-15): eval_script: missing", loaded: 1, skipped: 1},
		{file: "unsafe_id.jsonl", want: `row 1 (line 2): instance_id: ".." is not a usable name: it names a directory itself`,
			row: &RowError{Row: 1, Line: 2, Field: "instance_id", Reason: `".." is not a usable name: it names a directory itself`}, loaded: 2, skipped: 1},
		{file: "slash_id.jsonl", want: `row 1 (line 2): instance_id: "a/../../etc" contains "/", which would make it a path, not a name (and 1 more invalid row)`, loaded: 2, skipped: 2},
		{file: "broken_list.json", want: "invalid JSON at line 16", loaded: -1},
		{file: "empty.json", want: "empty file", loaded: -1},
		{file: "empty_list.json", want: "no rows", loaded: -1},
		{file: "tasks.csv", want: "not a dataset: expected parquet, a JSON list or object, or JSONL", loaded: -1},
		{file: "unknown_rows.jsonl", want: "not a task dataset swerve knows: rows have fields answer, question", loaded: -1},
	} {
		t.Run(tc.file, func(t *testing.T) {
			path := filepath.Join(bad, tc.file)
			_, err := Load(context.Background(), path, LoadOptions{})
			if err == nil {
				t.Fatal("Load succeeded, want an error")
			}
			if got, want := err.Error(), path+": "+tc.want; !strings.HasPrefix(got, want) {
				t.Errorf("error:\n got  %s\n want %s", got, want)
			}
			if tc.row != nil {
				re, ok := errors.AsType[*RowError](err)
				if !ok {
					t.Fatalf("error %v is not a *RowError", err)
				}
				want := *tc.row
				want.File = path
				if diff := cmp.Diff(want, *re); diff != "" {
					t.Errorf("RowError (-want +got):\n%s", diff)
				}
			}
			res, err := Load(context.Background(), path, LoadOptions{SkipInvalid: true})
			if tc.loaded < 0 {
				if err == nil {
					t.Errorf("SkipInvalid: loaded %d tasks, want the file refused", len(res.Tasks))
				}
				return
			}
			if err != nil {
				t.Fatalf("SkipInvalid: %v", err)
			}
			if len(res.Tasks) != tc.loaded || len(res.Skipped) != tc.skipped {
				t.Errorf("SkipInvalid: %d loaded, %d skipped; want %d, %d", len(res.Tasks), len(res.Skipped), tc.loaded, tc.skipped)
			}
			if len(res.Skipped) > 0 {
				if got, want := res.Skipped[0].Error(), path+": "+tc.want; !strings.HasPrefix(want, got) {
					t.Errorf("first skipped row = %q, want %q", got, want)
				}
			}
		})
	}
}

func TestLoadSourceDirMissing(t *testing.T) {
	path := filepath.Join("testdata", "bad", "source_dir_missing.jsonl")
	_, err := Load(context.Background(), path, LoadOptions{})
	abs, _ := filepath.Abs(filepath.Join("testdata", "bad", "no-such-dir"))
	want := path + ": row 0 (local__x-1): source_dir: " + abs + " does not exist"
	if err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Errorf("error = %v, want %s", err, want)
	}
}

func TestLoadHarborBad(t *testing.T) {
	dir := t.TempDir()
	write := func(rel, content string) {
		t.Helper()
		p := filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// a-good is fine; b-noinstr lacks instruction.md; c-badtoml is not TOML.
	write("a-good/task.toml", "version = \"1.0\"\n[environment]\ndocker_image = \"alpine:3\"\n")
	write("a-good/instruction.md", "Do it.\n")
	write("a-good/tests/test.sh", "#!/bin/sh\n")
	write("b-noinstr/task.toml", "version = \"1.0\"\n")
	write("b-noinstr/tests/test.sh", "#!/bin/sh\n")
	write("b-noinstr/environment/Dockerfile", "FROM alpine\n")
	write("c-badtoml/task.toml", "version = \n")
	write("not-a-task/notes.txt", "hello\n")

	_, err := Load(context.Background(), dir, LoadOptions{})
	want := dir + ": row 1 (b-noinstr): instruction.md: missing (and 1 more invalid row)"
	if err == nil || err.Error() != want {
		t.Errorf("error:\n got  %v\n want %s", err, want)
	}
	res, err := Load(context.Background(), dir, LoadOptions{SkipInvalid: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Tasks) != 1 || res.Tasks[0].InstanceID != "a-good" || res.Tasks[0].Image != "alpine:3" {
		t.Errorf("tasks = %+v, want a-good with image alpine:3", res.Tasks)
	}
	if len(res.Skipped) != 2 || res.Skipped[1].Field != "task.toml" {
		t.Errorf("skipped = %+v, want b-noinstr and c-badtoml (task.toml)", res.Skipped)
	}

	empty := t.TempDir()
	if _, err := Load(context.Background(), empty, LoadOptions{}); err == nil || !strings.Contains(err.Error(), "no task.toml") {
		t.Errorf("empty directory: error %v, want one about task.toml", err)
	}
}

func TestLoadMissingFile(t *testing.T) {
	_, err := Load(context.Background(), filepath.Join("testdata", "nope.jsonl"), LoadOptions{})
	if !errors.Is(err, os.ErrNotExist) {
		t.Errorf("error = %v, want os.ErrNotExist", err)
	}
}

func TestLoadCanceled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := Load(ctx, filepath.Join("testdata", "r2e.jsonl"), LoadOptions{})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("error = %v, want context.Canceled", err)
	}
}
