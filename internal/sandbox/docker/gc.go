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

// Leftover is a container found by Leftovers.
type Leftover struct {
	ID       string
	Name     string
	Image    string
	State    string
	RunID    string
	Task     string
	OwnerPID int
	Owner    string // host that made it
}

// LeftoverOptions selects what Leftovers reports.
type LeftoverOptions struct {
	// All lists every swerve container, including those whose owner process
	// on this host still runs.
	All bool
	// RunID, if set, lists only that run's containers.
	RunID string
}

// Leftovers lists containers that swerve made and whose owner is gone: the
// process that made them has exited on this host. Containers made on other
// hosts are listed only with All.
func (b *Backend) Leftovers(ctx context.Context, opts LeftoverOptions) ([]Leftover, error) {
	f := make(client.Filters).Add("label", LabelManaged+"=true")
	if opts.RunID != "" {
		f = f.Add("label", LabelRun+"="+opts.RunID)
	}
	res, err := b.cli.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: f})
	if err != nil {
		return nil, fmt.Errorf("docker: list containers: %w", classify(err))
	}
	host, _ := os.Hostname()
	var out []Leftover
	for _, c := range res.Items {
		l := Leftover{
			ID:    c.ID,
			Image: c.Image,
			State: string(c.State),
			RunID: c.Labels[LabelRun],
			Task:  c.Labels[LabelTask],
			Owner: c.Labels[LabelOwnerHost],
		}
		if len(c.Names) > 0 {
			l.Name = c.Names[0]
		}
		l.OwnerPID, _ = strconv.Atoi(c.Labels[LabelOwnerPID])
		if !opts.All {
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

// removeWait bounds how long Remove waits for another remover's removal.
const removeWait = time.Minute

// Remove force-removes a leftover container. One that is gone already, or
// that another remover (a second gc, say) is removing, is not an error:
// the engine answers such a removal with a conflict, and Remove then waits
// until the container is gone.
func (b *Backend) Remove(ctx context.Context, id string) error {
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
