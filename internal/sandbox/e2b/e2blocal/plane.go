// Package e2blocal is a local E2B control plane for tests and development:
// it serves the routes of E2B's REST API that the official SDKs and
// swerve's e2b backend use (create, list, get, connect, set timeout, kill;
// shaped per e2b-dev/infra's spec/openapi.yml) and starts each sandbox as
// a Docker container of the template's image, with a real envd
// bind-mounted at /mnt/envd as its main process (`-isnotfc -port 49983`,
// the way Tencent AGS injects it). Requests for envd are proxied to the
// right container, chosen by the E2b-Sandbox-Id header or a
// 49983-<id>.<domain> host, as the SDKs address them. A sandbox is killed
// when its timeout passes or it is killed. It listens on the loopback only.
//
// E2B's real control plane runs Firecracker microVMs, which a CI machine
// cannot; the data plane (envd) here is E2B's own.
package e2blocal

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"

	"github.com/swerve-dev/swerve/internal/sandbox/e2b"
)

// Label marks the containers of local planes, for clean-up.
const Label = "swerve.e2blocal"

// InternalNetwork is the Docker network of sandboxes created without
// internet access: reachable from this machine, with no route out. It
// does not cut them off from this machine, though: a sandbox on it
// connects to any of the machine's addresses (the network's gateway is
// one), so whatever listens on all interfaces here is open to it (the
// plane itself listens on the loopback only). Sandboxes on it also reach
// each other; each envd's access token is what keeps one from driving
// another's (TestSandboxCannotDriveAnother).
const InternalNetwork = "swerve-e2blocal-internal"

// Config configures a plane.
type Config struct {
	// Envd is the envd binary on this machine (static, linux).
	Envd string
	// Templates maps template ids to local images. A template id that is
	// not in it is taken as an image name when AnyImage is set.
	Templates map[string]string
	AnyImage  bool
	// APIKey is the key clients must send as X-API-Key.
	APIKey string
	// Domain is returned to clients as the sandboxes' domain.
	Domain string
	// Docker is the engine client; nil means one from the environment.
	Docker *client.Client
	// Logger gets one line per sandbox event; nil means slog's default.
	Logger *slog.Logger
}

// Plane is a running local control plane.
type Plane struct {
	cfg         Config
	docker      *client.Client
	envdVersion string
	id          string // labels this plane's containers
	log         *slog.Logger

	mu    sync.Mutex
	boxes map[string]*box

	netOnce sync.Once
	netErr  error
}

type box struct {
	id, template, image, container, token string
	addr                                  string // ip:49983
	meta                                  map[string]string
	started, end                          time.Time
	timer                                 *time.Timer
	proxy                                 *httputil.ReverseProxy
	// transport is the box's own: container addresses are reused once a
	// container is gone, and a pooled connection to a dead one must never
	// carry a request for its successor.
	transport *http.Transport
}

// New makes a plane; Handler serves it and Close kills its sandboxes.
func New(ctx context.Context, cfg Config) (*Plane, error) {
	if cfg.Envd == "" {
		return nil, errors.New("e2blocal: no envd binary given")
	}
	out, err := exec.CommandContext(ctx, cfg.Envd, "-version").Output()
	if err != nil {
		return nil, fmt.Errorf("e2blocal: envd %s -version: %w", cfg.Envd, err)
	}
	if cfg.Domain == "" {
		cfg.Domain = "e2b.local"
	}
	p := &Plane{cfg: cfg, envdVersion: strings.TrimSpace(string(out)), boxes: map[string]*box{}, log: cfg.Logger, id: randomHex(6)}
	if p.log == nil {
		p.log = slog.Default()
	}
	p.docker = cfg.Docker
	if p.docker == nil {
		if p.docker, err = client.New(client.FromEnv); err != nil {
			return nil, fmt.Errorf("e2blocal: docker: %w", err)
		}
	}
	return p, nil
}

