package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/spf13/pflag"

	"github.com/swerve-dev/swerve/internal/reward/history"
	"github.com/swerve-dev/swerve/internal/sandbox"
	"github.com/swerve-dev/swerve/internal/sandbox/docker"
	"github.com/swerve-dev/swerve/internal/sandbox/pool"
	"github.com/swerve-dev/swerve/internal/task"
)

// boxFlags are the flags of commands that open a task's box.
type boxFlags struct {
	Backend string
	Pull    string
	Network string
	Image   string
	Source  string
	Workdir string
	CPUs    float64
	Memory  int64
	PIDs    int64
	// CapAdd and Unhardened relax the container backends' hardening.
	CapAdd     []string
	Unhardened bool
	// Params holds the registered backends' own settings (sandbox.Param),
	// one flag each.
	Params paramFlags
	// warm, when set (--prewarm), opens boxes through warm pools.
	warm *warmPools
	// HistoryImages: agent boxes on a backend that builds images open from
	// a copy of the task's image whose repository was stripped once
	// (package history); prepared keeps those copies, warned says the
	// fallback was reported.
	HistoryImages bool
	prepared      history.Images
	warned        atomic.Bool
}

// Default limits of a container box (the local backend has none): enough
// for a repository's build and test suite, not for a fork bomb or a leak
// to take the machine.
const (
	DefaultCPUs      = 2
	DefaultMemoryMiB = 4096
	DefaultPIDs      = 1024
)

func (f *boxFlags) register(fs *pflag.FlagSet) {
	fs.StringVar(&f.Backend, "backend", "auto", "sandbox backend: auto (docker when the task has an image and an engine answers, else local), "+strings.Join(sandbox.Names(), ", "))
	fs.StringVar(&f.Pull, "pull", sandbox.PullMissing, "when to pull the task's image: missing, always, never")
	fs.StringVar(&f.Network, "network", sandbox.NetworkNone, "box network: none, bridge, host")
	fs.StringVar(&f.Image, "image", "", "use this image instead of the task's")
	fs.StringVar(&f.Source, "source", "", "local backend: host directory to copy as the repository (default: the task's source_dir)")
	fs.StringVar(&f.Workdir, "workdir", "", "working directory in the box (default: the image's)")
	fs.Float64Var(&f.CPUs, "cpus", DefaultCPUs, "container box: CPU limit (0: none)")
	fs.Int64Var(&f.Memory, "memory_mb", DefaultMemoryMiB, "container box: memory limit in MiB (0: none)")
	fs.Int64Var(&f.PIDs, "pids", DefaultPIDs, "container box: process limit (0: none)")
	fs.StringSliceVar(&f.CapAdd, "cap_add", nil, "container box: Linux capabilities to add to the minimal set boxes keep ("+strings.Join(docker.MinimalCaps, ",")+"), e.g. SYS_PTRACE")
	fs.BoolVar(&f.HistoryImages, "history_images", true, "container backends that build images (docker, podman): strip each task image's repository of everything past its base commit once, into a derived image (swerve-nofuture:<hash>) agent boxes open from; false: strip in every agent box (every box is proved either way)")
	fs.BoolVar(&f.Unhardened, "unhardened", false, "container box: keep the engine's default capabilities and let programs gain privileges (sudo, setuid); limits and --network still apply")
	f.Params = registerParams(fs)
	setFlagGroup(fs, groupBox, "pull", "network", "image", "source", "workdir", "cpus", "memory_mb", "pids", "cap_add", "history_images", "unhardened")
}

// paramFlags are the registered backends' own settings (sandbox.Param) as
// flags, by name.
type paramFlags map[string]*string

// registerParams adds a flag for every registered backend setting.
func registerParams(fs *pflag.FlagSet) paramFlags {
	pf := paramFlags{}
	for _, p := range sandbox.Params() {
		// The flag itself defaults to empty, so that an unset flag gives
		// way to the environment variable, then to the default
		// (sandbox.Options.Param); help shows both.
		var notes []string
		if p.Env != "" {
			notes = append(notes, "env "+p.Env)
		}
		if p.Default != "" {
			notes = append(notes, "default "+strconv.Quote(p.Default))
		}
		usage := p.Usage
		if len(notes) > 0 {
			usage += " (" + strings.Join(notes, "; ") + ")"
		}
		pf[p.Name] = fs.String(p.Name, "", usage)
		setFlagGroup(fs, groupBackend, p.Name)
	}
	return pf
}

