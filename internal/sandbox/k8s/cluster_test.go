package k8s

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/swerve-dev/swerve/internal/reward/grader/kittest"
	"github.com/swerve-dev/swerve/internal/sandbox"
	"github.com/swerve-dev/swerve/internal/sandbox/sandboxtest"
	"github.com/swerve-dev/swerve/internal/shim"
	"github.com/swerve-dev/swerve/internal/task"
	"github.com/swerve-dev/swerve/internal/testutil"
)

// These tests run against a real cluster: the one scripts/cluster/up.sh
// starts (KUBECONFIG from its output), or any other. They run when
// SWERVE_K8S_TESTS=1 and fail then if the cluster does not answer;
// without it they skip.

// clusterRequired reports whether the cluster tests must run.
func clusterRequired() bool { return os.Getenv("SWERVE_K8S_TESTS") == "1" }

// testBackend returns a backend on the cluster of the environment with a
// run id of its own, or skips without SWERVE_K8S_TESTS=1.
func testBackend(tb testing.TB, edit func(*Config)) *Backend {
	tb.Helper()
	if !clusterRequired() {
		tb.Skip("SWERVE_K8S_TESTS not set: no cluster to test against (scripts/cluster/up.sh starts one)")
	}
	ctx := context.Background()
	if err := Probe(ctx, sandbox.Options{}); err != nil {
		tb.Fatalf("SWERVE_K8S_TESTS=1 but the cluster does not answer: %v", err)
	}
	cfg := Config{
		Options: sandbox.Options{
			ShimPath: testutil.SwerveBinary(tb),
			RunID:    fmt.Sprintf("k8stest-%d-%d", os.Getpid(), time.Now().UnixNano()),
		},
		Namespace:    os.Getenv("SWERVE_K8S_NAMESPACE"),
		StartTimeout: 3 * time.Minute,
		// The local cluster has two CPUs for dozens of boxes.
		RequestRatio: 0.01,
		// The local cluster's bridge plugin enforces no NetworkPolicy;
		// scripts/cluster/ci.sh says so (TestNetworkIsolation checks
		// that the verdict is right either way).
		AllowNetwork: os.Getenv("SWERVE_K8S_ALLOW_NETWORK") == "1",
	}
	if cfg.Namespace == "" {
		cfg.Namespace = "swerve"
	}
	if edit != nil {
		edit(&cfg)
	}
	b, err := New(ctx, cfg)
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

// runPods lists the pods of b's run.
func runPods(ctx context.Context, b *Backend) ([]string, error) {
	sel := labels.Set{LabelRun: b.labels[LabelRun]}
	list, err := b.api.listPods(ctx, b.namespace, metav1.ListOptions{LabelSelector: sel.String()})
	if err != nil {
		return nil, err
	}
	var out []string
	for _, p := range list.Items {
		out = append(out, "pod "+p.Name+" ("+string(p.Status.Phase)+")")
	}
	return out, nil
}

func TestConformance(t *testing.T) {
	b := testBackend(t, nil)
	par, _ := strconv.Atoi(os.Getenv("SWERVE_K8S_PARALLEL"))
	sandboxtest.Run(t, sandboxtest.Harness{
		Backend: b,
		Spec: func(testing.TB) sandbox.Spec {
			return sandbox.Spec{Image: testutil.TestImage(), Pull: sandbox.PullNever}
		},
		Leaks:    func(ctx context.Context) ([]string, error) { return runPods(ctx, b) },
		Parallel: par,
		// Open refuses network-less boxes on a cluster that does not cut
		// their pods off, unless the backend allows it (the local test
		// cluster's bridge CNI enforces nothing, and CI allows it there).
		NetworkNotIsolated: func() string {
			if b.cfg.AllowNetwork {
				return "SWERVE_K8S_ALLOW_NETWORK=1: network-less pods may open on a cluster that does not cut them off (TestNetworkIsolation checks the backend's verdict)"
			}
			return ""
		}(),
	})
}

func TestKit(t *testing.T) {
	if os.Getenv("SWERVE_REALTASKS") != "1" {
		t.Skip("SWERVE_REALTASKS not set: the kit's django tasks are not expected here")
	}
	b := testBackend(t, nil)
	kittest.Run(t, kittest.Harness{Backend: b, Spec: func(_ testing.TB, tk *task.Task) sandbox.Spec {
		return sandbox.Spec{Image: tk.Image, Task: tk.InstanceID, Pull: sandbox.PullNever, Limits: sandbox.Limits{CPUs: 1, MemoryMiB: 2048}}
	}})
	if left, err := runPods(context.Background(), b); err != nil || len(left) > 0 {
		t.Errorf("pods left after the kit: %v %v", left, err)
	}
}

// TestShimImage: the init-container path. The shim image is made here from
// the swerve binary and busybox, imported into the cluster's containerd
// by the caller (scripts/cluster/ci.sh does it): SWERVE_K8S_SHIM_IMAGE
// names it.
func TestShimImage(t *testing.T) {
	img := os.Getenv("SWERVE_K8S_SHIM_IMAGE")
	b := testBackend(t, func(c *Config) { c.ShimImage = img })
	if img == "" {
		t.Skip("SWERVE_K8S_SHIM_IMAGE not set: no image with swerve in the cluster")
	}
	ctx := context.Background()
	box, err := b.Open(ctx, sandbox.Spec{Image: testutil.TestImage(), Pull: sandbox.PullNever})
	if err != nil {
		t.Fatal(err)
	}
	defer box.Close(ctx)
	res, err := box.Exec(ctx, sandbox.ExecRequest{Cmd: []string{"sh", "-c", "echo ok; test -x /.swerve/swerve"}})
	if err != nil || res.ExitCode != 0 || string(res.Output) != "ok\n" {
		t.Fatalf("exec in a box whose helper came from %s: %+v, %v", img, res, err)
	}
}

// TestOpenErrors: a box that cannot start fails Open with one line that
// names the task and says why, in the pod's own words, and leaves no pod.
func TestOpenErrors(t *testing.T) {
	tests := []struct {
		name string
		cfg  func(*Config)
		spec sandbox.Spec
		want []string
		is   error
	}{
		{
			name: "missing image",
			spec: sandbox.Spec{Image: "swerve-no-such-image:1", Task: "t__missing-1", Pull: sandbox.PullNever},
			want: []string{"t__missing-1", "ErrImageNeverPull", "swerve-no-such-image:1"},
			is:   sandbox.ErrNotFound,
		},
		{
			name: "unpullable image",
			spec: sandbox.Spec{Image: "localhost:1/swerve-no-such-image:1", Task: "t__pull-1"},
			want: []string{"t__pull-1", "localhost:1/swerve-no-such-image:1"},
		},
		{
			name: "unschedulable",
			cfg: func(c *Config) {
				c.NodeSelector = map[string]string{"swerve.test/nowhere": "true"}
				c.StartTimeout = 5 * time.Second
			},
			spec: sandbox.Spec{Image: testutil.TestImage(), Task: "t__sched-1", Pull: sandbox.PullNever},
			want: []string{"t__sched-1", "did not start in 5s", "Unschedulable", "node selector swerve.test/nowhere=true"},
			is:   sandbox.ErrTimeout,
		},
		{
			name: "wrong namespace",
			cfg:  func(c *Config) { c.Namespace = "swerve-no-such-namespace" },
			spec: sandbox.Spec{Image: testutil.TestImage(), Task: "t__ns-1", Pull: sandbox.PullNever},
			want: []string{"t__ns-1", "namespace swerve-no-such-namespace", "not found"},
			is:   sandbox.ErrNotFound,
		},
		{
			name: "user name",
			spec: sandbox.Spec{Image: testutil.TestImage(), Task: "t__user-1", User: "nobody"},
			want: []string{"t__user-1", "numeric uid"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := testBackend(t, tc.cfg)
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			box, err := b.Open(ctx, tc.spec)
			if err == nil {
				box.Close(ctx)
				t.Fatalf("Open(%+v): no error", tc.spec)
			}
			msg := err.Error()
			t.Logf("error: %s", msg)
			if strings.Contains(msg, "\n") {
				t.Errorf("error is more than one line: %q", msg)
			}
			for _, w := range tc.want {
				if !strings.Contains(msg, w) {
					t.Errorf("error %q does not say %q", msg, w)
				}
			}
			if tc.is != nil && !errors.Is(err, tc.is) {
				t.Errorf("error %q is not %v", msg, tc.is)
			}
			if left, err := runPods(ctx, b); err == nil && len(left) > 0 {
				t.Errorf("a failed Open left %v", left)
			}
		})
	}
}

// TestPodSpecOnCluster: what the pod of a box looks like to the cluster,
// and what the box sees from inside: the hardening is applied.
func TestPodSpecOnCluster(t *testing.T) {
	b := testBackend(t, nil)
	ctx := context.Background()
	box, err := b.Open(ctx, sandbox.Spec{Image: testutil.TestImage(), Task: "t__spec-1", Pull: sandbox.PullNever, Limits: sandbox.Limits{CPUs: 0.5, MemoryMiB: 256}})
	if err != nil {
		t.Fatal(err)
	}
	defer box.Close(ctx)
	p, err := b.api.getPod(ctx, b.namespace, box.ID())
	if err != nil {
		t.Fatal(err)
	}
	if got := p.Labels[LabelTask]; got != "t__spec-1" {
		t.Errorf("task label %q", got)
	}
	if got := p.Labels[LabelOwnerPID]; got != strconv.Itoa(os.Getpid()) {
		t.Errorf("owner pid label %q", got)
	}
	if got := p.Spec.Containers[0].Resources.Limits.Memory().Value(); got != 256<<20 {
		t.Errorf("memory limit %d", got)
	}
	// Inside: no capability beyond the minimal set, no privilege gain, no
	// service account token, no service links.
	res, err := box.Exec(ctx, sandbox.ExecRequest{Cmd: sandbox.Bash(`grep -E '^(CapEff|NoNewPrivs)' /proc/self/status; ls /var/run/secrets/kubernetes.io 2>&1 | head -1; env | grep -v ^KUBERNETES_ | grep -c _SERVICE_HOST || true`)})
	if err != nil {
		t.Fatal(err)
	}
	out := string(res.Output)
	for _, want := range []string{"CapEff:\t00000000000004fb", "NoNewPrivs:\t1", "No such file", "\n0\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("inside the box: %q lacks %q", out, want)
		}
	}
}

