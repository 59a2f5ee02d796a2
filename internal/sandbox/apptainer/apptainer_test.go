package apptainer

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/swerve-dev/swerve/internal/reward/grader/kittest"
	"github.com/swerve-dev/swerve/internal/sandbox"
	"github.com/swerve-dev/swerve/internal/sandbox/sandboxtest"
	"github.com/swerve-dev/swerve/internal/testutil"
)

// required reports whether Apptainer tests must run (CI sets it through
// scripts/cluster/apptainer-ci.sh).
func required() bool { return os.Getenv("SWERVE_APPTAINER_TESTS") == "1" }

// testBackend returns a backend on the real apptainer, with its own state
// directory; it skips without SWERVE_APPTAINER_TESTS=1 and fails with it
// when apptainer cannot be found.
func testBackend(t testing.TB) *Backend {
	t.Helper()
	if !required() {
		t.Skip("apptainer tests need SWERVE_APPTAINER_TESTS=1 (eval \"$(scripts/cluster/apptainer-ci.sh)\" sets it up)")
	}
	b, err := New(context.Background(), Config{
		Options:  sandbox.Options{RunID: fmt.Sprintf("test-%d", os.Getpid()), ShimPath: testutil.SwerveBinary(t)},
		StateDir: filepath.Join(os.TempDir(), fmt.Sprintf("swerve-apptainer-test-%d", os.Getpid())),
	})
	if err != nil {
		t.Fatalf("SWERVE_APPTAINER_TESTS=1 but: %v", err)
	}
	t.Cleanup(func() { os.Remove(b.stateDir) }) // only when empty: boxes left are Leaks' to report
	return b
}

// leaks lists this process's instances and state directories still there.
func leaks(b *Backend) func(ctx context.Context) ([]string, error) {
	return func(ctx context.Context) ([]string, error) {
		names, err := b.Instances(ctx, fmt.Sprintf("%s%d-", NamePrefix, os.Getpid()))
		if err != nil {
			return nil, err
		}
		var out []string
		for _, n := range names {
			out = append(out, "instance "+n)
		}
		dirs, _ := filepath.Glob(filepath.Join(b.stateDir, NamePrefix+"*"))
		for _, d := range dirs {
			out = append(out, "state directory "+d)
		}
		return out, nil
	}
}

func TestConformance(t *testing.T) {
	b := testBackend(t)
	sandboxtest.Run(t, sandboxtest.Harness{
		Backend: b,
		Spec: func(testing.TB) sandbox.Spec {
			return sandbox.Spec{Image: testutil.TestImage(), Pull: sandbox.PullNever}
		},
		Leaks:    leaks(b),
		Parallel: 12,
	})
}

// TestKit grades the five real django tasks on Apptainer, from .sif files
// converted from their Docker images (cached by image id).
func TestKit(t *testing.T) {
	b := testBackend(t)
	kittest.Run(t, kittest.Harness{Backend: b})
	if l, err := leaks(b)(context.Background()); err != nil || len(l) > 0 {
		t.Errorf("after the kit: left %v (%v)", l, err)
	}
}

// TestBoxBasics checks what the suite does not: the spec's network, user
// and limits reach the box, and the instance is gone after Close.
func TestBoxBasics(t *testing.T) {
	b := testBackend(t)
	ctx := context.Background()
	cases := []struct {
		name string
		spec sandbox.Spec
		cmd  string
		want string
	}{
		{"no network", sandbox.Spec{}, "cat /proc/net/dev | tail -n +3 | cut -d: -f1 | tr -d ' '", "lo\n"},
		{"user", sandbox.Spec{User: "1000:1000"}, "id -u; id -g", "1000\n1000\n"},
		{"hardened", sandbox.Spec{}, "grep CapEff /proc/self/status | cut -f2", "00000000000004fb\n"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			spec := tc.spec
			spec.Image = testutil.TestImage()
			box, err := b.Open(ctx, spec)
			if err != nil && spec.User != "" && strings.Contains(err.Error(), "only with systemd managing cgroups") {
				t.Skipf("this Apptainer manages cgroups with cgroupfs: no box as another user (%v)", err)
			}
			if err != nil {
				t.Fatal(err)
			}
			res, err := box.Exec(ctx, sandbox.ExecRequest{Cmd: sandbox.Bash(tc.cmd), Timeout: time.Minute})
			if err != nil {
				t.Fatal(err)
			}
			if string(res.Output) != tc.want {
				t.Errorf("%s: got %q (exit %d), want %q", tc.cmd, res.Output, res.ExitCode, tc.want)
			}
			name := box.ID()
			if err := box.Close(ctx); err != nil {
				t.Fatal(err)
			}
			if left, _ := b.Instances(ctx, name); len(left) > 0 {
				t.Errorf("instance %s still listed after Close", name)
			}
		})
	}
}

