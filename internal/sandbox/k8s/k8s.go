// Package k8s is the Kubernetes sandbox backend: one pod per box, reached
// through the cluster's API server with client-go.
//
// A box is a pod whose main container runs the task's image with a waiting
// process. swerve's own static binary gets into the pod without a
// registry, one of two ways:
//
//   - by default, an emptyDir volume is mounted at /.swerve and the binary
//     is uploaded into it over one exec (it works with any image that has
//     sh, cat and sleep);
//   - with --k8s_shim_image, an init container from that image copies the
//     binary into the volume before the main container starts.
//
// Then one long-lived exec stream (websocket, SPDY when the server refuses
// websockets) runs `swerve shim`, and every Exec, ReadFile, WriteFile and
// Tool call travels over it: one API exec per box, not one per command.
//
// Pods carry the labels swerve gc needs (swerve.managed, swerve.run,
// swerve.task, the owner's pid and host); Close deletes the pod.
package k8s

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/swerve-dev/swerve/internal/sandbox"
)

// Name is the backend's registered name; "kubernetes" is an alias.
const Name = "k8s"

// Labels every pod carries.
const (
	LabelManaged   = "swerve.managed"
	LabelRun       = "swerve.run"
	LabelTask      = "swerve.task"
	LabelOwnerPID  = "swerve.owner.pid"
	LabelOwnerHost = "swerve.owner.host"
	// LabelNetwork is "none" on pods that asked for no network; the
	// namespace's NetworkPolicy NoEgressPolicy selects them.
	LabelNetwork = "swerve.network"
)

// NoEgressPolicy is the NetworkPolicy the backend keeps in its namespace:
// it denies all traffic to and from pods labelled swerve.network=none.
const NoEgressPolicy = "swerve-no-network"

// The backend's settings, each a flag on every command with --backend.
const (
	ParamNamespace      = "k8s_namespace"
	ParamKubeconfig     = "k8s_kubeconfig"
	ParamContext        = "k8s_context"
	ParamNodeSelector   = "k8s_node_selector"
	ParamTolerations    = "k8s_tolerations"
	ParamPullSecrets    = "k8s_image_pull_secrets"
	ParamServiceAccount = "k8s_service_account"
	ParamStartTimeout   = "k8s_start_timeout"
	ParamShimImage      = "k8s_shim_image"
	ParamShimImagePath  = "k8s_shim_image_path"
	ParamRequestRatio   = "k8s_request_ratio"
	ParamAllowNetwork   = "k8s_allow_network"
)

func init() {
	sandbox.Register(&sandbox.Registration{
		Name:        Name,
		Aliases:     []string{"kubernetes"},
		Description: "Kubernetes pods through the API server (KUBECONFIG, or in-cluster), one pod per box",
		New: func(ctx context.Context, opts sandbox.Options) (sandbox.Backend, error) {
			cfg, err := ConfigFromOptions(opts)
			if err != nil {
				return nil, err
			}
			return New(ctx, cfg)
		},
		Probe: Probe,
		Params: []sandbox.Param{
			{Name: ParamNamespace, Env: "SWERVE_K8S_NAMESPACE", Usage: "k8s: namespace of the pods (default: the kubeconfig context's, else default)"},
			{Name: ParamKubeconfig, Usage: "k8s: kubeconfig file (default: $KUBECONFIG, ~/.kube/config, else in-cluster)"},
			{Name: ParamContext, Usage: "k8s: kubeconfig context (default: the current one)"},
			{Name: ParamNodeSelector, Usage: "k8s: node selector of the pods, KEY=VALUE[,KEY=VALUE...]"},
			{Name: ParamTolerations, Usage: "k8s: tolerations, KEY[=VALUE][:EFFECT][,...] (EFFECT NoSchedule, PreferNoSchedule or NoExecute; none: any)"},
			{Name: ParamPullSecrets, Usage: "k8s: image pull secrets of the pods, NAME[,NAME...]"},
			{Name: ParamServiceAccount, Usage: "k8s: service account of the pods (its token is never mounted)"},
			{Name: ParamStartTimeout, Default: "5m", Usage: "k8s: how long a pod may take to start (schedule, pull, run) before the box fails"},
			{Name: ParamShimImage, Usage: "k8s: image holding a static swerve binary that an init container copies into each pod (default: upload it over one exec)"},
			{Name: ParamShimImagePath, Default: "/swerve", Usage: "k8s: where the swerve binary is in --k8s_shim_image (the image needs sh and cp)"},
			{Name: ParamAllowNetwork, Env: "SWERVE_K8S_ALLOW_NETWORK", Default: "false", Usage: "k8s: open network-less boxes even where their pods can reach the network (the cluster's network plugin does not enforce NetworkPolicies); by default such boxes fail"},
			{Name: ParamRequestRatio, Env: "SWERVE_K8S_REQUEST_RATIO", Default: "1", Usage: "k8s: CPU and memory requests as a fraction of the limits (--cpus, --memory_mb); 1 requests all of it"},
		},
	})
}

