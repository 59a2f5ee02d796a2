package docker

import (
	"context"
	"io"
)

// PrepareImage makes image present by the pull policy (sandbox.PullMissing,
// PullAlways, PullNever) before any box needs it: swerve run's
// --prepull_images.
func (b *Backend) PrepareImage(ctx context.Context, image, pull string, progress io.Writer) error {
	_, err := b.ensureImage(ctx, image, pull, progress)
	return err
}
