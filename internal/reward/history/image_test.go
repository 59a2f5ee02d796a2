package history_test

import (
	"context"
	"slices"
	"testing"

	"github.com/swerve-dev/swerve/internal/reward/history"
)

// fakeEngine holds images by ref (and by id, for the sources).
type fakeEngine struct {
	sources  map[string]bool
	prepared []history.PreparedImage
	removed  []string
}

func (f *fakeEngine) ImageID(_ context.Context, ref string) (string, bool, error) {
	return ref, f.sources[ref], nil
}
func (f *fakeEngine) PreparedImages(context.Context) ([]history.PreparedImage, error) {
	return f.prepared, nil
}
func (f *fakeEngine) RemoveImage(_ context.Context, ref string) error {
	f.removed = append(f.removed, ref)
	return nil
}

func TestStale(t *testing.T) {
	e := &fakeEngine{
		sources: map[string]bool{"sha256:kept": true},
		prepared: []history.PreparedImage{
			{Ref: "swerve-nofuture:aaa", Source: "sha256:kept"},
			{Ref: "swerve-nofuture:bbb", Source: "sha256:gone"},
			{Ref: "swerve-nofuture:ccc"},                     // no source label: not ours
			{Ref: "someone-else:ddd", Source: "sha256:gone"}, // not the derived repository
		},
	}
	for _, tc := range []struct {
		all  bool
		want []string
	}{
		{false, []string{"swerve-nofuture:bbb"}},
		{true, []string{"swerve-nofuture:aaa", "swerve-nofuture:bbb"}},
	} {
		got, err := history.Stale(context.Background(), e, tc.all)
		if err != nil {
			t.Fatal(err)
		}
		var refs []string
		for _, im := range got {
			refs = append(refs, im.Ref)
			if im.SourceGone != (im.Source == "sha256:gone") {
				t.Errorf("%s: source_gone %v", im.Ref, im.SourceGone)
			}
		}
		if !slices.Equal(refs, tc.want) {
			t.Errorf("Stale(all=%v) = %q, want %q", tc.all, refs, tc.want)
		}
	}
}