// Config configures the backend.
type Config struct {
	sandbox.Options
	// Kubeconfig and Context pick the cluster; both empty means the
	// default loading rules ($KUBECONFIG, ~/.kube/config), else the
	// in-cluster service account.
	Kubeconfig string
	Context    string
	// Namespace holds the pods; empty means the context's namespace, else
	// "default".
	Namespace string
	// NodeSelector, Tolerations, PullSecrets and ServiceAccount go into
	// every pod's spec.
	NodeSelector   map[string]string
	Tolerations    []Toleration
	PullSecrets    []string
	ServiceAccount string
	// StartTimeout bounds a pod's way from created to running; zero means
	// five minutes.
	StartTimeout time.Duration
	// ShimImage, when set, is an image with a static swerve binary at
	// ShimImagePath that an init container copies into the pod; empty
	// means the binary is uploaded over one exec.
	ShimImage     string
	ShimImagePath string
	// RequestRatio sets requests to this fraction of the limits; zero
	// means 1.
	RequestRatio float64
	// AllowNetwork lets network-less boxes open on a cluster that does
	// not cut their pods off (see ErrNetworkOpen).
	AllowNetwork bool
}

// Toleration is one toleration of every pod: Key (empty: any key) with
// Value (empty: any value), for Effect (empty: any effect).
type Toleration struct {
	Key, Value, Effect string
}

// ConfigFromOptions reads the backend's settings (flags, environment,
// defaults) from opts.
func ConfigFromOptions(opts sandbox.Options) (Config, error) {
	cfg := Config{
		Options:        opts,
		Kubeconfig:     opts.Param(ParamKubeconfig),
		Context:        opts.Param(ParamContext),
		Namespace:      opts.Param(ParamNamespace),
		ServiceAccount: opts.Param(ParamServiceAccount),
		ShimImage:      opts.Param(ParamShimImage),
		ShimImagePath:  opts.Param(ParamShimImagePath),
	}
	var err error
	if v := opts.Param(ParamAllowNetwork); v != "" {
		if cfg.AllowNetwork, err = strconv.ParseBool(v); err != nil {
			return Config{}, fmt.Errorf("k8s: --%s %q: want true or false", ParamAllowNetwork, v)
		}
	}
	if cfg.NodeSelector, err = ParseSelector(opts.Param(ParamNodeSelector)); err != nil {
		return Config{}, fmt.Errorf("k8s: --%s: %w", ParamNodeSelector, err)
	}
	if cfg.Tolerations, err = ParseTolerations(opts.Param(ParamTolerations)); err != nil {
		return Config{}, fmt.Errorf("k8s: --%s: %w", ParamTolerations, err)
	}
	cfg.PullSecrets = splitList(opts.Param(ParamPullSecrets))
	if v := opts.Param(ParamStartTimeout); v != "" {
		if cfg.StartTimeout, err = time.ParseDuration(v); err != nil || cfg.StartTimeout <= 0 {
			return Config{}, fmt.Errorf("k8s: --%s %q: want a positive duration such as 5m", ParamStartTimeout, v)
		}
	}
	if v := opts.Param(ParamRequestRatio); v != "" {
		if cfg.RequestRatio, err = strconv.ParseFloat(v, 64); err != nil || cfg.RequestRatio <= 0 || cfg.RequestRatio > 1 {
			return Config{}, fmt.Errorf("k8s: --%s %q: want a number in (0, 1]", ParamRequestRatio, v)
		}
	}
	return cfg, nil
}

// ParseSelector reads KEY=VALUE[,KEY=VALUE...].
func ParseSelector(s string) (map[string]string, error) {
	items := splitList(s)
	if len(items) == 0 {
		return nil, nil
	}
	out := map[string]string{}
	for _, it := range items {
		k, v, ok := strings.Cut(it, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("%q: want KEY=VALUE", it)
		}
		out[k] = v
	}
	return out, nil
}

