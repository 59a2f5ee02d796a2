// Package e2b is the sandbox backend for E2B-compatible cloud sandboxes:
// E2B itself and Tencent Cloud's Agent Sandbox (AGS), which speaks the
// same protocol under its own domain.
//
// A box is one E2B sandbox, created through the REST control plane from
// the template the task's image maps to (Templates). The static swerve
// binary is uploaded through envd's files API, started once as
// `swerve shim` with process.Start (stdin kept open), and every command,
// file and tool call then goes through that one process: requests as
// SendInput calls, answers on its output stream. The sandbox's timeout is
// renewed while the box is open; Close kills the sandbox.
//
// Settings: E2B_API_KEY (required), E2B_DOMAIN (default e2b.app; AGS users
// set theirs), E2B_API_URL and E2B_SANDBOX_URL (override the control
// plane's and envd's addresses, as the official SDKs do; the local plane
// of package e2blocal is reached this way), and the flags
// --e2b_template_map, --e2b_template and --e2b_timeout.
package e2b

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/swerve-dev/swerve/internal/sandbox"
	"github.com/swerve-dev/swerve/internal/shim"
)

// Metadata keys every sandbox carries, for gc.
const (
	MetaManaged   = "swerve.managed"
	MetaRun       = "swerve.run"
	MetaTask      = "swerve.task"
	MetaImage     = "swerve.image"
	MetaOwnerPID  = "swerve.owner.pid"
	MetaOwnerHost = "swerve.owner.host"
)

// DefaultDomain is E2B's own.
const DefaultDomain = "e2b.app"

// DefaultTimeout is a sandbox's lifetime when --e2b_timeout is not given;
// an open box renews it every third of it.
const DefaultTimeout = 10 * time.Minute

func init() {
	sandbox.Register(&sandbox.Registration{
		Name:        "e2b",
		Description: "E2B-compatible cloud sandboxes (E2B, Tencent AGS): E2B_API_KEY, E2B_DOMAIN; images map to templates",
		New: func(ctx context.Context, opts sandbox.Options) (sandbox.Backend, error) {
			return New(ctx, ConfigFromOptions(opts))
		},
		Probe: func(_ context.Context, opts sandbox.Options) error {
			if ConfigFromOptions(opts).APIKey == "" {
				return errMissingKey
			}
			return nil
		},
		Params: []sandbox.Param{
			{Name: "e2b_template_map", Env: "SWERVE_E2B_TEMPLATE_MAP", Usage: "e2b: YAML or JSON file mapping each task image name to its E2B/AGS template id"},
			{Name: "e2b_template", Env: "SWERVE_E2B_TEMPLATE", Usage: "e2b: template id rule for images the map lacks, e.g. 'swe-{instance_id}' ({instance_id}, {image})"},
			{Name: "e2b_timeout", Env: "SWERVE_E2B_TIMEOUT", Default: DefaultTimeout.String(), Usage: "e2b: sandbox lifetime, renewed while the box is open (Go duration or seconds)"},
		},
	})
}

var errMissingKey = errors.New("E2B_API_KEY is not set (the E2B or Tencent AGS API key; set E2B_DOMAIN too for AGS)")

// Config configures the backend.
type Config struct {
	// APIKey is E2B_API_KEY.
	APIKey string
	// Domain is E2B_DOMAIN (default e2b.app).
	Domain string
	// APIURL overrides https://api.<domain> (E2B_API_URL).
	APIURL string
	// SandboxURL, when set, is where every sandbox's envd is reached,
	// routed by the E2b-Sandbox-Id header (E2B_SANDBOX_URL); otherwise
	// https://49983-<id>.<domain>.
	SandboxURL string
	// Templates maps images to template ids.
	Templates Templates
	// TemplateMapFile is read into Templates.Map by New when set.
	TemplateMapFile string
	// Timeout is the sandbox lifetime, renewed while open.
	Timeout time.Duration
	// TimeoutText is parsed into Timeout by New when Timeout is zero.
	TimeoutText string
	// RunID labels sandboxes for gc.
	RunID string
	// ShimPath is the static swerve binary uploaded into boxes; empty
	// means the running executable.
	ShimPath string
	// HTTP is the client for both planes; nil means a default one.
	HTTP *http.Client
}

