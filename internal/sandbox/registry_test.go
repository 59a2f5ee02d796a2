package sandbox

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
)

type nopBackend struct{}

func (nopBackend) Open(context.Context, Spec) (Sandbox, error) { return nil, errors.New("nop") }

// withRegistry runs fn with a registry holding only regs, then restores it.
func withRegistry(t *testing.T, order []string, regs ...*Registration) {
	t.Helper()
	mu.Lock()
	saved, savedAliases, savedOrder := backends, aliases, AutoOrder
	backends, aliases = map[string]*Registration{}, map[string]string{}
	AutoOrder = order
	mu.Unlock()
	t.Cleanup(func() {
		mu.Lock()
		backends, aliases, AutoOrder = saved, savedAliases, savedOrder
		mu.Unlock()
	})
	for _, r := range regs {
		Register(r)
	}
}

func reg(name string, probe error) *Registration {
	r := &Registration{Name: name, New: func(context.Context, Options) (Backend, error) { return nopBackend{}, nil }}
	if probe != nil {
		r.Probe = func(context.Context, Options) error { return probe }
	}
	return r
}

// regAlias is reg with aliases; probe, when given, is its probe's error.
func regAlias(name, alias string, probe ...error) *Registration {
	var err error
	if len(probe) > 0 {
		err = probe[0]
	}
	r := reg(name, err)
	r.Aliases = []string{alias}
	return r
}

func TestResolve(t *testing.T) {
	down := errors.New("engine down")
	tests := []struct {
		name        string
		regs        []*Registration
		ask         string
		want        string
		wantSkipped int
		wantErr     error
	}{
		{"explicit", []*Registration{reg("docker", down), reg("local", nil)}, "docker", "docker", 0, nil},
		{"auto takes the first that answers", []*Registration{reg("docker", nil), reg("local", nil)}, "auto", "docker", 0, nil},
		{"auto skips a dead engine", []*Registration{reg("docker", down), reg("local", nil)}, "", "local", 1, nil},
		{"auto with nothing available", []*Registration{reg("docker", down)}, "auto", "", 1, ErrUnavailable},
		{"unknown name", []*Registration{reg("local", nil)}, "podmann", "", 0, ErrNotFound},
		{"alias", []*Registration{regAlias("k8s", "kubernetes"), reg("local", nil)}, "kubernetes", "k8s", 0, nil},
		{"a backend not registered", []*Registration{reg("local", nil)}, "k8s", "", 0, ErrNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			withRegistry(t, []string{"docker", "local"}, tt.regs...)
			got, skipped, err := Resolve(context.Background(), tt.ask, Options{})
			if !errors.Is(err, tt.wantErr) || (tt.wantErr == nil && got != tt.want) || len(skipped) != tt.wantSkipped {
				t.Errorf("Resolve(%q) = %q, %v, %v; want %q, %d skipped, %v", tt.ask, got, skipped, err, tt.want, tt.wantSkipped, tt.wantErr)
			}
		})
	}
}

func TestRegisterTwicePanics(t *testing.T) {
	withRegistry(t, nil, reg("x", nil))
	defer func() {
		if r := recover(); r == nil || !strings.Contains(r.(string), "twice") {
			t.Errorf("second Register: recover() = %v, want a panic naming the duplicate", r)
		}
	}()
	Register(reg("x", nil))
}

func TestNewUnknownSaysWhatExists(t *testing.T) {
	withRegistry(t, nil, reg("local", nil))
	_, err := New(context.Background(), "dokcer", Options{})
	if !errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), "dokcer") || !strings.Contains(err.Error(), "local") {
		t.Errorf("New(dokcer) = %v; want ErrNotFound naming the typo and the backends there are", err)
	}
}

