// Package apptainer is the sandbox backend for Apptainer (formerly
// Singularity), the container runtime of Slurm clusters: each box is an
// Apptainer instance started from a .sif file, with swerve's helper
// bind-mounted at /.swerve/swerve and every command sent through one
// long-lived `apptainer exec instance://NAME /.swerve/swerve shim` whose
// stdin and stdout carry the helper protocol.
//
// The .sif for a task comes from --sif_template (a path with
// {instance_id}; NeMo Gym's cache_dir_template form is accepted as is), or,
// when no template is given or its file does not exist and the task's image
// is in the local Docker engine, from `apptainer build x.sif
// docker-daemon://IMAGE`, cached by image id in --apptainer_sif_cache
// (one build per image, however many boxes ask at once).
//
// Instances are named swerve-<pid>-<n>-<random>; a small state directory
// per box (its overlay, its /tmp, an owner file) lets swerve gc find and
// stop instances whose swerve process is gone.
package apptainer

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/swerve-dev/swerve/internal/sandbox"
	"github.com/swerve-dev/swerve/internal/shim"
)

// Name is the backend's registry name; Alias is upstream's older name.
const (
	Name  = "apptainer"
	Alias = "singularity"
)

// Param names: the flags every --backend command offers.
const (
	ParamSIFTemplate = "sif_template"
	ParamSIFCache    = "apptainer_sif_cache"
	ParamBinary      = "apptainer_binary"
	ParamDropCaps    = "apptainer_drop_caps"
)

// DropCapsAuto drops the capabilities this process does not hold itself
// (see MissingCaps); it is ParamDropCaps' default.
const DropCapsAuto = "auto"

func init() {
	sandbox.Register(&sandbox.Registration{
		Name:        Name,
		Aliases:     []string{Alias},
		Description: "Apptainer/Singularity instances from .sif files (--sif_template, or converted from a local Docker image)",
		New: func(ctx context.Context, opts sandbox.Options) (sandbox.Backend, error) {
			return New(ctx, Config{Options: opts})
		},
		Probe: func(_ context.Context, opts sandbox.Options) error {
			_, err := findBinary(opts.Param(ParamBinary))
			return err
		},
		Params: []sandbox.Param{
			{Name: ParamSIFTemplate, Env: "SWERVE_SIF_TEMPLATE", Usage: "apptainer: .sif path of a task, with {instance_id} (also NeMo Gym's cache_dir_template form, e.g. '/images/sweb.eval.x86_64.\\{instance_id\\}.sif'); empty: convert the task's local Docker image"},
			{Name: ParamSIFCache, Env: "SWERVE_SIF_CACHE", Usage: "apptainer: directory of .sif files converted from local Docker images, by image id (default ~/.cache/swerve/sif)"},
			{Name: ParamBinary, Env: "SWERVE_APPTAINER", Usage: "apptainer: the apptainer (or singularity) program (default: apptainer, else singularity, on PATH)"},
			{Name: ParamDropCaps, Env: "SWERVE_APPTAINER_DROP_CAPS", Default: DropCapsAuto, Usage: "apptainer: extra --drop-caps for every start and exec: auto (the capabilities swerve itself lacks, e.g. CAP_SYS_RESOURCE in some VMs), none, or a list CAP_A,CAP_B"},
		},
	})
}

// Config configures the backend; empty fields come from Options.Param.
type Config struct {
	sandbox.Options
	// Binary is the apptainer program.
	Binary string
	// SIFTemplate maps a task to its .sif (see ExpandTemplate).
	SIFTemplate string
	// SIFCache is where converted .sif files are kept.
	SIFCache string
	// DropCaps is DropCapsAuto, "none" or a comma-separated list.
	DropCaps string
	// StateDir holds one directory per box (overlay, /tmp, owner file);
	// empty means $TMPDIR/swerve-apptainer.
	StateDir string
}

// Backend starts Apptainer instances.
type Backend struct {
	bin      string
	template string
	sifCache string
	dropCaps []string // capabilities every start and exec drops
	stateDir string
	shimPath string
	shimOnce sync.Once
	shim     string
	shimErr  error
	runID    string
	// exec runs apptainer; tests replace it to see the arguments.
	exec func(ctx context.Context, args ...string) *exec.Cmd
}

