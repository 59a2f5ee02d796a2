package cli

import (
	"context"
	"slices"
	"testing"

	"github.com/swerve-dev/swerve/internal/reward/history"
)

type fakeImages struct {
	sources  map[string]bool
	prepared []history.PreparedImage
	removed  []string
}

func (f *fakeImages) ImageID(_ context.Context, ref string) (string, bool, error) {
	return ref, f.sources[ref], nil
}
func (f *fakeImages) PreparedImages(context.Context) ([]history.PreparedImage, error) {
	return f.prepared, nil
}
func (f *fakeImages) RemoveImage(_ context.Context, ref string) error {
	f.removed = append(f.removed, ref)
	return nil
}

// gc removes the prepared copies whose source is gone (all of swerve's with
// --prepared_images), and nothing with --dry-run.
func TestGCPrepared(t *testing.T) {
	for _, tc := range []struct {
		name        string
		all, dryRun bool
		want        []string
	}{
		{"source gone", false, false, []string{"swerve-nofuture:old"}},
		{"all", true, false, []string{"swerve-nofuture:live", "swerve-nofuture:old"}},
		{"dry run", true, true, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := &fakeImages{sources: map[string]bool{"sha256:live": true}, prepared: []history.PreparedImage{
				{Ref: "swerve-nofuture:live", Source: "sha256:live"},
				{Ref: "swerve-nofuture:old", Source: "sha256:old"},
				{Ref: "swerve-nofuture:hand-made"},
			}}
			items, err := gcPrepared(context.Background(), e, "docker", tc.all, tc.dryRun)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(e.removed, tc.want) {
				t.Errorf("removed %q, want %q", e.removed, tc.want)
			}
			if n := len(items); tc.dryRun && n != 2 || !tc.dryRun && n != len(tc.want) {
				t.Errorf("items %+v", items)
			}
			for _, it := range items {
				if it.Removed == tc.dryRun {
					t.Errorf("item %+v: removed %v with dry-run %v", it, it.Removed, tc.dryRun)
				}
			}
		})
	}
}
