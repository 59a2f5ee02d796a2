package pool_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/swerve-dev/swerve/internal/sandbox"
	"github.com/swerve-dev/swerve/internal/sandbox/docker"
	"github.com/swerve-dev/swerve/internal/sandbox/local"
	"github.com/swerve-dev/swerve/internal/sandbox/pool"
	"github.com/swerve-dev/swerve/internal/testutil"
)

// target is a backend the pool is tested on, and the spec of a box there.
type target struct {
	name string
	spec func(task string) sandbox.Spec
	// boxes lists the backend's boxes of runID, for leak checks.
	boxes func(t *testing.T, runID string) []string
}

// targets are the backends to test on: local always, docker when an engine
// and the test image are there (required under SWERVE_DOCKER_TESTS=1).
// SWERVE_POOL_BACKEND=NAME tests only that one (docker, local, or another
// registered backend that implements sandbox.Collector, with
// SWERVE_TEST_IMAGE as its image).
func targets(t *testing.T) []target {
	localT := target{
		name: local.Name,
		spec: func(task string) sandbox.Spec {
			return sandbox.Spec{Task: task}
		},
		boxes: func(t *testing.T, runID string) []string {
			left, err := local.Leftovers(context.Background(), "", true)
			if err != nil {
				t.Fatal(err)
			}
			var ids []string
			for _, l := range left {
				if l.RunID == runID {
					ids = append(ids, l.Dir)
				}
			}
			return ids
		},
	}
	imageSpec := func(task string) sandbox.Spec {
		return sandbox.Spec{Image: testutil.TestImage(), Task: task, Pull: sandbox.PullNever,
			Limits: sandbox.Limits{CPUs: 1, MemoryMiB: 512, PIDs: 256}}
	}
	collected := func(name string) func(t *testing.T, runID string) []string {
		return func(t *testing.T, runID string) []string {
			b, err := sandbox.New(context.Background(), name, sandbox.Options{})
			if err != nil {
				t.Fatal(err)
			}
			c, ok := b.(sandbox.Collector)
			if !ok {
				t.Fatalf("backend %s does not implement sandbox.Collector", name)
			}
			left, err := c.Leftovers(context.Background(), sandbox.LeftoverOptions{All: true, RunID: runID})
			if err != nil {
				t.Fatal(err)
			}
			var ids []string
			for _, l := range left {
				ids = append(ids, l.ID)
			}
			return ids
		}
	}
	dockerT := target{name: docker.Name, spec: imageSpec, boxes: collected(docker.Name)}
	switch name := os.Getenv("SWERVE_POOL_BACKEND"); name {
	case "":
	case local.Name:
		return []target{localT}
	case docker.Name:
		return []target{dockerT}
	default:
		return []target{{name: name, spec: imageSpec, boxes: collected(name)}}
	}
	out := []target{localT}
	if err := docker.Probe(context.Background()); err != nil {
		if testutil.DockerRequired() {
			t.Fatalf("SWERVE_DOCKER_TESTS=1 but no container engine: %v", err)
		}
		t.Logf("docker: skipped (no container engine: %v)", err)
	} else {
		out = append(out, dockerT)
	}
	return out
}

// newPool is a pool of size over the target's backend, with its own run id,
// and the run id.
func newPool(t *testing.T, tg target, size int) (*pool.Pool, string) {
	t.Helper()
	runID := fmt.Sprintf("pooltest-%d-%d", os.Getpid(), time.Now().UnixNano())
	b, err := sandbox.New(context.Background(), tg.name, sandbox.Options{RunID: runID, ShimPath: shimBinary(t)})
	if err != nil {
		t.Fatal(err)
	}
	return pool.New(b, pool.Options{Size: size}), runID
}

// shimBinary is the static swerve the boxes run, built before the tests
// move TMPDIR.
func shimBinary(t *testing.T) string {
	if p := os.Getenv("SWERVE_SHIM_BINARY"); p != "" {
		return p
	}
	return testutil.SwerveBinary(t)
}

// isolate builds the shim binary, then points TMPDIR (where local boxes
// go, and gc looks) at a directory of the test's own.
func isolate(t *testing.T) string {
	t.Setenv("SWERVE_SHIM_BINARY", shimBinary(t))
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	return tmp
}

