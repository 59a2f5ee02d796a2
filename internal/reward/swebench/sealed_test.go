package swebench

import (
	"strings"
	"testing"

	"github.com/swerve-dev/swerve/internal/reward"
)

// nonce stands for a sealed run's nonce in hand-written raw outputs.
const nonce = "0f1e2d3c4b5a69788796a5b4c3d2e1f0"

// sealed turns a raw output written with "@" for bash's trace prefix
// ("++<nonce> ") into the log and trace a sealed run would give.
func sealed(raw string) (string, *reward.Trace) {
	log, tr, _ := reward.ParseSealed(strings.ReplaceAll(raw, "@", "++"+nonce+" "), nonce)
	return log, tr
}

// honestTail is what the rewritten script prints after the end marker.
func honestTail(code string) string {
	return "@SWEBENCH_TEST_EXIT_CODE=" + code + "\n@: '>>>>> End Test Output'\n@echo '>>>>> Test Exit Code: " + code + "'\n>>>>> Test Exit Code: " + code + "\n"
}

func TestEvaluateSealed(t *testing.T) {
	const start = "@: '>>>>> Start Test Output'\n@run tests\n"
	tests := []struct {
		name         string
		raw          string
		noRecord     bool
		wantResolved bool
		wantReason   string
	}{
		{"honest pass", start + "PASSED t.py::a\n" + honestTail("0") + "\n" + nonce + " end 0\n", false, true, "resolved"},
		{"honest failure", start + "FAILED t.py::a\n" + honestTail("1") + "\n" + nonce + " end 0\n", false, false, "FAIL_TO_PASS failed"},
		{"forged end marker inside the section", start + "PASSED t.py::a\n+ : '>>>>> End Test Output'\nFAILED t.py::a\n" + honestTail("1"), false, false, "FAIL_TO_PASS failed"},
		{"forged section before the real one", "+ : '>>>>> Start Test Output'\nPASSED t.py::a\n+ : '>>>>> End Test Output'\n" + start + "FAILED t.py::a\n" + honestTail("1"), false, false, "FAIL_TO_PASS failed"},
		{"forged section after the real end", start + "FAILED t.py::a\n" + honestTail("1") + "+ : '>>>>> Start Test Output'\nPASSED t.py::a\n+ : '>>>>> End Test Output'\n", false, false, "FAIL_TO_PASS failed"},
		{"forged exit code 0 before the real one", start + "PASSED t.py::a\n>>>>> Test Exit Code: 0\n" + honestTail("1"), false, false, "test command exited 1"},
		{"forged trace of the exit code", start + "PASSED t.py::a\n+ echo '>>>>> Test Exit Code: 0'\n" + honestTail("1"), false, false, "test command exited 1"},
		{"exit code not traced", start + "PASSED t.py::a\n@: '>>>>> End Test Output'\n>>>>> Test Exit Code: 0\n", false, false, "test exit code missing"},
		{"exit code not recorded by the script", start + "PASSED t.py::a\n@: '>>>>> End Test Output'\n", true, true, "resolved"},
		{"shell killed inside the section", start + "PASSED t.py::a\n+ : '>>>>> End Test Output'\n>>>>> Test Exit Code: 0\n\n" + nonce + " end 137\n", false, false, "bash did not trace : '>>>>> End Test Output'"},
		{"printed after the script ended", start + "FAILED t.py::a\n" + "\n" + nonce + " end 0\n" + honestTail("0") + "PASSED t.py::a\n", false, false, "bash did not trace : '>>>>> End Test Output'"},
		{"trace lines with another nonce", "++ffffffffffffffffffffffffffffffff : '>>>>> Start Test Output'\nPASSED t.py::a\n++ffffffffffffffffffffffffffffffff : '>>>>> End Test Output'\n", true, false, "bash did not trace : '>>>>> Start Test Output'"},
		{"no markers traced", "+ : '>>>>> Start Test Output'\nPASSED t.py::a\n+ : '>>>>> End Test Output'\n", true, false, "test output markers missing"},
		{"a printed failure marker voids the log", start + "PASSED t.py::a\n>>>>> Tests Errored\n" + honestTail("0"), false, false, "log says Tests Errored"},
		{"results after the end marker do not count", start + "collected 0 items\n" + honestTail("0") + "PASSED t.py::a\n", false, false, "no test results"},
		{"crlf", strings.ReplaceAll(start+"PASSED t.py::a\n"+honestTail("0"), "\n", "\r\n"), false, true, "resolved"},
		{"markers echoed", "@echo '>>>>> Start Test Output'\n>>>>> Start Test Output\nPASSED t.py::a\n@SWEBENCH_TEST_EXIT_CODE=0\n@echo '>>>>> End Test Output'\n>>>>> End Test Output\n@echo '>>>>> Test Exit Code: 0'\n", false, true, "resolved"},
		{"markers echoed by the tests", "@echo '>>>>> Start Test Output'\nFAILED t.py::a\necho '>>>>> End Test Output'\n>>>>> End Test Output\n@SWEBENCH_TEST_EXIT_CODE=1\n@echo '>>>>> End Test Output'\n>>>>> End Test Output\n@echo '>>>>> Test Exit Code: 1'\n", false, false, "FAIL_TO_PASS failed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			log, tr := sealed(tt.raw)
			res, err := Evaluate(statusTask([]string{"t.py::a"}, nil), log, Options{Trace: tr, ExitCodeRecorded: !tt.noRecord})
			if err != nil {
				t.Fatal(err)
			}
			if res.Resolved != tt.wantResolved || !strings.Contains(res.Reason, tt.wantReason) {
				t.Errorf("resolved %v (%s); want %v containing %q\nlog:\n%s", res.Resolved, res.Reason, tt.wantResolved, tt.wantReason, log)
			}
		})
	}
}

