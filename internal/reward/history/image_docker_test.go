package history_test

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/client"

	"github.com/swerve-dev/swerve/internal/reward/history"
	"github.com/swerve-dev/swerve/internal/sandbox"
	"github.com/swerve-dev/swerve/internal/sandbox/docker"
	"github.com/swerve-dev/swerve/internal/task"
	"github.com/swerve-dev/swerve/internal/testutil"
)

// bigDockerfile makes a repository with a long history at /testbed, written
// with git fast-import (genPy): %[2]d commits on main over %[3]d files;
// HEAD is then moved back %[4]d commits, the later ones kept on branch
// "future" (with their tags), as an image that kept the upstream history
// would.
const bigDockerfile = `FROM %[1]s
WORKDIR /testbed
COPY gen.py /tmp/gen.py
RUN git init -q -b main . && python3 /tmp/gen.py %[2]d %[3]d | git fast-import --quiet \
 && git branch future main && git reset -q --hard main~%[4]d && git repack -a -d -q && rm /tmp/gen.py \
 && git count-objects -v
`

// genPy writes the fast-import stream: argv[1] commits, each rewriting one
// of argv[2] files, a tag every 1000 commits.
const genPy = `import sys
w = sys.stdout.write
n, files = int(sys.argv[1]), int(sys.argv[2])
for i in range(n):
    w("commit refs/heads/main\nmark :%d\n" % (i + 1))
    w("committer dev <dev@localhost> %d +0000\n" % (1500000000 + i * 3600))
    m = "change %d\n" % i
    w("data %d\n%s" % (len(m), m))
    c = "".join("line %d of %d\n" % (j, i) for j in range(30))
    w("M 644 inline pkg%d/mod%d.py\ndata %d\n%s\n" % (i % 40, i % files, len(c), c))
    if i % 1000 == 999:
        w("tag v%d\nfrom :%d\ntagger dev <dev@localhost> %d +0000\ndata 4\nrel\n\n" % (i // 1000, i + 1, 1500000000 + i * 3600))
`

// figure is the median of runs of f, in milliseconds.
func figure(t *testing.T, runs int, f func() error) float64 {
	t.Helper()
	var ms []float64
	for range runs {
		start := time.Now()
		if err := f(); err != nil {
			t.Fatal(err)
		}
		ms = append(ms, float64(time.Since(start).Microseconds())/1000)
	}
	slices.Sort(ms)
	return ms[len(ms)/2]
}