// EnvdVersion is the version envd reports.
func (p *Plane) EnvdVersion() string { return p.envdVersion }

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// Handler serves the REST API and proxies envd traffic.
func (p *Plane) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /sandboxes", p.auth(p.create))
	mux.HandleFunc("GET /sandboxes", p.auth(p.list))
	mux.HandleFunc("GET /v2/sandboxes", p.auth(p.list))
	mux.HandleFunc("GET /sandboxes/{id}", p.auth(p.get))
	mux.HandleFunc("DELETE /sandboxes/{id}", p.auth(p.kill))
	mux.HandleFunc("POST /sandboxes/{id}/timeout", p.auth(p.setTimeout))
	mux.HandleFunc("POST /sandboxes/{id}/connect", p.auth(p.connect))
	// Newer SDKs (e2b 2.5x) create and connect under /v2.
	mux.HandleFunc("POST /v2/sandboxes", p.auth(p.create))
	mux.HandleFunc("POST /v2/sandboxes/{id}/connect", p.auth(p.connect))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if id := envdTarget(r); id != "" {
			p.proxyEnvd(w, r, id)
			return
		}
		mux.ServeHTTP(w, r)
	})
}

// envdTarget is the sandbox an envd request is for: the E2b-Sandbox-Id
// header, or the id in a 49983-<id>.<domain> host.
func envdTarget(r *http.Request) string {
	if id := r.Header.Get("E2b-Sandbox-Id"); id != "" {
		return id
	}
	host, _, err := net.SplitHostPort(r.Host)
	if err != nil {
		host = r.Host
	}
	if rest, ok := strings.CutPrefix(host, fmt.Sprint(e2b.EnvdPort)+"-"); ok {
		id, _, _ := strings.Cut(rest, ".")
		return id
	}
	return ""
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

// apiError writes the API's Error body.
func apiError(w http.ResponseWriter, code int, msg string) {
	writeJSON(w, code, map[string]any{"code": code, "message": msg})
}

func (p *Plane) auth(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if key := r.Header.Get("X-API-Key"); key == "" || key != p.cfg.APIKey {
			apiError(w, http.StatusUnauthorized, "Invalid API key")
			return
		}
		h(w, r)
	}
}

func (p *Plane) lookup(id string) *box {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.boxes[id]
}

func (p *Plane) create(w http.ResponseWriter, r *http.Request) {
	var req e2b.CreateRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil || req.TemplateID == "" {
		apiError(w, http.StatusBadRequest, "body must be a NewSandbox with templateID")
		return
	}
	image, ok := p.cfg.Templates[req.TemplateID]
	if !ok && p.cfg.AnyImage {
		image = req.TemplateID
	}
	if image == "" {
		apiError(w, http.StatusNotFound, fmt.Sprintf("template '%s' not found", req.TemplateID))
		return
	}
	insp, err := p.docker.ImageInspect(r.Context(), image)
	if err != nil {
		apiError(w, http.StatusNotFound, fmt.Sprintf("template '%s' not found (image %s: %v)", req.TemplateID, image, err))
		return
	}
	// E2B starts a template's processes in the workdir it was built with.
	workdir := ""
	if insp.Config != nil {
		workdir = insp.Config.WorkingDir
	}
	timeout := time.Duration(req.Timeout) * time.Second
	if req.Timeout == 0 {
		timeout = 15 * time.Second // the API's default
	}
	internet := req.AllowInternetAccess == nil || *req.AllowInternetAccess
	b, err := p.start(r.Context(), req, image, workdir, internet)
	if err != nil {
		apiError(w, http.StatusInternalServerError, err.Error())
		return
	}
	p.mu.Lock()
	b.end = time.Now().Add(timeout)
	b.timer = time.AfterFunc(timeout, func() { p.expire(b.id) })
	p.boxes[b.id] = b
	p.mu.Unlock()
	p.log.Info("e2blocal: sandbox created", "sandbox", b.id, "template", req.TemplateID, "image", image)
	writeJSON(w, http.StatusCreated, p.sandboxJSON(b))
}

