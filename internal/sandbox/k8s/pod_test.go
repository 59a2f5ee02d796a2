package k8s

import (
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	"github.com/swerve-dev/swerve/internal/sandbox"
	"github.com/swerve-dev/swerve/internal/sandbox/docker"
	"github.com/swerve-dev/swerve/internal/shim"
)

func TestRegistered(t *testing.T) {
	for _, name := range []string{"k8s", "kubernetes"} {
		if got := sandbox.Canonical(name); got != Name {
			t.Errorf("Canonical(%q) = %q, want %q", name, got, Name)
		}
	}
	for _, p := range []string{ParamNamespace, ParamNodeSelector, ParamTolerations, ParamPullSecrets, ParamServiceAccount, ParamStartTimeout, ParamShimImage, ParamRequestRatio} {
		if _, ok := sandbox.LookupParam(p); !ok {
			t.Errorf("param %s not registered", p)
		}
	}
}

func TestMinimalCapsMatchDocker(t *testing.T) {
	if !slices.Equal(MinimalCaps, docker.MinimalCaps) {
		t.Errorf("k8s keeps %v, docker %v: one hardening for both", MinimalCaps, docker.MinimalCaps)
	}
}

func TestConfigFromOptions(t *testing.T) {
	tests := []struct {
		name    string
		params  map[string]string
		want    func(c Config) bool
		wantErr string
	}{
		{"defaults", nil, func(c Config) bool {
			return c.StartTimeout.String() == "5m0s" && c.ShimImagePath == "/swerve" && c.RequestRatio == 1
		}, ""},
		{"selector", map[string]string{ParamNodeSelector: "a=b, c=d"}, func(c Config) bool { return cmp.Equal(c.NodeSelector, map[string]string{"a": "b", "c": "d"}) }, ""},
		{"bad selector", map[string]string{ParamNodeSelector: "a"}, nil, "k8s_node_selector"},
		{"tolerations", map[string]string{ParamTolerations: "gpu=yes:NoSchedule,spot,:NoExecute"}, func(c Config) bool {
			return cmp.Equal(c.Tolerations, []Toleration{{"gpu", "yes", "NoSchedule"}, {"spot", "", ""}, {"", "", "NoExecute"}})
		}, ""},
		{"bad effect", map[string]string{ParamTolerations: "a:Never"}, nil, "effect"},
		{"secrets", map[string]string{ParamPullSecrets: "one,two"}, func(c Config) bool { return cmp.Equal(c.PullSecrets, []string{"one", "two"}) }, ""},
		{"bad timeout", map[string]string{ParamStartTimeout: "soon"}, nil, "k8s_start_timeout"},
		{"bad ratio", map[string]string{ParamRequestRatio: "2"}, nil, "k8s_request_ratio"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := ConfigFromOptions(sandbox.Options{Params: tc.params})
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one naming %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !tc.want(c) {
				t.Errorf("config %+v", c)
			}
		})
	}
}

func testPodBackend(cfg Config) *Backend {
	if cfg.RequestRatio == 0 {
		cfg.RequestRatio = 1
	}
	return &Backend{cfg: cfg, namespace: "ns", labels: map[string]string{LabelManaged: "true", LabelRun: "r1"}}
}

