package docker

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/client"

	"github.com/swerve-dev/swerve/internal/sandbox"
)

// ownedContainer is one of swerve's containers, as listContainers found it.
type ownedContainer struct {
	ID       string
	Image    string
	State    string
	RunID    string
	Task     string
	OwnerPID int
	Owner    string // host that made it
}

// listContainers lists the containers swerve made (of run runID when
// set) whose owner is gone: the process that made them has exited on this
// host. Containers made on other hosts are listed only with all, which
// also lists those whose owner still runs.
func (b *Backend) listContainers(ctx context.Context, all bool, runID string) ([]ownedContainer, error) {
	f := make(client.Filters).Add("label", LabelManaged+"=true")
	if runID != "" {
		f = f.Add("label", LabelRun+"="+runID)
	}
	res, err := b.cli.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: f})
	if err != nil {
		return nil, fmt.Errorf("docker: list containers: %w", classify(err))
	}
	host, _ := os.Hostname()
	var out []ownedContainer
	for _, c := range res.Items {
		l := ownedContainer{
			ID:    c.ID,
			Image: c.Image,
			State: string(c.State),
			RunID: c.Labels[LabelRun],
			Task:  c.Labels[LabelTask],
			Owner: c.Labels[LabelOwnerHost],
		}
		l.OwnerPID, _ = strconv.Atoi(c.Labels[LabelOwnerPID])
		if !all {
			if l.Owner != host {
				continue
			}
			if sandbox.ProcessAlive(l.OwnerPID) {
				continue // its owner still runs
			}
		}
		out = append(out, l)
	}
	return out, nil
}

// Leftovers lists, for swerve gc (sandbox.Collector), the containers
// swerve made whose owner is gone (see listContainers), each by its short
// id, and, unless opts.RunID is set, the host directories shared with
// boxes (for the helper's socket) whose swerve process is gone, each by its
// path. opts.All lists them all, whoever owns them.
func (b *Backend) Leftovers(ctx context.Context, opts sandbox.LeftoverOptions) ([]sandbox.Leftover, error) {
	cs, err := b.listContainers(ctx, opts.All, opts.RunID)
	if err != nil {
		return nil, err
	}
	var out []sandbox.Leftover
	for _, c := range cs {
		out = append(out, sandbox.Leftover{ID: short(c.ID), Image: c.Image, RunID: c.RunID, Task: c.Task})
	}
	if opts.RunID == "" {
		for _, d := range StaleSocketDirs("", opts.All) {
			out = append(out, sandbox.Leftover{ID: d})
		}
	}
	return out, nil
}

// Remove removes one thing Leftovers listed: a socket directory (an
// absolute path) from the host, else the container the id (or a unique
// prefix of it, as Leftovers gives) names, see removeContainer.
func (b *Backend) Remove(ctx context.Context, l sandbox.Leftover) error {
	if filepath.IsAbs(l.ID) {
		if !strings.HasPrefix(filepath.Base(l.ID), sockDirPrefix) {
			return fmt.Errorf("docker: remove %s: not a socket directory of swerve's", l.ID)
		}
		if err := os.RemoveAll(l.ID); err != nil {
			return fmt.Errorf("docker: remove %s: %w", l.ID, err)
		}
		return nil
	}
	return b.removeContainer(ctx, l.ID)
}

var _ sandbox.Collector = (*Backend)(nil)

// removeWait bounds how long removeContainer waits for another remover's removal.
const removeWait = time.Minute

// removeContainer force-removes a leftover container. One that is gone
// already, or that another remover (a second gc, say) is removing, is not
// an error: the engine answers such a removal with a conflict, and
// removeContainer then waits until the container is gone.
func (b *Backend) removeContainer(ctx context.Context, id string) error {
	_, err := b.cli.ContainerRemove(ctx, id, client.ContainerRemoveOptions{Force: true, RemoveVolumes: true})
	switch {
	case err == nil, cerrdefs.IsNotFound(err):
		return nil
	case cerrdefs.IsConflict(err) && strings.Contains(err.Error(), "already in progress"):
		ctx, cancel := context.WithTimeout(ctx, removeWait)
		defer cancel()
		for {
			_, ierr := b.cli.ContainerInspect(ctx, id, client.ContainerInspectOptions{})
			if cerrdefs.IsNotFound(ierr) {
				return nil
			}
			select {
			case <-ctx.Done():
				return fmt.Errorf("docker: remove %s: %w (waiting for a removal under way: %w)", short(id), classify(err), ctx.Err())
			case <-time.After(100 * time.Millisecond):
			}
		}
	}
	return fmt.Errorf("docker: remove %s: %w", short(id), classify(err))
}

// StaleSocketDirs lists the host directories shared with boxes (for the
// helper's socket) whose swerve process is gone; with all, every one.
func StaleSocketDirs(tempDir string, all bool) []string {
	if tempDir == "" {
		tempDir = os.TempDir()
	}
	dirs, _ := filepath.Glob(filepath.Join(tempDir, sockDirPrefix+"*"))
	var out []string
	for _, d := range dirs {
		rest := strings.TrimPrefix(filepath.Base(d), sockDirPrefix)
		pidText, _, _ := strings.Cut(rest, "-")
		pid, err := strconv.Atoi(pidText)
		if !all && err == nil && sandbox.ProcessAlive(pid) {
			continue
		}
		out = append(out, d)
	}
	return out
}
