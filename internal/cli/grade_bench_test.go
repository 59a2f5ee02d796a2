package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/swerve-dev/swerve/internal/testutil"
)

// BenchmarkGradeLogLite grades one django eval log against the full SWE-bench
// Lite test file (300 rows, parquet), the way `swerve grade --log` does: the
// dataset is opened, only the named row is decoded, and the log is graded.
// The whole-process figure for the same command is in docs/performance.md.
//
//	go test -run '^$' -bench GradeLogLite ./internal/cli
func BenchmarkGradeLogLite(b *testing.B) {
	dataset := filepath.Join(testutil.SharedDir(b), "data", "swebench", "lite-test.parquet")
	log := filepath.Join(testutil.RepoRoot(b), "internal", "reward", "swebench", "testdata", "reports", "django__django-17087.gold", "test_output.txt")
	want, err := os.ReadFile(filepath.Join(filepath.Dir(log), "report.json"))
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		out, stderr, err := execTasksCLI(&testing.T{}, "grade", "--dataset", dataset, "--instance_id", "django__django-17087", "--log", log)
		if err != nil || !strings.Contains(stderr, "resolved") {
			b.Fatalf("grade: %v\n%s", err, stderr)
		}
		var v struct {
			Report json.RawMessage `json:"report"`
		}
		var got, rec any
		if json.Unmarshal([]byte(out), &v) != nil || json.Unmarshal(v.Report, &got) != nil || json.Unmarshal(want, &rec) != nil || !reflect.DeepEqual(got, rec) {
			b.Fatalf("report differs from the recorded one:\n%s", out)
		}
	}
}
