// Package docker is the sandbox backend for Docker and Podman, spoken to
// through the Engine API (github.com/moby/moby/client).
//
// Each box is one container whose main process is swerve's helper (the
// shim), bind-mounted read-only at /.swerve/swerve (or copied in, for remote
// engines), and attached over one stream: commands then cost a fork/exec in
// the container instead of an engine round trip each.
//
// The engine is found from DOCKER_HOST, else CONTAINER_HOST (Podman's
// variable), else the default socket. Every container carries the labels
// swerve.managed, swerve.run, swerve.owner.pid and swerve.owner.host, which
// gc uses to find what a killed run left behind.
package docker

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strconv"
	"sync"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/client"

	"github.com/swerve-dev/swerve/internal/sandbox"
	"github.com/swerve-dev/swerve/internal/shim"
)

// Name is the backend's registry name.
const Name = "docker"

// Labels every container carries.
const (
	LabelManaged   = "swerve.managed"
	LabelRun       = "swerve.run"
	LabelTask      = "swerve.task"
	LabelOwnerPID  = "swerve.owner.pid"
	LabelOwnerHost = "swerve.owner.host"
)

// Shim placement modes (SWERVE_DOCKER_SHIM).
const (
	ShimAuto  = "auto"  // mount for local engines, copy for remote ones
	ShimMount = "mount" // bind-mount the host binary read-only
	ShimCopy  = "copy"  // copy the binary into the container before start
)

func init() {
	sandbox.Register(&sandbox.Registration{
		Name:        Name,
		Description: "Docker or Podman containers through the Engine API (DOCKER_HOST / CONTAINER_HOST)",
		New: func(ctx context.Context, opts sandbox.Options) (sandbox.Backend, error) {
			return New(ctx, Config{Options: opts})
		},
		// The engine comes from the environment (DOCKER_HOST,
		// CONTAINER_HOST): docker has no settings of its own to probe.
		Probe: func(ctx context.Context, _ sandbox.Options) error { return Probe(ctx) },
	})
}

// Config configures the backend.
type Config struct {
	sandbox.Options
	// Host overrides DOCKER_HOST / CONTAINER_HOST.
	Host string
	// ShimMode is ShimAuto (default), ShimMount or ShimCopy; the
	// SWERVE_DOCKER_SHIM variable sets it too.
	ShimMode string
	// NoSocket keeps requests on the attach stream even where a unix
	// socket could be shared with the container (SWERVE_DOCKER_SOCKET=0).
	NoSocket bool
}

// Backend opens containers.
type Backend struct {
	cli      *client.Client
	host     string
	shimPath string // as configured; resolved on first Open
	shimOnce sync.Once
	shim     string
	shimErr  error
	copyShim bool
	socket   bool // share a unix socket with each box (local engines)
	runID    string
	labels   map[string]string
	ncpuOnce sync.Once
	ncpu     int // the engine's CPUs; 0 until known
}

var (
	_ sandbox.Backend       = (*Backend)(nil)
	_ sandbox.ImageStore    = (*Backend)(nil)
	_ sandbox.ImagePreparer = (*Backend)(nil)
)

// hostFromEnv returns the engine address: DOCKER_HOST, else CONTAINER_HOST.
func hostFromEnv() string {
	if h := os.Getenv("DOCKER_HOST"); h != "" {
		return h
	}
	return os.Getenv("CONTAINER_HOST")
}

// The process keeps one engine client per engine address: every backend,
// box and probe for that engine shares it (and its connection pool), and
// CloseClients closes them all when the process is done.
var (
	clientsMu sync.Mutex
	clients   = map[string]*client.Client{}
	pinged    = map[string]bool{} // engines that answered a ping
)

// newClient returns the process's client for host ("" is the environment's
// engine), making it on first use. Callers must not close it.
func newClient(host string) (*client.Client, error) {
	clientsMu.Lock()
	defer clientsMu.Unlock()
	if c, ok := clients[host]; ok {
		return c, nil
	}
	opts := []client.Opt{client.FromEnv}
	if host != "" {
		opts = append(opts, client.WithHost(host))
	}
	c, err := client.New(opts...)
	if err != nil {
		return nil, fmt.Errorf("docker: client: %w", err)
	}
	clients[host] = c
	return c, nil
}

