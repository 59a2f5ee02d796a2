package episode

import (
	"errors"
	"strings"
	"testing"

	"github.com/swerve-dev/swerve/internal/reward/grader"
)

// TestGradeSafely: a grader that panics is that task's grader error, not
// the end of the run; one that returns passes through untouched.
func TestGradeSafely(t *testing.T) {
	_, err := gradeSafely(func() (*grader.Outcome, error) { panic("index out of range [3] with length 3") })
	if !errors.Is(err, errGraderPanic) || !strings.Contains(err.Error(), "index out of range") {
		t.Errorf("panic: %v", err)
	}
	want := &grader.Outcome{Reward: 1}
	if out, err := gradeSafely(func() (*grader.Outcome, error) { return want, nil }); out != want || err != nil {
		t.Errorf("no panic: %v, %v", out, err)
	}
	boom := errors.New("boom")
	if _, err := gradeSafely(func() (*grader.Outcome, error) { return nil, boom }); err != boom {
		t.Errorf("error: %v", err)
	}
}
