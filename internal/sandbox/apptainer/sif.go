package apptainer

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/client"

	"github.com/swerve-dev/swerve/internal/sandbox"
)

// image is what a box starts from: its .sif, and the Docker image's
// working directory and user when it was converted from one.
type image struct {
	sif     string
	workdir string
	user    string
}

// conversion is one build of a .sif that boxes of this process share.
type conversion struct {
	done chan struct{}
	err  error
}

// resolve finds the .sif of spec: the template's file when it exists, a
// path to a .sif given as the image, else the local Docker image converted
// once (cached by image id).
func (b *Backend) resolve(ctx context.Context, spec sandbox.Spec) (image, error) {
	task := spec.Task
	if task == "" {
		task = spec.Image
	}
	var fromTemplate string
	if b.template != "" {
		// New checked the template's fields; an error here is a field the
		// box has no value for (no task id): the image may still do.
		p, err := ExpandTemplate(b.template, spec.Task, spec.Image)
		switch {
		case err != nil && spec.Image == "":
			return image{}, fmt.Errorf("apptainer: task %s: %w", task, err)
		case err == nil:
			if _, err := os.Stat(p); err == nil {
				return image{sif: p}, nil
			}
			fromTemplate = p
		}
	}
	if strings.HasSuffix(spec.Image, ".sif") {
		if _, err := os.Stat(spec.Image); err == nil {
			return image{sif: spec.Image}, nil
		}
	}
	if spec.Image == "" {
		if fromTemplate != "" {
			return image{}, fmt.Errorf("apptainer: task %s: no .sif at %s (from --%s %q): %w", task, fromTemplate, ParamSIFTemplate, b.template, sandbox.ErrNotFound)
		}
		return image{}, fmt.Errorf("apptainer: open: no image given and no --%s", ParamSIFTemplate)
	}
	img, err := b.convert(ctx, spec.Image, spec.Pull)
	if err == nil {
		return img, nil
	}
	if fromTemplate != "" {
		return image{}, fmt.Errorf("apptainer: task %s: no .sif at %s (from --%s %q), and no local Docker image %s to convert (%v): %w", task, fromTemplate, ParamSIFTemplate, b.template, spec.Image, err, sandbox.ErrNotFound)
	}
	return image{}, fmt.Errorf("apptainer: task %s: %w", task, err)
}

// dockerClient is the process's Docker client for conversions.
var dockerClient = sync.OnceValues(func() (*client.Client, error) { return client.New(client.FromEnv) })

// convert returns the cached .sif of a local Docker image, building it with
// `apptainer build SIF docker-daemon://IMAGE` when missing. Concurrent
// callers, in this process or others, share one build: a lock file next to
// the .sif serialises them, and the first one's result is everyone's.
func (b *Backend) convert(ctx context.Context, ref, pull string) (image, error) {
	if pull == sandbox.PullAlways {
		return image{}, fmt.Errorf("image %s: pull always: the apptainer backend never pulls (convert local Docker images or give --%s)", ref, ParamSIFTemplate)
	}
	cli, err := dockerClient()
	if err != nil {
		return image{}, fmt.Errorf("no .sif for image %s (give --%s), and no Docker client to convert it: %w", ref, ParamSIFTemplate, err)
	}
	ictx, cancel := context.WithTimeout(ctx, 30*time.Second)
	res, err := cli.ImageInspect(ictx, ref)
	cancel()
	if err != nil {
		if cerrdefs.IsNotFound(err) {
			return image{}, fmt.Errorf("no .sif for image %s (give --%s) and no such image in the local Docker engine: %w", ref, ParamSIFTemplate, sandbox.ErrNotFound)
		}
		return image{}, fmt.Errorf("no .sif for image %s (give --%s) and the local Docker engine cannot be asked (%v): %w", ref, ParamSIFTemplate, err, sandbox.ErrUnavailable)
	}
	img := image{sif: b.CachedSIF(res.ID)}
	if res.Config != nil {
		img.workdir, img.user = res.Config.WorkingDir, res.Config.User
	}
	if _, err := os.Stat(img.sif); err == nil {
		return img, nil
	}
	convertMu.Lock()
	c, running := converts[res.ID]
	if !running {
		c = &conversion{done: make(chan struct{})}
		converts[res.ID] = c
		go func() {
			// Not the caller's ctx: others may wait for this build.
			c.err = b.build(context.WithoutCancel(ctx), ref, img.sif)
			close(c.done)
			convertMu.Lock()
			delete(converts, res.ID)
			convertMu.Unlock()
		}()
	}
	convertMu.Unlock()
	select {
	case <-c.done:
	case <-ctx.Done():
		return image{}, fmt.Errorf("convert %s to .sif: %w", ref, ctx.Err())
	}
	if c.err != nil {
		return image{}, c.err
	}
	return img, nil
}

// CachedSIF is where the .sif of a Docker image id is kept.
func (b *Backend) CachedSIF(id string) string {
	return filepath.Join(b.sifCache, strings.TrimPrefix(id, "sha256:")+".sif")
}

// build converts ref into out, under out's lock file (shared with
// scripts/cluster/apptainer-ci.sh), unless another process made it first.
func (b *Backend) build(ctx context.Context, ref, out string) error {
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		return fmt.Errorf("sif cache: %w", err)
	}
	lock, err := os.OpenFile(strings.TrimSuffix(out, ".sif")+".lock", os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return fmt.Errorf("sif cache: %w", err)
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return fmt.Errorf("sif cache: lock: %w", err)
	}
	defer syscall.Flock(int(lock.Fd()), syscall.LOCK_UN)
	if _, err := os.Stat(out); err == nil {
		return nil
	}
	tmp := fmt.Sprintf("%s.tmp.%d", out, os.Getpid())
	defer os.Remove(tmp)
	cmd := b.exec(ctx, "build", "-F", tmp, "docker-daemon://"+ref)
	outText, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("convert %s to .sif: apptainer build: %w: %s", ref, err, lastLines(string(outText), 3))
	}
	if err := os.Rename(tmp, out); err != nil {
		return fmt.Errorf("convert %s to .sif: %w", ref, err)
	}
	return nil
}

// lastLines returns the last n non-empty lines of s, joined by " | ".
func lastLines(s string, n int) string {
	var lines []string
	for l := range strings.SplitSeq(s, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			lines = append(lines, l)
		}
	}
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, " | ")
}
