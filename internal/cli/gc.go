package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"

	"github.com/spf13/cobra"

	"github.com/swerve-dev/swerve/internal/reward/history"
	"github.com/swerve-dev/swerve/internal/sandbox"
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
			backends := gcBackends(ctx, opts, cmd.ErrOrStderr())
			items := collectGarbage(ctx, backends, all, dryRun, run, cmd.ErrOrStderr())
			if run == "" {
				imgs, err := collectPrepared(ctx, backends, prepared, dryRun)
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

// gcBackend is a registered backend that answers here.
type gcBackend struct {
	name string
	b    sandbox.Backend
}

// gcBackends creates every registered backend whose probe passes under
// opts (the backends' settings the command was given). One that does not
// answer is not configured here, so nothing of ours can be there; that is
// said on warn only for the backends auto would try (sandbox.AutoOrder),
// which users run without configuring them.
func gcBackends(ctx context.Context, opts sandbox.Options, warn io.Writer) []gcBackend {
	var out []gcBackend
	for _, name := range sandbox.Names() {
		r, err := sandbox.Lookup(name)
		if err != nil {
			continue
		}
		if r.Probe != nil {
			if err := r.Probe(ctx, opts); err != nil {
				if slices.Contains(sandbox.AutoOrder, name) {
					fmt.Fprintf(warn, "swerve gc: skipping %s: %v\n", name, err)
				}
				continue
			}
		}
		b, err := r.New(ctx, opts)
		if err != nil {
			fmt.Fprintf(warn, "swerve gc: skipping %s: %v\n", name, err)
			continue
		}
		out = append(out, gcBackend{name, b})
	}
	return out
}

// collectGarbage finds (and unless dryRun removes) the boxes of swerve
// processes that are gone, on every backend that keeps boxes outside this
// process (sandbox.Collector); all includes live owners' boxes too, run
// keeps that run's. A backend that cannot list its boxes is said on warn
// and passed over.
func collectGarbage(ctx context.Context, backends []gcBackend, all, dryRun bool, run string, warn io.Writer) []gcItem {
	var items []gcItem
	for _, gb := range backends {
		c, ok := gb.b.(sandbox.Collector)
		if !ok {
			continue
		}
		left, err := c.Leftovers(ctx, sandbox.LeftoverOptions{All: all, RunID: run})
		if err != nil {
			fmt.Fprintf(warn, "swerve gc: skipping %s: %v\n", gb.name, err)
			continue
		}
		for _, l := range left {
			it := gcItem{Backend: gb.name, ID: l.ID, Image: l.Image, RunID: l.RunID, Task: l.Task}
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
// task images on every backend that keeps images (sandbox.ImageStore; see
// history.Stale).
func collectPrepared(ctx context.Context, backends []gcBackend, all, dryRun bool) ([]gcItem, error) {
	var items []gcItem
	for _, gb := range backends {
		s, ok := gb.b.(sandbox.ImageStore)
		if !ok {
			continue
		}
		its, err := gcPrepared(ctx, history.StoreEngine(s), gb.name, all, dryRun)
		items = append(items, its...)
		if err != nil {
			return items, err
		}
	}
	return items, nil
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

// cleanupOrphans removes what killed swerve processes left behind, saying
// what it removed; failures are only reported. opts holds the backends'
// settings the command was given.
func cleanupOrphans(ctx context.Context, opts sandbox.Options, w io.Writer) {
	items := collectGarbage(ctx, gcBackends(ctx, opts, io.Discard), false, false, "", io.Discard)
	for _, it := range items {
		if it.Removed {
			fmt.Fprintf(w, "swerve: removed %s box %s left by a killed run\n", it.Backend, it.ID)
		}
	}
}
