package cli

import (
	"context"
	"io"
	"io/fs"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/swerve-dev/swerve/internal/reward/history"
	"github.com/swerve-dev/swerve/internal/sandbox"
	"github.com/swerve-dev/swerve/internal/sandbox/pool"
	"github.com/swerve-dev/swerve/internal/task"
)

// buildingBackend is a fake backend that builds images (history.Builder)
// and records the images its boxes open from.
type buildingBackend struct {
	mu     sync.Mutex
	labels map[string]map[string]string
	opened []string
}

func (b *buildingBackend) ImageID(_ context.Context, ref string) (string, bool, error) {
	return "sha256:" + ref, true, nil
}
func (b *buildingBackend) ImageLabels(_ context.Context, ref string) (map[string]string, bool, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	l, ok := b.labels[ref]
	return l, ok, nil
}
func (b *buildingBackend) BuildDockerfile(_ context.Context, _, tag string, labels map[string]string, _ bool, _ io.Writer) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.labels[tag] = labels
	return nil
}
func (b *buildingBackend) Open(_ context.Context, spec sandbox.Spec) (sandbox.Sandbox, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.opened = append(b.opened, spec.Image)
	return nopBox{}, nil
}
func (b *buildingBackend) images() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]string(nil), b.opened...)
}

type nopBox struct{}

func (nopBox) ID() string { return "nop" }
func (nopBox) Exec(context.Context, sandbox.ExecRequest) (sandbox.ExecResult, error) {
	return sandbox.ExecResult{}, nil
}
func (nopBox) WriteFile(context.Context, string, []byte, fs.FileMode) error { return nil }
func (nopBox) ReadFile(context.Context, string) ([]byte, error)             { return nil, sandbox.ErrNotFound }
func (nopBox) Close(context.Context) error                                  { return nil }

// Under --prewarm with --history_images, an agent's warm box opens from the
// image's prepared copy (the grading box from the image itself), and the
// agent's open takes it: a hit, not a box of the unstripped image.
func TestPrewarmOpensPreparedImage(t *testing.T) {
	ctx := context.Background()
	fb := &buildingBackend{labels: map[string]map[string]string{}}
	p := pool.New(fb, pool.Options{Size: 2})
	defer p.Close(ctx)
	f := &boxFlags{Backend: "local", Source: "task-image", HistoryImages: true}
	f.warm = &warmPools{size: 2, pools: map[string]*pool.Pool{"local": p}}
	tk := &task.Task{InstanceID: "t-1"}
	release := f.warm.expect(ctx, f, tk, 2, true)
	defer release()
	deadline := time.Now().Add(10 * time.Second)
	for len(fb.images()) < 2 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	got := fb.images()
	slices.Sort(got) // the pool opens them side by side
	if len(got) != 2 || !strings.HasPrefix(got[0], history.DerivedRepo+":") || got[1] != "task-image" {
		t.Fatalf("warm boxes opened from %q; want the prepared copy and the image", got)
	}
	box, _, err := f.openFor(ctx, *tk, io.Discard, true)
	if err != nil {
		t.Fatal(err)
	}
	box.Close(ctx)
	if st := p.Stats(); st.Hits != 1 || st.Misses != 0 {
		t.Errorf("agent open: %+v; want a hit on the warm prepared box", st)
	}
	if n := len(fb.images()); n != 2 {
		t.Errorf("%d boxes opened; the agent's should have been the warm one", n)
	}
}