// ParseTolerations reads KEY[=VALUE][:EFFECT][,...]; an empty KEY with
// no value tolerates every taint.
func ParseTolerations(s string) ([]Toleration, error) {
	var out []Toleration
	for _, it := range splitList(s) {
		var t Toleration
		kv, effect, _ := strings.Cut(it, ":")
		t.Key, t.Value, _ = strings.Cut(kv, "=")
		switch effect {
		case "", "NoSchedule", "PreferNoSchedule", "NoExecute":
			t.Effect = effect
		default:
			return nil, fmt.Errorf("%q: effect %q: want NoSchedule, PreferNoSchedule or NoExecute", it, effect)
		}
		if t.Key == "" && t.Value != "" {
			return nil, fmt.Errorf("%q: a value needs a key", it)
		}
		out = append(out, t)
	}
	return out, nil
}

func splitList(s string) []string {
	var out []string
	for f := range strings.SplitSeq(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

// Backend opens pods.
type Backend struct {
	cfg       Config
	rest      *rest.Config
	api       *api
	namespace string
	labels    map[string]string

	shimOnce sync.Once
	shimData []byte
	shimGz   []byte
	shimErr  error

	policyOnce sync.Once
	policyErr  error

	isoMu sync.Mutex
	iso   isolation
}

var _ sandbox.Collector = (*Backend)(nil)

// New makes a backend for the cluster cfg names. It contacts nothing;
// the first Open does.
func New(_ context.Context, cfg Config) (*Backend, error) {
	rc, ns, err := restConfig(cfg.Kubeconfig, cfg.Context)
	if err != nil {
		return nil, err
	}
	if cfg.Namespace != "" {
		ns = cfg.Namespace
	}
	if cfg.StartTimeout <= 0 {
		cfg.StartTimeout = 5 * time.Minute
	}
	if cfg.RequestRatio <= 0 {
		cfg.RequestRatio = 1
	}
	if cfg.ShimImagePath == "" {
		cfg.ShimImagePath = "/swerve"
	}
	a, err := newAPI(rc)
	if err != nil {
		return nil, err
	}
	host, _ := os.Hostname()
	labels := map[string]string{
		LabelManaged:   "true",
		LabelOwnerPID:  strconv.Itoa(os.Getpid()),
		LabelOwnerHost: labelValue(host),
	}
	if cfg.RunID != "" {
		labels[LabelRun] = labelValue(cfg.RunID)
	}
	return &Backend{cfg: cfg, rest: rc, api: a, namespace: ns, labels: labels}, nil
}

// Namespace is where the backend's pods live.
func (b *Backend) Namespace() string { return b.namespace }

// restConfig loads the client configuration and the context's namespace:
// an explicit kubeconfig or context, else the default loading rules, else
// the in-cluster service account.
func restConfig(kubeconfig, kcontext string) (*rest.Config, string, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	if kubeconfig != "" {
		rules.ExplicitPath = kubeconfig
	}
	cc := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: kcontext})
	rc, err := cc.ClientConfig()
	if err != nil {
		if kubeconfig == "" && kcontext == "" {
			if ic, ierr := rest.InClusterConfig(); ierr == nil {
				ns := "default"
				if b, rerr := os.ReadFile("/var/run/secrets/kubernetes.io/serviceaccount/namespace"); rerr == nil && len(b) > 0 {
					ns = strings.TrimSpace(string(b))
				}
				return tune(ic), ns, nil
			}
		}
		return nil, "", fmt.Errorf("k8s: no cluster configured (set KUBECONFIG or --%s, or run in a pod): %w: %v", ParamKubeconfig, sandbox.ErrUnavailable, err)
	}
	ns, _, err := cc.Namespace()
	if err != nil || ns == "" {
		ns = "default"
	}
	return tune(rc), ns, nil
}

// tune raises client-go's default rate limits (5 requests per second),
// which a run that opens dozens of boxes at once would queue behind.
func tune(rc *rest.Config) *rest.Config {
	rc.QPS, rc.Burst = 100, 200
	return rc
}

// Probe reports whether the cluster opts name (--k8s_kubeconfig,
// --k8s_context, else the default loading rules) is configured and its API
// server answers.
func Probe(ctx context.Context, opts sandbox.Options) error {
	rc, _, err := restConfig(opts.Param(ParamKubeconfig), opts.Param(ParamContext))
	if err != nil {
		return err
	}
	a, err := newAPI(rc)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := a.version(ctx); err != nil {
		return fmt.Errorf("k8s: API server %s: %w: %v", rc.Host, sandbox.ErrUnavailable, err)
	}
	return nil
}

// labelValue makes s a valid label value: at most 63 characters of
// [A-Za-z0-9._-], beginning and ending with a letter or digit.
func labelValue(s string) string {
	b := []byte(s)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			b[i] = '_'
		}
	}
	s = string(b)
	if len(s) > 63 {
		s = s[:63]
	}
	return strings.Trim(s, "._-")
}