func (p *Plane) sandboxJSON(b *box) map[string]any {
	return map[string]any{
		"templateID":      b.template,
		"sandboxID":       b.id,
		"clientID":        "local",
		"envdVersion":     p.envdVersion,
		"envdAccessToken": b.token,
		"domain":          p.cfg.Domain,
	}
}

func (p *Plane) listedJSON(b *box) map[string]any {
	meta := b.meta
	if meta == nil {
		meta = map[string]string{}
	}
	return map[string]any{
		"templateID":  b.template,
		"sandboxID":   b.id,
		"clientID":    "local",
		"startedAt":   b.started.UTC().Format(time.RFC3339Nano),
		"endAt":       b.end.UTC().Format(time.RFC3339Nano),
		"cpuCount":    1,
		"memoryMB":    512,
		"diskSizeMB":  1024,
		"metadata":    meta,
		"state":       "running",
		"envdVersion": p.envdVersion,
	}
}

// ensureNetwork creates the internal network once.
func (p *Plane) ensureNetwork(ctx context.Context) error {
	p.netOnce.Do(func() {
		if _, err := p.docker.NetworkInspect(ctx, InternalNetwork, client.NetworkInspectOptions{}); err == nil {
			return
		}
		_, err := p.docker.NetworkCreate(ctx, InternalNetwork, client.NetworkCreateOptions{Driver: "bridge", Internal: true, Labels: map[string]string{Label: "true"}})
		if err != nil && !strings.Contains(err.Error(), "already exists") {
			p.netErr = fmt.Errorf("e2blocal: create network %s: %w", InternalNetwork, err)
		}
	})
	return p.netErr
}

// start runs the container, waits for envd and initialises it with the
// sandbox's access token.
func (p *Plane) start(ctx context.Context, req e2b.CreateRequest, image, workdir string, internet bool) (_ *box, err error) {
	network := "bridge"
	if !internet {
		if err := p.ensureNetwork(ctx); err != nil {
			return nil, err
		}
		network = InternalNetwork
	}
	b := &box{id: "i" + randomHex(10), template: req.TemplateID, image: image, token: randomHex(16), meta: req.Metadata, started: time.Now()}
	created, err := p.docker.ContainerCreate(ctx, client.ContainerCreateOptions{
		Name: "e2blocal-" + b.id,
		Config: &container.Config{
			Image:      image,
			Entrypoint: []string{"/mnt/envd"},
			Cmd:        []string{"-isnotfc", "-port", fmt.Sprint(e2b.EnvdPort)},
			User:       "root",
			Labels:     map[string]string{Label: p.id, Label + ".sandbox": b.id},
		},
		HostConfig: &container.HostConfig{
			NetworkMode: container.NetworkMode(network),
			Binds:       []string{p.cfg.Envd + ":/mnt/envd:ro"},
			Init:        new(false),
		},
	})
	if err != nil {
		return nil, fmt.Errorf("create container from %s: %w", image, err)
	}
	b.container = created.ID
	defer func() {
		if err != nil {
			p.remove(b)
		}
	}()
	if _, err := p.docker.ContainerStart(ctx, created.ID, client.ContainerStartOptions{}); err != nil {
		return nil, fmt.Errorf("start container from %s: %w", image, err)
	}
	insp, err := p.docker.ContainerInspect(ctx, created.ID, client.ContainerInspectOptions{})
	if err != nil {
		return nil, fmt.Errorf("inspect container: %w", err)
	}
	var ip string
	if insp.Container.NetworkSettings != nil {
		for _, n := range insp.Container.NetworkSettings.Networks {
			if n != nil && n.IPAddress.IsValid() {
				ip = n.IPAddress.String()
			}
		}
	}
	if ip == "" {
		return nil, errors.New("container has no IP address")
	}
	b.addr = net.JoinHostPort(ip, fmt.Sprint(e2b.EnvdPort))
	target := &url.URL{Scheme: "http", Host: b.addr}
	b.transport = &http.Transport{DisableCompression: true, MaxIdleConnsPerHost: 16, IdleConnTimeout: time.Minute}
	b.proxy = &httputil.ReverseProxy{
		Transport: b.transport,
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(target)
			pr.Out.Host = target.Host
		},
		FlushInterval: -1,
		ErrorLog:      log.New(io.Discard, "", 0),
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			apiError(w, http.StatusBadGateway, "sandbox "+b.id+" unreachable: "+err.Error())
		},
	}
	if err := p.initEnvd(ctx, b, req.EnvVars, workdir); err != nil {
		return nil, err
	}
	return b, nil
}