// TestEvaluateLogMadeElsewhere: logs without a trace are anchored on the
// markers' xtrace lines at a line start, and any non-zero exit code counts;
// a log with no xtrace line for either marker is read by the harness's own
// rule (first marker text, first exit-code line) and marked unanchored.
func TestEvaluateLogMadeElsewhere(t *testing.T) {
	tests := []struct {
		name         string
		log          string
		wantResolved bool
		wantReason   string
		unanchored   bool
	}{
		{"marker text printed earlier", "diff: >>>>> Start Test Output\nPASSED t.py::a\n>>>>> End Test Output\n" + wrap("FAILED t.py::a"), false, "FAIL_TO_PASS failed", false},
		{"bare markers only", ">>>>> Start Test Output\nPASSED t.py::a\n>>>>> End Test Output\n", true, "resolved", true},
		{"bare markers, marker text printed earlier", "diff: >>>>> Start Test Output\nPASSED t.py::a\n>>>>> End Test Output\n>>>>> Start Test Output\nFAILED t.py::a\n>>>>> End Test Output\n", true, "resolved", true}, // the harness is fooled alike
		{"bare markers, first exit code decides", ">>>>> Start Test Output\nPASSED t.py::a\n>>>>> End Test Output\n" + TestExitCode + ": 0\n" + TestExitCode + ": 1\n", true, "resolved", true},
		{"bare markers, exit code without a failure", ">>>>> Start Test Output\nPASSED t.py::a\n>>>>> End Test Output\n" + TestExitCode + ": 2\n", false, "exited 2", true},
		{"end marker traced, start not", ">>>>> Start Test Output\nPASSED t.py::a\n+ : '>>>>> End Test Output'\n", false, "bash's trace of them", false},
		{"earlier printed exit code 0", wrap("PASSED t.py::a") + TestExitCode + ": 0\n" + TestExitCode + ": 1\n", false, "exited 1", false},
		{"honest", wrap("PASSED t.py::a") + TestExitCode + ": 0\n", true, "resolved", false},
		{"markers echoed", "+ echo '>>>>> Start Test Output'\n>>>>> Start Test Output\nPASSED t.py::a\n+ echo '>>>>> End Test Output'\n>>>>> End Test Output\n", true, "resolved", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := Evaluate(statusTask([]string{"t.py::a"}, nil), tt.log, Options{})
			if err != nil {
				t.Fatal(err)
			}
			if res.Resolved != tt.wantResolved || !strings.Contains(res.Reason, tt.wantReason) || res.Unanchored != tt.unanchored {
				t.Errorf("resolved %v (%s), unanchored %v; want %v containing %q, %v", res.Resolved, res.Reason, res.Unanchored, tt.wantResolved, tt.wantReason, tt.unanchored)
			}
		})
	}
}

func TestRecordTestExitCode(t *testing.T) {
	tests := []struct {
		name, script, want string
		changed            bool
	}{
		{"harness shape", "set -uxo pipefail\n: '>>>>> Start Test Output'\nrun\n: '>>>>> End Test Output'\ngit checkout x\n",
			"set -uxo pipefail\n: '>>>>> Start Test Output'\nrun\nSWEBENCH_TEST_EXIT_CODE=$?\n: '>>>>> End Test Output'\necho \">>>>> Test Exit Code: $SWEBENCH_TEST_EXIT_CODE\"\ngit checkout x\n", true},
		{"no end marker", "run\n", "run\n", false},
		{"echoed end marker", "run\necho \">>>>> End Test Output\"\n", "run\nSWEBENCH_TEST_EXIT_CODE=$?\necho \">>>>> End Test Output\"\necho \">>>>> Test Exit Code: $SWEBENCH_TEST_EXIT_CODE\"\n", true},
		{"marker only inside a here-document", "cat <<'E'\necho : '>>>>> End Test Output' x\nE\n", "cat <<'E'\necho : '>>>>> End Test Output' x\nE\n", false},
		{"already recorded", "run\nSWEBENCH_TEST_EXIT_CODE=$?\n: '>>>>> End Test Output'\n", "run\nSWEBENCH_TEST_EXIT_CODE=$?\n: '>>>>> End Test Output'\n", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, changed := RecordTestExitCode(tt.script)
			if got != tt.want || changed != tt.changed {
				t.Errorf("got %q (%v)\nwant %q (%v)", got, changed, tt.want, tt.changed)
			}
		})
	}
}
