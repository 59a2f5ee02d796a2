package task

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/swerve-dev/swerve/internal/testutil"
)

func load(t *testing.T, path string) *LoadResult {
	t.Helper()
	res, err := Load(context.Background(), path, LoadOptions{})
	if err != nil {
		t.Fatalf("Load(%s): %v", path, err)
	}
	return res
}

// The fixtures for dialects without a public sample are written from the
// schemas in shared/data/README.md.
func TestLoadFixtures(t *testing.T) {
	ignoreBig := cmpopts.IgnoreFields(Task{}, "Raw", "Patch", "TestPatch", "EvalScript", "Dockerfile", "ProblemStatement", "BugPatch")
	for _, tc := range []struct {
		file    string
		format  Format
		dialect Dialect
		want    []Task
	}{
		{
			file: "swefactory_transferred.json", format: FormatJSON, dialect: DialectSWEFactory,
			want: []Task{
				{InstanceID: "Acme__Widgets-12", Repo: "acme/widgets", BaseCommit: "000000000000000000000000000000000000000c",
					FailToPass: []string{}, PassToPass: []string{}, Image: "acme_widgets_12_custom:v1", Version: "1.2",
					Grader: GraderSWEFactory, Dialect: DialectSWEFactory},
				{InstanceID: "Acme__Widgets-15", Repo: "acme/widgets", BaseCommit: "000000000000000000000000000000000000000f",
					FailToPass: []string{}, PassToPass: []string{}, Image: "acme__widgets-15_swefactory_root", Version: "1.2",
					Grader: GraderSWEFactory, Dialect: DialectSWEFactory},
			},
		},
		{
			file: "r2e.jsonl", format: FormatJSONL, dialect: DialectR2E,
			want: []Task{
				{InstanceID: "aiohttp-222222222222", Repo: "aiohttp", BaseCommit: "1111111111111111111111111111111111111111",
					FailToPass: []string{}, PassToPass: []string{},
					ExpectedOutput: map[string]string{"tests/test_client.py::test_basic": "PASSED", "tests/test_client.py::test_redirect": "FAILED"},
					Image:          "namanjain12/aiohttp_final:2222222222222222222222222222222222222222",
					Language:       "python", Grader: GraderR2E, Dialect: DialectR2E},
				{InstanceID: "pillow-333333333333", Repo: "pillow", BaseCommit: "4444444444444444444444444444444444444444",
					FailToPass: []string{}, PassToPass: []string{},
					ExpectedOutput: map[string]string{"Tests/test_image.py::test_crop_zero": "PASSED"},
					Image:          "namanjain12/pillow_final:3333333333333333333333333333333333333333",
					Language:       "python", Grader: GraderR2E, Dialect: DialectR2E},
				{InstanceID: "astropy__astropy-12907", Repo: "astropy/astropy", BaseCommit: "d16bfe05a744909de4b27f5875fe0d4ed41ce607",
					FailToPass: []string{"astropy/modeling/tests/test_separable.py::test_separable[compound_model6-result6]"},
					PassToPass: []string{"astropy/modeling/tests/test_separable.py::test_coord_matrix"},
					Image:      "slimshetty/swebench-verified:sweb.eval.x86_64.astropy__astropy-12907",
					LogParser:  "parse_log_astropy", Language: "python", Grader: GraderSWEBench, Dialect: DialectR2E},
			},
		},
		{
			file: "swesmith_list.json", format: FormatJSON, dialect: DialectSWESmith,
			want: []Task{
				{InstanceID: "owner__pkg.1a2b3c4d.func_pm_op_change__abc123", Repo: "swesmith/owner__pkg.1a2b3c4d",
					BaseCommit: strings.Repeat("a", 40), FailToPass: []string{"tests/test_mod.py::test_f"}, PassToPass: []string{},
					Image: "swesmith.x86_64.owner__pkg.1a2b3c4d", Language: "python", Grader: GraderSWESmith, Dialect: DialectSWESmith},
			},
		},
	} {
		t.Run(tc.file, func(t *testing.T) {
			res := load(t, filepath.Join("testdata", tc.file))
			if res.Format != tc.format || res.Dialect != tc.dialect {
				t.Errorf("format, dialect = %s, %s; want %s, %s", res.Format, res.Dialect, tc.format, tc.dialect)
			}
			if diff := cmp.Diff(tc.want, res.Tasks, ignoreBig); diff != "" {
				t.Errorf("tasks (-want +got):\n%s", diff)
			}
		})
	}
}

