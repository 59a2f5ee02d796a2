package docker

import (
	"archive/tar"
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/client"

	"github.com/swerve-dev/swerve/internal/sandbox"
	"github.com/swerve-dev/swerve/internal/shim"
)

// BuildOptions describe an image build.
type BuildOptions struct {
	// ContextDir is the build context, sent to the engine as a tar.
	ContextDir string
	// Dockerfile is the Dockerfile's content; it is added to the context
	// under a name of its own, so the context's files are not touched.
	Dockerfile string
	Tags       []string
	Labels     map[string]string
	NoCache    bool
	// Progress, if set, receives the build's output.
	Progress io.Writer
}

const dockerfileName = ".swerve.Dockerfile"

// Build builds an image. The error carries the tail of the build log.
func (b *Backend) Build(ctx context.Context, opts BuildOptions) error {
	pr, pw := io.Pipe()
	go func() { pw.CloseWithError(writeContext(pw, opts.ContextDir, opts.Dockerfile)) }()
	defer pr.Close()
	res, err := b.cli.ImageBuild(ctx, pr, client.ImageBuildOptions{
		Tags: opts.Tags, Labels: opts.Labels, Dockerfile: dockerfileName, NoCache: opts.NoCache,
		Remove: true, ForceRemove: true,
	})
	if err != nil {
		return fmt.Errorf("build %s: %w", strings.Join(opts.Tags, ", "), classify(err))
	}
	defer res.Body.Close()
	return readJSONStream(res.Body, opts.Progress, "build "+strings.Join(opts.Tags, ", "))
}

// readJSONStream follows the engine's JSON message stream, passing text on
// and turning an error message into an error with the log's tail.
func readJSONStream(r io.Reader, progress io.Writer, what string) error {
	tail := &shim.TailBuffer{Max: 4 << 10}
	dec := json.NewDecoder(bufio.NewReader(r))
	for {
		var m struct {
			Stream      string `json:"stream"`
			Status      string `json:"status"`
			Error       string `json:"error"`
			ErrorDetail struct {
				Message string `json:"message"`
			} `json:"errorDetail"`
		}
		if err := dec.Decode(&m); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return fmt.Errorf("%s: reading the engine's output: %w", what, err)
		}
		text := m.Stream
		if text == "" && m.Status != "" {
			text = m.Status + "\n"
		}
		if text != "" {
			tail.Write([]byte(text))
			if progress != nil {
				io.WriteString(progress, text)
			}
		}
		if msg := m.Error + m.ErrorDetail.Message; msg != "" {
			if m.ErrorDetail.Message != "" {
				msg = m.ErrorDetail.Message
			}
			return fmt.Errorf("%s: %s\n%s", what, msg, tail.String())
		}
	}
}

// writeContext tars dir, plus the Dockerfile, to w.
func writeContext(w io.Writer, dir, dockerfile string) error {
	tw := tar.NewWriter(w)
	if dir != "" {
		err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			rel, err := filepath.Rel(dir, p)
			if err != nil || rel == "." {
				return err
			}
			info, err := d.Info()
			if err != nil {
				return err
			}
			link := ""
			if info.Mode()&fs.ModeSymlink != 0 {
				if link, err = os.Readlink(p); err != nil {
					return err
				}
			}
			hdr, err := tar.FileInfoHeader(info, link)
			if err != nil {
				return err
			}
			hdr.Name = filepath.ToSlash(rel)
			if d.IsDir() {
				hdr.Name += "/"
			}
			hdr.Uid, hdr.Gid, hdr.Uname, hdr.Gname = 0, 0, "", ""
			if err := tw.WriteHeader(hdr); err != nil {
				return err
			}
			if info.Mode().IsRegular() {
				f, err := os.Open(p)
				if err != nil {
					return err
				}
				_, err = io.Copy(tw, f)
				f.Close()
				return err
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("build context %s: %w", dir, err)
		}
	}
	if err := tw.WriteHeader(&tar.Header{Name: dockerfileName, Mode: 0o644, Size: int64(len(dockerfile)), Typeflag: tar.TypeReg}); err != nil {
		return err
	}
	if _, err := io.WriteString(tw, dockerfile); err != nil {
		return err
	}
	return tw.Close()
}

