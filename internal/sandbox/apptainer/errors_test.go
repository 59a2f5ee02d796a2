package apptainer

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/swerve-dev/swerve/internal/sandbox"
)

func TestExpandTemplate(t *testing.T) {
	img := "swebench/sweb.eval.x86_64.django_1776_django-16901:latest"
	cases := []struct {
		tmpl, want, err string
	}{
		{"/images/{instance_id}.sif", "/images/django__django-16901.sif", ""},
		// NeMo Gym's cache_dir_template as its README passes it through Hydra.
		{`/path/to/images/xingyaoww_sweb.eval.x86_64.\{instance_id\}.sif`, "/path/to/images/xingyaoww_sweb.eval.x86_64.django__django-16901.sif", ""},
		{"/sif/{image}.sif", "/sif/swebench_sweb.eval.x86_64.django_1776_django-16901_latest.sif", ""},
		{"/a/{{x}}/{instance_id}", "/a/{x}/django__django-16901", ""},
		{"/plain.sif", "/plain.sif", ""},
		{"/images/{task}.sif", "", "unknown field {task}"},
		{"/images/{instance_id.sif", "", "unclosed {"},
		{"/images/}x", "", "unmatched }"},
	}
	for _, tc := range cases {
		got, err := ExpandTemplate(tc.tmpl, "django__django-16901", img)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) || !strings.Contains(err.Error(), tc.tmpl) {
				t.Errorf("ExpandTemplate(%q) = %q, %v; want an error naming the template and %q", tc.tmpl, got, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("ExpandTemplate(%q) = %q, %v; want %q", tc.tmpl, got, err, tc.want)
		}
	}
	if _, err := ExpandTemplate("/i/{instance_id}.sif", "", img); err == nil {
		t.Error("ExpandTemplate with no instance id: no error")
	}
}

func TestMissingCaps(t *testing.T) {
	cases := []struct {
		prm  string
		want []string
	}{
		{"000001ffffffffff", nil},
		// Root in this project's VMs: CAP_SYS_RESOURCE (24) missing.
		{"000001fffeffffff", []string{"CAP_SYS_RESOURCE"}},
		{"000001fffefffffe", []string{"CAP_CHOWN", "CAP_SYS_RESOURCE"}},
	}
	for _, tc := range cases {
		got, err := MissingCaps(tc.prm)
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("MissingCaps(%s) = %v, %v; want %v", tc.prm, got, err, tc.want)
		}
	}
	if _, err := MissingCaps("zz"); err == nil {
		t.Error("MissingCaps(zz): no error")
	}
}

func TestDropCapsSetting(t *testing.T) {
	if got, err := dropCaps("sys_resource, CAP_NET_RAW"); err != nil || !slices.Equal(got, []string{"CAP_SYS_RESOURCE", "CAP_NET_RAW"}) {
		t.Errorf("dropCaps(list) = %v, %v", got, err)
	}
	if got, err := dropCaps("none"); err != nil || got != nil {
		t.Errorf("dropCaps(none) = %v, %v", got, err)
	}
	if _, err := dropCaps("CAP_NOPE"); err == nil || !strings.Contains(err.Error(), ParamDropCaps) {
		t.Errorf("dropCaps(CAP_NOPE) = %v, want an error naming --%s", err, ParamDropCaps)
	}
	// A hardened root box keeps only the minimal set (and what it adds).
	drop, err := boxDropCaps([]string{"CAP_SYS_RESOURCE"}, true, true, []string{"SYS_PTRACE"})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range append(slices.Clone(MinimalCaps), "CAP_SYS_PTRACE") {
		if slices.Contains(drop, c) {
			t.Errorf("hardened box drops %s", c)
		}
	}
	for _, c := range []string{"CAP_SYS_ADMIN", "CAP_SYS_RESOURCE", "CAP_NET_RAW"} {
		if !slices.Contains(drop, c) {
			t.Errorf("hardened box keeps %s", c)
		}
	}
	if drop, _ := boxDropCaps([]string{"CAP_SYS_RESOURCE"}, false, true, nil); !slices.Equal(drop, []string{"CAP_SYS_RESOURCE"}) {
		t.Errorf("unhardened box drops %v, want only CAP_SYS_RESOURCE", drop)
	}
}