// TestLimits checks the limits reach the instance's cgroups when Apptainer
// can use them here (CI sets "systemd cgroups = no"), and that they are
// skipped, not fatal, when it cannot.
func TestLimits(t *testing.T) {
	b := testBackend(t)
	ctx := context.Background()
	box, err := b.Open(ctx, sandbox.Spec{Image: testutil.TestImage(), Limits: sandbox.Limits{PIDs: 77, MemoryMiB: 300, CPUs: 1}})
	if err != nil {
		t.Fatal(err)
	}
	defer box.Close(ctx)
	if noLimits.Load() {
		t.Skip("apptainer cannot use cgroups here: limits skipped (a warning said so)")
	}
	res, err := box.Exec(ctx, sandbox.ExecRequest{Cmd: sandbox.Bash("cat /proc/self/cgroup | grep pids | cut -d: -f3")})
	if err != nil {
		t.Fatal(err)
	}
	cg := strings.TrimSpace(string(res.Output))
	data, err := os.ReadFile(filepath.Join("/sys/fs/cgroup/pids", cg, "pids.max"))
	if err != nil {
		t.Skipf("cgroup v1 pids controller not readable at %s: %v", cg, err)
	}
	if got := strings.TrimSpace(string(data)); got != "77" {
		t.Errorf("pids.max of the box = %s, want 77", got)
	}
}

// TestCollector checks gc's view: a box of this run is listed (with All:
// its owner, this test, still runs) and removed, and so is a state
// directory no instance uses; without All neither live box is listed.
func TestCollector(t *testing.T) {
	b := testBackend(t)
	ctx := context.Background()
	box, err := b.Open(ctx, sandbox.Spec{Image: testutil.TestImage(), Task: "collector-test"})
	if err != nil {
		t.Fatal(err)
	}
	defer box.Close(ctx)
	stray := filepath.Join(b.stateDir, NamePrefix+"1-1-dead00")
	if err := os.MkdirAll(filepath.Join(stray, "overlay"), 0o700); err != nil {
		t.Fatal(err)
	}
	live, err := b.Leftovers(ctx, sandbox.LeftoverOptions{RunID: b.runID})
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range live {
		if l.ID == box.ID() {
			t.Errorf("Leftovers lists %s, whose owner still runs", l.ID)
		}
	}
	all, err := b.Leftovers(ctx, sandbox.LeftoverOptions{All: true})
	if err != nil {
		t.Fatal(err)
	}
	found := map[string]sandbox.Leftover{}
	for _, l := range all {
		found[l.ID] = l
	}
	if l, ok := found[box.ID()]; !ok || l.Task != "collector-test" || l.RunID != b.runID || l.Image != testutil.TestImage() {
		t.Fatalf("Leftovers(All) = %+v; want %s with its task, run and image", all, box.ID())
	}
	if _, ok := found[filepath.Base(stray)]; !ok {
		t.Errorf("Leftovers(All) = %+v; want the stray state directory %s", all, stray)
	}
	for _, id := range []string{box.ID(), filepath.Base(stray)} {
		if err := b.Remove(ctx, found[id]); err != nil {
			t.Fatal(err)
		}
	}
	if left, _ := b.Instances(ctx, box.ID()); len(left) > 0 {
		t.Errorf("instance %s still runs after Remove", box.ID())
	}
	if _, err := os.Stat(stray); !os.IsNotExist(err) {
		t.Errorf("%s still there after Remove (%v)", stray, err)
	}
	// The box's own Close after gc took it is not an error.
	if err := box.Close(ctx); err != nil {
		t.Errorf("Close after Remove: %v", err)
	}
}

// TestAttach runs a shell the way swerve shell does without a terminal.
func TestAttach(t *testing.T) {
	b := testBackend(t)
	ctx := context.Background()
	box, err := b.Open(ctx, sandbox.Spec{Image: testutil.TestImage(), Workdir: "/usr", Env: []string{"SBT_A=a b"}})
	if err != nil {
		t.Fatal(err)
	}
	defer box.Close(ctx)
	var out strings.Builder
	code, err := box.(sandbox.Interactive).Attach(ctx, sandbox.AttachRequest{
		Stdin: strings.NewReader("pwd; echo \"$SBT_A|$SBT_B\"; exit 3\n"), Stdout: &out, Env: []string{"SBT_B=b"},
	})
	if err != nil || code != 3 || out.String() != "/usr\na b|b\n" {
		t.Errorf("Attach = %d, %v, output %q; want 3 and \"/usr\\na b|b\\n\"", code, err, out.String())
	}
}