// initEnvd waits for envd's /health, then posts /init with the access
// token (with -isnotfc, envd trusts the first token it gets), as E2B's
// orchestrator does.
func (p *Plane) initEnvd(ctx context.Context, b *box, envVars map[string]string, workdir string) error {
	hc := &http.Client{Timeout: 5 * time.Second}
	deadline := time.Now().Add(60 * time.Second)
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+b.addr+"/health", nil)
		resp, err := hc.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode/100 == 2 {
				break
			}
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("envd in %s did not become healthy: %v", b.image, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	init := map[string]any{
		"accessToken": b.token,
		"envVars":     envVars,
		"defaultUser": "root",
	}
	if workdir != "" {
		init["defaultWorkdir"] = workdir
	}
	body, _ := json.Marshal(init)
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+b.addr+"/init", strings.NewReader(string(body)))
	req.Header.Set("Content-Type", "application/json")
	resp, err := hc.Do(req)
	if err != nil {
		return fmt.Errorf("envd /init: %w", err)
	}
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("envd /init: HTTP %d", resp.StatusCode)
	}
	return nil
}

func (p *Plane) list(w http.ResponseWriter, r *http.Request) {
	match, err := e2b.DecodeMetadataQuery(r.URL.Query().Get("metadata"))
	if err != nil {
		apiError(w, http.StatusBadRequest, "metadata: "+err.Error())
		return
	}
	if states := r.URL.Query().Get("state"); states != "" && !slices.Contains(strings.Split(states, ","), "running") {
		writeJSON(w, http.StatusOK, []any{})
		return
	}
	template := r.URL.Query().Get("template")
	p.mu.Lock()
	out := []any{}
	for _, b := range p.boxes {
		ok := template == "" || template == b.template
		for k, v := range match {
			if b.meta[k] != v {
				ok = false
			}
		}
		if ok {
			out = append(out, p.listedJSON(b))
		}
	}
	p.mu.Unlock()
	writeJSON(w, http.StatusOK, out)
}

func (p *Plane) get(w http.ResponseWriter, r *http.Request) {
	b := p.lookup(r.PathValue("id"))
	if b == nil {
		apiError(w, http.StatusNotFound, fmt.Sprintf("sandbox \"%s\" doesn't exist or you don't have access to it", r.PathValue("id")))
		return
	}
	p.mu.Lock()
	v := p.listedJSON(b)
	p.mu.Unlock()
	v["envdAccessToken"] = b.token
	v["domain"] = p.cfg.Domain
	writeJSON(w, http.StatusOK, v)
}

func (p *Plane) connect(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	var req struct {
		Timeout int `json:"timeout"`
	}
	_ = json.NewDecoder(r.Body).Decode(&req)
	b := p.lookup(id)
	if b == nil {
		apiError(w, http.StatusNotFound, fmt.Sprintf("sandbox \"%s\" doesn't exist or you don't have access to it", id))
		return
	}
	if req.Timeout > 0 {
		p.extend(b, time.Duration(req.Timeout)*time.Second, true)
	}
	writeJSON(w, http.StatusOK, p.sandboxJSON(b))
}