// fakeApptainer writes an apptainer that only logs its arguments and
// fails, so that no test here needs the real one.
func fakeApptainer(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "apptainer")
	if err := os.WriteFile(p, []byte("#!/bin/sh\necho \"fake apptainer: $*\" >&2\nexit 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestErrors(t *testing.T) {
	ctx := context.Background()
	t.Run("missing binary", func(t *testing.T) {
		t.Setenv("PATH", t.TempDir())
		_, err := New(ctx, Config{})
		if !errors.Is(err, ErrNoBinary) || !errors.Is(err, sandbox.ErrUnavailable) || !strings.Contains(err.Error(), "install Apptainer") {
			t.Errorf("New without apptainer = %v; want ErrNoBinary saying what to install", err)
		}
		_, err = New(ctx, Config{Binary: "/nowhere/apptainer"})
		if !errors.Is(err, ErrNoBinary) || !strings.Contains(err.Error(), "/nowhere/apptainer") {
			t.Errorf("New with a wrong --%s = %v; want ErrNoBinary naming it", ParamBinary, err)
		}
	})
	t.Run("unknown template field", func(t *testing.T) {
		_, err := New(ctx, Config{Binary: fakeApptainer(t), SIFTemplate: "/images/{name}.sif"})
		if err == nil || !strings.Contains(err.Error(), "unknown field {name}") || !strings.Contains(err.Error(), "/images/{name}.sif") {
			t.Errorf("New with {name} = %v; want an error naming the field and the template", err)
		}
	})
	t.Run("missing sif", func(t *testing.T) {
		dir := t.TempDir()
		tmpl := filepath.Join(dir, "{instance_id}.sif")
		b, err := New(ctx, Config{Binary: fakeApptainer(t), SIFTemplate: tmpl, StateDir: dir, Options: sandbox.Options{ShimPath: fakeApptainer(t)}})
		if err != nil {
			t.Fatal(err)
		}
		b.shimOnce.Do(func() { b.shim = "/bin/true" }) // no static binary needed to fail earlier
		_, err = b.Open(ctx, sandbox.Spec{Task: "django__django-16901"})
		if !errors.Is(err, sandbox.ErrNotFound) || !strings.Contains(err.Error(), "django__django-16901") || !strings.Contains(err.Error(), tmpl) {
			t.Errorf("Open with a missing .sif = %v; want ErrNotFound naming the task and the template", err)
		}
		if strings.Count(err.Error(), "\n") > 0 {
			t.Errorf("error is not one line: %q", err)
		}
	})
	t.Run("start fails", func(t *testing.T) {
		dir := t.TempDir()
		sif := filepath.Join(dir, "x.sif")
		os.WriteFile(sif, nil, 0o644)
		b, err := New(ctx, Config{Binary: fakeApptainer(t), StateDir: filepath.Join(dir, "state")})
		if err != nil {
			t.Fatal(err)
		}
		b.shimOnce.Do(func() { b.shim = "/bin/true" })
		_, err = b.Open(ctx, sandbox.Spec{Image: sif})
		if !errors.Is(err, errStart) || !strings.Contains(err.Error(), "fake apptainer: instance start") {
			t.Errorf("Open with a failing apptainer = %v; want its message", err)
		}
		// Nothing is left behind.
		if left, _ := filepath.Glob(filepath.Join(dir, "state", "*")); len(left) > 0 {
			t.Errorf("a failed Open left %v", left)
		}
	})
}

func TestStartArgs(t *testing.T) {
	// The arguments of instance start, seen through a fake apptainer that
	// records them.
	dir := t.TempDir()
	rec := filepath.Join(dir, "args")
	bin := filepath.Join(dir, "apptainer")
	os.WriteFile(bin, []byte("#!/bin/sh\necho \"$*\" >> "+rec+"\nexit 1\n"), 0o755)
	sif := filepath.Join(dir, "x.sif")
	os.WriteFile(sif, nil, 0o644)
	b, err := New(context.Background(), Config{Binary: bin, DropCaps: "CAP_SYS_RESOURCE", StateDir: filepath.Join(dir, "state")})
	if err != nil {
		t.Fatal(err)
	}
	b.shimOnce.Do(func() { b.shim = "/bin/true" })
	b.Open(context.Background(), sandbox.Spec{Image: sif, Limits: sandbox.Limits{CPUs: 1.5, MemoryMiB: 512, PIDs: 64}})
	data, _ := os.ReadFile(rec)
	line := strings.SplitN(string(data), "\n", 2)[0]
	for _, want := range []string{"instance start --containall --no-home", "-B /bin/true:/.swerve/swerve:ro", "--net --network none", "--drop-caps CAP_SYS_RESOURCE,", "--cpus 1.5 --memory 512M --pids-limit 64", sif + " swerve-"} {
		if !strings.Contains(line, want) {
			t.Errorf("instance start args %q lack %q", line, want)
		}
	}
}

// TestLimitsFallBack: when Apptainer cannot use cgroups (its default
// systemd manager without systemd as init), a box starts without limits
// instead of failing, and later boxes do not try again.
func TestLimitsFallBack(t *testing.T) {
	defer noLimits.Store(noLimits.Load())
	noLimits.Store(false)
	dir := t.TempDir()
	rec := filepath.Join(dir, "starts")
	bin := filepath.Join(dir, "apptainer")
	os.WriteFile(bin, []byte(`#!/bin/sh
case "$*" in
*"instance start"*--cpus*) echo "FATAL:   container creation failed: while applying cgroups config: cannot use cgroups - cannot use systemd cgroups manager, systemd not running as init on this host" >&2; exit 255;;
*"instance start"*) echo "$*" >> `+rec+`; exit 0;;
esac
exit 1
`), 0o755)
	sif := filepath.Join(dir, "x.sif")
	os.WriteFile(sif, nil, 0o644)
	b, err := New(context.Background(), Config{Binary: bin, StateDir: filepath.Join(dir, "state")})
	if err != nil {
		t.Fatal(err)
	}
	b.shimOnce.Do(func() { b.shim = "/bin/true" })
	for range 2 {
		// The fake's exec fails, so Open fails after the start.
		b.Open(context.Background(), sandbox.Spec{Image: sif, Limits: sandbox.Limits{CPUs: 1, MemoryMiB: 100}})
	}
	data, _ := os.ReadFile(rec)
	starts := strings.Split(strings.TrimSpace(string(data)), "\n")
	if len(starts) != 2 || strings.Contains(string(data), "--memory") {
		t.Errorf("starts that got through: %q; want two, without limits", starts)
	}
	if !noLimits.Load() {
		t.Error("limits are still tried after cgroups refused them")
	}
}

// TestBuildSharedLock: boxes (of this process or others) converting the
// same image at once run one apptainer build; the others wait on the lock
// file and take its .sif.
func TestBuildSharedLock(t *testing.T) {
	dir := t.TempDir()
	count := filepath.Join(dir, "builds")
	bin := filepath.Join(dir, "apptainer")
	// build -F OUT docker-daemon://IMG: count, take a while, write OUT.
	os.WriteFile(bin, []byte("#!/bin/sh\necho x >> "+count+"\nsleep 0.3\necho sif > \"$3\"\n"), 0o755)
	out := filepath.Join(dir, "cache", "abc.sif")
	errs := make(chan error, 4)
	for range 4 {
		// A Backend each, as every command and process has its own.
		b, err := New(context.Background(), Config{Binary: bin, SIFCache: filepath.Join(dir, "cache")})
		if err != nil {
			t.Fatal(err)
		}
		go func() { errs <- b.build(context.Background(), "img:tag", out) }()
	}
	for range 4 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	data, _ := os.ReadFile(count)
	if n := strings.Count(string(data), "x"); n != 1 {
		t.Errorf("%d builds for one image, want 1", n)
	}
	if got, _ := os.ReadFile(out); string(got) != "sif\n" {
		t.Errorf("%s = %q, want the build's output", out, got)
	}
	if left, _ := filepath.Glob(out + ".tmp.*"); len(left) > 0 {
		t.Errorf("temporary files left: %v", left)
	}
}
