package k8s

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/swerve-dev/swerve/internal/sandbox"
	"github.com/swerve-dev/swerve/internal/shim"
)

// ErrNetworkOpen is wrapped by Open's error when a pod that asked for no
// network could reach the network: the cluster's network plugin does not
// enforce the backend's NetworkPolicy, and an agent in such a box could,
// say, fetch the upstream fix of its task. --k8s_allow_network accepts it.
var ErrNetworkOpen = errors.New("network-less pods are not cut off")

// defaultKubeletPort is where kubelets listen unless their node says
// otherwise (reading the node needs a permission many users lack).
const defaultKubeletPort = 10250

// isolationDialTimeout bounds each connection attempt of the check: a
// filter that drops packets makes the attempt last this long, once per
// backend.
const isolationDialTimeout = 1500 * time.Millisecond

// isolation holds the outcome of the first network-less box's check, which
// every later network-less box of the backend shares.
type isolation struct {
	done bool
	err  error // set when the check found the network open
}

// checkIsolation makes sure network-less pods really are cut off: once
// per backend, from inside the first such box, it tries to connect to
// the kubelet of the pod's node, which listens on every node. A pod that
// connects is not isolated, and this box and every later network-less
// one fail with ErrNetworkOpen, unless AllowNetwork. A check that could
// not run (an API or helper error) decides nothing and is tried again by
// the next box.
func (b *Backend) checkIsolation(ctx context.Context, box *Box) error {
	if b.cfg.AllowNetwork {
		return nil
	}
	b.isoMu.Lock()
	defer b.isoMu.Unlock()
	if !b.iso.done {
		found, err := b.probeIsolation(ctx, box)
		if err != nil {
			return fmt.Errorf("k8s: task %s: check that network-less pods are cut off: %w", box.what, err)
		}
		b.iso = isolation{done: true, err: found}
	}
	if b.iso.err != nil {
		return fmt.Errorf("k8s: task %s: %w", box.what, b.iso.err)
	}
	return nil
}

// probeIsolation runs the dial in box; it returns the finding (nil:
// isolated) or an error when the check itself failed.
func (b *Backend) probeIsolation(ctx context.Context, box *Box) (found, err error) {
	pod, err := b.api.getPod(ctx, b.namespace, box.name)
	if err != nil {
		return nil, fmt.Errorf("read pod %s: %w", box.name, classify(err))
	}
	if pod.Status.HostIP == "" {
		return nil, fmt.Errorf("pod %s has no node address yet", box.name)
	}
	port := defaultKubeletPort
	if node, err := b.api.getNode(ctx, pod.Spec.NodeName); err == nil && node.Status.DaemonEndpoints.KubeletEndpoint.Port > 0 {
		port = int(node.Status.DaemonEndpoints.KubeletEndpoint.Port)
	}
	target := net.JoinHostPort(pod.Status.HostIP, strconv.Itoa(port))
	res, err := box.Exec(ctx, sandbox.ExecRequest{
		Cmd:     []string{shim.InBoxPath, shim.DialSubcommand, "--timeout", isolationDialTimeout.String(), target},
		Timeout: 4 * isolationDialTimeout,
	})
	if err != nil {
		return nil, err
	}
	if res.ExitCode != 0 {
		return nil, fmt.Errorf("%s exited %d: %s", shim.DialSubcommand, res.ExitCode, oneLine(string(res.Output)))
	}
	reach, ok := shim.ParseDial(string(res.Output))[target]
	if !ok {
		return nil, fmt.Errorf("%s said nothing of %s: %s", shim.DialSubcommand, target, oneLine(string(res.Output)))
	}
	if reach != shim.Connected {
		return nil, nil
	}
	why := fmt.Sprintf("the NetworkPolicy %s of namespace %s is not enforced by this cluster's network plugin", NoEgressPolicy, b.namespace)
	if b.policyErr != nil {
		why = fmt.Sprintf("the NetworkPolicy %s could not be created in namespace %s (%v)", NoEgressPolicy, b.namespace, b.policyErr)
	}
	return fmt.Errorf("%w: pod %s, which asked for no network, connected to its node's kubelet at %s: %s, so an agent would have the network; use a network plugin that enforces NetworkPolicies (Calico, Cilium, kube-router, ...) or pass --%s to run with the network open",
		ErrNetworkOpen, box.name, target, why, ParamAllowNetwork), nil
}

func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 300 {
		s = s[:300] + "..."
	}
	return s
}