// values are the settings given (sandbox.Options.Params).
func (pf paramFlags) values() map[string]string {
	params := make(map[string]string, len(pf))
	for name, v := range pf {
		if v != nil && *v != "" {
			params[name] = *v
		}
	}
	return params
}

// options are the sandbox.Options every box of this command is opened with.
func (f *boxFlags) options() sandbox.Options {
	// SWERVE_SHIM_BINARY names another static swerve to run inside boxes
	// (for a dynamically linked build, or tests).
	return sandbox.Options{RunID: "cli-" + strconv.Itoa(os.Getpid()), ShimPath: os.Getenv("SWERVE_SHIM_BINARY"), Params: f.Params.values()}
}

// check refuses an unknown --backend, or one this build does not have,
// before anything starts; with probe it also asks the named backend (or
// auto's choice) whether it answers, for commands that open many boxes.
// Probes see the backend settings given as flags (f.options), as the boxes
// will.
func (f *boxFlags) check(ctx context.Context, probe bool) error {
	if !probe {
		if f.Backend == "" || f.Backend == "auto" {
			return nil
		}
		_, _, err := sandbox.Resolve(ctx, f.Backend, f.options())
		return err
	}
	_, err := sandbox.Check(ctx, f.Backend, f.options())
	return err
}

// needsImage says whether t's box starts from an image under these flags:
// auto copies a host directory only for a task that names no image and
// has a directory to copy.
func (f *boxFlags) needsImage(t task.Task) bool {
	return t.Image != "" || f.Image != "" || (t.SourceDir == "" && f.Source == "")
}

// checkTasks is check with probe for the boxes of tasks, before any of
// them opens: under auto, when one of them starts from an image, a backend
// that starts images must answer (sandbox.CheckImage's one line
// otherwise: the engine's error and the ways out).
func (f *boxFlags) checkTasks(ctx context.Context, tasks []task.Task) error {
	if f.Backend != "" && f.Backend != "auto" {
		_, err := sandbox.Check(ctx, f.Backend, f.options())
		return err
	}
	for _, t := range tasks {
		if f.needsImage(t) {
			_, err := sandbox.CheckImage(ctx, f.Backend, f.options())
			return err
		}
	}
	return nil
}

// resolve is check with probe, returning the backend --backend names, or
// the one auto picks for tasks with an image.
func (f *boxFlags) resolve(ctx context.Context) (string, error) {
	return sandbox.Check(ctx, f.Backend, f.options())
}

// openRepo opens t's box and finds the repository in it (--workdir, else
// the box's own): the opener run, serve and the session surfaces share.
func (f *boxFlags) openRepo(ctx context.Context, t *task.Task) (sandbox.Sandbox, string, error) {
	return f.openRepoFor(ctx, t, false)
}

// openAgentRepo is openRepo for a box an agent will work in: with
// --history_images, from the image's prepared copy.
func (f *boxFlags) openAgentRepo(ctx context.Context, t *task.Task) (sandbox.Sandbox, string, error) {
	return f.openRepoFor(ctx, t, true)
}

func (f *boxFlags) openRepoFor(ctx context.Context, t *task.Task, agent bool) (sandbox.Sandbox, string, error) {
	box, _, err := f.openFor(ctx, *t, io.Discard, agent)
	if err != nil {
		return nil, "", err
	}
	wd, err := repoDir(ctx, box, f.Workdir)
	if err != nil {
		box.Close(context.WithoutCancel(ctx))
		return nil, "", fmt.Errorf("task %s: %w", t.InstanceID, err)
	}
	return box, wd, nil
}

// open starts a box for t on the chosen backend (through its warm pool
// under --prewarm). Notes about the choice go to stderr.
func (f *boxFlags) open(ctx context.Context, t task.Task, stderr io.Writer) (sandbox.Sandbox, string, error) {
	return f.openFor(ctx, t, stderr, false)
}

