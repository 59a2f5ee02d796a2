package k8s

import (
	"context"
	"fmt"
	"os"
	"strconv"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/swerve-dev/swerve/internal/sandbox"
)

// Leftovers lists the backend's pods (label swerve.managed=true in its
// namespace) whose owner is gone: made on this host by a process that no
// longer runs. Pods made on other hosts are listed only with opts.All,
// since their owner cannot be checked from here.
func (b *Backend) Leftovers(ctx context.Context, opts sandbox.LeftoverOptions) ([]sandbox.Leftover, error) {
	sel := labels.Set{LabelManaged: "true"}
	if opts.RunID != "" {
		sel[LabelRun] = labelValue(opts.RunID)
	}
	list, err := b.api.listPods(ctx, b.namespace, metav1.ListOptions{LabelSelector: sel.String()})
	if err != nil {
		return nil, fmt.Errorf("k8s: list pods in namespace %s: %w", b.namespace, classify(err))
	}
	host := labelValue(hostname())
	var out []sandbox.Leftover
	for _, p := range list.Items {
		if !opts.All {
			if p.Labels[LabelOwnerHost] != host {
				continue
			}
			pid, _ := strconv.Atoi(p.Labels[LabelOwnerPID])
			if sandbox.ProcessAlive(pid) {
				continue
			}
		}
		l := sandbox.Leftover{ID: p.Name, RunID: p.Labels[LabelRun], Task: p.Labels[LabelTask]}
		for _, c := range p.Spec.Containers {
			if c.Name == mainContainer {
				l.Image = c.Image
			}
		}
		out = append(out, l)
	}
	return out, nil
}

// Remove deletes a pod Leftovers listed (grace period 0) and waits until
// it is gone; one already gone is not an error.
func (b *Backend) Remove(ctx context.Context, l sandbox.Leftover) error {
	if err := b.deletePod(ctx, l.ID); err != nil {
		return fmt.Errorf("k8s: %w", err)
	}
	return nil
}

func hostname() string {
	h, _ := os.Hostname()
	return h
}
