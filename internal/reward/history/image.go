package history

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"sync"

	"github.com/swerve-dev/swerve/internal/sandbox"
)

// Builder is a backend that can build images from a Dockerfile (Docker and
// Podman through the Engine API).
type Builder interface {
	ImageID(ctx context.Context, ref string) (id string, ok bool, err error)
	ImageLabels(ctx context.Context, ref string) (labels map[string]string, ok bool, err error)
	BuildDockerfile(ctx context.Context, dockerfile, tag string, labels map[string]string, noCache bool, progress io.Writer) error
}

// Labels on a prepared image: the id of the image it was made from, and
// the recipe (the strip script and the repository's directory) it was made
// with.
const (
	LabelSource = "swerve.history.source"
	LabelRecipe = "swerve.history.recipe"
)

// DerivedRepo is the repository of prepared images; the tag is a hash of
// the source image's id and the recipe.
const DerivedRepo = "swerve-nofuture"

// recipe hashes what a prepared image depends on besides its source.
func recipe(workdir string) string {
	h := sha256.Sum256([]byte(withPseudo(stripScript) + "\x00" + workdir))
	return hex.EncodeToString(h[:])[:16]
}

// Dockerfile is the recipe of image's prepared copy: the strip, run once
// on top of it in the repository at workdir. Nothing else changes (user,
// entrypoint, environment and labels are the image's own).
func Dockerfile(image, workdir string) string {
	run, _ := json.Marshal([]string{"sh", "-c", withPseudo(stripScript), "sh", workdir})
	return "FROM " + image + "\nRUN " + string(run) + "\n"
}

// PrepareOptions tune Prepare.
type PrepareOptions struct {
	// Progress receives the build's output.
	Progress io.Writer
	// NoCache builds without the engine's build cache (to measure).
	NoCache bool
}

// Prepare returns the prepared copy of image (its repository at workdir
// stripped, see Strip), building it when the engine has none made from
// this very image with this recipe. built says it was built now.
func Prepare(ctx context.Context, b Builder, image, workdir string, opts PrepareOptions) (ref string, built bool, err error) {
	id, ok, err := b.ImageID(ctx, image)
	if err != nil {
		return "", false, fmt.Errorf("prepare %s: %w", image, err)
	}
	if !ok {
		return "", false, fmt.Errorf("prepare %s: image not found", image)
	}
	rec := recipe(workdir)
	sum := sha256.Sum256([]byte(id + "\x00" + rec))
	ref = DerivedRepo + ":" + hex.EncodeToString(sum[:])[:20]
	labels, ok, err := b.ImageLabels(ctx, ref)
	if err != nil {
		return "", false, fmt.Errorf("prepare %s: %w", image, err)
	}
	if ok && labels[LabelSource] == id && labels[LabelRecipe] == rec {
		return ref, false, nil
	}
	// FROM names the id, so that a tag moved since cannot slip in.
	if err := b.BuildDockerfile(ctx, Dockerfile(id, workdir), ref, map[string]string{LabelSource: id, LabelRecipe: rec}, opts.NoCache, opts.Progress); err != nil {
		return "", false, fmt.Errorf("prepare %s: %w", image, err)
	}
	return ref, true, nil
}

// Images prepares each image once per process (and, through the engine's
// labels, once per machine), concurrent callers for one image waiting for
// the same preparation. The zero value is ready.
type Images struct {
	mu sync.Mutex
	m  map[string]*prepared
}

type prepared struct {
	once sync.Once
	ref  string
	err  error
}

