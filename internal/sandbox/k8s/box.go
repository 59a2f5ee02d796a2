package k8s

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/util/httpstream"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/remotecommand"

	"github.com/swerve-dev/swerve/internal/sandbox"
	"github.com/swerve-dev/swerve/internal/shim"
)

// removeTimeout bounds Close's pod deletion, which must run even when the
// caller's context is already cancelled.
const removeTimeout = 60 * time.Second

// Open creates a pod for spec, gets the helper into it, starts the helper
// over one exec stream and returns once it has answered.
func (b *Backend) Open(ctx context.Context, spec sandbox.Spec) (_ sandbox.Sandbox, err error) {
	what := spec.Image
	if spec.Task != "" {
		what = spec.Task
	}
	if spec.Image == "" {
		return nil, fmt.Errorf("k8s: open %s: no image given", what)
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("k8s: open %s: %w", what, err)
	}
	var raw, gz []byte
	if b.cfg.ShimImage == "" {
		if raw, gz, err = b.shimBinary(); err != nil {
			return nil, err
		}
	}
	pod, err := b.podFor(spec)
	if err != nil {
		return nil, fmt.Errorf("%w (task %s)", err, what)
	}
	if pod.Labels[LabelNetwork] == "none" {
		b.ensurePolicy(ctx)
	}
	created, err := b.api.createPod(ctx, b.namespace, pod)
	if err != nil {
		return nil, fmt.Errorf("k8s: task %s: create pod in namespace %s: %w", what, b.namespace, classify(err))
	}
	box := &Box{b: b, name: created.Name, what: what, stderr: &shim.TailBuffer{}}
	defer func() {
		if err != nil {
			box.Close(context.WithoutCancel(ctx))
		}
	}()
	t0 := time.Now()
	if err := b.waitRunning(ctx, created, what); err != nil {
		return nil, err
	}
	t1 := time.Now()
	if raw != nil {
		if err := box.upload(ctx, raw, gz); err != nil {
			return nil, err
		}
	}
	t2 := time.Now()
	if err := box.startShim(ctx); err != nil {
		return nil, err
	}
	if pod.Labels[LabelNetwork] == "none" {
		if err := b.checkIsolation(ctx, box); err != nil {
			return nil, err
		}
	}
	slog.Debug("k8s: box ready", "task", what, "pod", created.Name, "running", t1.Sub(t0), "upload", t2.Sub(t1), "helper", time.Since(t2))
	return box, nil
}

// shimBinary reads the helper binary once per backend, and compresses it
// once: every box gets a copy of the same bytes.
func (b *Backend) shimBinary() (raw, gz []byte, err error) {
	b.shimOnce.Do(func() {
		path, err := shim.Binary(b.cfg.ShimPath)
		if err != nil {
			b.shimErr = fmt.Errorf("k8s: %w", err)
			return
		}
		if b.shimData, err = os.ReadFile(path); err != nil {
			b.shimErr = fmt.Errorf("k8s: read helper: %w", err)
			return
		}
		var buf bytes.Buffer
		zw, _ := gzip.NewWriterLevel(&buf, gzip.BestSpeed)
		_, _ = zw.Write(b.shimData)
		if err := zw.Close(); err != nil {
			b.shimErr = fmt.Errorf("k8s: compress helper: %w", err)
			return
		}
		b.shimGz = buf.Bytes()
	})
	return b.shimData, b.shimGz, b.shimErr
}

// ensurePolicy makes sure the namespace has the NetworkPolicy that cuts
// pods labelled swerve.network=none off the network. Only clusters whose
// network plugin enforces NetworkPolicies honour it; a cluster that
// refuses the object gets a warning, once.
func (b *Backend) ensurePolicy(ctx context.Context) {
	b.policyOnce.Do(func() {
		np := &networkingv1.NetworkPolicy{
			ObjectMeta: metav1.ObjectMeta{Name: NoEgressPolicy, Namespace: b.namespace, Labels: map[string]string{LabelManaged: "true"}},
			Spec: networkingv1.NetworkPolicySpec{
				PodSelector: metav1.LabelSelector{MatchLabels: map[string]string{LabelNetwork: "none"}},
				PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress, networkingv1.PolicyTypeEgress},
			},
		}
		err := b.api.createNetworkPolicy(ctx, b.namespace, np)
		if err != nil && !apierrors.IsAlreadyExists(err) {
			b.policyErr = err
			slog.Warn("k8s: cannot create the NetworkPolicy that keeps network-less boxes offline; their pods have the cluster's default network", "namespace", b.namespace, "err", err)
		}
	})
}