// TestPrepareImageDocker prepares a copy of an image whose repository holds
// a long history and its future (a branch, tags past HEAD), once; proves
// boxes of the copy clean without stripping them, with the history before
// HEAD intact; and reports the costs: the one-time preparation, the disk it
// adds, and a box's open + proof against an open alone (medians).
// SWERVE_HISTORY_COMMITS sets the history's length (default 20000).
func TestPrepareImageDocker(t *testing.T) {
	if !testutil.DockerRequired() {
		t.Skip("Docker tests need SWERVE_DOCKER_TESTS=1")
	}
	ctx := context.Background()
	if err := docker.Probe(ctx); err != nil {
		testutil.SkipOrFail(t, "no container engine: %v", err)
	}
	b, err := docker.New(ctx, docker.Config{Options: sandbox.Options{ShimPath: testutil.SwerveBinary(t), RunID: fmt.Sprintf("test-history-%d", os.Getpid())}})
	if err != nil {
		t.Fatal(err)
	}
	if ok, _ := b.ImageExists(ctx, testutil.TestImage()); !ok {
		testutil.SkipOrFail(t, "test image %s missing (build it with scripts/test-image.sh)", testutil.TestImage())
	}
	commits, future := 20000, 500
	if v, err := strconv.Atoi(os.Getenv("SWERVE_HISTORY_COMMITS")); err == nil && v > 2*future {
		commits = v
	}
	source := fmt.Sprintf("swerve-test-history-big:%d", commits)
	var log strings.Builder
	start := time.Now()
	ctxDir := t.TempDir()
	if err := os.WriteFile(filepath.Join(ctxDir, "gen.py"), []byte(genPy), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := b.Build(ctx, docker.BuildOptions{ContextDir: ctxDir, Dockerfile: fmt.Sprintf(bigDockerfile, testutil.TestImage(), commits, 2000, future), Tags: []string{source}, Progress: &log}); err != nil {
		t.Fatalf("build %s: %v\n%s", source, err, log.String())
	}
	t.Logf("source image %s built (or found) in %s", source, time.Since(start).Round(time.Millisecond))

	// A prepared copy left by an earlier run is removed, so the one-time
	// cost is measured.
	ref, _, err := history.Prepare(ctx, noBuild{b}, source, "/testbed", history.PrepareOptions{})
	if err == nil {
		b.Client().ImageRemove(ctx, ref, client.ImageRemoveOptions{Force: true})
	}
	start = time.Now()
	ref, built, err := history.Prepare(ctx, b, source, "/testbed", history.PrepareOptions{NoCache: true})
	if err != nil {
		t.Fatal(err)
	}
	prep := time.Since(start)
	if !built {
		t.Fatal("Prepare found a prepared copy after it was removed")
	}
	again, built, err := history.Prepare(ctx, b, source, "/testbed", history.PrepareOptions{})
	if err != nil || built || again != ref {
		t.Fatalf("second Prepare: %s built %v err %v; want %s found by its labels", again, built, err, ref)
	}
	srcInfo, err := b.Client().ImageInspect(ctx, source)
	if err != nil {
		t.Fatal(err)
	}
	refInfo, err := b.Client().ImageInspect(ctx, ref)
	if err != nil {
		t.Fatal(err)
	}

	tk := &task.Task{InstanceID: "big"}
	openProve := func(image string, secure bool) (*history.Proof, error) {
		box, err := b.Open(ctx, sandbox.Spec{Image: image, Pull: sandbox.PullNever, Workdir: "/testbed"})
		if err != nil {
			return nil, err
		}
		defer box.Close(context.WithoutCancel(ctx))
		if secure {
			return history.Secure(ctx, box, tk, "/testbed")
		}
		if _, err := box.Exec(ctx, sandbox.ExecRequest{Cmd: []string{"true"}}); err != nil {
			return nil, err
		}
		return nil, nil
	}

	// The prepared copy: clean as found, the history before HEAD whole.
	box, err := b.Open(ctx, sandbox.Spec{Image: ref, Pull: sandbox.PullNever, Workdir: "/testbed"})
	if err != nil {
		t.Fatal(err)
	}
	p, err := history.Secure(ctx, box, tk, "/testbed")
	if err != nil {
		t.Fatal(err)
	}
	res, err := box.Exec(ctx, sandbox.ExecRequest{Cmd: sandbox.Bash("git rev-list --count HEAD; git tag | wc -l; git log --all --oneline | head -1; git rev-parse -q --verify future || echo no-future"), Timeout: time.Minute})
	box.Close(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !p.Clean || p.Stripped || p.Objects != p.Reachable {
		t.Errorf("prepared copy: %+v; want clean as found", p)
	}
	lines := strings.Fields(string(res.Output))
	wantTags := (commits - future) / 1000
	if len(lines) < 3 || lines[0] != strconv.Itoa(commits-future) || lines[1] != strconv.Itoa(wantTags) || lines[len(lines)-1] != "no-future" {
		t.Errorf("prepared copy's history: %q; want %d commits, %d tags, no branch future", res.Output, commits-future, wantTags)
	}
	t.Logf("proof of the prepared copy: %s", p.Summary())

	// The source image, stripped in a box.
	sp, err := openProve(source, true)
	if err != nil {
		t.Fatal(err)
	}
	if !sp.Clean || !sp.Stripped || sp.Fingerprint != p.Fingerprint {
		t.Errorf("source stripped in a box: %+v; want clean, stripped, fingerprint %s as the prepared copy", sp, p.Fingerprint)
	}

	runs := 5
	plain := figure(t, runs, func() error { _, err := openProve(ref, false); return err })
	proved := figure(t, runs, func() error { _, err := openProve(ref, true); return err })
	stripRuns := 3
	if commits > 20000 {
		stripRuns = 1 // minutes each
	}
	perBox := figure(t, stripRuns, func() error { _, err := openProve(source, true); return err })
	t.Logf("FIGURES commits=%d objects=%d: prepare once %s; disk added %.1f MB (source %.1f MB, prepared %.1f MB); box open %.0f ms, open+proof %.0f ms (+%.0f ms), open+strip+proof in the box (no prepared image) %.0f ms (median of %d); medians of %d",
		commits, p.Objects, prep.Round(time.Millisecond), float64(refInfo.Size-srcInfo.Size)/1e6, float64(srcInfo.Size)/1e6, float64(refInfo.Size)/1e6,
		plain, proved, proved-plain, perBox, stripRuns, runs)
}

// noBuild finds prepared images but builds none.
type noBuild struct{ *docker.Backend }

func (noBuild) BuildDockerfile(context.Context, string, string, map[string]string, bool, io.Writer) error {
	return fmt.Errorf("not building")
}