func TestPodFor(t *testing.T) {
	b := testPodBackend(Config{NodeSelector: map[string]string{"pool": "swe"}, PullSecrets: []string{"reg"}, ServiceAccount: "runner", RequestRatio: 0.5,
		Tolerations: []Toleration{{Key: "spot"}}})
	pod, err := b.podFor(sandbox.Spec{Image: "img:1", Task: "Django__Django-16901", Env: []string{"A=1", "B=x=y"}, Workdir: "/testbed",
		Limits: sandbox.Limits{CPUs: 2, MemoryMiB: 1024}, Pull: sandbox.PullNever, Labels: map[string]string{"extra": "v"}})
	if err != nil {
		t.Fatal(err)
	}
	s := pod.Spec
	c := s.Containers[0]
	checks := []struct {
		what      string
		got, want any
	}{
		{"generateName", pod.GenerateName, "swerve-django-django-16901-"},
		{"namespace", pod.Namespace, "ns"},
		{"labels", pod.Labels, map[string]string{LabelManaged: "true", LabelRun: "r1", LabelTask: "Django__Django-16901", LabelNetwork: "none", "extra": "v"}},
		{"automount", *s.AutomountServiceAccountToken, false},
		{"service links", *s.EnableServiceLinks, false},
		{"grace", *s.TerminationGracePeriodSeconds, int64(0)},
		{"restart", s.RestartPolicy, corev1.RestartPolicyNever},
		{"node selector", s.NodeSelector, map[string]string{"pool": "swe"}},
		{"pull secrets", s.ImagePullSecrets, []corev1.LocalObjectReference{{Name: "reg"}}},
		{"service account", s.ServiceAccountName, "runner"},
		{"tolerations", s.Tolerations, []corev1.Toleration{{Key: "spot", Operator: corev1.TolerationOpExists}}},
		{"host network", s.HostNetwork, false},
		{"dns", s.DNSPolicy, corev1.DNSDefault},
		{"image", c.Image, "img:1"},
		{"pull", c.ImagePullPolicy, corev1.PullNever},
		{"workdir", c.WorkingDir, "/testbed"},
		{"env", c.Env, []corev1.EnvVar{{Name: "A", Value: "1"}, {Name: "B", Value: "x=y"}}},
		{"cpu limit", c.Resources.Limits.Cpu().String(), "2"},
		{"cpu request", c.Resources.Requests.Cpu().String(), "1"},
		{"memory limit", c.Resources.Limits.Memory().String(), "1Gi"},
		{"memory request", c.Resources.Requests.Memory().String(), "512Mi"},
		{"mount", c.VolumeMounts, []corev1.VolumeMount{{Name: shimVolume, MountPath: "/.swerve"}}},
		{"no init", len(s.InitContainers), 0},
		{"privileged", *c.SecurityContext.Privileged, false},
		{"escalation", *c.SecurityContext.AllowPrivilegeEscalation, false},
		{"seccomp", c.SecurityContext.SeccompProfile.Type, corev1.SeccompProfileTypeRuntimeDefault},
		{"cap drop", c.SecurityContext.Capabilities.Drop, []corev1.Capability{"ALL"}},
		{"cap add", len(c.SecurityContext.Capabilities.Add), len(MinimalCaps)},
	}
	for _, ck := range checks {
		if diff := cmp.Diff(ck.want, ck.got); diff != "" {
			t.Errorf("%s: (-want +got)\n%s", ck.what, diff)
		}
	}
}

func TestPodForVariants(t *testing.T) {
	tests := []struct {
		name  string
		cfg   Config
		spec  sandbox.Spec
		check func(t *testing.T, p *corev1.Pod)
		err   string
	}{
		{"bridge network keeps DNS and has no network label", Config{}, sandbox.Spec{Image: "i", Network: sandbox.NetworkBridge}, func(t *testing.T, p *corev1.Pod) {
			if _, ok := p.Labels[LabelNetwork]; ok || p.Spec.DNSPolicy != "" || p.Spec.HostNetwork {
				t.Errorf("labels %v dns %q host %v", p.Labels, p.Spec.DNSPolicy, p.Spec.HostNetwork)
			}
		}, ""},
		{"host network", Config{}, sandbox.Spec{Image: "i", Network: sandbox.NetworkHost}, func(t *testing.T, p *corev1.Pod) {
			if !p.Spec.HostNetwork {
				t.Error("not host network")
			}
		}, ""},
		{"shim image adds an init container", Config{ShimImage: "reg/swerve:1", ShimImagePath: "/bin/swerve"}, sandbox.Spec{Image: "i"}, func(t *testing.T, p *corev1.Pod) {
			ic := p.Spec.InitContainers
			if len(ic) != 1 || ic[0].Image != "reg/swerve:1" || !slices.Contains(ic[0].Command, "/bin/swerve") || !slices.Contains(ic[0].Command, shim.InBoxPath) {
				t.Errorf("init containers %+v", ic)
			}
		}, ""},
		{"non-root user keeps no capability", Config{}, sandbox.Spec{Image: "i", User: "1000:1000", Security: sandbox.Security{CapAdd: []string{"CAP_SYS_PTRACE"}}}, func(t *testing.T, p *corev1.Pod) {
			sc := p.Spec.Containers[0].SecurityContext
			if *sc.RunAsUser != 1000 || *sc.RunAsGroup != 1000 || !cmp.Equal(sc.Capabilities.Add, []corev1.Capability{"SYS_PTRACE"}) {
				t.Errorf("security context %+v", sc)
			}
		}, ""},
		{"unhardened", Config{}, sandbox.Spec{Image: "i", Security: sandbox.Security{Unhardened: true}}, func(t *testing.T, p *corev1.Pod) {
			sc := p.Spec.Containers[0].SecurityContext
			if sc.AllowPrivilegeEscalation != nil || sc.Capabilities != nil {
				t.Errorf("security context %+v", sc)
			}
		}, ""},
		{"pull always", Config{}, sandbox.Spec{Image: "i", Pull: sandbox.PullAlways}, func(t *testing.T, p *corev1.Pod) {
			if p.Spec.Containers[0].ImagePullPolicy != corev1.PullAlways {
				t.Error(p.Spec.Containers[0].ImagePullPolicy)
			}
		}, ""},
		{"no limits, no resources", Config{}, sandbox.Spec{Image: "i"}, func(t *testing.T, p *corev1.Pod) {
			if r := p.Spec.Containers[0].Resources; r.Limits != nil || r.Requests != nil {
				t.Errorf("resources %+v", r)
			}
		}, ""},
		{"user name refused", Config{}, sandbox.Spec{Image: "i", User: "nobody"}, nil, "numeric uid"},
		{"bad pull refused", Config{}, sandbox.Spec{Image: "i", Pull: "sometimes"}, nil, "pull policy"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, err := testPodBackend(tc.cfg).podFor(tc.spec)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tc.check(t, p)
		})
	}
}