func TestSWEFactoryFixtureFields(t *testing.T) {
	res := load(t, filepath.Join("testdata", "swefactory_transferred.json"))
	task := res.Tasks[0]
	if !strings.Contains(task.ProblemStatement, "café") || !strings.HasPrefix(task.Dockerfile, "FROM ubuntu:22.04") ||
		!strings.Contains(task.EvalScript, `echo "OMNIGRIL_EXIT_CODE=$rc"`) {
		t.Errorf("text fields not read: %+v", task)
	}
}

// Raw keeps the original row byte for byte, and a normalised task written
// with --json loads back to the same task.
func TestRawRoundTrip(t *testing.T) {
	paths := []string{
		filepath.Join("testdata", "swefactory_transferred.json"),
		filepath.Join("testdata", "r2e.jsonl"),
		filepath.Join("testdata", "swesmith_list.json"),
		filepath.Join(testutil.RepoRoot(t), "examples", "sample", "tasks.jsonl"),
	}
	for _, path := range paths {
		t.Run(filepath.Base(path), func(t *testing.T) {
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			// The original rows, split with nothing but encoding/json.
			var rows []json.RawMessage
			if bytes.HasPrefix(data, []byte("[")) {
				if err := json.Unmarshal(data, &rows); err != nil {
					t.Fatal(err)
				}
			} else {
				for _, l := range bytes.Split(bytes.TrimSpace(data), []byte("\n")) {
					rows = append(rows, l)
				}
			}
			res := load(t, path)
			if len(res.Tasks) != len(rows) {
				t.Fatalf("%d tasks from %d rows", len(res.Tasks), len(rows))
			}
			for i, task := range res.Tasks {
				if !bytes.Equal(task.Raw, rows[i]) {
					t.Errorf("%s: raw differs from the row:\n got  %s\n want %s", task.InstanceID, task.Raw, rows[i])
				}
			}
			roundTrip(t, res.Tasks)
		})
	}
}

func TestRawRoundTripSharedData(t *testing.T) {
	data := filepath.Join(testutil.SharedDir(t), "data")
	for _, rel := range []string{"swebench/multilingual-test.parquet", "swe-smith/pandas-dev__pandas.95280573.pr_53652.json", "harbor"} {
		t.Run(rel, func(t *testing.T) {
			roundTrip(t, load(t, filepath.Join(data, rel)).Tasks)
		})
	}
}

// roundTrip writes tasks as normalised JSONL, loads the file and compares.
func roundTrip(t *testing.T, tasks []Task) {
	t.Helper()
	var buf bytes.Buffer
	for _, task := range tasks {
		line, err := task.MarshalJSONL(true)
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Count(line, []byte("\n")) != 1 {
			t.Fatalf("%s: JSONL line holds %d newlines", task.InstanceID, bytes.Count(line, []byte("\n")))
		}
		buf.Write(line)
	}
	path := filepath.Join(t.TempDir(), "normalised.jsonl")
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	res := load(t, path)
	if res.Dialect != DialectSwerve {
		t.Errorf("normalised file read as %s, want %s", res.Dialect, DialectSwerve)
	}
	// Raw comes back compacted; compare it as JSON.
	compact := cmp.Transformer("compact", func(raw json.RawMessage) string {
		var b bytes.Buffer
		if err := json.Compact(&b, raw); err != nil {
			return "invalid: " + string(raw)
		}
		return b.String()
	})
	if diff := cmp.Diff(tasks, res.Tasks, compact, cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("round trip changed tasks (-before +after):\n%s", diff)
	}
}