// Ref is image's prepared copy, its repository at workdir (default
// /testbed), built by b (see Prepare). A preparation that failed is not
// tried again by this Images.
func (c *Images) Ref(ctx context.Context, b Builder, image, workdir string) (string, error) {
	if workdir == "" {
		workdir = "/testbed"
	}
	key := image + "\x00" + workdir
	c.mu.Lock()
	if c.m == nil {
		c.m = map[string]*prepared{}
	}
	p := c.m[key]
	if p == nil {
		p = &prepared{}
		c.m[key] = p
	}
	c.mu.Unlock()
	p.once.Do(func() {
		p.ref, _, p.err = Prepare(context.WithoutCancel(ctx), b, image, workdir, PrepareOptions{Progress: io.Discard})
	})
	return p.ref, p.err
}

// Engine lists and removes the prepared copies on a backend that builds
// them.
type Engine interface {
	ImageID(ctx context.Context, ref string) (id string, ok bool, err error)
	// PreparedImages lists the images of DerivedRepo that carry
	// LabelSource: those Prepare made.
	PreparedImages(ctx context.Context) ([]PreparedImage, error)
	RemoveImage(ctx context.Context, ref string) error
}

// StoreEngine is the Engine of a backend that keeps images
// (sandbox.ImageStore): its prepared copies are the tags of DerivedRepo
// that carry LabelSource.
func StoreEngine(s sandbox.ImageStore) Engine { return storeEngine{s} }

type storeEngine struct{ sandbox.ImageStore }

func (e storeEngine) PreparedImages(ctx context.Context) ([]PreparedImage, error) {
	imgs, err := e.ListImages(ctx, DerivedRepo, LabelSource)
	if err != nil {
		return nil, err
	}
	out := make([]PreparedImage, len(imgs))
	for i, im := range imgs {
		out[i] = PreparedImage{Ref: im.Ref, ID: im.ID, Source: im.Labels[LabelSource], Size: im.Size}
	}
	return out, nil
}

// PreparedImage is one prepared copy found on an engine.
type PreparedImage struct {
	Ref string `json:"ref"`
	ID  string `json:"id"`
	// Source is the id of the image it was made from; SourceGone says
	// the engine no longer has that image (so no box will open from this
	// copy again: a new source gets a copy of its own).
	Source     string `json:"source"`
	SourceGone bool   `json:"source_gone"`
	Size       int64  `json:"size"`
}

// Stale lists the prepared copies gc removes: those whose source image is
// gone, or, with all, every one Prepare made (a copy whose source is still
// there is built again the next time a box needs it). Images of DerivedRepo
// without LabelSource were not made by Prepare and are never listed.
func Stale(ctx context.Context, e Engine, all bool) ([]PreparedImage, error) {
	imgs, err := e.PreparedImages(ctx)
	if err != nil {
		return nil, fmt.Errorf("prepared images: %w", err)
	}
	var out []PreparedImage
	for _, im := range imgs {
		if im.Source == "" || !strings.HasPrefix(im.Ref, DerivedRepo+":") {
			continue
		}
		_, ok, err := e.ImageID(ctx, im.Source)
		if err != nil {
			return nil, fmt.Errorf("prepared image %s: its source %s: %w", im.Ref, im.Source, err)
		}
		im.SourceGone = !ok
		if im.SourceGone || all {
			out = append(out, im)
		}
	}
	return out, nil
}

// AgentSpec is the spec of an agent's box of spec.Image, as every path that
// hands a box to an agent opens it: on a backend that builds images (a
// Builder) the image is replaced by its prepared copy (Ref; PullNever), so
// the box's proof finds nothing to strip; on one that cannot, spec is
// returned unchanged and Secure strips each box on its own. prepared says
// which; err is a preparation that failed (spec is then unchanged too).
func (c *Images) AgentSpec(ctx context.Context, b sandbox.Backend, spec sandbox.Spec) (out sandbox.Spec, prepared bool, err error) {
	bl, ok := b.(Builder)
	if !ok || spec.Image == "" {
		return spec, false, nil
	}
	ref, err := c.Ref(ctx, bl, spec.Image, spec.Workdir)
	if err != nil {
		return spec, false, err
	}
	spec.Image, spec.Pull = ref, sandbox.PullNever
	return spec, true, nil
}