func (p *Plane) setTimeout(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	var req struct {
		Timeout *int `json:"timeout"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil || req.Timeout == nil || *req.Timeout < 0 {
		apiError(w, http.StatusBadRequest, "body must be a SandboxTimeoutRequest with timeout ≥ 0")
		return
	}
	b := p.lookup(id)
	if b == nil {
		apiError(w, http.StatusNotFound, fmt.Sprintf("sandbox \"%s\" doesn't exist or you don't have access to it", id))
		return
	}
	p.extend(b, time.Duration(*req.Timeout)*time.Second, false)
	w.WriteHeader(http.StatusNoContent)
}

// extend sets a sandbox's end to d from now (onlyLonger: never earlier).
func (p *Plane) extend(b *box, d time.Duration, onlyLonger bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	end := time.Now().Add(d)
	if onlyLonger && end.Before(b.end) {
		return
	}
	b.end = end
	b.timer.Reset(d)
}

func (p *Plane) kill(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	p.mu.Lock()
	b := p.boxes[id]
	delete(p.boxes, id)
	p.mu.Unlock()
	if b == nil {
		apiError(w, http.StatusNotFound, fmt.Sprintf("sandbox \"%s\" doesn't exist or you don't have access to it", id))
		return
	}
	b.timer.Stop()
	p.remove(b)
	p.log.Info("e2blocal: sandbox killed", "sandbox", id)
	w.WriteHeader(http.StatusNoContent)
}

func (p *Plane) expire(id string) {
	p.mu.Lock()
	b := p.boxes[id]
	if b != nil && time.Now().Before(b.end) {
		p.mu.Unlock()
		return // extended meanwhile
	}
	delete(p.boxes, id)
	p.mu.Unlock()
	if b != nil {
		p.log.Info("e2blocal: sandbox timed out", "sandbox", id)
		p.remove(b)
	}
}

func (p *Plane) remove(b *box) {
	if b.transport != nil {
		b.transport.CloseIdleConnections()
	}
	if b.container == "" {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, _ = p.docker.ContainerRemove(ctx, b.container, client.ContainerRemoveOptions{Force: true})
}

func (p *Plane) proxyEnvd(w http.ResponseWriter, r *http.Request, id string) {
	b := p.lookup(id)
	if b == nil {
		// What E2B's proxy answers for a sandbox that is not running.
		apiError(w, http.StatusBadGateway, fmt.Sprintf("The sandbox %s was not found", id))
		return
	}
	b.proxy.ServeHTTP(w, r)
}

// Running counts the plane's live sandboxes.
func (p *Plane) Running() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.boxes)
}

// Close kills every sandbox of the plane.
func (p *Plane) Close() error {
	p.mu.Lock()
	boxes := p.boxes
	p.boxes = map[string]*box{}
	p.mu.Unlock()
	var wg sync.WaitGroup
	for _, b := range boxes {
		b.timer.Stop()
		wg.Go(func() { p.remove(b) })
	}
	wg.Wait()
	return nil
}

// Server is a plane listening on the loopback.
type Server struct {
	*Plane
	// URL is the plane's address: both E2B_API_URL and E2B_SANDBOX_URL.
	URL string
	srv *http.Server
	ln  net.Listener
}

// Serve starts a plane on addr (a loopback address; "" picks a free port
// on 127.0.0.1).
func Serve(ctx context.Context, cfg Config, addr string) (*Server, error) {
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("e2blocal: listen address %q: %w", addr, err)
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return nil, fmt.Errorf("e2blocal: listen address %q: the local plane serves the loopback only", addr)
	}
	p, err := New(ctx, cfg)
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("e2blocal: %w", err)
	}
	s := &Server{Plane: p, URL: "http://" + ln.Addr().String(), ln: ln, srv: &http.Server{Handler: p.Handler(), ReadHeaderTimeout: 30 * time.Second}}
	go func() { _ = s.srv.Serve(ln) }()
	return s, nil
}

// Close stops serving and kills every sandbox.
func (s *Server) Close() error {
	_ = s.srv.Close()
	return s.Plane.Close()
}

// APIKey is the key the plane accepts.
func (p *Plane) APIKey() string { return p.cfg.APIKey }