func TestFormatDetection(t *testing.T) {
	row := `{"instance_id":"a__b-1","repo":"a/b","base_commit":"c","problem_statement":"p","FAIL_TO_PASS":[],"PASS_TO_PASS":[]}`
	row2 := strings.Replace(row, "a__b-1", "a__b-2", 1)
	pretty := "{\n  \"instance_id\": \"a__b-1\",\n  \"repo\": \"a/b\",\n  \"base_commit\": \"c\",\n  \"problem_statement\": \"p\",\n  \"FAIL_TO_PASS\": []\n}"
	for _, tc := range []struct {
		name, content string
		format        Format
		rows          int
	}{
		{"list.data", "[" + row + ",\n" + row2 + "]", FormatJSON, 2},
		{"lines.json", row + "\n\n" + row2 + "\n", FormatJSONL, 2},
		{"one.json", pretty, FormatJSONObject, 1},
		{"one-line.jsonl", row, FormatJSONL, 1},
		{"bom.jsonl", "\xef\xbb\xbf" + row + "\n" + row2, FormatJSONL, 2},
		{"crlf.jsonl", row + "\r\n" + row2 + "\r\n", FormatJSONL, 2},
		{"spaced.json", "\n\n  [" + row + "]  \n", FormatJSON, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), tc.name)
			if err := os.WriteFile(path, []byte(tc.content), 0o644); err != nil {
				t.Fatal(err)
			}
			res := load(t, path)
			if res.Format != tc.format || len(res.Tasks) != tc.rows {
				t.Errorf("format %s with %d tasks, want %s with %d", res.Format, len(res.Tasks), tc.format, tc.rows)
			}
			if got := res.Tasks[0].Image; got != "swebench/sweb.eval.x86_64.a_1776_b-1:latest" {
				t.Errorf("derived image = %q", got)
			}
		})
	}
}

// A parquet file named .json is still read as parquet.
func TestParquetByContent(t *testing.T) {
	src := filepath.Join(testutil.SharedDir(t), "data/swebench/lite-dev.parquet")
	data, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "misnamed.json")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	res := load(t, path)
	if res.Format != FormatParquet || len(res.Tasks) != 23 {
		t.Errorf("format %s, %d tasks; want parquet, 23", res.Format, len(res.Tasks))
	}
}

func TestFieldDecoding(t *testing.T) {
	for _, tc := range []struct {
		name, row string
		check     func(Task) string
	}{
		{"numeric version", `{"version": 3.1}`, func(t Task) string { return t.Version + "|3.1" }},
		{"string F2P", `{"FAIL_TO_PASS": "[\"a\", \"b\"]"}`, func(t Task) string { return strings.Join(t.FailToPass, ",") + "|a,b" }},
		{"list F2P", `{"FAIL_TO_PASS": ["a"]}`, func(t Task) string { return strings.Join(t.FailToPass, ",") + "|a" }},
		{"explicit empty image", `{"image": ""}`, func(t Task) string { return t.Image + "|" }},
		{"null image derives", `{"image": null}`, func(t Task) string { return t.Image + "|swebench/sweb.eval.x86_64.x_1776_y-1:latest" }},
		{"explicit grader", `{"grader": "swesmith"}`, func(t Task) string { return string(t.Grader) + "|swesmith" }},
		{"split field", `{"split": "dev"}`, func(t Task) string { return t.Split + "|dev" }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var m map[string]json.RawMessage
			base := `{"instance_id":"X__Y-1","repo":"x/y","base_commit":"c","problem_statement":"p","FAIL_TO_PASS":[]}`
			json.Unmarshal([]byte(base), &m)
			var extra map[string]json.RawMessage
			if err := json.Unmarshal([]byte(tc.row), &extra); err != nil {
				t.Fatal(err)
			}
			for k, v := range extra {
				m[k] = v
			}
			c := converter{dialect: DialectSWEBench}
			f := &fields{m: m}
			task := c.convert(f)
			if f.err != nil {
				t.Fatal(f.err)
			}
			got, want, _ := strings.Cut(tc.check(task), "|")
			if got != want {
				t.Errorf("got %q, want %q", got, want)
			}
		})
	}
}

