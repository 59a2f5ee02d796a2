package swesmith

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/swerve-dev/swerve/internal/reward"
	"github.com/swerve-dev/swerve/internal/reward/tamper"
	"github.com/swerve-dev/swerve/internal/task"
)

func TestEvaluateSealed(t *testing.T) {
	const nonce = "a0a1a2a3a4a5a6a7a8a9aaabacadaeaf"
	tk := &task.Task{InstanceID: "pandas-dev__pandas.95280573.x1",
		FailToPass: []string{"tests/test_mod.py::test_fixed"}, PassToPass: []string{"tests/test_mod.py::test_other"}}
	const start, end = "@: '>>>>> Start Test Output'\n@pytest tests/test_mod.py\n", "@: '>>>>> End Test Output'\n"
	tests := []struct {
		name         string
		raw          string // "@" is bash's trace prefix
		wantResolved bool
		wantReason   string
	}{
		{"honest", start + "tests/test_mod.py::test_fixed PASSED\ntests/test_mod.py::test_other PASSED\n" + end, true, "resolved"},
		{"F2P missing from the log fails", start + "tests/test_mod.py::test_other PASSED\n" + end, false, "tests failed: FAIL_TO_PASS tests/test_mod.py::test_fixed"},
		{"P2P missing from the log passes", start + "tests/test_mod.py::test_fixed PASSED\n" + end, true, "resolved"},
		{"forged end inside the section", start + "tests/test_mod.py::test_fixed PASSED\n+ : '>>>>> End Test Output'\ntests/test_mod.py::test_fixed FAILED\n" + end, false, "FAIL_TO_PASS"},
		{"forged section, shell killed", start + "+ : '>>>>> End Test Output'\n+ : '>>>>> Start Test Output'\ntests/test_mod.py::test_fixed PASSED\n+ : '>>>>> End Test Output'\n\n" + nonce + " end 137\n", false, "bash did not trace : '>>>>> End Test Output'"},
		{"no trace at all", "+ : '>>>>> Start Test Output'\ntests/test_mod.py::test_fixed PASSED\n+ : '>>>>> End Test Output'\n", false, "bash did not trace : '>>>>> Start Test Output'"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			log, tr, _ := reward.ParseSealed(strings.ReplaceAll(tt.raw, "@", "++"+nonce+" "), nonce)
			r, err := Evaluate(tk, log, Options{Trace: tr})
			if err != nil {
				t.Fatal(err)
			}
			if r.Resolved != tt.wantResolved || !strings.Contains(r.Reason, tt.wantReason) {
				t.Errorf("resolved %v (%s); want %v containing %q\nlog:\n%s", r.Resolved, r.Reason, tt.wantResolved, tt.wantReason, log)
			}
		})
	}
}

// The canaries' results are read on their own (Result.CanaryStatus), not
// in Status: an honest run that carries them grades as one that does not.
func TestEvaluateCanaries(t *testing.T) {
	const nonce = "a0a1a2a3a4a5a6a7a8a9aaabacadaeaf"
	tk := &task.Task{InstanceID: "pandas-dev__pandas.95280573.x1",
		FailToPass: []string{"tests/test_mod.py::test_fixed"}, PassToPass: []string{"tests/test_mod.py::test_other"}}
	can := tamper.PlanPytestSeeded(tk.FailToPass, tk.PassToPass, nil, 1, 2)
	raw := "@: '>>>>> Start Test Output'\n@pytest tests/test_mod.py\n" +
		"tests/test_mod.py::test_fixed PASSED\ntests/test_mod.py::test_other PASSED\n" +
		"tests/test_mod.py::" + can.MustFail + " FAILED\ntests/test_mod.py::" + can.MustPass + " PASSED\n" +
		"@: '>>>>> End Test Output'\n"
	log, tr, _ := reward.ParseSealed(strings.ReplaceAll(raw, "@", "++"+nonce+" "), nonce)
	r, err := Evaluate(tk, log, Options{Trace: tr, Canaries: can})
	if err != nil {
		t.Fatal(err)
	}
	if !r.Resolved || len(r.Status) != 2 || len(r.CanaryStatus) != 2 {
		t.Fatalf("resolved %v (%s), status %v, canaries %v", r.Resolved, r.Reason, r.Status, r.CanaryStatus)
	}
	if got := can.Verify(r.CanaryStatus, r.Resolved); len(got) != 0 {
		t.Errorf("Verify = %v", got)
	}
	plain, err := Evaluate(tk, log, Options{Trace: tr})
	if err != nil {
		t.Fatal(err)
	}
	a, _ := json.Marshal(r)
	b, _ := json.Marshal(plain)
	if string(a) != string(b) {
		t.Errorf("report with canaries %s, without %s", a, b)
	}
}