// Import creates image ref from a root filesystem tar stream (docker
// import), applying Dockerfile instructions such as "WORKDIR /testbed" or
// "LABEL k=v" (docker import --change).
func (b *Backend) Import(ctx context.Context, rootfs io.Reader, ref string, changes ...string) error {
	res, err := b.cli.ImageImport(ctx, client.ImageImportSource{Source: rootfs, SourceName: "-"}, ref, client.ImageImportOptions{Changes: changes})
	if err != nil {
		return fmt.Errorf("import %s: %w", ref, classify(err))
	}
	defer res.Close()
	return readJSONStream(res, nil, "import "+ref)
}

// ImageLabels returns the image's labels; ok is false when the engine has
// no such image.
func (b *Backend) ImageLabels(ctx context.Context, ref string) (labels map[string]string, ok bool, err error) {
	res, err := b.cli.ImageInspect(ctx, ref)
	if err != nil {
		if cerrdefs.IsNotFound(err) {
			return nil, false, nil
		}
		return nil, false, classify(err)
	}
	if res.Config != nil {
		labels = res.Config.Labels
	}
	return labels, true, nil
}

// ImageExists reports whether the engine has the image.
func (b *Backend) ImageExists(ctx context.Context, ref string) (bool, error) {
	_, err := b.cli.ImageInspect(ctx, ref)
	if err == nil {
		return true, nil
	}
	if cerrdefs.IsNotFound(err) {
		return false, nil
	}
	return false, classify(err)
}

// ImageID returns the image's content id (sha256:...); ok is false when the
// engine has no such image.
func (b *Backend) ImageID(ctx context.Context, ref string) (id string, ok bool, err error) {
	res, err := b.cli.ImageInspect(ctx, ref)
	if err != nil {
		if cerrdefs.IsNotFound(err) {
			return "", false, nil
		}
		return "", false, classify(err)
	}
	return res.ID, true, nil
}

// BuildDockerfile builds tag from a Dockerfile that needs no build context
// (FROM and RUN only), with the given labels; noCache ignores the engine's
// build cache.
func (b *Backend) BuildDockerfile(ctx context.Context, dockerfile, tag string, labels map[string]string, noCache bool, progress io.Writer) error {
	return b.Build(ctx, BuildOptions{Dockerfile: dockerfile, Tags: []string{tag}, Labels: labels, NoCache: noCache, Progress: progress})
}

// ListImages lists the tags in repository repo of the images that carry
// label (a key): one entry a tag.
func (b *Backend) ListImages(ctx context.Context, repo, label string) ([]sandbox.TaggedImage, error) {
	f := make(client.Filters).Add("reference", repo).Add("label", label)
	res, err := b.cli.ImageList(ctx, client.ImageListOptions{Filters: f})
	if err != nil {
		return nil, fmt.Errorf("docker: list images: %w", classify(err))
	}
	var out []sandbox.TaggedImage
	for _, im := range res.Items {
		for _, tag := range im.RepoTags {
			if strings.HasPrefix(tag, repo+":") {
				out = append(out, sandbox.TaggedImage{Ref: tag, ID: im.ID, Labels: im.Labels, Size: im.Size})
			}
		}
	}
	return out, nil
}

// RemoveImage removes the image ref (its tag; the image when that was its
// only one). An image a container still uses is not removed: the engine's
// conflict is the error.
//
// With ImageID and ListImages it makes the backend a sandbox.ImageStore.
func (b *Backend) RemoveImage(ctx context.Context, ref string) error {
	if _, err := b.cli.ImageRemove(ctx, ref, client.ImageRemoveOptions{}); err != nil && !cerrdefs.IsNotFound(err) {
		return fmt.Errorf("docker: remove image %s: %w", ref, classify(err))
	}
	return nil
}