// Waiting reasons after which a pod will not start without someone's
// help: Open fails at once instead of waiting for the start timeout.
var fatalReasons = []string{"ErrImageNeverPull", "ErrImagePull", "ImagePullBackOff", "InvalidImageName", "CreateContainerConfigError", "CreateContainerError", "RunContainerError", "CrashLoopBackOff"}

// waitRunning watches the pod until its main container runs, failing at
// once when it cannot start and after the start timeout otherwise, with
// the pod's own words (waiting reason, scheduling condition, events).
func (b *Backend) waitRunning(ctx context.Context, pod *corev1.Pod, what string) error {
	ctx, cancel := context.WithTimeout(ctx, b.cfg.StartTimeout)
	defer cancel()
	last := pod
	for {
		if msg, done, fatal := podState(last); done {
			return nil
		} else if fatal {
			err := fmt.Errorf("k8s: task %s: pod %s cannot start: %s%s", what, pod.Name, msg, b.eventNote(pod.Name))
			if strings.HasPrefix(msg, "ErrImageNeverPull") {
				err = fmt.Errorf("%w (%w)", err, sandbox.ErrNotFound)
			}
			return err
		}
		w, err := b.api.watchPods(ctx, b.namespace, metav1.ListOptions{
			FieldSelector:   fields.OneTermEqualSelector("metadata.name", pod.Name).String(),
			ResourceVersion: last.ResourceVersion,
		})
		if err != nil {
			return b.startErr(ctx, last, what, err)
		}
		for ev := range w.ResultChan() {
			switch ev.Type {
			case watch.Deleted:
				w.Stop()
				return fmt.Errorf("k8s: task %s: pod %s was deleted while starting: %w", what, pod.Name, sandbox.ErrClosed)
			case watch.Error:
				// An expired resource version: read the pod afresh.
				if p, err := b.api.getPod(ctx, b.namespace, pod.Name); err == nil {
					last = p
				}
			default:
				if p, ok := ev.Object.(*corev1.Pod); ok {
					last = p
				}
			}
			if _, done, fatal := podState(last); done || fatal {
				break
			}
		}
		w.Stop()
		if ctx.Err() != nil {
			return b.startErr(ctx, last, what, ctx.Err())
		}
	}
}

// startErr is the error for a pod that did not start in time (or whose
// watch failed): one line with what the pod says and its events.
func (b *Backend) startErr(ctx context.Context, pod *corev1.Pod, what string, cause error) error {
	msg, _, _ := podState(pod)
	if strings.HasPrefix(msg, "Unschedulable") && len(b.cfg.NodeSelector) > 0 {
		msg += " (node selector " + selectorString(b.cfg.NodeSelector) + ")"
	}
	sentinel := cause
	if errors.Is(cause, context.DeadlineExceeded) && context.Cause(ctx) == context.DeadlineExceeded {
		sentinel = sandbox.ErrTimeout
		return fmt.Errorf("k8s: task %s: pod %s did not start in %v: %s%s: %w", what, pod.Name, b.cfg.StartTimeout, msg, b.eventNote(pod.Name), sentinel)
	}
	return fmt.Errorf("k8s: task %s: pod %s: waiting to start: %s%s: %w", what, pod.Name, msg, b.eventNote(pod.Name), classify(sentinel))
}