func TestImageNames(t *testing.T) {
	for _, tc := range []struct{ id, swebench, swegym string }{
		{"django__django-11099", "swebench/sweb.eval.x86_64.django_1776_django-11099:latest", "xingyaoww/sweb.eval.x86_64.django_s_django-11099:latest"},
		{"Project-MONAI__MONAI-1121", "swebench/sweb.eval.x86_64.project-monai_1776_monai-1121:latest", "xingyaoww/sweb.eval.x86_64.project-monai_s_monai-1121:latest"},
		{"", "", ""},
	} {
		if got := SWEBenchImage(tc.id); got != tc.swebench {
			t.Errorf("SWEBenchImage(%q) = %q, want %q", tc.id, got, tc.swebench)
		}
		if got := SWEGymImage(tc.id); got != tc.swegym {
			t.Errorf("SWEGymImage(%q) = %q, want %q", tc.id, got, tc.swegym)
		}
	}
}

func TestGraderFromImage(t *testing.T) {
	for _, tc := range []struct {
		image string
		tests bool
		want  Grader
	}{
		{"x__y-1_swefactory_root", false, GraderSWEFactory},
		{"swebench/sweb.eval.x86_64.a_1776_b-1:latest", true, GraderSWEBench},
		{"swebench/sweb.eval.x86_64.a_1776_b-1:latest", false, ""},
		{"xingyaoww/sweb.eval.x86_64.a_s_b-1:latest", true, GraderSWEBench},
		{"jyangballin/swesmith.x86_64.a__b.1234abcd", true, GraderSWESmith},
		{"namanjain12/aiohttp_final:abc", true, ""},
		{"", true, ""},
	} {
		if got := graderFromImage(tc.image, tc.tests); got != tc.want {
			t.Errorf("graderFromImage(%q, %v) = %q, want %q", tc.image, tc.tests, got, tc.want)
		}
	}
}

// The shipped sample loads as two local tasks with their repo beside them.
func TestSampleDataset(t *testing.T) {
	root := testutil.RepoRoot(t)
	res := load(t, filepath.Join(root, "examples", "sample", "tasks.jsonl"))
	if len(res.Tasks) != 2 {
		t.Fatalf("%d tasks, want 2", len(res.Tasks))
	}
	for i, task := range res.Tasks {
		if want := "sample__calc-" + string(rune('1'+i)); task.InstanceID != want {
			t.Errorf("task %d id %q, want %q", i, task.InstanceID, want)
		}
		if task.Image != "" || task.Grader != GraderSWEBench || task.LogParser != "parse_log_pytest" {
			t.Errorf("%s: image %q, grader %s, log parser %s", task.InstanceID, task.Image, task.Grader, task.LogParser)
		}
		if task.SourceDir != filepath.Join(root, "examples", "sample", "repo") {
			t.Errorf("%s: source_dir %q", task.InstanceID, task.SourceDir)
		}
		if !strings.Contains(task.EvalScript, ": '>>>>> Start Test Output'\npython3 -m pytest -rA") ||
			!strings.Contains(task.EvalScript, task.TestPatch) {
			t.Errorf("%s: eval script lacks the markers or the test patch", task.InstanceID)
		}
		if len(task.FailToPass) == 0 || len(task.PassToPass) != 7 {
			t.Errorf("%s: %d F2P, %d P2P", task.InstanceID, len(task.FailToPass), len(task.PassToPass))
		}
	}
}
