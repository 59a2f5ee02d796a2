package demo

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/swerve-dev/swerve/internal/sandbox/docker"
)

// The base image's recipe. It is the one builder of BaseImage: `swerve
// demo` calls it, and so does scripts/test-image.sh (through `swerve demo
// base-image`) for the Docker tests, which rely on its working directory,
// environment and tools.
var (
	// basePackages are installed by debootstrap (variant minbase).
	basePackages = []string{"python3", "python3-pytest", "git", "patch", "procps"}
	// baseSetup runs in the new root (chroot) before it is imported: a
	// repository-shaped working directory and a git identity, as task
	// images have.
	baseSetup = [][]string{
		{"mkdir", "-p", "/testbed"},
		{"git", "config", "--system", "user.email", "swerve@localhost"},
		{"git", "config", "--system", "user.name", "swerve"},
		{"git", "config", "--system", "init.defaultBranch", "main"},
	}
	// baseChanges are the image's configuration (docker import --change).
	baseChanges = []string{
		"ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
		"ENV LANG=C.UTF-8",
		"WORKDIR /testbed",
		`CMD ["bash"]`,
	}
)

// BaseLabel is the label that stamps an image built by EnsureBase with the
// recipe it was built from (BaseRecipe).
const BaseLabel = "swerve.base-recipe"

// BaseRecipe returns a short hash of the base image's recipe: an image
// whose BaseLabel differs was built some other way, or by an older swerve,
// and EnsureBase rebuilds it.
func BaseRecipe() string {
	h := sha256.New()
	fmt.Fprintf(h, "bookworm minbase %q\n%q\n%q\n", basePackages, baseSetup, baseChanges)
	return hex.EncodeToString(h.Sum(nil))[:12]
}

// BaseOptions tune EnsureBase.
type BaseOptions struct {
	// Force rebuilds the image even when it carries this recipe's stamp.
	Force bool
	// Mirror is the Debian mirror for debootstrap; empty means the one apt
	// uses on this machine, else deb.debian.org.
	Mirror string
	// Progress receives one line per step.
	Progress io.Writer
}

// EnsureBase makes sure the engine has image ref built from this recipe:
// it keeps an image stamped with BaseRecipe and otherwise builds it without
// any registry, by debootstrapping a minimal Debian into a temporary
// directory and importing it (needs root and debootstrap, about a minute).
// It reports whether it built the image.
func EnsureBase(ctx context.Context, b *docker.Backend, ref string, opts BaseOptions) (bool, error) {
	progress := opts.Progress
	if progress == nil {
		progress = io.Discard
	}
	labels, ok, err := b.ImageLabels(ctx, ref)
	if err != nil {
		return false, fmt.Errorf("base image %s: %w", ref, err)
	}
	recipe := BaseRecipe()
	switch {
	case ok && labels[BaseLabel] == recipe && !opts.Force:
		return false, nil
	case ok && !opts.Force:
		fmt.Fprintf(progress, "swerve: base image %s was not built from this recipe (label %s=%q, want %q): rebuilding it\n", ref, BaseLabel, labels[BaseLabel], recipe)
	}
	if _, err := exec.LookPath("debootstrap"); err != nil {
		return false, fmt.Errorf("building %s needs debootstrap (apt-get install -y debootstrap)", ref)
	}
	if os.Geteuid() != 0 {
		return false, fmt.Errorf("building %s with debootstrap needs root", ref)
	}
	root, err := os.MkdirTemp("", "swerve-rootfs-")
	if err != nil {
		return false, err
	}
	defer os.RemoveAll(root)
	mirror := opts.Mirror
	if mirror == "" {
		mirror = aptMirror()
	}
	start := time.Now()
	fmt.Fprintf(progress, "swerve: building the base image %s with debootstrap from %s (about a minute, once)\n", ref, mirror)
	if err := quiet(exec.CommandContext(ctx, "debootstrap", "--variant=minbase", "--include="+strings.Join(basePackages, ","), "bookworm", root, mirror)); err != nil {
		return false, fmt.Errorf("debootstrap: %w", err)
	}
	for _, step := range baseSetup {
		if err := quiet(exec.CommandContext(ctx, "chroot", append([]string{root}, step...)...)); err != nil {
			return false, fmt.Errorf("base image %s: %s: %w", ref, strings.Join(step, " "), err)
		}
	}
	for _, glob := range []string{"var/cache/apt/archives/*.deb", "var/lib/apt/lists/*"} {
		files, _ := filepath.Glob(filepath.Join(root, glob))
		for _, f := range files {
			os.RemoveAll(f)
		}
	}
	tarCmd := exec.CommandContext(ctx, "tar", "-C", root, "-c", ".")
	stdout, err := tarCmd.StdoutPipe()
	if err != nil {
		return false, err
	}
	if err := tarCmd.Start(); err != nil {
		return false, err
	}
	changes := append(append([]string(nil), baseChanges...), fmt.Sprintf("LABEL %s=%s", BaseLabel, recipe))
	ierr := b.Import(ctx, stdout, ref, changes...)
	terr := tarCmd.Wait()
	if ierr != nil {
		return false, ierr
	}
	if terr != nil {
		return false, fmt.Errorf("tar the root filesystem: %w", terr)
	}
	fmt.Fprintf(progress, "swerve: base image %s built in %s\n", ref, time.Since(start).Round(time.Second))
	return true, nil
}

// quiet runs cmd and, when it fails, returns its last line of output.
func quiet(cmd *exec.Cmd) error {
	var log bytes.Buffer
	cmd.Stdout, cmd.Stderr = &log, &log
	if err := cmd.Run(); err != nil {
		lines := strings.Split(strings.TrimSpace(log.String()), "\n")
		return fmt.Errorf("%v: %s", err, lines[len(lines)-1])
	}
	return nil
}

// aptMirror returns the Debian mirror apt uses on this machine, else
// deb.debian.org.
func aptMirror() string {
	files, _ := filepath.Glob("/etc/apt/sources.list.d/*.sources")
	for _, f := range files {
		data, _ := os.ReadFile(f)
		for _, line := range strings.Split(string(data), "\n") {
			if v, ok := strings.CutPrefix(line, "URIs:"); ok {
				if f := strings.Fields(v); len(f) > 0 {
					return f[0]
				}
			}
		}
	}
	data, _ := os.ReadFile("/etc/apt/sources.list")
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.Fields(line)
		if len(f) >= 2 && f[0] == "deb" && !strings.HasPrefix(f[1], "[") {
			return f[1]
		}
	}
	return "http://deb.debian.org/debian"
}