// podState says where a pod is: running (done), never going to run
// (fatal), or on its way, with a message in each case.
func podState(p *corev1.Pod) (msg string, done, fatal bool) {
	switch p.Status.Phase {
	case corev1.PodFailed, corev1.PodSucceeded:
		return fmt.Sprintf("pod %s: %s %s", strings.ToLower(string(p.Status.Phase)), p.Status.Reason, p.Status.Message), false, true
	}
	statuses := slices.Concat(p.Status.InitContainerStatuses, p.Status.ContainerStatuses)
	for _, cs := range statuses {
		if w := cs.State.Waiting; w != nil && slices.Contains(fatalReasons, w.Reason) {
			return fmt.Sprintf("%s: container %s (image %s): %s", w.Reason, cs.Name, cs.Image, w.Message), false, true
		}
		if t := cs.State.Terminated; t != nil && (cs.Name == mainContainer || t.ExitCode != 0) {
			return fmt.Sprintf("container %s exited with %d (%s): %s", cs.Name, t.ExitCode, t.Reason, strings.TrimSpace(t.Message)), false, true
		}
	}
	for _, cs := range p.Status.ContainerStatuses {
		if cs.Name == mainContainer && cs.State.Running != nil {
			return "running", true, false
		}
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse {
			return fmt.Sprintf("%s: %s", c.Reason, c.Message), false, false
		}
	}
	for _, cs := range statuses {
		if w := cs.State.Waiting; w != nil && w.Reason != "" {
			return fmt.Sprintf("%s: container %s: %s", w.Reason, cs.Name, w.Message), false, false
		}
	}
	return "phase " + string(p.Status.Phase), false, false
}

// eventNote lists the pod's recent warning events as "; events: ...", or
// nothing.
func (b *Backend) eventNote(name string) string {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	evs, err := b.api.listEvents(ctx, b.namespace, metav1.ListOptions{
		FieldSelector: fields.AndSelectors(
			fields.OneTermEqualSelector("involvedObject.name", name),
			fields.OneTermEqualSelector("involvedObject.kind", "Pod"),
		).String(),
	})
	if err != nil || len(evs.Items) == 0 {
		return ""
	}
	items := evs.Items
	sort.SliceStable(items, func(i, j int) bool { return items[i].LastTimestamp.Before(&items[j].LastTimestamp) })
	var parts []string
	seen := map[string]bool{}
	for _, e := range items {
		if e.Type != corev1.EventTypeWarning {
			continue
		}
		s := e.Reason + ": " + strings.Join(strings.Fields(e.Message), " ")
		if !seen[s] {
			seen[s] = true
			parts = append(parts, s)
		}
	}
	if len(parts) == 0 {
		return ""
	}
	if len(parts) > 3 {
		parts = parts[len(parts)-3:]
	}
	return "; events: " + strings.Join(parts, "; ")
}

// selectorString shows a node selector as --k8s_node_selector takes it.
func selectorString(m map[string]string) string {
	var parts []string
	for k, v := range m {
		parts = append(parts, k+"="+v)
	}
	sort.Strings(parts)
	return strings.Join(parts, ",")
}

// classify wraps API errors with the sandbox sentinels.
func classify(err error) error {
	switch {
	case err == nil:
		return nil
	case apierrors.IsNotFound(err):
		return fmt.Errorf("%w (%w)", err, sandbox.ErrNotFound)
	case apierrors.IsTimeout(err), apierrors.IsServerTimeout(err), errors.Is(err, context.DeadlineExceeded):
		return fmt.Errorf("%w (%w)", err, sandbox.ErrTimeout)
	case apierrors.IsServiceUnavailable(err), apierrors.IsInternalError(err), isConnErr(err):
		return fmt.Errorf("%w (%w)", err, sandbox.ErrUnavailable)
	}
	return err
}

func isConnErr(err error) bool {
	s := err.Error()
	return strings.Contains(s, "connection refused") || strings.Contains(s, "no such host") || strings.Contains(s, "i/o timeout")
}