var (
	_ sandbox.Backend   = (*Backend)(nil)
	_ sandbox.Collector = (*Backend)(nil)
)

// New checks the apptainer binary and the template, and returns the backend.
func New(_ context.Context, cfg Config) (*Backend, error) {
	param := func(v, name string) string {
		if v != "" {
			return v
		}
		return cfg.Param(name)
	}
	bin, err := findBinary(param(cfg.Binary, ParamBinary))
	if err != nil {
		return nil, err
	}
	tmpl := param(cfg.SIFTemplate, ParamSIFTemplate)
	if tmpl != "" {
		if _, err := ExpandTemplate(tmpl, "x", "x"); err != nil {
			return nil, err
		}
	}
	cache := param(cfg.SIFCache, ParamSIFCache)
	if cache == "" {
		dir, err := os.UserCacheDir()
		if err != nil {
			dir = os.TempDir()
		}
		cache = filepath.Join(dir, "swerve", "sif")
	}
	drop, err := dropCaps(param(cfg.DropCaps, ParamDropCaps))
	if err != nil {
		return nil, err
	}
	state := cfg.StateDir
	if state == "" {
		state = DefaultStateDir()
	}
	runID := cfg.RunID
	if runID == "" {
		runID = "adhoc-" + strconv.Itoa(os.Getpid())
	}
	b := &Backend{bin: bin, template: tmpl, sifCache: cache, dropCaps: drop, stateDir: state,
		shimPath: cfg.ShimPath, runID: runID}
	b.exec = func(ctx context.Context, args ...string) *exec.Cmd { return exec.CommandContext(ctx, b.bin, args...) }
	return b, nil
}

// DefaultStateDir is where boxes keep their state unless Config says.
func DefaultStateDir() string { return filepath.Join(os.TempDir(), "swerve-apptainer") }

// Binary is the apptainer program the backend runs.
func (b *Backend) Binary() string { return b.bin }

// DropCaps lists the capabilities every start and exec drops.
func (b *Backend) DropCaps() []string { return b.dropCaps }

// ErrNoBinary is wrapped by the error for a missing apptainer program.
var ErrNoBinary = fmt.Errorf("apptainer not found: %w", sandbox.ErrUnavailable)

// findBinary resolves the apptainer program: the given path or name, else
// apptainer, else singularity, on PATH.
func findBinary(want string) (string, error) {
	names := []string{"apptainer", "singularity"}
	if want != "" {
		names = []string{want}
	}
	for _, n := range names {
		if p, err := exec.LookPath(n); err == nil {
			return p, nil
		}
	}
	if want != "" {
		return "", fmt.Errorf("--%s %s: no such program (install Apptainer: https://apptainer.org/docs/admin/main/installation.html, or scripts/cluster/build-apptainer.sh builds it from the Go module proxy): %w", ParamBinary, want, ErrNoBinary)
	}
	return "", fmt.Errorf("neither apptainer nor singularity is on PATH (install Apptainer: https://apptainer.org/docs/admin/main/installation.html, or scripts/cluster/build-apptainer.sh builds it from the Go module proxy; or give --%s): %w", ParamBinary, ErrNoBinary)
}

// shimBinary resolves (once) the helper binary to bind into boxes.
func (b *Backend) shimBinary() (string, error) {
	b.shimOnce.Do(func() { b.shim, b.shimErr = shim.Binary(b.shimPath) })
	return b.shim, b.shimErr
}

// isCgroupErr reports whether an instance start failed because Apptainer
// cannot use cgroups here (no systemd as init with "systemd cgroups = yes",
// or an unprivileged user on cgroup v1).
func isCgroupErr(out string) bool {
	return containsAny(out, "cannot use cgroups", "while applying cgroups config", "cgroups are not", "cgroup manager")
}

var errStart = errors.New("instance did not start")

// State of this process shared by every Backend value (commands make one
// per box).
var (
	seq       atomic.Int64 // numbers instance names
	noLimits  atomic.Bool  // cgroups refused a start once: limits are skipped
	convertMu sync.Mutex
	converts  = map[string]*conversion{} // running conversions by image id
)
