package grader

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/swerve-dev/swerve/internal/reward"
	"github.com/swerve-dev/swerve/internal/sandbox"
	"github.com/swerve-dev/swerve/internal/task"
)

// TestBaselineDisk: only a living reference run goes to disk, and only
// under an image's content id; a key names what decides the run.
func TestBaselineDisk(t *testing.T) {
	dir := t.TempDir()
	b := &Baseline{Dir: dir}
	lives := baselineAnswer{}
	dies := baselineAnswer{Dies: true, What: "out of memory"}
	tk := &task.Task{InstanceID: "a__b-1", Image: "img", EvalScript: "pytest\n", Patch: "diff"}
	key := baselineKey(tk, Options{Gold: true}, task.GraderSWEBench, "sha256:1")
	tests := []struct {
		name   string
		key    string
		answer baselineAnswer
		kept   bool
	}{
		{name: "a living reference is kept", key: key, answer: lives, kept: true},
		{name: "a dying one is not", key: key + "x", answer: dies, kept: false},
		{name: "nor one without an image id", key: "", answer: lives, kept: false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b.store(tc.key, tc.answer)
			got, ok := b.load(tc.key)
			if ok != tc.kept || (ok && got != tc.answer) {
				t.Errorf("load = %+v, %v; want %+v, %v", got, ok, tc.answer, tc.kept)
			}
		})
	}
	other := *tk
	other.EvalScript = "pytest -x\n"
	if baselineKey(&other, Options{Gold: true}, task.GraderSWEBench, "sha256:1") == key {
		t.Error("another eval script gives the same key")
	}
	if baselineKey(tk, Options{Gold: true}, task.GraderSWEBench, "sha256:2") == key {
		t.Error("another image gives the same key")
	}
}

// TestSettleOtherErrors: an error that is not a box dying under the patch
// is returned as it is, without a reference run.
func TestSettleOtherErrors(t *testing.T) {
	opened := 0
	open := func(context.Context, *task.Task) (sandbox.Sandbox, string, error) {
		opened++
		return nil, "", errors.New("no box")
	}
	tk := &task.Task{InstanceID: "a__b-1", Patch: "diff"}
	for _, err := range []error{
		errors.New("engine down"),
		fmt.Errorf("apply patch: %w", sandbox.ErrClosed),
	} {
		out, got := Settle(context.Background(), err, tk, Options{}, SettleOptions{Open: open, Baseline: &Baseline{}})
		if out != nil || got != err {
			t.Errorf("Settle(%v) = %v, %v; want the error back", err, out, got)
		}
	}
	// A box that died under the patch, whose reference box will not open:
	// no verdict, and the error says both.
	died := &reward.BoxDiedError{Err: fmt.Errorf("%w: the helper closed its stream", sandbox.ErrClosed)}
	out, err := Settle(context.Background(), died, tk, Options{}, SettleOptions{Open: open, Baseline: &Baseline{}})
	if out != nil || !errors.Is(err, sandbox.ErrClosed) || opened != 1 {
		t.Errorf("Settle = %v, %v (opened %d); want an error that is still the box's", out, err, opened)
	}
}

// TestDefaultBaselinePerDir: the default baseline follows SWERVE_CACHE_DIR
// as it is when asked, one per directory, so that a caller (or a test)
// pointing it elsewhere after an earlier grade does not write into the
// earlier directory.
func TestDefaultBaselinePerDir(t *testing.T) {
	a, b := t.TempDir(), t.TempDir()
	t.Setenv("SWERVE_CACHE_DIR", a)
	first := DefaultBaseline()
	if first.Dir != filepath.Join(a, "baseline") || DefaultBaseline() != first {
		t.Fatalf("dir %q, want %q, one baseline per directory", first.Dir, filepath.Join(a, "baseline"))
	}
	t.Setenv("SWERVE_CACHE_DIR", b)
	if got := DefaultBaseline(); got.Dir != filepath.Join(b, "baseline") {
		t.Errorf("after SWERVE_CACHE_DIR changed: dir %q, want %q", got.Dir, filepath.Join(b, "baseline"))
	}
	t.Setenv("SWERVE_CACHE_DIR", "off")
	if got := DefaultBaseline(); got.Dir != "" {
		t.Errorf("SWERVE_CACHE_DIR=off: dir %q, want none", got.Dir)
	}
}