func waitReady(t *testing.T, p *pool.Pool, n int) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for p.Stats().Ready < n {
		if st := p.Stats(); st.Failed > 0 {
			t.Fatalf("warm opens failed: %+v", st)
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d warm boxes not ready in 2 minutes: %+v", n, p.Stats())
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestBackendHitMiss: on a real backend a warm box is handed out once, to
// its own spec, works, and keeps working after the pool is closed; the
// other spec gets a box of its own; nothing is left after Close.
func TestBackendHitMiss(t *testing.T) {
	isolate(t)
	for _, tg := range targets(t) {
		t.Run(tg.name, func(t *testing.T) {
			ctx := context.Background()
			p, runID := newPool(t, tg, 2)
			defer func() {
				p.Close(ctx)
				if left := tg.boxes(t, runID); len(left) > 0 {
					t.Errorf("boxes left: %v", left)
				}
			}()
			p.Expect(tg.spec("a"), tg.spec("b"))
			waitReady(t, p, 2)
			box, err := p.Open(ctx, tg.spec("a"))
			if err != nil {
				t.Fatal(err)
			}
			defer box.Close(ctx)
			other, err := p.Open(ctx, tg.spec("c"))
			if err != nil {
				t.Fatal(err)
			}
			defer other.Close(ctx)
			if box.ID() == other.ID() {
				t.Fatal("one box handed out twice")
			}
			if st := p.Stats(); st.Hits != 1 || st.Misses != 1 || st.Ready != 1 {
				t.Fatalf("stats %+v: want 1 hit, 1 miss, b still warm", st)
			}
			// A warm box is clean: nothing ran in it before it was handed out.
			res, err := box.Exec(ctx, sandbox.ExecRequest{Cmd: sandbox.Bash("ls -A ~ | wc -l; echo ok"), Timeout: time.Minute})
			if err != nil || !strings.Contains(string(res.Output), "ok") {
				t.Fatalf("exec in the warm box: %v %q", err, res.Output)
			}
			if err := p.Close(ctx); err != nil {
				t.Fatal(err)
			}
			// Closing the pool closes b, not the boxes it handed out.
			if got := len(tg.boxes(t, runID)); got != 2 {
				t.Errorf("after Close: %d boxes of the run, want the 2 handed out", got)
			}
			res, err = box.Exec(ctx, sandbox.ExecRequest{Cmd: sandbox.Bash("echo still"), Timeout: time.Minute})
			if err != nil || !strings.Contains(string(res.Output), "still") {
				t.Fatalf("the handed-out box died with the pool: %v %q", err, res.Output)
			}
			box.Close(ctx)
			other.Close(ctx)
		})
	}
}

// TestBackendCancel: closing the pool while its boxes are opening and open
// leaves none behind.
func TestBackendCancel(t *testing.T) {
	isolate(t)
	for _, tg := range targets(t) {
		t.Run(tg.name, func(t *testing.T) {
			ctx := context.Background()
			p, runID := newPool(t, tg, 3)
			tk := p.Expect(tg.spec("a"), tg.spec("b"), tg.spec("c"), tg.spec("d"))
			waitReady(t, p, 1) // some open, others opening
			tk.Release(ctx)
			p.Expect(tg.spec("e"), tg.spec("f"))
			time.Sleep(20 * time.Millisecond)
			p.Close(ctx)
			if st := p.Stats(); st.Ready != 0 || st.Opening != 0 {
				t.Errorf("after Close: %+v", st)
			}
			if left := tg.boxes(t, runID); len(left) > 0 {
				t.Errorf("boxes left after Close: %v", left)
			}
		})
	}
}

// TestHelperWarmPool is the process TestKilledWarmBoxesCollected kills: it
// opens two warm boxes and waits.
func TestHelperWarmPool(t *testing.T) {
	name := os.Getenv("SWERVE_POOL_HELPER")
	if name == "" {
		t.Skip("helper process for TestKilledWarmBoxesCollected")
	}
	for _, tg := range targets(t) {
		if tg.name != name {
			continue
		}
		b, err := sandbox.New(context.Background(), name, sandbox.Options{RunID: os.Getenv("SWERVE_POOL_RUN"), ShimPath: os.Getenv("SWERVE_SHIM_BINARY")})
		if err != nil {
			t.Fatal(err)
		}
		p := pool.New(b, pool.Options{Size: 2})
		p.Expect(tg.spec("a"), tg.spec("b"), tg.spec("c"))
		waitReady(t, p, 2)
		fmt.Println("ready")
		time.Sleep(10 * time.Minute) // killed before this ends
	}
}

// TestKilledWarmBoxesCollected: the warm boxes of a process killed with
// SIGKILL carry its run's labels, and swerve gc finds and removes them.
func TestKilledWarmBoxesCollected(t *testing.T) {
	tmp := isolate(t)
	bin := shimBinary(t)
	for _, tg := range targets(t) {
		t.Run(tg.name, func(t *testing.T) {
			runID := fmt.Sprintf("pooltest-kill-%d-%d", os.Getpid(), time.Now().UnixNano())
			cmd := exec.Command(os.Args[0], "-test.run=^TestHelperWarmPool$", "-test.count=1")
			cmd.Env = append(os.Environ(), "SWERVE_POOL_HELPER="+tg.name, "SWERVE_POOL_RUN="+runID, "SWERVE_SHIM_BINARY="+bin, "TMPDIR="+tmp)
			out, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			cmd.Stderr = os.Stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			defer cmd.Process.Kill()
			ready := make(chan bool, 1)
			go func() {
				sc := bufio.NewScanner(out)
				for sc.Scan() {
					if sc.Text() == "ready" {
						ready <- true
						return
					}
				}
				ready <- false
			}()
			select {
			case ok := <-ready:
				if !ok {
					t.Fatal("the helper ended before its boxes were warm")
				}
			case <-time.After(3 * time.Minute):
				t.Fatal("the helper's boxes were not warm in 3 minutes")
			}
			if got := len(tg.boxes(t, runID)); got < 2 {
				t.Fatalf("%d warm boxes of the helper, want 2 or more", got)
			}
			cmd.Process.Signal(syscall.SIGKILL)
			cmd.Wait()

			gc := exec.Command(bin, "gc", "--run", runID)
			gc.Env = append(os.Environ(), "TMPDIR="+tmp)
			msg, err := gc.CombinedOutput()
			if err != nil {
				t.Fatalf("swerve gc: %v\n%s", err, msg)
			}
			if n := strings.Count(string(msg), "removed"); n < 2 {
				t.Errorf("swerve gc removed %d boxes, want the 2 warm ones:\n%s", n, msg)
			}
			if left := tg.boxes(t, runID); len(left) > 0 {
				t.Errorf("boxes left after gc: %v", left)
			}
			if tg.name == local.Name {
				if dirs, _ := filepath.Glob(filepath.Join(tmp, "swerve-local-*")); len(dirs) > 0 {
					t.Errorf("local box directories left: %v", dirs)
				}
			}
		})
	}
}
