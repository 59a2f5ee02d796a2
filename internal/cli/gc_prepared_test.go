package cli

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/swerve-dev/swerve/internal/reward/history"
	"github.com/swerve-dev/swerve/internal/sandbox"
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

// fakeCollector is a backend with boxes and images of its own to collect.
type fakeCollector struct {
	fakeImages
	left    []sandbox.Leftover
	opts    sandbox.LeftoverOptions // what Leftovers was asked
	gone    []string
	listErr error
}

func (f *fakeCollector) Open(context.Context, sandbox.Spec) (sandbox.Sandbox, error) {
	return nil, sandbox.ErrUnavailable
}
func (f *fakeCollector) Leftovers(_ context.Context, opts sandbox.LeftoverOptions) ([]sandbox.Leftover, error) {
	f.opts = opts
	return f.left, f.listErr
}
func (f *fakeCollector) Remove(_ context.Context, l sandbox.Leftover) error {
	f.gone = append(f.gone, l.ID)
	return nil
}
func (f *fakeCollector) ListImages(context.Context, string, string) ([]sandbox.TaggedImage, error) {
	var out []sandbox.TaggedImage
	for _, p := range f.prepared {
		out = append(out, sandbox.TaggedImage{Ref: p.Ref, ID: p.ID, Labels: map[string]string{history.LabelSource: p.Source}})
	}
	return out, nil
}

// noCollector is a backend whose boxes end with the process.
type noCollector struct{}

func (noCollector) Open(context.Context, sandbox.Spec) (sandbox.Sandbox, error) {
	return nil, sandbox.ErrUnavailable
}

// gc is one loop: every backend that collects (sandbox.Collector) is asked
// with the command's filters and its boxes removed (none with --dry-run),
// one that cannot list is passed over with a line on stderr, and the
// stale images of every backend that keeps images (sandbox.ImageStore)
// come after all the boxes.
func TestGCLoop(t *testing.T) {
	for _, dryRun := range []bool{false, true} {
		a := &fakeCollector{left: []sandbox.Leftover{{ID: "a1", RunID: "r", Task: "t1"}, {ID: "a2"}}}
		a.sources = map[string]bool{"sha256:live": true}
		a.prepared = []history.PreparedImage{{Ref: "swerve-nofuture:old", Source: "sha256:old"}, {Ref: "swerve-nofuture:live", Source: "sha256:live"}}
		broken := &fakeCollector{listErr: errors.New("no answer")}
		c := &fakeCollector{left: []sandbox.Leftover{{ID: "c1", Image: "img"}}}
		backends := []gcBackend{{"a", a}, {"broken", broken}, {"none", noCollector{}}, {"c", c}}
		var warn strings.Builder
		items := collectGarbage(context.Background(), backends, true, dryRun, "r", &warn)
		imgs, err := collectPrepared(context.Background(), backends, false, dryRun)
		if err != nil {
			t.Fatal(err)
		}
		items = append(items, imgs...)
		var got []string
		for _, it := range items {
			got = append(got, it.Backend+"/"+it.ID)
			if it.Removed == dryRun {
				t.Errorf("dry-run %v: %+v", dryRun, it)
			}
		}
		want := []string{"a/a1", "a/a2", "c/c1", "a/swerve-nofuture:old"}
		if !slices.Equal(got, want) {
			t.Errorf("dry-run %v: items %q, want %q", dryRun, got, want)
		}
		if a.opts != (sandbox.LeftoverOptions{All: true, RunID: "r"}) {
			t.Errorf("Leftovers asked with %+v", a.opts)
		}
		var wantGone []string
		if !dryRun {
			wantGone = []string{"a1", "a2"}
		}
		if !slices.Equal(a.gone, wantGone) {
			t.Errorf("dry-run %v: removed %q, want %q", dryRun, a.gone, wantGone)
		}
		if !strings.Contains(warn.String(), "swerve gc: skipping broken: no answer") {
			t.Errorf("stderr %q: want the backend that could not list said", warn.String())
		}
	}
}