// TestGCKilledOwner: a swerve killed while its box is open leaves a pod
// that Leftovers finds (its owner is gone) and Remove deletes.
func TestGCKilledOwner(t *testing.T) {
	b := testBackend(t, nil)
	ctx := context.Background()
	// A process that is gone: the pod claims it as its owner, as the pod
	// of a swerve killed with -9 does.
	dead := deadPID(t)
	b.labels[LabelOwnerPID] = strconv.Itoa(dead)
	box, err := b.Open(ctx, sandbox.Spec{Image: testutil.TestImage(), Task: "t__gc-1", Pull: sandbox.PullNever})
	if err != nil {
		t.Fatal(err)
	}
	_ = box // abandoned, as a killed swerve abandons it
	live := testBackend(t, func(c *Config) { c.RunID = b.cfg.RunID })
	got, err := live.Leftovers(ctx, sandbox.LeftoverOptions{RunID: b.cfg.RunID})
	if err != nil || len(got) != 1 || got[0].ID != box.ID() || got[0].Task != "t__gc-1" {
		t.Fatalf("Leftovers: %+v, %v; want pod %s", got, err, box.ID())
	}
	if err := live.Remove(ctx, got[0]); err != nil {
		t.Fatal(err)
	}
	if left, err := runPods(ctx, b); err != nil || len(left) > 0 {
		t.Fatalf("after Remove: %v, %v", left, err)
	}
	if err := live.Remove(ctx, got[0]); err != nil {
		t.Errorf("Remove of a pod already gone: %v", err)
	}
}