// ConfigFromOptions reads the backend's settings from the environment and
// the command line.
func ConfigFromOptions(opts sandbox.Options) Config {
	return Config{
		APIKey:          os.Getenv("E2B_API_KEY"),
		Domain:          os.Getenv("E2B_DOMAIN"),
		APIURL:          os.Getenv("E2B_API_URL"),
		SandboxURL:      os.Getenv("E2B_SANDBOX_URL"),
		TemplateMapFile: opts.Param("e2b_template_map"),
		Templates:       Templates{Rule: opts.Param("e2b_template")},
		TimeoutText:     opts.Param("e2b_timeout"),
		RunID:           opts.RunID,
		ShimPath:        opts.ShimPath,
	}
}

// Backend opens E2B sandboxes.
type Backend struct {
	// skipStaticCheck lets tests upload a helper they do not run.
	skipStaticCheck bool
	cfg             Config
	api             *API
	host            string
}

var (
	_ sandbox.Backend   = (*Backend)(nil)
	_ sandbox.Collector = (*Backend)(nil)
)

// New checks cfg and makes a backend; it contacts nothing.
func New(_ context.Context, cfg Config) (*Backend, error) {
	if cfg.APIKey == "" {
		return nil, fmt.Errorf("e2b: %w", errMissingKey)
	}
	if cfg.Domain == "" {
		cfg.Domain = DefaultDomain
	}
	if cfg.APIURL == "" {
		cfg.APIURL = "https://api." + cfg.Domain
	}
	if cfg.TemplateMapFile != "" {
		m, err := LoadTemplateMap(cfg.TemplateMapFile)
		if err != nil {
			return nil, err
		}
		cfg.Templates.Map = m
		cfg.Templates.Source = cfg.TemplateMapFile
	}
	if cfg.Timeout == 0 && cfg.TimeoutText != "" {
		d, err := parseTimeout(cfg.TimeoutText)
		if err != nil {
			return nil, err
		}
		cfg.Timeout = d
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.HTTP == nil {
		cfg.HTTP = &http.Client{}
	}
	host, _ := os.Hostname()
	return &Backend{cfg: cfg, host: host, api: &API{URL: cfg.APIURL, Key: cfg.APIKey, HTTP: cfg.HTTP, Retries: 3}}, nil
}

// parseTimeout reads --e2b_timeout: a Go duration ("30m") or seconds.
func parseTimeout(s string) (time.Duration, error) {
	if n, err := strconv.Atoi(s); err == nil && n > 0 {
		return time.Duration(n) * time.Second, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < time.Second {
		return 0, fmt.Errorf("e2b: --e2b_timeout %q: want a duration of at least 1s (\"30m\") or seconds", s)
	}
	return d, nil
}

// API is the backend's control-plane client.
func (b *Backend) API() *API { return b.api }

// Open creates a sandbox from the template of spec's image, uploads and
// starts the helper, and returns once it has answered.
func (b *Backend) Open(ctx context.Context, spec sandbox.Spec) (_ sandbox.Sandbox, err error) {
	if spec.Image == "" {
		return nil, fmt.Errorf("e2b: open: no image given")
	}
	template, err := b.cfg.Templates.Resolve(spec.Image, spec.Task)
	if err != nil {
		return nil, err
	}
	user, err := envdUser(spec.User)
	if err != nil {
		return nil, err
	}
	shimPath, err := shim.Binary(b.cfg.ShimPath)
	if b.skipStaticCheck {
		shimPath, err = b.cfg.ShimPath, nil
	}
	if err != nil {
		return nil, err
	}
	meta := maps.Clone(spec.Labels)
	if meta == nil {
		meta = map[string]string{}
	}
	maps.Copy(meta, map[string]string{
		MetaManaged:   "true",
		MetaImage:     spec.Image,
		MetaOwnerPID:  strconv.Itoa(os.Getpid()),
		MetaOwnerHost: b.host,
	})
	if b.cfg.RunID != "" {
		meta[MetaRun] = b.cfg.RunID
	}
	if spec.Task != "" {
		meta[MetaTask] = spec.Task
	}
	internet := spec.Network == sandbox.NetworkBridge || spec.Network == sandbox.NetworkHost
	created, err := b.api.Create(ctx, CreateRequest{
		TemplateID:          template,
		Timeout:             int(b.cfg.Timeout / time.Second),
		Metadata:            meta,
		AllowInternetAccess: &internet,
	})
	if err != nil {
		if errors.Is(err, sandbox.ErrNotFound) {
			return nil, fmt.Errorf("%w (template %s for image %s)", err, template, spec.Image)
		}
		return nil, err
	}
	box := &Box{api: b.api, id: created.SandboxID, stderr: &shim.TailBuffer{}, stop: make(chan struct{})}
	defer func() {
		if err != nil {
			box.Close(context.WithoutCancel(ctx))
		}
	}()
	envdURL := b.cfg.SandboxURL
	if envdURL == "" {
		domain := b.cfg.Domain
		if created.Domain != nil && *created.Domain != "" {
			domain = *created.Domain
		}
		envdURL = fmt.Sprintf("https://%d-%s.%s", EnvdPort, created.SandboxID, domain)
	}
	box.envd = &Envd{URL: envdURL, SandboxID: created.SandboxID, Token: created.EnvdAccessToken, User: user, HTTP: b.cfg.HTTP}
	if err := waitHealthy(ctx, box.envd); err != nil {
		return nil, err
	}
	f, err := os.Open(shimPath)
	if err != nil {
		return nil, fmt.Errorf("e2b: read helper: %w", err)
	}
	err = box.envd.Upload(ctx, shim.InBoxPath, f)
	f.Close()
	if err != nil {
		return nil, err
	}
	if err := box.startHelper(ctx, spec); err != nil {
		return nil, err
	}
	go box.renew(b.cfg.Timeout)
	return box, nil
}

// envdUser is the user envd runs the helper as: a user name (envd resolves
// names only), root by default.
func envdUser(u string) (string, error) {
	name, _, _ := strings.Cut(u, ":")
	switch {
	case name == "":
		return "root", nil
	case name == "0":
		return "root", nil
	}
	if _, err := strconv.Atoi(name); err == nil {
		return "", fmt.Errorf("e2b: user %q: envd runs processes as a user name, not a uid", u)
	}
	return name, nil
}

// waitHealthy waits for envd to answer /health (it does at once on E2B;
// a few seconds on a plane that starts containers lazily).
func waitHealthy(ctx context.Context, e *Envd) error {
	deadline := time.Now().Add(30 * time.Second)
	for {
		hctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		err := e.Health(hctx)
		cancel()
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return fmt.Errorf("e2b: sandbox %s: envd not ready: %w", e.SandboxID, ctx.Err())
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("e2b: sandbox %s: envd not ready after 30s: %w", e.SandboxID, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// startHelper starts `swerve shim` through envd, with stdin open, and
// connects a shim client to its stdin and stdout.
func (b *Box) startHelper(ctx context.Context, spec sandbox.Spec) error {
	envs := map[string]string{}
	for _, kv := range spec.Env {
		k, v, _ := strings.Cut(kv, "=")
		envs[k] = v
	}
	pr, pw := io.Pipe()
	// The helper outlives Open's ctx: its stream lasts until Close.
	streamCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	b.cancelStream = cancel
	p, err := b.envd.Start(streamCtx, ProcessConfig{
		Cmd:  "/bin/sh",
		Args: []string{"-c", "chmod 0755 " + shim.InBoxPath + " && exec " + shim.InBoxPath + " shim"},
		Envs: envs,
		Cwd:  spec.Workdir,
	}, StartOptions{Stdin: true, Stdout: pw, Stderr: b.stderr})
	if err != nil {
		return err
	}
	b.proc = p
	go func() {
		<-p.Done()
		err := p.Err
		if err == nil {
			err = fmt.Errorf("the helper exited with status %d", p.ExitCode)
		}
		pw.CloseWithError(err)
	}()
	b.Client = shim.NewClient(pr, &stdinWriter{ctx: streamCtx, envd: b.envd, pid: p.PID})
	b.Client.Describe = b.describe
	if _, err := b.Client.Hello(ctx); err != nil {
		return fmt.Errorf("e2b: the helper in sandbox %s did not answer: %w", b.id, err)
	}
	return nil
}

// Box is one E2B sandbox.
type Box struct {
	// Forward carries commands, files, tools and shells to the helper.
	shim.Forward
	api          *API
	envd         *Envd
	id           string
	proc         *Process
	stderr       *shim.TailBuffer
	cancelStream context.CancelFunc
	stop         chan struct{}

	closeOnce sync.Once
	closeErr  error
}

var (
	_ sandbox.Sandbox = (*Box)(nil)
	_ sandbox.Tooler  = (*Box)(nil)
	_ sandbox.Shell   = (*Box)(nil)
)

// ID is the sandbox id.
func (b *Box) ID() string { return b.id }

// Envd is the box's envd client.
func (b *Box) Envd() *Envd { return b.envd }

func (b *Box) describe(err error) error {
	if tail := strings.TrimSpace(b.stderr.String()); tail != "" {
		return fmt.Errorf("sandbox %s: %w (helper stderr: %s)", b.id, err, tail)
	}
	return fmt.Errorf("sandbox %s: %w", b.id, err)
}

// renew keeps the sandbox alive while the box is open: E2B kills a
// sandbox when its timeout passes, so it is set again every third of it.
func (b *Box) renew(timeout time.Duration) {
	t := time.NewTicker(max(timeout/3, time.Second))
	defer t.Stop()
	for {
		select {
		case <-b.stop:
			return
		case <-t.C:
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			err := b.api.SetTimeout(ctx, b.id, timeout)
			cancel()
			if errors.Is(err, sandbox.ErrNotFound) {
				return // gone: commands will say so
			}
		}
	}
}

// Close kills the sandbox. It is idempotent.
func (b *Box) Close(ctx context.Context) error {
	b.closeOnce.Do(func() {
		close(b.stop)
		if b.Client != nil {
			b.Client.Shutdown()
		}
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
		defer cancel()
		err := b.api.Kill(ctx, b.id)
		if err != nil && !errors.Is(err, sandbox.ErrNotFound) {
			b.closeErr = err
		}
		if b.cancelStream != nil {
			b.cancelStream()
		}
	})
	return b.closeErr
}

// Leftovers lists swerve's sandboxes whose owner is gone (see
// sandbox.Collector): made on this host by a process that no longer runs;
// with All, every swerve sandbox of the account.
func (b *Backend) Leftovers(ctx context.Context, opts sandbox.LeftoverOptions) ([]sandbox.Leftover, error) {
	match := map[string]string{MetaManaged: "true"}
	if opts.RunID != "" {
		match[MetaRun] = opts.RunID
	}
	list, err := b.api.List(ctx, match)
	if err != nil {
		return nil, err
	}
	var out []sandbox.Leftover
	for _, s := range list {
		if s.Metadata[MetaManaged] != "true" || (opts.RunID != "" && s.Metadata[MetaRun] != opts.RunID) {
			continue // a plane that ignores the filter
		}
		if !opts.All {
			pid, _ := strconv.Atoi(s.Metadata[MetaOwnerPID])
			if s.Metadata[MetaOwnerHost] != b.host || sandbox.ProcessAlive(pid) {
				continue
			}
		}
		out = append(out, sandbox.Leftover{ID: s.SandboxID, Image: s.Metadata[MetaImage], RunID: s.Metadata[MetaRun], Task: s.Metadata[MetaTask]})
	}
	return out, nil
}

// Remove kills a leftover sandbox; one already gone is not an error.
func (b *Backend) Remove(ctx context.Context, l sandbox.Leftover) error {
	if err := b.api.Kill(ctx, l.ID); err != nil && !errors.Is(err, sandbox.ErrNotFound) {
		return err
	}
	return nil
}