// TestCheck: what --backend accepts before any task starts.
func TestCheck(t *testing.T) {
	down := errors.New("engine down")
	tests := []struct {
		name    string
		regs    []*Registration
		ask     string
		want    string
		wantErr error
		msg     string
	}{
		{"registered and up", []*Registration{reg("docker", nil), reg("local", nil)}, "docker", "docker", nil, ""},
		{"auto falls back", []*Registration{reg("docker", down), reg("local", nil)}, "auto", "local", nil, ""},
		{"named but down", []*Registration{reg("docker", down), reg("local", nil)}, "docker", "", down, "--backend docker: not available here: engine down"},
		{"alias", []*Registration{regAlias("k8s", "kubernetes"), reg("local", nil)}, "kubernetes", "k8s", nil, ""},
		{"alias of a backend that does not answer", []*Registration{reg("docker", nil), regAlias("k8s", "kubernetes", down)}, "kubernetes", "", down, "--backend kubernetes: not available here: engine down"},
		{"a backend not registered", []*Registration{reg("docker", nil), reg("local", nil)}, "kubernetes", "", ErrNotFound, "--backend kubernetes: unknown backend (available: auto, docker, local)"},
		{"typo", []*Registration{reg("docker", nil), reg("local", nil)}, "dokcer", "", ErrNotFound, "--backend dokcer: unknown backend (available: auto, docker, local)"},
		{"typo lists aliases", []*Registration{regAlias("k8s", "kubernetes"), reg("local", nil)}, "kubernets", "", ErrNotFound, "--backend kubernets: unknown backend (available: auto, k8s (kubernetes), local)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			withRegistry(t, []string{"docker", "local"}, tt.regs...)
			got, err := Check(context.Background(), tt.ask, Options{})
			if !errors.Is(err, tt.wantErr) || got != tt.want || (tt.msg != "" && !strings.Contains(err.Error(), tt.msg)) {
				t.Errorf("Check(%q) = %q, %v; want %q, %v (%q)", tt.ask, got, err, tt.want, tt.wantErr, tt.msg)
			}
			if err != nil && (strings.Contains(err.Error(), "\n") || strings.HasSuffix(err.Error(), ": unavailable") || strings.HasSuffix(err.Error(), ": not found")) {
				t.Errorf("Check(%q): error is not one line: %q", tt.ask, err)
			}
		})
	}
}

// TestProbeSeesOptions: Check and Resolve hand a probe the settings the
// backend will be created with.
func TestProbeSeesOptions(t *testing.T) {
	var got []string
	r := reg("docker", nil)
	r.Probe = func(_ context.Context, opts Options) error {
		got = append(got, opts.Param("docker_where"))
		return nil
	}
	withRegistry(t, []string{"docker", "local"}, r, reg("local", nil))
	opts := Options{Params: map[string]string{"docker_where": "there"}}
	if _, err := Check(context.Background(), "docker", opts); err != nil {
		t.Fatal(err)
	}
	if _, err := Check(context.Background(), "auto", opts); err != nil {
		t.Fatal(err)
	}
	if _, _, err := Resolve(context.Background(), "", opts); err != nil {
		t.Fatal(err)
	}
	if want := []string{"there", "there", "there"}; !slices.Equal(got, want) {
		t.Errorf("probes saw %q, want %q", got, want)
	}
}

// TestResolveImage: a box that starts from an image never lands on a
// backend that only copies a host directory, and "auto" with no engine
// is one line naming the engine's error and the ways out.
func TestResolveImage(t *testing.T) {
	down := errors.New("dial unix /nowhere/docker.sock: connect: no such file or directory")
	host := func() *Registration { r := reg("local", nil); r.HostDir = true; return r }
	tests := []struct {
		name    string
		regs    []*Registration
		ask     string
		want    string
		wantErr error
		msg     []string
	}{
		{"engine up", []*Registration{reg("docker", nil), host()}, "auto", "docker", nil, nil},
		{"engine down: no fallback to the host", []*Registration{reg("docker", down), host()}, "auto", "", ErrUnavailable,
			[]string{"--backend auto: the task names an image and no container engine answers (docker: dial unix /nowhere/docker.sock", "--backend local"}},
		{"empty name is auto", []*Registration{reg("docker", down), host()}, "", "", ErrUnavailable, []string{"no container engine answers"}},
		{"no container backend at all", []*Registration{host()}, "auto", "", ErrUnavailable, []string{"no container backend is registered"}},
		{"a named backend is taken as named", []*Registration{reg("docker", down), host()}, "local", "local", nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			withRegistry(t, []string{"docker", "local"}, tt.regs...)
			got, _, err := ResolveImage(context.Background(), tt.ask, Options{})
			if !errors.Is(err, tt.wantErr) || got != tt.want {
				t.Fatalf("ResolveImage(%q) = %q, %v; want %q, %v", tt.ask, got, err, tt.want, tt.wantErr)
			}
			for _, m := range tt.msg {
				if !strings.Contains(err.Error(), m) {
					t.Errorf("ResolveImage(%q) error %q lacks %q", tt.ask, err, m)
				}
			}
			if err != nil && strings.Contains(err.Error(), "\n") {
				t.Errorf("error is not one line: %q", err)
			}
			gotC, errC := CheckImage(context.Background(), tt.ask, Options{})
			if !errors.Is(errC, tt.wantErr) || gotC != tt.want {
				t.Errorf("CheckImage(%q) = %q, %v; want %q, %v", tt.ask, gotC, errC, tt.want, tt.wantErr)
			}
			// Without an image, auto still takes the host backend.
			if tt.ask == "auto" && len(tt.regs) == 2 {
				if got, _, err := Resolve(context.Background(), "auto", Options{}); err != nil || got == "" {
					t.Errorf("Resolve(auto) = %q, %v; want a backend", got, err)
				}
			}
		})
	}
}