// CloseClients closes the engine clients this process made. A later call
// to New or Probe makes a new one.
func CloseClients() {
	clientsMu.Lock()
	defer clientsMu.Unlock()
	for h, c := range clients {
		c.Close()
		delete(clients, h)
		delete(pinged, h)
	}
}

// OpenClients reports how many engine clients the process holds.
func OpenClients() int {
	clientsMu.Lock()
	defer clientsMu.Unlock()
	return len(clients)
}

// New connects to the engine (lazily: nothing is sent until first use).
func New(_ context.Context, cfg Config) (*Backend, error) {
	host := cfg.Host
	if host == "" {
		host = hostFromEnv()
	}
	cli, err := newClient(host)
	if err != nil {
		return nil, err
	}
	mode := cfg.ShimMode
	if mode == "" {
		mode = os.Getenv("SWERVE_DOCKER_SHIM")
	}
	copyShim := false
	switch mode {
	case "", ShimAuto:
		copyShim = isRemote(cli.DaemonHost())
	case ShimMount:
	case ShimCopy:
		copyShim = true
	default:
		return nil, fmt.Errorf("docker: shim mode %q: want auto, mount or copy", mode)
	}
	hostname, _ := os.Hostname()
	runID := cfg.RunID
	if runID == "" {
		runID = "adhoc-" + strconv.Itoa(os.Getpid())
	}
	return &Backend{
		cli:      cli,
		host:     cli.DaemonHost(),
		shimPath: cfg.ShimPath,
		copyShim: copyShim,
		socket:   !copyShim && !cfg.NoSocket && os.Getenv("SWERVE_DOCKER_SOCKET") != "0",
		runID:    runID,
		labels: map[string]string{
			LabelManaged:   "true",
			LabelRun:       runID,
			LabelOwnerPID:  strconv.Itoa(os.Getpid()),
			LabelOwnerHost: hostname,
		},
	}, nil
}

// shimBinary resolves (once) the helper binary to run in containers.
func (b *Backend) shimBinary() (string, error) {
	b.shimOnce.Do(func() { b.shim, b.shimErr = shim.Binary(b.shimPath) })
	return b.shim, b.shimErr
}

// Client exposes the engine client, for tools that need more than boxes.
func (b *Backend) Client() *client.Client { return b.cli }

// isRemote reports whether the engine is on another machine, where a host
// path cannot be bind-mounted.
func isRemote(host string) bool {
	u, err := url.Parse(host)
	if err != nil {
		return false
	}
	return u.Scheme != "unix" && u.Scheme != "npipe"
}

// Probe reports whether an engine answers. Once an engine has answered, the
// process asks it no more: later probes return nil at once (a box that then
// cannot reach it fails with sandbox.ErrUnavailable, and the next probe pings
// again).
func Probe(ctx context.Context) error {
	host := hostFromEnv()
	cli, err := newClient(host)
	if err != nil {
		return err
	}
	clientsMu.Lock()
	ok := pinged[host]
	clientsMu.Unlock()
	if ok {
		return nil
	}
	if err := ping(ctx, cli); err != nil {
		return err
	}
	clientsMu.Lock()
	pinged[host] = true
	clientsMu.Unlock()
	return nil
}

// forgetPings makes the next Probe ping again (an engine stopped
// answering).
func forgetPings() {
	clientsMu.Lock()
	clear(pinged)
	clientsMu.Unlock()
}

func ping(ctx context.Context, cli *client.Client) error {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	if _, err := cli.Ping(ctx, client.PingOptions{}); err != nil {
		return fmt.Errorf("no Docker or Podman engine answers at %s (start dockerd, or set DOCKER_HOST / CONTAINER_HOST): %w", cli.DaemonHost(), sandbox.ErrUnavailable)
	}
	return nil
}

// classify wraps engine errors with the sandbox sentinels.
func classify(err error) error {
	switch {
	case err == nil:
		return nil
	case cerrdefs.IsNotFound(err):
		return fmt.Errorf("%w: %w", sandbox.ErrNotFound, err)
	case client.IsErrConnectionFailed(err):
		forgetPings() // the next probe asks the engine again
		return fmt.Errorf("%w: %w", sandbox.ErrUnavailable, err)
	case errors.Is(err, context.DeadlineExceeded):
		return fmt.Errorf("%w: %w", sandbox.ErrTimeout, err)
	}
	return err
}
