package agent

import (
	"strings"
	"testing"

	"github.com/swerve-dev/swerve/internal/task"
)

// TestPyFormatTemplate: an instance prompt in Python's str.format syntax
// renders as Python would render it with the fields R2E-Gym's runner
// passes, and what Python would refuse is refused.
func TestPyFormatTemplate(t *testing.T) {
	data := PromptData{Task: &task.Task{TestPatch: "TP"}, ProblemStatement: "PS {{.X}}"}
	for _, tt := range []struct{ in, want, err string }{
		{in: "Fix: {problem_statement}", want: "Fix: PS {{.X}}"},
		{in: "{{literal}} and }} {gt_patch}", want: "{literal} and } TP"},
		{in: "[{test_patch_hint}|{candidate_patch}|{candidate_patch_correctness}]", want: "[||incorrect]"},
		{in: `quotes " and \ and {{"{{"}}`, want: `quotes " and \ and {"{"}`},
		{in: "", want: ""},
		{in: "{repo}", err: "{repo}: upstream's runner fills only"},
		{in: "{problem_statement!r}", err: "{problem_statement!r}"},
		{in: "open { brace", err: "never closed"},
		{in: "lone } brace", err: "a lone }"},
	} {
		src, err := pyFormatTemplate(tt.in)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("%q: err %v, want %q", tt.in, err, tt.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%q: %v", tt.in, err)
			continue
		}
		got, err := render("instance", src, data)
		if err != nil || got != tt.want {
			t.Errorf("%q renders %q (%v), want %q", tt.in, got, err, tt.want)
		}
	}
}