// deadPID returns the pid of a process that has exited.
func deadPID(t *testing.T) int {
	t.Helper()
	p, err := os.StartProcess("/bin/true", []string{"true"}, &os.ProcAttr{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Wait(); err != nil {
		t.Fatal(err)
	}
	return p.Pid
}

// TestNetworkIsolation holds the isolation check to what a pod really
// sees, on whatever cluster it runs: when a network-less box opens, a
// dial from it to its node's kubelet must not connect (and a box with
// the network must, so the target is a live one); when the check refuses
// the box, such a dial must connect. SWERVE_K8S_EXPECT_NETWORK=open or
// isolated pins the verdict the cluster should get.
func TestNetworkIsolation(t *testing.T) {
	strict := testBackend(t, func(c *Config) { c.AllowNetwork = false })
	lax := testBackend(t, func(c *Config) { c.AllowNetwork = true })
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	image := testutil.TestImage()
	dial := func(box sandbox.Sandbox) shim.Reach {
		t.Helper()
		kb := box.(*Box)
		pod, err := strict.api.getPod(ctx, strict.namespace, kb.name)
		if err != nil {
			t.Fatal(err)
		}
		target := pod.Status.HostIP + ":" + strconv.Itoa(defaultKubeletPort)
		res, err := box.Exec(ctx, sandbox.ExecRequest{Cmd: []string{shim.InBoxPath, shim.DialSubcommand, "--timeout", "2s", target}, Timeout: 10 * time.Second})
		if err != nil || res.ExitCode != 0 {
			t.Fatalf("dial from the box: %v, exit %d: %s", err, res.ExitCode, res.Output)
		}
		return shim.ParseDial(string(res.Output))[target]
	}
	open := func(b *Backend, network string) (sandbox.Sandbox, error) {
		box, err := b.Open(ctx, sandbox.Spec{Image: image, Task: "isolation-" + network, Network: network, Pull: sandbox.PullNever})
		if err == nil {
			t.Cleanup(func() { box.Close(context.Background()) })
		}
		return box, err
	}

	verdict := "isolated"
	box, err := open(strict, sandbox.NetworkNone)
	switch {
	case err == nil:
		if r := dial(box); r == shim.Connected {
			t.Fatalf("the check let a network-less box open, yet it reached its node's kubelet")
		}
		withNet, err := open(lax, sandbox.NetworkBridge)
		if err != nil {
			t.Fatal(err)
		}
		if r := dial(withNet); r != shim.Connected {
			t.Fatalf("a box with the network could not reach its node's kubelet (%s): the check's target is not a live one", r)
		}
	case errors.Is(err, ErrNetworkOpen):
		verdict = "open"
		t.Logf("refused, as it should be here: %v", err)
		if !strings.Contains(err.Error(), "isolation-none") || !strings.Contains(err.Error(), "--"+ParamAllowNetwork) {
			t.Errorf("the error should name the task and --%s: %v", ParamAllowNetwork, err)
		}
		box, err := open(lax, sandbox.NetworkNone)
		if err != nil {
			t.Fatalf("with --%s the box should open: %v", ParamAllowNetwork, err)
		}
		if r := dial(box); r != shim.Connected {
			t.Fatalf("the check said the network is open, yet a network-less box could not reach its node's kubelet (%s)", r)
		}
		// The verdict holds for the backend: the next box fails at once.
		start := time.Now()
		if _, err := open(strict, sandbox.NetworkNone); !errors.Is(err, ErrNetworkOpen) {
			t.Errorf("second network-less box: %v, want ErrNetworkOpen", err)
		}
		t.Logf("second refusal after %v", time.Since(start).Round(time.Millisecond))
		// A box that asked for the network is not refused.
		if _, err := open(strict, sandbox.NetworkBridge); err != nil {
			t.Errorf("a box that asked for the network: %v", err)
		}
	default:
		t.Fatal(err)
	}
	if want := os.Getenv("SWERVE_K8S_EXPECT_NETWORK"); want != "" && want != verdict {
		t.Errorf("this cluster got the verdict %q, SWERVE_K8S_EXPECT_NETWORK says %q", verdict, want)
	}
}
