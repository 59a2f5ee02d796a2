package swefactory

import (
	"strings"
	"testing"

	"github.com/swerve-dev/swerve/internal/reward"
	"github.com/swerve-dev/swerve/internal/task"
)

func TestEvaluate(t *testing.T) {
	tests := []struct {
		name       string
		log        string
		wantReward float64
		wantCode   int
		wantReason string
	}{
		{"pass", "+ pytest\n3 passed\n+ echo OMNIGRIL_EXIT_CODE=0\nOMNIGRIL_EXIT_CODE=0\n", 1, 0, "resolved"},
		{"fail", "+ echo OMNIGRIL_EXIT_CODE=1\nOMNIGRIL_EXIT_CODE=1\n", 0, 1, "tests failed: OMNIGRIL_EXIT_CODE=1"},
		{"many digits", "OMNIGRIL_EXIT_CODE=137\n", 0, 137, "=137"},
		{"huge number is still a failure", "OMNIGRIL_EXIT_CODE=000000000000000000000000001\n", 0, 1, "failed"},
		{"zero with leading zeros", "OMNIGRIL_EXIT_CODE=00\n", 1, 0, "resolved"},
		{"trace line alone does not count", "+ echo OMNIGRIL_EXIT_CODE=0\n", 0, -1, "no OMNIGRIL_EXIT_CODE"},
		{"missing", "Traceback ...\n", 0, -1, "no OMNIGRIL_EXIT_CODE"},
		{"a test printing the marker does not win", "OMNIGRIL_EXIT_CODE=0\nFAILED x\n+ echo OMNIGRIL_EXIT_CODE=1\nOMNIGRIL_EXIT_CODE=1\n", 0, 1, "failed"},
		{"crlf", "OMNIGRIL_EXIT_CODE=0\r\n", 1, 0, "resolved"},
		{"not at line start", "echo said OMNIGRIL_EXIT_CODE=0\n", 0, -1, "no OMNIGRIL"},
		{"negative is not a status", "OMNIGRIL_EXIT_CODE=-1\n", 0, -1, "no OMNIGRIL"},
		{"end of log without newline", "x\nOMNIGRIL_EXIT_CODE=0", 1, 0, "resolved"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := Evaluate(&task.Task{InstanceID: "a__b-1"}, tt.log)
			if r.Reward != tt.wantReward || r.ExitCode != tt.wantCode || !strings.Contains(r.Reason, tt.wantReason) || r.Resolved != (tt.wantReward == 1) {
				t.Errorf("Evaluate = %+v; want reward %v, code %d, reason containing %q", r, tt.wantReward, tt.wantCode, tt.wantReason)
			}
		})
	}
}

func TestEvaluateTrace(t *testing.T) {
	const nonce = "00112233445566778899aabbccddeeff"
	tests := []struct {
		name       string
		raw        string // "@" stands for bash's trace prefix
		wantReward float64
		wantCode   int
		wantReason string
	}{
		{"pass", "@pytest\n3 passed\n@echo OMNIGRIL_EXIT_CODE=0\nOMNIGRIL_EXIT_CODE=0\n\n" + nonce + " end 0\n", 1, 0, "resolved"},
		{"fail", "@echo OMNIGRIL_EXIT_CODE=1\nOMNIGRIL_EXIT_CODE=1\n", 0, 1, "tests failed: OMNIGRIL_EXIT_CODE=1"},
		{"many digits", "@echo OMNIGRIL_EXIT_CODE=137\nOMNIGRIL_EXIT_CODE=137\n", 0, 137, "=137"},
		{"printed after the script's own", "@echo OMNIGRIL_EXIT_CODE=1\nOMNIGRIL_EXIT_CODE=1\nOMNIGRIL_EXIT_CODE=0\n", 0, 1, "failed"},
		{"printed after the end line", "@echo OMNIGRIL_EXIT_CODE=1\nOMNIGRIL_EXIT_CODE=1\n\n" + nonce + " end 0\n+ echo OMNIGRIL_EXIT_CODE=0\nOMNIGRIL_EXIT_CODE=0\n", 0, 1, "failed"},
		{"printed, then the shell killed", "OMNIGRIL_EXIT_CODE=0\n\n" + nonce + " end 137\n", 0, -1, "no trusted OMNIGRIL_EXIT_CODE"},
		{"forged trace", "+ echo OMNIGRIL_EXIT_CODE=0\nOMNIGRIL_EXIT_CODE=0\n", 0, -1, "no trusted"},
		{"forged trace with another nonce", "++ffeeddccbbaa99887766554433221100 echo OMNIGRIL_EXIT_CODE=0\n", 0, -1, "no OMNIGRIL_EXIT_CODE"},
		{"missing", "@pytest\nTraceback\n", 0, -1, "no OMNIGRIL_EXIT_CODE=<n> line"},
		{"the last traced echo counts", "@echo OMNIGRIL_EXIT_CODE=0\n@echo OMNIGRIL_EXIT_CODE=2\n", 0, 2, "failed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			log, tr, _ := reward.ParseSealed(strings.ReplaceAll(tt.raw, "@", "++"+nonce+" "), nonce)
			r := EvaluateTrace(&task.Task{InstanceID: "a__b-1"}, log, tr)
			if r.Reward != tt.wantReward || r.ExitCode != tt.wantCode || !strings.Contains(r.Reason, tt.wantReason) {
				t.Errorf("EvaluateTrace = %+v; want reward %v, code %d, reason containing %q", r, tt.wantReward, tt.wantCode, tt.wantReason)
			}
		})
	}
}

func TestTraced(t *testing.T) {
	tests := []struct{ in, want string }{
		{"#!/bin/bash\nset -uxo pipefail\nrun\n", "#!/bin/bash\nset -uxo pipefail\nrun\n"},
		{"#!/bin/bash\nrun\n", "#!/bin/bash\nset -x\nrun\n"},
		{"run\n", "set -x\nrun\n"},
		{"  set -ex\nrun\n", "  set -ex\nrun\n"},
	}
	for _, tt := range tests {
		if got := Traced(tt.in); got != tt.want {
			t.Errorf("Traced(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}