func TestNames(t *testing.T) {
	tests := []struct{ in, label, prefix string }{
		{"django__django-16901", "django__django-16901", "swerve-django-django-16901-"},
		{"owner/repo:tag with spaces", "owner_repo_tag_with_spaces", "swerve-owner-repo-tag-with-spaces-"},
		{"", "", "swerve-"},
		{strings.Repeat("x", 80), strings.Repeat("x", 63), "swerve-" + strings.Repeat("x", 40) + "-"},
		{"-_lead.trail_-", "lead.trail", "swerve-lead-trail-"},
	}
	for _, tc := range tests {
		if got := labelValue(tc.in); got != tc.label {
			t.Errorf("labelValue(%q) = %q, want %q", tc.in, got, tc.label)
		}
		if got := podPrefix(tc.in); got != tc.prefix {
			t.Errorf("podPrefix(%q) = %q, want %q", tc.in, got, tc.prefix)
		}
	}
}

func TestPodState(t *testing.T) {
	waiting := func(reason string) corev1.ContainerStatus {
		return corev1.ContainerStatus{Name: mainContainer, Image: "i", State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason, Message: "m"}}}
	}
	tests := []struct {
		name        string
		st          corev1.PodStatus
		done, fatal bool
		msg         string
	}{
		{"running", corev1.PodStatus{Phase: corev1.PodRunning, ContainerStatuses: []corev1.ContainerStatus{{Name: mainContainer, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}}, true, false, "running"},
		{"pull back-off", corev1.PodStatus{Phase: corev1.PodPending, ContainerStatuses: []corev1.ContainerStatus{waiting("ImagePullBackOff")}}, false, true, "ImagePullBackOff"},
		{"creating", corev1.PodStatus{Phase: corev1.PodPending, ContainerStatuses: []corev1.ContainerStatus{waiting("ContainerCreating")}}, false, false, "ContainerCreating"},
		{"unschedulable", corev1.PodStatus{Phase: corev1.PodPending, Conditions: []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: "Unschedulable", Message: "0/1 nodes"}}}, false, false, "Unschedulable: 0/1 nodes"},
		{"failed", corev1.PodStatus{Phase: corev1.PodFailed, Reason: "Evicted"}, false, true, "Evicted"},
	}
	for _, tc := range tests {
		msg, done, fatal := podState(&corev1.Pod{Status: tc.st})
		if done != tc.done || fatal != tc.fatal || !strings.Contains(msg, tc.msg) {
			t.Errorf("%s: podState = %q, %v, %v; want %q, %v, %v", tc.name, msg, done, fatal, tc.msg, tc.done, tc.fatal)
		}
	}
}
