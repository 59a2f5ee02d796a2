package k8s

import (
	"context"
	"fmt"
	"net/url"
	"sync"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
)

// The backend talks to two API groups only (core/v1: pods, events, exec;
// networking/v1: the NetworkPolicy), through REST clients of its own
// rather than client-go's clientset: the clientset links and registers
// every API group at start-up, which would double the size of the binary
// that every box runs and slow each of its starts.

// codecs knows the types of the two groups; built on first use, so that a
// swerve that never talks to a cluster (a helper in a box) pays nothing.
var codecs = sync.OnceValue(func() serializer.CodecFactory {
	s := runtime.NewScheme()
	if err := corev1.AddToScheme(s); err != nil {
		panic(err)
	}
	if err := networkingv1.AddToScheme(s); err != nil {
		panic(err)
	}
	metav1.AddToGroupVersion(s, schema.GroupVersion{Version: "v1"})
	paramCodec = runtime.NewParameterCodec(s)
	return serializer.NewCodecFactory(s)
})

// paramCodec encodes query parameters (list options, exec options); set
// by codecs.
var paramCodec runtime.ParameterCodec

// api is the cluster's API as the backend uses it.
type api struct {
	core, net *rest.RESTClient
}

func newAPI(rc *rest.Config) (*api, error) {
	cf := codecs()
	mk := func(gv schema.GroupVersion, path string) (*rest.RESTClient, error) {
		c := rest.CopyConfig(rc)
		c.GroupVersion = &gv
		c.APIPath = path
		c.NegotiatedSerializer = cf.WithoutConversion()
		if c.UserAgent == "" {
			c.UserAgent = "swerve"
		}
		return rest.RESTClientFor(c)
	}
	core, err := mk(corev1.SchemeGroupVersion, "/api")
	if err != nil {
		return nil, fmt.Errorf("k8s: client: %w", err)
	}
	net, err := mk(networkingv1.SchemeGroupVersion, "/apis")
	if err != nil {
		return nil, fmt.Errorf("k8s: client: %w", err)
	}
	return &api{core: core, net: net}, nil
}

func (a *api) createPod(ctx context.Context, ns string, pod *corev1.Pod) (*corev1.Pod, error) {
	out := &corev1.Pod{}
	err := a.core.Post().Namespace(ns).Resource("pods").Body(pod).Do(ctx).Into(out)
	return out, err
}

func (a *api) getPod(ctx context.Context, ns, name string) (*corev1.Pod, error) {
	out := &corev1.Pod{}
	err := a.core.Get().Namespace(ns).Resource("pods").Name(name).Do(ctx).Into(out)
	return out, err
}

func (a *api) getNode(ctx context.Context, name string) (*corev1.Node, error) {
	out := &corev1.Node{}
	err := a.core.Get().Resource("nodes").Name(name).Do(ctx).Into(out)
	return out, err
}

func (a *api) listPods(ctx context.Context, ns string, opts metav1.ListOptions) (*corev1.PodList, error) {
	out := &corev1.PodList{}
	err := a.core.Get().Namespace(ns).Resource("pods").VersionedParams(&opts, paramCodec).Do(ctx).Into(out)
	return out, err
}

func (a *api) watchPods(ctx context.Context, ns string, opts metav1.ListOptions) (watch.Interface, error) {
	opts.Watch = true
	return a.core.Get().Namespace(ns).Resource("pods").VersionedParams(&opts, paramCodec).Watch(ctx)
}

func (a *api) deletePod(ctx context.Context, ns, name string, opts metav1.DeleteOptions) error {
	return a.core.Delete().Namespace(ns).Resource("pods").Name(name).Body(&opts).Do(ctx).Error()
}

func (a *api) listEvents(ctx context.Context, ns string, opts metav1.ListOptions) (*corev1.EventList, error) {
	out := &corev1.EventList{}
	err := a.core.Get().Namespace(ns).Resource("events").VersionedParams(&opts, paramCodec).Do(ctx).Into(out)
	return out, err
}

func (a *api) createNetworkPolicy(ctx context.Context, ns string, np *networkingv1.NetworkPolicy) error {
	return a.net.Post().Namespace(ns).Resource("networkpolicies").Body(np).Do(ctx).Error()
}

func (a *api) execURL(ns, pod string, opts *corev1.PodExecOptions) *url.URL {
	return a.core.Post().Namespace(ns).Resource("pods").Name(pod).SubResource("exec").VersionedParams(opts, paramCodec).URL()
}

func (a *api) version(ctx context.Context) error {
	_, err := a.core.Get().AbsPath("/version").DoRaw(ctx)
	return err
}
