package sandbox

import (
	"context"
	"fmt"
	"os"
	"slices"
	"sort"
	"strings"
	"sync"
)

// Registration describes a backend to the registry.
type Registration struct {
	// Name is what --backend selects, e.g. "docker".
	Name string
	// Description is one line for --help.
	Description string
	// New creates the backend. It should not contact anything slow; Probe
	// does that.
	New func(ctx context.Context, opts Options) (Backend, error)
	// Probe reports whether the backend can be used here (engine reachable),
	// with a reason when it cannot, under the settings New would get (a
	// --k8s_kubeconfig given as a flag is in opts.Params). Nil means always
	// available.
	Probe func(ctx context.Context, opts Options) error
	// Aliases are other names --backend accepts for it (upstream's
	// spellings: "kubernetes" for "k8s", "singularity" for "apptainer").
	Aliases []string
	// HostDir marks a backend whose boxes are copies of a host directory
	// (Spec.Image names the directory): it cannot start a task's image,
	// so "auto" never picks it for a box that needs one (ResolveImage).
	HostDir bool
	// Params are the backend's own settings. Every command with --backend
	// offers each as a flag --NAME; the backend reads them with
	// Options.Param.
	Params []Param
}

// Param is one backend setting: a command-line flag, an environment
// variable that fills it when the flag is not given, and a default.
type Param struct {
	// Name is the flag's name without dashes, prefixed with the backend's
	// name ("k8s_namespace", "sif_template", "e2b_template_map").
	Name string
	// Env, when set, is read when the flag is empty ("E2B_API_KEY").
	Env string
	// Default is used when neither the flag nor Env is set.
	Default string
	// Usage is the flag's one-line help.
	Usage string
}

// Options are backend-independent settings passed to Registration.New.
type Options struct {
	// RunID labels every box so that a later gc can find them.
	RunID string
	// ShimPath is the static swerve binary to run inside boxes; empty
	// means the running executable.
	ShimPath string
	// Params holds the values of backend settings given on the command
	// line (or by a config file), by Param.Name; see Param.
	Params map[string]string
}

// Param returns the setting name: its value in o.Params, else its Env
// variable, else its registered Default. A name no backend registered
// gives only what o.Params holds.
func (o Options) Param(name string) string {
	if v := o.Params[name]; v != "" {
		return v
	}
	p, ok := LookupParam(name)
	if !ok {
		return ""
	}
	if p.Env != "" {
		if v := os.Getenv(p.Env); v != "" {
			return v
		}
	}
	return p.Default
}

// LookupParam finds a registered backend setting by name.
func LookupParam(name string) (Param, bool) {
	mu.RLock()
	defer mu.RUnlock()
	for _, r := range backends {
		for _, p := range r.Params {
			if p.Name == name {
				return p, true
			}
		}
	}
	return Param{}, false
}

// Params lists every registered backend's settings, sorted by name.
func Params() []Param {
	mu.RLock()
	defer mu.RUnlock()
	var ps []Param
	for _, r := range backends {
		ps = append(ps, r.Params...)
	}
	slices.SortFunc(ps, func(a, b Param) int { return strings.Compare(a.Name, b.Name) })
	return ps
}

var (
	mu       sync.RWMutex
	backends = map[string]*Registration{}
	aliases  = map[string]string{} // alias -> name
)

// Register adds a backend. It panics on an empty or duplicate name: that is
// a programming error.
func Register(r *Registration) {
	mu.Lock()
	defer mu.Unlock()
	if r == nil || r.Name == "" || r.New == nil {
		panic("sandbox: Register with empty name or nil New")
	}
	if _, dup := backends[r.Name]; dup {
		panic("sandbox: Register called twice for backend " + r.Name)
	}
	for _, a := range r.Aliases {
		if _, dup := backends[a]; dup {
			panic("sandbox: alias " + a + " is a backend's name")
		}
		if _, dup := aliases[a]; dup {
			panic("sandbox: alias " + a + " registered twice")
		}
	}
	for _, p := range r.Params {
		for _, o := range backends {
			for _, q := range o.Params {
				if q.Name == p.Name {
					panic("sandbox: param " + p.Name + " registered twice")
				}
			}
		}
	}
	backends[r.Name] = r
	for _, a := range r.Aliases {
		aliases[a] = r.Name
	}
}

// Canonical returns the backend name an alias stands for, or name itself.
func Canonical(name string) string {
	mu.RLock()
	defer mu.RUnlock()
	if n, ok := aliases[name]; ok {
		return n
	}
	return name
}

// Lookup returns the registration of a backend.
func Lookup(name string) (*Registration, error) {
	mu.RLock()
	defer mu.RUnlock()
	if n, ok := aliases[name]; ok {
		name = n
	}
	r, ok := backends[name]
	if !ok {
		return nil, fmt.Errorf("sandbox: unknown backend %q (have %v): %w", name, namesLocked(), ErrNotFound)
	}
	return r, nil
}

