package k8s

import (
	"fmt"
	"maps"
	"math"
	"path"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/swerve-dev/swerve/internal/sandbox"
	"github.com/swerve-dev/swerve/internal/shim"
)

// Container and volume names in every pod.
const (
	mainContainer = "box"
	initContainer = "swerve-shim"
	shimVolume    = "swerve"
)

// shimDir is where the shim volume is mounted in the box (the directory of
// shim.InBoxPath).
var shimDir = path.Dir(shim.InBoxPath)

// waiter is the main container's process: it only waits, so that the box
// lives until its pod is deleted. It needs sh and sleep, which every image
// a task runs in has; a PID 1 ignores signals it has no handler for, so
// nothing in the box can end it by accident.
var waiter = []string{"/bin/sh", "-c", "sleep infinity 2>/dev/null || while :; do sleep 86400; done"}

// MinimalCaps are the Linux capabilities a hardened root box keeps; the
// same set the docker backend keeps (docker.MinimalCaps).
var MinimalCaps = []string{"CHOWN", "DAC_OVERRIDE", "FOWNER", "FSETID", "KILL", "SETGID", "SETUID", "NET_BIND_SERVICE"}

// podFor builds the pod for one box.
func (b *Backend) podFor(spec sandbox.Spec) (*corev1.Pod, error) {
	labels := maps.Clone(b.labels)
	if spec.Task != "" {
		labels[LabelTask] = labelValue(spec.Task)
	}
	network := spec.Network
	if network == "" {
		network = sandbox.NetworkDefault
	}
	if network == sandbox.NetworkNone {
		labels[LabelNetwork] = "none"
	}
	maps.Copy(labels, spec.Labels)

	pull, err := pullPolicy(spec.Pull)
	if err != nil {
		return nil, err
	}
	sc, err := securityContext(spec.Security, spec.User)
	if err != nil {
		return nil, err
	}
	res, err := resources(spec.Limits, b.cfg.RequestRatio)
	if err != nil {
		return nil, err
	}
	var env []corev1.EnvVar
	for _, kv := range spec.Env {
		k, v, _ := strings.Cut(kv, "=")
		env = append(env, corev1.EnvVar{Name: k, Value: v})
	}
	no := false
	var grace int64
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			GenerateName: podPrefix(spec.Task),
			Namespace:    b.namespace,
			Labels:       labels,
		},
		Spec: corev1.PodSpec{
			RestartPolicy:                 corev1.RestartPolicyNever,
			AutomountServiceAccountToken:  &no,
			EnableServiceLinks:            &no,
			TerminationGracePeriodSeconds: &grace,
			ServiceAccountName:            b.cfg.ServiceAccount,
			NodeSelector:                  maps.Clone(b.cfg.NodeSelector),
			HostNetwork:                   network == sandbox.NetworkHost,
			Volumes: []corev1.Volume{{
				Name:         shimVolume,
				VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}},
			}},
			Containers: []corev1.Container{{
				Name:            mainContainer,
				Image:           spec.Image,
				ImagePullPolicy: pull,
				Command:         waiter,
				WorkingDir:      spec.Workdir,
				Env:             env,
				Resources:       res,
				SecurityContext: sc,
				VolumeMounts:    []corev1.VolumeMount{{Name: shimVolume, MountPath: shimDir}},
			}},
		},
	}
	for _, s := range b.cfg.PullSecrets {
		pod.Spec.ImagePullSecrets = append(pod.Spec.ImagePullSecrets, corev1.LocalObjectReference{Name: s})
	}
	for _, t := range b.cfg.Tolerations {
		tol := corev1.Toleration{Key: t.Key, Value: t.Value, Effect: corev1.TaintEffect(t.Effect), Operator: corev1.TolerationOpEqual}
		if t.Value == "" {
			tol.Operator = corev1.TolerationOpExists
		}
		pod.Spec.Tolerations = append(pod.Spec.Tolerations, tol)
	}
	if network == sandbox.NetworkNone {
		// A box without network has no use for the cluster's DNS.
		pod.Spec.DNSPolicy = corev1.DNSDefault
	}
	if b.cfg.ShimImage != "" {
		// The init container copies the binary from the user's image into
		// the volume, where the main container finds it at shim.InBoxPath.
		pod.Spec.InitContainers = []corev1.Container{{
			Name:            initContainer,
			Image:           b.cfg.ShimImage,
			ImagePullPolicy: pull,
			Command:         []string{"sh", "-c", `cp "$1" "$2.tmp" && chmod 755 "$2.tmp" && mv "$2.tmp" "$2"`, "copy", b.cfg.ShimImagePath, shim.InBoxPath},
			SecurityContext: sc,
			VolumeMounts:    []corev1.VolumeMount{{Name: shimVolume, MountPath: shimDir}},
		}}
	}
	return pod, nil
}

