package history_test

import (
	"context"
	"slices"
	"testing"

	"github.com/swerve-dev/swerve/internal/reward/history"
	"github.com/swerve-dev/swerve/internal/sandbox"
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

// fakeStore is an engine's images as sandbox.ImageStore gives them.
type fakeStore struct {
	fakeEngine
	repo, label string // what ListImages was asked for
	tags        []sandbox.TaggedImage
}

func (f *fakeStore) ListImages(_ context.Context, repo, label string) ([]sandbox.TaggedImage, error) {
	f.repo, f.label = repo, label
	return f.tags, nil
}

// TestStoreEngine: a backend's image store as an Engine asks for the
// derived repository's tags that carry the source label, and reads each
// one's source from that label.
func TestStoreEngine(t *testing.T) {
	s := &fakeStore{fakeEngine: fakeEngine{sources: map[string]bool{"sha256:kept": true}}, tags: []sandbox.TaggedImage{
		{Ref: "swerve-nofuture:aaa", ID: "sha256:a", Labels: map[string]string{history.LabelSource: "sha256:kept"}, Size: 1},
		{Ref: "swerve-nofuture:bbb", ID: "sha256:b", Labels: map[string]string{history.LabelSource: "sha256:gone"}, Size: 2},
	}}
	got, err := history.Stale(context.Background(), history.StoreEngine(s), false)
	if err != nil {
		t.Fatal(err)
	}
	if s.repo != history.DerivedRepo || s.label != history.LabelSource {
		t.Errorf("ListImages(%q, %q), want (%q, %q)", s.repo, s.label, history.DerivedRepo, history.LabelSource)
	}
	want := []history.PreparedImage{{Ref: "swerve-nofuture:bbb", ID: "sha256:b", Source: "sha256:gone", SourceGone: true, Size: 2}}
	if !slices.Equal(got, want) {
		t.Errorf("Stale = %+v, want %+v", got, want)
	}
	if err := history.StoreEngine(s).RemoveImage(context.Background(), "swerve-nofuture:bbb"); err != nil || !slices.Equal(s.removed, []string{"swerve-nofuture:bbb"}) {
		t.Errorf("RemoveImage: %v, removed %q", err, s.removed)
	}
}