// executor makes the stream for one exec in the box's main container:
// a websocket, or SPDY when the server cannot upgrade to one.
func (b *Backend) executor(pod string, argv []string, stdin bool) (remotecommand.Executor, error) {
	u := b.api.execURL(b.namespace, pod, &corev1.PodExecOptions{Container: mainContainer, Command: argv, Stdin: stdin, Stdout: true, Stderr: true})
	ws, err := remotecommand.NewWebSocketExecutor(b.rest, http.MethodGet, u.String())
	if err != nil {
		return nil, fmt.Errorf("k8s: websocket exec: %w", err)
	}
	spdy, err := remotecommand.NewSPDYExecutor(b.rest, http.MethodPost, u)
	if err != nil {
		return nil, fmt.Errorf("k8s: spdy exec: %w", err)
	}
	return remotecommand.NewFallbackExecutor(ws, spdy, func(err error) bool {
		return httpstream.IsUpgradeFailure(err) || httpstream.IsHTTPSProxyError(err)
	})
}

// plainExec runs argv with one API exec, the way tools without a helper
// pay for every command; used to upload the helper and as the benchmark's
// baseline. It returns stdout and stderr apart; a non-zero exit is an
// error carrying the code.
func (b *Box) plainExec(ctx context.Context, argv []string, stdin io.Reader) (stdout, stderr []byte, err error) {
	ex, err := b.b.executor(b.name, argv, stdin != nil)
	if err != nil {
		return nil, nil, err
	}
	var out, errb bytes.Buffer
	err = ex.StreamWithContext(ctx, remotecommand.StreamOptions{Stdin: stdin, Stdout: &out, Stderr: &errb})
	return out.Bytes(), errb.Bytes(), err
}

// upload puts the helper binary at shim.InBoxPath over one exec. Where
// the image has gzip the binary travels compressed (less than half the
// bytes): the command first says which form it takes, and only then is
// the binary sent. It prints the written file's size (and hash, where the
// image has sha256sum) once the file is complete: ending an exec as soon
// as its stdin is sent can cut the file short, so the stream stays open
// until that answer arrives, and the answer is checked.
func (b *Box) upload(ctx context.Context, raw, gz []byte) error {
	const script = `set -e; f="$1"
if command -v gzip >/dev/null 2>&1; then echo gz; gzip -dc > "$f.tmp"; else echo raw; cat > "$f.tmp"; fi
chmod 755 "$f.tmp"; mv "$f.tmp" "$f"; wc -c < "$f"
if command -v sha256sum >/dev/null 2>&1; then sha256sum "$f"; fi`
	fail := func(format string, args ...any) error {
		return fmt.Errorf("k8s: task %s: upload the helper into pod %s: %s", b.what, b.name, fmt.Sprintf(format, args...))
	}
	ex, err := b.b.executor(b.name, []string{"/bin/sh", "-c", script, "upload", shim.InBoxPath}, true)
	if err != nil {
		return err
	}
	inR, inW := io.Pipe()
	out := &firstLine{ready: make(chan struct{})}
	var errb bytes.Buffer
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-out.ready:
		case <-ctx.Done():
			inW.CloseWithError(ctx.Err())
			return
		}
		data := raw
		if out.first() == "gz" {
			data = gz
		}
		_, err := inW.Write(data)
		inW.CloseWithError(err)
	}()
	err = ex.StreamWithContext(ctx, remotecommand.StreamOptions{Stdin: inR, Stdout: out, Stderr: &errb})
	inR.Close()
	if err != nil {
		return fail("%v (%s)", classify(err), strings.TrimSpace(errb.String()))
	}
	fields := strings.Fields(out.String())
	if len(fields) < 2 {
		return fail("no size reported (%s)", strings.TrimSpace(errb.String()))
	}
	if n, err := strconv.Atoi(fields[1]); err != nil || n != len(raw) {
		return fail("%s bytes arrived, want %d", fields[1], len(raw))
	}
	if len(fields) > 2 {
		sum := sha256.Sum256(raw)
		if fields[2] != hex.EncodeToString(sum[:]) {
			return fail("sha256 %s, want %x", fields[2], sum)
		}
	}
	return nil
}

// firstLine collects a command's stdout and signals when its first line
// is complete.
type firstLine struct {
	mu    sync.Mutex
	buf   bytes.Buffer
	ready chan struct{}
	once  sync.Once
}