// Names lists the registered backends, sorted.
func Names() []string {
	mu.RLock()
	defer mu.RUnlock()
	return namesLocked()
}

func namesLocked() []string {
	names := make([]string, 0, len(backends))
	for n := range backends {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// New creates the named backend.
func New(ctx context.Context, name string, opts Options) (Backend, error) {
	r, err := Lookup(name)
	if err != nil {
		return nil, err
	}
	b, err := r.New(ctx, opts)
	if err != nil {
		return nil, fmt.Errorf("sandbox: backend %s: %w", name, err)
	}
	return b, nil
}

// Known lists what --backend accepts here: auto and the registered
// backends, each with its aliases ("k8s (kubernetes)").
func Known() []string {
	mu.RLock()
	defer mu.RUnlock()
	out := []string{"auto"}
	for _, n := range namesLocked() {
		if a := backends[n].Aliases; len(a) > 0 {
			n += " (" + strings.Join(a, ", ") + ")"
		}
		out = append(out, n)
	}
	return out
}

// Check says before any task starts whether --backend name can be used:
// an unknown name and an explicitly named backend that does not answer are
// one error each. "auto" (or "") passes when some backend of AutoOrder
// answers. Probes see opts, the
// settings the backend will be created with. It returns the backend auto
// would choose, or name.
func Check(ctx context.Context, name string, opts Options) (string, error) {
	return check(ctx, name, opts, false)
}

// CheckImage is Check for commands whose boxes start from images (the
// tasks name one): "auto" passes only when a backend that starts images
// answers, and fails otherwise with ResolveImage's one line.
func CheckImage(ctx context.Context, name string, opts Options) (string, error) {
	return check(ctx, name, opts, true)
}

func check(ctx context.Context, name string, opts Options, image bool) (string, error) {
	if name == "" || name == "auto" {
		got, _, err := resolve(ctx, name, opts, image)
		return got, err
	}
	r, err := lookupKnown(name)
	if err != nil {
		return "", err
	}
	if r.Probe != nil {
		if err := r.Probe(ctx, opts); err != nil {
			return "", fmt.Errorf("--backend %s: not available here: %w", name, err)
		}
	}
	return Canonical(name), nil
}

// lookupKnown is Lookup with the error a user should see for a name no
// backend (or alias) has: one line listing what --backend accepts.
func lookupKnown(name string) (*Registration, error) {
	r, err := Lookup(name)
	if err == nil {
		return r, nil
	}
	return nil, &backendError{fmt.Sprintf("--backend %s: unknown backend (available: %s)", name, strings.Join(Known(), ", ")), ErrNotFound}
}

// backendError is a --backend the user can fix: its line, and the kind
// (ErrNotFound) for errors.Is, which the line leaves out.
type backendError struct {
	msg  string
	kind error
}

func (e *backendError) Error() string { return e.msg }
func (e *backendError) Unwrap() error { return e.kind }

// AutoOrder is the order in which "auto" tries backends.
var AutoOrder = []string{"docker", "local"}

// Resolve turns "auto" (or "") into the first backend of AutoOrder whose
// probe succeeds under opts, and checks any other name exists. It returns
// the chosen name and, for auto, why earlier backends were passed over.
func Resolve(ctx context.Context, name string, opts Options) (string, []string, error) {
	return resolve(ctx, name, opts, false)
}

// ResolveImage is Resolve for a box that starts from an image: "auto"
// passes over the backends that only copy a host directory (HostDir), so
// that a task naming an image never runs on the host in its place. When
// no backend that starts images answers, the error is one line — each
// probe's reason and the ways out — and wraps ErrUnavailable.
func ResolveImage(ctx context.Context, name string, opts Options) (string, []string, error) {
	return resolve(ctx, name, opts, true)
}

func resolve(ctx context.Context, name string, opts Options, image bool) (string, []string, error) {
	if name != "" && name != "auto" {
		_, err := lookupKnown(name)
		return Canonical(name), nil, err
	}
	var skipped []string
	for _, n := range AutoOrder {
		r, err := Lookup(n)
		if err != nil || (image && r.HostDir) {
			continue
		}
		if r.Probe == nil {
			return n, skipped, nil
		}
		if err := r.Probe(ctx, opts); err != nil {
			skipped = append(skipped, fmt.Sprintf("%s: %v", n, err))
			continue
		}
		return n, skipped, nil
	}
	if image {
		why := "no container backend is registered"
		if len(skipped) > 0 {
			// The kind each probe's error wraps says nothing here.
			why = strings.ReplaceAll(strings.Join(skipped, "; ")+";", ": "+ErrUnavailable.Error()+";", ";")
			why = strings.TrimSuffix(why, ";")
		}
		return "", skipped, &backendError{"--backend auto: the task names an image and no container engine answers (" + why +
			"): start the engine, or pass --backend local to run tasks that have a source_dir on this host", ErrUnavailable}
	}
	return "", skipped, fmt.Errorf("sandbox: no backend available (%v): %w", slices.Clip(skipped), ErrUnavailable)
}