// openFor is open; agent says an agent will work in the box.
func (f *boxFlags) openFor(ctx context.Context, t task.Task, stderr io.Writer, agent bool) (sandbox.Sandbox, string, error) {
	name, spec, err := f.boxSpec(ctx, t, stderr)
	if err != nil {
		return nil, "", err
	}
	var b sandbox.Backend
	if f.warm != nil {
		b, err = f.warm.backend(ctx, name, f.options())
	} else {
		b, err = sandbox.New(ctx, name, f.options())
	}
	if err != nil {
		return nil, "", err
	}
	if agent && f.HistoryImages {
		// Through a warm pool, the prepared copy is what its warm boxes
		// were opened from (see warmPools.expect).
		inner := b
		if p, ok := b.(*pool.Pool); ok {
			inner = p.Backend()
		}
		spec = f.preparedSpec(ctx, inner, spec)
	}
	box, err := b.Open(ctx, spec)
	if err != nil {
		return nil, "", fmt.Errorf("task %s: %w", t.InstanceID, err)
	}
	return box, name, nil
}

// boxSpec is the backend and the spec of t's box under these flags.
func (f *boxFlags) boxSpec(ctx context.Context, t task.Task, stderr io.Writer) (string, sandbox.Spec, error) {
	backend := f.Backend
	resolve := sandbox.Resolve
	if f.needsImage(t) {
		resolve = sandbox.ResolveImage // auto: never the host in an image's place
	} else if backend == "" || backend == "auto" {
		backend = "local" // nothing to start a container from, but a directory to copy
	}
	name, skipped, err := resolve(ctx, backend, f.options())
	if err != nil {
		return "", sandbox.Spec{}, err
	}
	for _, s := range skipped {
		fmt.Fprintf(stderr, "swerve: backend %s\n", s)
	}
	spec := sandbox.Spec{
		Image:        f.Image,
		Workdir:      f.Workdir,
		Network:      f.Network,
		Pull:         f.Pull,
		PullProgress: stderr,
		Limits:       sandbox.Limits{CPUs: f.CPUs, MemoryMiB: f.Memory, PIDs: f.PIDs},
		Security:     sandbox.Security{CapAdd: f.CapAdd, Unhardened: f.Unhardened},
		Task:         t.InstanceID,
	}
	if name == "local" {
		spec.Image = f.Source
		if spec.Image == "" {
			spec.Image = t.SourceDir
		}
		if spec.Image == "" {
			return "", sandbox.Spec{}, fmt.Errorf("task %s: source_dir: the local backend needs a host directory to copy as the repository; the task has none (pass --source DIR, or use a container backend)", t.InstanceID)
		}
	} else if spec.Image == "" {
		spec.Image = t.Image
		if spec.Image == "" {
			return "", sandbox.Spec{}, fmt.Errorf("task %s: image: the task names no image (pass --image)", t.InstanceID)
		}
	}
	return name, spec, nil
}

// oneTask loads the dataset and picks the task named by --instance_id.
func oneTask(df *datasetFlags, load func() ([]task.Task, error)) (task.Task, error) {
	if len(df.InstanceIDs) != 1 {
		return task.Task{}, fmt.Errorf("--instance_id: name exactly one task (got %d)", len(df.InstanceIDs))
	}
	tasks, err := load()
	if err != nil {
		return task.Task{}, err
	}
	for _, t := range tasks {
		if t.InstanceID == df.InstanceIDs[0] {
			return t, nil
		}
	}
	return task.Task{}, fmt.Errorf("--instance_id: no task %q in %s", df.InstanceIDs[0], df.Dataset)
}

// preparedSpec is spec with its image replaced by the prepared copy (see
// history.Prepare) when the backend builds images; the task's image when
// it cannot, or preparing fails (reported once: every agent box is then
// stripped on its own, which costs a rewrite of its history).
func (f *boxFlags) preparedSpec(ctx context.Context, b sandbox.Backend, spec sandbox.Spec) sandbox.Spec {
	if _, ok := b.(history.Builder); !ok || spec.Image == "" {
		return spec
	}
	if p, ok := b.(interface {
		PrepareImage(ctx context.Context, image, pull string, progress io.Writer) error
	}); ok {
		if err := p.PrepareImage(ctx, spec.Image, spec.Pull, io.Discard); err != nil {
			return spec // Open says why
		}
	}
	out, _, err := f.prepared.AgentSpec(ctx, b, spec)
	if err != nil && f.warned.CompareAndSwap(false, true) {
		fmt.Fprintf(os.Stderr, "swerve: history: %v; agent boxes of this image are stripped one by one\n", err)
	}
	return out
}
