package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/swerve-dev/swerve/internal/reward/history"
	"github.com/swerve-dev/swerve/internal/sandbox"
	"github.com/swerve-dev/swerve/internal/sandbox/docker"
	"github.com/swerve-dev/swerve/internal/sandbox/local"
)

func init() { register(newGCCmd) }

// gcItem is one thing gc found, for --json.
type gcItem struct {
	Backend string `json:"backend"`
	ID      string `json:"id"`
	Image   string `json:"image,omitempty"`
	RunID   string `json:"run,omitempty"`
	Task    string `json:"task,omitempty"`
	Removed bool   `json:"removed"`
	Error   string `json:"error,omitempty"`
}

func newGCCmd() *cobra.Command {
	var all, dryRun, asJSON, prepared bool
	var run string
	var params paramFlags
	cmd := &cobra.Command{
		Use:   "gc",
		Short: "Remove the boxes a killed swerve left behind",
		Long: `gc finds swerve's containers (by their swerve.* labels) and local box
directories whose owning swerve process is gone, removes them, and says what
it removed. Boxes of swerve processes that still run are left alone unless
--all is given.

It also removes the history-stripped copies of task images swerve built
(swerve-nofuture:<hash>, see --history_images) whose source image is gone
from the engine: no box opens from them again, since a new source image gets
a copy of its own. --prepared_images removes every such copy, including
those of images still there (each is built again, once, the next time an
agent box needs it). Images in that repository that swerve did not build
(no swerve.history.source label) are never touched, nor is a copy a
container still uses.`,
		Example: `  swerve gc
  swerve gc --dry-run
  swerve gc --run my_run --all --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			out := cmd.OutOrStdout()
			opts := sandbox.Options{Params: params.values()}
			items, err := collectGarbage(ctx, opts, all, dryRun, run, cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			if run == "" {
				imgs, err := collectPrepared(ctx, prepared, dryRun)
				if err != nil {
					return err
				}
				items = append(items, imgs...)
			}
			if asJSON {
				enc := json.NewEncoder(out)
				for _, it := range items {
					if err := enc.Encode(it); err != nil {
						return err
					}
				}
				return nil
			}
			failed := 0
			for _, it := range items {
				verb := "removed"
				switch {
				case it.Error != "":
					verb, failed = "FAILED", failed+1
				case dryRun:
					verb = "would remove"
				}
				line := fmt.Sprintf("%-12s %-6s %s", verb, it.Backend, it.ID)
				for _, kv := range [][2]string{{"run", it.RunID}, {"task", it.Task}, {"image", it.Image}, {"error", it.Error}} {
					if kv[1] != "" {
						line += "  " + kv[0] + "=" + kv[1]
					}
				}
				fmt.Fprintln(out, line)
			}
			if len(items) == 0 {
				fmt.Fprintln(out, "nothing to remove")
			}
			if failed > 0 {
				return fmt.Errorf("gc: %d of %d could not be removed", failed, len(items))
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&all, "all", false, "also remove boxes whose swerve process still runs")
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "list what would be removed, remove nothing")
	cmd.Flags().BoolVar(&asJSON, "json", false, "one JSON object per line")
	cmd.Flags().StringVar(&run, "run", "", "only boxes of this run id (prepared images are then left alone)")
	cmd.Flags().BoolVar(&prepared, "prepared_images", false, "remove every history-stripped image copy swerve built (swerve-nofuture:*), not only those whose source image is gone")
	// The backends' settings say where their boxes are (--k8s_kubeconfig,
	// --k8s_namespace, ...), as for the command that made them.
	params = registerParams(cmd.Flags())
	return cmd
}

// collectGarbage finds (and unless dryRun removes) the boxes of swerve
// processes that are gone; all includes live owners' boxes too. opts holds
// the backends' settings.
func collectGarbage(ctx context.Context, opts sandbox.Options, all, dryRun bool, run string, warn io.Writer) ([]gcItem, error) {
	var items []gcItem
	if err := docker.Probe(ctx); err != nil {
		fmt.Fprintf(warn, "swerve gc: skipping containers: %v\n", err)
	} else {
		b, err := docker.New(ctx, docker.Config{})
		if err != nil {
			return items, err
		}
		left, err := b.Leftovers(ctx, docker.LeftoverOptions{All: all, RunID: run})
		if err != nil {
			return items, err
		}
		for _, l := range left {
			it := gcItem{Backend: docker.Name, ID: l.ID[:12], Image: l.Image, RunID: l.RunID, Task: l.Task}
			if !dryRun {
				if err := b.Remove(ctx, l.ID); err != nil {
					it.Error = err.Error()
				} else {
					it.Removed = true
				}
			}
			items = append(items, it)
		}
	}
	if run == "" {
		for _, d := range docker.StaleSocketDirs("", all) {
			it := gcItem{Backend: docker.Name, ID: d}
			if !dryRun {
				if err := os.RemoveAll(d); err != nil {
					it.Error = err.Error()
				} else {
					it.Removed = true
				}
			}
			items = append(items, it)
		}
	}
	items = append(items, collectRegistered(ctx, opts, all, dryRun, run, warn)...)
	left, err := local.Leftovers(ctx, "", all)
	if err != nil {
		return items, err
	}
	for _, l := range left {
		if run != "" && l.RunID != run && !l.Unclaimed {
			continue
		}
		it := gcItem{Backend: local.Name, ID: l.Dir, RunID: l.RunID}
		if !dryRun {
			if err := l.Remove(); err != nil {
				it.Error = err.Error()
			} else {
				it.Removed = true
			}
		}
		items = append(items, it)
	}
	return items, nil
}

// collectRegistered runs gc on every other registered backend that keeps
// boxes outside this process (sandbox.Collector) and answers here under
// opts (probed and created with the same settings).
func collectRegistered(ctx context.Context, opts sandbox.Options, all, dryRun bool, run string, warn io.Writer) []gcItem {
	var items []gcItem
	for _, name := range sandbox.Names() {
		if name == docker.Name || name == local.Name {
			continue // above, with their extra clean-ups
		}
		r, err := sandbox.Lookup(name)
		if err != nil {
			continue
		}
		if r.Probe != nil {
			if err := r.Probe(ctx, opts); err != nil {
				continue // not configured here: nothing of ours can be there
			}
		}
		b, err := r.New(ctx, opts)
		if err != nil {
			fmt.Fprintf(warn, "swerve gc: skipping %s: %v\n", name, err)
			continue
		}
		c, ok := b.(sandbox.Collector)
		if !ok {
			continue
		}
		left, err := c.Leftovers(ctx, sandbox.LeftoverOptions{All: all, RunID: run})
		if err != nil {
			fmt.Fprintf(warn, "swerve gc: skipping %s: %v\n", name, err)
			continue
		}
		for _, l := range left {
			it := gcItem{Backend: name, ID: l.ID, Image: l.Image, RunID: l.RunID, Task: l.Task}
			if !dryRun {
				if err := c.Remove(ctx, l); err != nil {
					it.Error = err.Error()
				} else {
					it.Removed = true
				}
			}
			items = append(items, it)
		}
	}
	return items
}

// collectPrepared finds (and unless dryRun removes) the prepared copies of
// task images on the Docker engine (see history.Stale).
func collectPrepared(ctx context.Context, all, dryRun bool) ([]gcItem, error) {
	if err := docker.Probe(ctx); err != nil {
		return nil, nil // said above
	}
	b, err := docker.New(ctx, docker.Config{})
	if err != nil {
		return nil, err
	}
	return gcPrepared(ctx, dockerEngine{b}, docker.Name, all, dryRun)
}

// gcPrepared lists and removes e's stale prepared images as gc items.
func gcPrepared(ctx context.Context, e history.Engine, backend string, all, dryRun bool) ([]gcItem, error) {
	stale, err := history.Stale(ctx, e, all)
	if err != nil {
		return nil, err
	}
	var items []gcItem
	for _, im := range stale {
		it := gcItem{Backend: backend, ID: im.Ref, Image: "source " + im.Source}
		if im.SourceGone {
			it.Image += " (gone)"
		}
		if !dryRun {
			if err := e.RemoveImage(ctx, im.Ref); err != nil {
				it.Error = err.Error()
			} else {
				it.Removed = true
			}
		}
		items = append(items, it)
	}
	return items, nil
}

// dockerEngine is the Docker backend as a history.Engine.
type dockerEngine struct{ *docker.Backend }

func (d dockerEngine) PreparedImages(ctx context.Context) ([]history.PreparedImage, error) {
	imgs, err := d.ListImages(ctx, history.DerivedRepo, history.LabelSource)
	if err != nil {
		return nil, err
	}
	out := make([]history.PreparedImage, len(imgs))
	for i, im := range imgs {
		out[i] = history.PreparedImage{Ref: im.Ref, ID: im.ID, Source: im.Labels[history.LabelSource], Size: im.Size}
	}
	return out, nil
}

// cleanupOrphans removes what killed swerve processes left behind, saying
// what it removed; failures are only reported. opts holds the backends'
// settings the command was given.
func cleanupOrphans(ctx context.Context, opts sandbox.Options, w io.Writer) {
	items, err := collectGarbage(ctx, opts, false, false, "", io.Discard)
	if err != nil {
		fmt.Fprintf(w, "swerve: cleaning up earlier runs' boxes: %v\n", err)
		return
	}
	for _, it := range items {
		if it.Removed {
			fmt.Fprintf(w, "swerve: removed %s box %s left by a killed run\n", it.Backend, it.ID)
		}
	}
}
