package docker

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/client"

	"github.com/swerve-dev/swerve/internal/sandbox"
)

// pullAttempts bounds retries of a pull that the registry rate-limits;
// pullBaseDelay is the first wait, doubled each time (tests shorten it).
const pullAttempts = 6

var pullBaseDelay = 5 * time.Second

// imageInfo is what Open needs to know of an image: the user its
// containers run as by default ("" when the image names none) and its
// content id ("" when unknown).
type imageInfo struct{ user, id string }

// ensureImage makes image present according to the pull policy, and
// returns what it knows of it (nothing when it cannot be inspected after
// a pull).
func (b *Backend) ensureImage(ctx context.Context, image, policy string, progress io.Writer) (imageInfo, error) {
	switch policy {
	case "", sandbox.PullMissing, sandbox.PullAlways, sandbox.PullNever:
	default:
		return imageInfo{}, fmt.Errorf("docker: pull policy %q: want missing, always or never", policy)
	}
	if policy != sandbox.PullAlways {
		res, err := b.cli.ImageInspect(ctx, image)
		if err == nil {
			return imageInfo{imageUser(res), res.ID}, nil
		}
		if !cerrdefs.IsNotFound(err) {
			return imageInfo{}, fmt.Errorf("docker: inspect image %s: %w", image, classify(err))
		}
		if policy == sandbox.PullNever {
			return imageInfo{}, fmt.Errorf("docker: image %s is not present and --pull is never: %s: %w", image, howToGet(image), sandbox.ErrNotFound)
		}
	}
	if err := b.pull(ctx, image, progress); err != nil {
		return imageInfo{}, err
	}
	// The user only decides whether the helper's socket is shared (see
	// sockDirFor), the id only lets answers about the image be kept; not
	// knowing them costs nothing but speed.
	res, err := b.cli.ImageInspect(ctx, image)
	if err != nil {
		return imageInfo{}, nil
	}
	return imageInfo{imageUser(res), res.ID}, nil
}

// imageUser returns the user an inspected image runs as.
func imageUser(res client.ImageInspectResult) string {
	if res.Config == nil {
		return ""
	}
	return res.Config.User
}

// howToGet tells a person how to get an image that is missing.
func howToGet(image string) string {
	if strings.Contains(image, "sweb.eval.") {
		return "pull it (docker pull " + image + ") or build it with the SWE-bench harness or `swerve build`"
	}
	return "build it (docker build -t " + image + " .) or pull it (docker pull " + image + ")"
}

// pull pulls image, retrying with exponential backoff and jitter while the
// registry answers 429 (too many requests).
func (b *Backend) pull(ctx context.Context, image string, progress io.Writer) error {
	delay := pullBaseDelay
	var err error
	for attempt := 1; attempt <= pullAttempts; attempt++ {
		err = b.pullOnce(ctx, image, progress)
		if err == nil || !rateLimited(err) || attempt == pullAttempts {
			break
		}
		wait := delay/2 + rand.N(delay)
		if progress != nil {
			fmt.Fprintf(progress, "%s: registry rate limit, retrying in %s (attempt %d of %d)\n", image, wait.Round(time.Second), attempt+1, pullAttempts)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("docker: pull %s: %w", image, ctx.Err())
		case <-time.After(wait):
		}
		delay = min(delay*2, 2*time.Minute)
	}
	if err != nil {
		err = classify(err)
		if ctx.Err() == nil && !errors.Is(err, sandbox.ErrNotFound) {
			// The image is missing and cannot be had (a registry that
			// cannot be reached, refuses, or rate-limits past the
			// retries): an image error. An engine that cannot be reached
			// stays an engine error (ErrUnavailable decides first).
			err = fmt.Errorf("%w (%w)", err, sandbox.ErrNotFound)
		}
		return fmt.Errorf("docker: image %s is not present and could not be pulled (%w); %s", image, err, howToGet(image))
	}
	return nil
}

func (b *Backend) pullOnce(ctx context.Context, image string, progress io.Writer) error {
	resp, err := b.cli.ImagePull(ctx, image, client.ImagePullOptions{})
	if err != nil {
		return err
	}
	defer resp.Close()
	last := map[string]string{}
	for msg, err := range resp.JSONMessages(ctx) {
		if err != nil {
			return err
		}
		if msg.Error != nil {
			return msg.Error
		}
		if progress == nil || msg.Status == "" {
			continue
		}
		// One line per layer and status change, not one per byte count.
		if last[msg.ID] == msg.Status {
			continue
		}
		last[msg.ID] = msg.Status
		if msg.ID != "" {
			fmt.Fprintf(progress, "%s: %s %s\n", image, msg.ID, msg.Status)
		} else {
			fmt.Fprintf(progress, "%s: %s\n", image, msg.Status)
		}
	}
	return nil
}

func rateLimited(err error) bool {
	s := strings.ToLower(err.Error())
	return strings.Contains(s, "toomanyrequests") || strings.Contains(s, "429") || strings.Contains(s, "rate limit")
}