func (w *firstLine) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(p)
	if bytes.IndexByte(w.buf.Bytes(), '\n') >= 0 {
		w.once.Do(func() { close(w.ready) })
	}
	return len(p), nil
}

func (w *firstLine) first() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	line, _, _ := strings.Cut(w.buf.String(), "\n")
	return strings.TrimSpace(line)
}

func (w *firstLine) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}

// startShim runs `swerve shim` over one long-lived exec stream and waits
// for its hello.
func (b *Box) startShim(ctx context.Context) error {
	ex, err := b.b.executor(b.name, []string{shim.InBoxPath, "shim"}, true)
	if err != nil {
		return err
	}
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	streamCtx, cancel := context.WithCancel(context.Background())
	b.stdin, b.cancel = inW, cancel
	b.streamDone = make(chan struct{})
	go func() {
		defer close(b.streamDone)
		err := ex.StreamWithContext(streamCtx, remotecommand.StreamOptions{Stdin: inR, Stdout: outW, Stderr: b.stderr})
		if err == nil {
			err = io.EOF
		}
		outW.CloseWithError(err)
		inR.CloseWithError(err)
	}()
	c := shim.NewClient(outR, inW)
	c.Describe = b.describe
	b.Client = c
	if _, err := c.Hello(ctx); err != nil {
		return fmt.Errorf("k8s: task %s: the helper in pod %s did not answer: %w", b.what, b.name, err)
	}
	return nil
}

// Box is one pod.
type Box struct {
	// Forward carries commands, files, tools and shells to the helper.
	shim.Forward
	b          *Backend
	name       string
	what       string // the task, or the image, for messages
	stdin      *io.PipeWriter
	cancel     context.CancelFunc
	streamDone chan struct{}
	stderr     *shim.TailBuffer

	closeOnce sync.Once
	closeErr  error
}

var (
	_ sandbox.Sandbox = (*Box)(nil)
	_ sandbox.Tooler  = (*Box)(nil)
	_ sandbox.Shell   = (*Box)(nil)
)

// ID is the pod's name.
func (b *Box) ID() string { return b.name }

// describe adds the helper's last words to a broken-stream error.
func (b *Box) describe(err error) error {
	if tail := strings.TrimSpace(b.stderr.String()); tail != "" {
		return fmt.Errorf("pod %s: %w (helper stderr: %s)", b.name, err, tail)
	}
	return fmt.Errorf("pod %s: %w", b.name, err)
}

// Close ends the helper (which kills everything it started), deletes the
// pod at once (grace period 0) and waits until the API no longer has it.
// It is idempotent.
func (b *Box) Close(ctx context.Context) error {
	b.closeOnce.Do(func() {
		if b.Client != nil {
			b.Client.Shutdown()
		}
		if b.stdin != nil {
			// End of stdin makes the helper kill what it started and exit.
			_ = b.stdin.Close()
			select {
			case <-b.streamDone:
			case <-time.After(2 * time.Second):
			case <-ctx.Done():
			}
			b.cancel()
		}
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), removeTimeout)
		defer cancel()
		if err := b.b.deletePod(ctx, b.name); err != nil {
			b.closeErr = fmt.Errorf("k8s: task %s: %w", b.what, err)
		}
	})
	return b.closeErr
}

// deletePod deletes a pod with grace period 0 and waits until it is gone.
func (b *Backend) deletePod(ctx context.Context, name string) error {
	var grace int64
	err := b.api.deletePod(ctx, b.namespace, name, metav1.DeleteOptions{GracePeriodSeconds: &grace})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("delete pod %s: %w", name, classify(err))
	}
	for {
		_, err := b.api.getPod(ctx, b.namespace, name)
		if apierrors.IsNotFound(err) {
			return nil
		}
		if ctx.Err() != nil {
			return fmt.Errorf("delete pod %s: still there: %w", name, classify(ctx.Err()))
		}
		select {
		case <-ctx.Done():
		case <-time.After(200 * time.Millisecond):
		}
	}
}