// podPrefix is the pod's GenerateName: swerve-, then the task's id made a
// valid name, cut so the API's random suffix fits.
func podPrefix(task string) string {
	var sb strings.Builder
	for _, c := range strings.ToLower(task) {
		switch {
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9':
			sb.WriteRune(c)
		default:
			sb.WriteByte('-')
		}
	}
	name := strings.Trim(sb.String(), "-")
	for strings.Contains(name, "--") {
		name = strings.ReplaceAll(name, "--", "-")
	}
	if len(name) > 40 {
		name = strings.TrimRight(name[:40], "-")
	}
	if name == "" {
		return "swerve-"
	}
	return "swerve-" + name + "-"
}

// pullPolicy maps Spec.Pull onto the pod's imagePullPolicy.
func pullPolicy(p string) (corev1.PullPolicy, error) {
	switch p {
	case "", sandbox.PullMissing:
		return corev1.PullIfNotPresent, nil
	case sandbox.PullAlways:
		return corev1.PullAlways, nil
	case sandbox.PullNever:
		return corev1.PullNever, nil
	}
	return "", fmt.Errorf("k8s: pull policy %q: want missing, always or never", p)
}

// securityContext is the main container's: unprivileged, no privilege
// escalation (no setuid, sudo or file capabilities), every capability
// dropped but MinimalCaps and sec.CapAdd, the runtime's default seccomp
// profile; sec.Unhardened keeps the runtime's defaults but still adds
// sec.CapAdd. user is "", "root", "UID" or "UID:GID".
func securityContext(sec sandbox.Security, user string) (*corev1.SecurityContext, error) {
	sc := &corev1.SecurityContext{}
	if user != "" {
		name, group, hasGroup := strings.Cut(user, ":")
		uid, err := strconv.ParseInt(name, 10, 64)
		if name == "root" {
			uid, err = 0, nil
		}
		if err != nil || uid < 0 {
			return nil, fmt.Errorf("k8s: user %q: pods need a numeric uid (or root), as UID or UID:GID", user)
		}
		sc.RunAsUser = &uid
		if hasGroup {
			gid, err := strconv.ParseInt(group, 10, 64)
			if err != nil || gid < 0 {
				return nil, fmt.Errorf("k8s: user %q: group %q is not a numeric gid", user, group)
			}
			sc.RunAsGroup = &gid
		}
	}
	var add []corev1.Capability
	for _, c := range sec.CapAdd {
		add = append(add, corev1.Capability(strings.TrimPrefix(strings.ToUpper(c), "CAP_")))
	}
	if sec.Unhardened {
		if len(add) > 0 {
			sc.Capabilities = &corev1.Capabilities{Add: add}
		}
		return sc, nil
	}
	no := false
	sc.Privileged = &no
	sc.AllowPrivilegeEscalation = &no
	sc.SeccompProfile = &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}
	keep := add
	if sc.RunAsUser == nil || *sc.RunAsUser == 0 {
		keep = nil
		for _, c := range MinimalCaps {
			keep = append(keep, corev1.Capability(c))
		}
		for _, c := range add {
			if !slices.Contains(keep, c) {
				keep = append(keep, c)
			}
		}
	}
	sc.Capabilities = &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}, Add: keep}
	return sc, nil
}

// resources turns Limits into limits and requests (ratio of the limits).
// A pod has no process limit of its own: the kubelet's podPidsLimit caps
// every pod on the node, so Limits.PIDs is not applied here.
func resources(l sandbox.Limits, ratio float64) (corev1.ResourceRequirements, error) {
	var r corev1.ResourceRequirements
	if l.CPUs < 0 || l.MemoryMiB < 0 {
		return r, fmt.Errorf("k8s: negative limits %+v", l)
	}
	if l.CPUs > 0 {
		milli := int64(math.Ceil(l.CPUs * 1000))
		r.Limits = corev1.ResourceList{corev1.ResourceCPU: *resource.NewMilliQuantity(milli, resource.DecimalSI)}
		r.Requests = corev1.ResourceList{corev1.ResourceCPU: *resource.NewMilliQuantity(max(1, int64(float64(milli)*ratio)), resource.DecimalSI)}
	}
	if l.MemoryMiB > 0 {
		if r.Limits == nil {
			r.Limits, r.Requests = corev1.ResourceList{}, corev1.ResourceList{}
		}
		bytes := l.MemoryMiB << 20
		r.Limits[corev1.ResourceMemory] = *resource.NewQuantity(bytes, resource.BinarySI)
		r.Requests[corev1.ResourceMemory] = *resource.NewQuantity(max(1<<20, int64(float64(bytes)*ratio)), resource.BinarySI)
	}
	return r, nil
}
