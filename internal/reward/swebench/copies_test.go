package swebench

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/swerve-dev/swerve/internal/task"
)

func TestCopies(t *testing.T) {
	tests := []struct {
		name    string
		section string
		sm      StatusMap
		want    map[string][]string
	}{
		{
			name: "django docstring shared by two classes",
			section: "test_a (m.A.test_a)\nBasic works. ... ok\ntest_a (m.B.test_a)\nBasic works. ... FAIL\n" +
				"test_b (m.A.test_b) ... skipped 'no'\n",
			sm:   StatusMap{"Basic works.": Failed, "test_b (m.A.test_b)": Skipped},
			want: map[string][]string{"Basic works.": {"test_a (m.A.test_a)", "test_a (m.B.test_a)"}, "test_b (m.A.test_b)": {"test_b (m.A.test_b)"}},
		},
		{
			name:    "result on a later line",
			section: "test_c (m.C.test_c) ... \nsome output\nok\n",
			sm:      StatusMap{"test_c (m.C.test_c)": Passed},
			want:    map[string][]string{"test_c (m.C.test_c)": {"test_c (m.C.test_c)"}},
		},
		{
			name:    "pytest summary",
			section: "PASSED t.py::test_x[1]\nFAILED t.py::test_y - assert 1 == 2\nPASSED t.py::test_x[2]\n",
			sm:      StatusMap{"t.py::test_x[1]": Passed, "t.py::test_x[2]": Passed, "t.py::test_y": Failed},
			want:    map[string][]string{"t.py::test_x[1]": {"t.py::test_x[1]"}, "t.py::test_x[2]": {"t.py::test_x[2]"}, "t.py::test_y": {"t.py::test_y"}},
		},
		{
			name:    "another layout counts each test once",
			section: "ok 1 - adds\nnot ok 2 - subtracts\n",
			sm:      StatusMap{"adds": Passed, "subtracts": Failed},
			want:    map[string][]string{"adds": {"adds"}, "subtracts": {"subtracts"}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := Copies(tc.section, tc.sm)
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("Copies = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestCopiesRealLogs: on the real django gold logs the copies add up to
// the number of tests unittest says it ran (never less on the others) (its own "Ran N tests" line, an
// oracle independent of the parser), though the harness's status map
// holds fewer names where tests share a docstring.
func TestCopiesRealLogs(t *testing.T) {
	dirs, _ := filepath.Glob(filepath.Join("testdata", "reports", "django__django-*"))
	if len(dirs) == 0 {
		t.Fatal("no django reports in testdata")
	}
	ran := regexp.MustCompile(`(?m)^Ran (\d+) tests? in `)
	for _, dir := range dirs {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			b, err := os.ReadFile(filepath.Join(dir, "test_output.txt"))
			if err != nil {
				t.Fatal(err)
			}
			m := ran.FindSubmatch(b)
			if m == nil {
				t.Skip("no Ran line")
			}
			want, _ := strconv.Atoi(string(m[1]))
			tk := &task.Task{InstanceID: filepath.Base(dir), Repo: "django/django", LogParser: "parse_log_django"}
			r, err := Evaluate(tk, string(b), Options{StrictNames: true})
			if err != nil || !r.Found {
				t.Fatalf("Evaluate: %v, found %v", err, r != nil && r.Found)
			}
			sum := 0
			for _, n := range r.Copies {
				sum += len(n)
			}
			// A failing run has more names than results: the failure
			// headers' labels are names of their own. Never fewer.
			if sum < want || (strings.HasSuffix(dir, ".gold") && sum != want) {
				t.Errorf("copies add up to %d (%d names); unittest ran %d", sum, len(r.Status), want)
			}
		})
	}
}
