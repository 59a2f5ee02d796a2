package cli

import (
	"bytes"
	"strings"
	"testing"
)

// TestWorkerFlagsRefuseBelowOne: every command's worker, concurrency or
// jobs count refuses 0 and negative numbers at once, naming the flag,
// instead of quietly running one at a time.
func TestWorkerFlagsRefuseBelowOne(t *testing.T) {
	for _, tc := range []struct {
		cmd  []string
		flag string
	}{
		{[]string{"run"}, "max_workers"},
		{[]string{"grade"}, "max_workers"},
		{[]string{"validate"}, "max_workers"},
		{[]string{"demo"}, "max_workers"},
		{[]string{"build"}, "max-workers"},
		{[]string{"collect"}, "concurrency"},
		{[]string{"serve"}, "concurrency"},
		{[]string{"serve"}, "max_sessions"},
		{[]string{"convert", "harbor"}, "jobs"},
	} {
		for _, v := range []string{"0", "-3"} {
			var stdout, stderr bytes.Buffer
			root := NewRoot(&stdout, &stderr)
			root.SetArgs(append(append([]string{}, tc.cmd...), "--"+tc.flag, v))
			err := root.Execute()
			name := strings.ReplaceAll(tc.flag, "_", "-")
			if err == nil || !strings.Contains(err.Error(), "--"+name) || !strings.Contains(err.Error(), "at least 1") {
				t.Errorf("%v --%s %s: %v, want a refusal naming --%s", tc.cmd, tc.flag, v, err, name)
			}
		}
	}
}
