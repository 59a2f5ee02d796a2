package reward

import (
	"context"
	"errors"
	"strings"
)

// phasesKey carries a phase reporter in a context (WithPhases).
type phasesKey struct{}

// WithPhases returns ctx carrying report, which the graders call as they
// pass from one phase of a grade to the next (Phase). It is for a person
// watching (swerve grade on a terminal); nothing decides on it.
func WithPhases(ctx context.Context, report func(phase string)) context.Context {
	return context.WithValue(ctx, phasesKey{}, report)
}

// Phase tells ctx's phase reporter, if any, that a grade entered phase.
func Phase(ctx context.Context, phase string) {
	if report, ok := ctx.Value(phasesKey{}).(func(string)); ok && report != nil {
		report(phase)
	}
}

// ErrNotADiff: a patch file that no applier the harness tries (git apply,
// patch) would read as a diff.
var ErrNotADiff = errors.New("not a diff")

// CheckDiff says whether patch can be a diff at all before a box is opened
// for it. An empty or blank patch is valid: it means no change (the tests
// run on the unpatched repository). Otherwise it needs a file header one
// of the harness's appliers reads: a git header ("diff --git "), a unified
// one ("--- " then "+++ "), or a context one ("*** " then "--- "). Text
// around them is allowed, as git apply and patch skip it; the check is
// only ever looser than the appliers, never stricter.
func CheckDiff(patch string) error {
	if strings.TrimSpace(patch) == "" {
		return nil
	}
	lines := strings.Split(patch, "\n")
	for i, l := range lines {
		l = strings.TrimSuffix(l, "\r")
		next := ""
		if i+1 < len(lines) {
			next = strings.TrimSuffix(lines[i+1], "\r")
		}
		switch {
		case strings.HasPrefix(l, "diff --git "):
			return nil
		case strings.HasPrefix(l, "--- ") && strings.HasPrefix(next, "+++ "):
			return nil
		case strings.HasPrefix(l, "*** ") && strings.HasPrefix(next, "--- "):
			return nil
		}
	}
	return ErrNotADiff
}
