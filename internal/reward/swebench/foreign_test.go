package swebench

import (
	"compress/gzip"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// readGzip returns the contents of a gzip file.
func readGzip(t *testing.T, path string) string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestForeignLogsMatchHarness grades the logs under testdata/foreign, real
// test-runner output in three layouts (markers traced by bash, markers as
// plain lines, no markers; see testdata/foreign/README.md), and compares
// the whole report with the one SWE-bench's own 5.x grader wrote for the
// same row and log. A plain-marker log must be graded by the harness's rule
// (agreeing with it) and marked unanchored; a traced one stays anchored;
// under StrictMarkers a plain-marker log is refused.
func TestForeignLogsMatchHarness(t *testing.T) {
	dirs, err := filepath.Glob(filepath.Join("testdata", "foreign", "*"))
	if err != nil {
		t.Fatal(err)
	}
	var cases, resolved int
	repos := map[string]bool{}
	for _, dir := range dirs {
		if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
			continue
		}
		cases++
		t.Run(filepath.Base(dir), func(t *testing.T) {
			tk := loadRow(t, filepath.Join(dir, "row.json"))
			repos[tk.Repo] = true
			log := readGzip(t, filepath.Join(dir, "test_output.txt.gz"))
			res, err := Evaluate(tk, log, Options{StrictNames: true})
			if err != nil {
				t.Fatal(err)
			}
			var got, want any
			if err := json.Unmarshal(res.Report(), &got); err != nil {
				t.Fatal(err)
			}
			if err := readJSON(filepath.Join(dir, "report.json"), &want); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("report differs from the harness's (-harness +swerve):\n%s", diff)
			}
			if res.Resolved {
				resolved++
			}
			layout := filepath.Ext(dir)
			if wantUn := layout == ".plain"; res.Unanchored != wantUn {
				t.Errorf("%s layout: Unanchored = %v", layout, res.Unanchored)
			}
			_, err = Evaluate(tk, log, Options{StrictNames: true, StrictMarkers: true})
			switch layout {
			case ".plain":
				if !errors.Is(err, ErrUnanchored) || !strings.HasPrefix(err.Error(), "task "+tk.InstanceID+": ") || strings.Contains(err.Error(), "\n") {
					t.Errorf("StrictMarkers on a plain-marker log: %v, want a one-line ErrUnanchored naming the task", err)
				}
			default:
				if err != nil {
					t.Errorf("StrictMarkers on a %s log: %v", layout, err)
				}
			}
		})
	}
	if cases < 30 || len(repos) < 8 || resolved == 0 || resolved == cases {
		t.Errorf("%d cases over %d repositories, %d resolved: the corpus is thinner than its README says", cases, len(repos), resolved)
	}
}

// TestPlainMarkerForgery is the attack the unanchored reading is open to:
// code that runs before the tests (here: at install time) prints a whole
// fake test section, markers included, ahead of the real one. In a log
// whose markers bash traced, the section is cut at the trace lines and the
// fake one counts for nothing. In a plain-marker log nothing tells them
// apart: the harness's rule takes the first marker text, so swerve (which
// must agree with it there) is fooled too, and says so with Unanchored;
// StrictMarkers refuses the log.
func TestPlainMarkerForgery(t *testing.T) {
	dir := filepath.Join("testdata", "reports", "django__django-16901.nopatch")
	tk := loadRow(t, filepath.Join(dir, "row.json"))
	b, err := os.ReadFile(filepath.Join(dir, "test_output.txt"))
	if err != nil {
		t.Fatal(err)
	}
	var fake strings.Builder
	fake.WriteString(StartTestOutput + "\n")
	for _, name := range append(append([]string{}, tk.FailToPass...), tk.PassToPass...) {
		fake.WriteString(name + " ... ok\n")
	}
	fake.WriteString(EndTestOutput + "\n")
	const install = "+ python -m pip install -e .\n"
	traced := string(b)
	if !strings.Contains(traced, install) {
		t.Fatal("the log has no install step to print from")
	}
	forgedTraced := strings.Replace(traced, install, install+fake.String(), 1)
	plainLog := strings.NewReplacer("+ : '"+StartTestOutput+"'\n", StartTestOutput+"\n", "+ : '"+EndTestOutput+"'\n", EndTestOutput+"\n").Replace(traced)
	forgedPlain := strings.Replace(plainLog, install, install+fake.String(), 1)

	for _, tc := range []struct {
		name                 string
		log                  string
		resolved, unanchored bool
	}{
		{"traced, honest", traced, false, false},
		{"traced, forged", forgedTraced, false, false},
		{"plain, honest", plainLog, false, true},
		{"plain, forged", forgedPlain, true, true}, // the harness's rule is fooled too
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := Evaluate(tk, tc.log, Options{StrictNames: true})
			if err != nil {
				t.Fatal(err)
			}
			if res.Resolved != tc.resolved || res.Unanchored != tc.unanchored {
				t.Errorf("resolved %v, unanchored %v (%s); want %v, %v", res.Resolved, res.Unanchored, res.Reason, tc.resolved, tc.unanchored)
			}
			_, err = Evaluate(tk, tc.log, Options{StrictNames: true, StrictMarkers: true})
			if tc.unanchored != errors.Is(err, ErrUnanchored) {
				t.Errorf("StrictMarkers: %v", err)
			}
		})
	}
}
