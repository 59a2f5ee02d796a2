package sessions

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/swerve-dev/swerve/internal/sandbox"
	"github.com/swerve-dev/swerve/internal/sandbox/local"
	"github.com/swerve-dev/swerve/internal/task"
	"github.com/swerve-dev/swerve/internal/testutil"
)

// localOpener opens boxes on the local backend, counting the ones open.
// Every task's box is a copy of its source_dir, or of src when the task has
// none (the recorded Gym rows name Docker images this machine need not
// have: their boxes are the sample repository).
type localOpener struct {
	b    *local.Backend
	src  string
	open atomic.Int64
	all  atomic.Int64
}

type countedBox struct {
	sandbox.Sandbox
	o    *localOpener
	once sync.Once
}

func (c *countedBox) Close(ctx context.Context) error {
	c.once.Do(func() { c.o.open.Add(-1) })
	return c.Sandbox.Close(ctx)
}

// Tool passes the native tools through (the embedding hides them).
func (c *countedBox) Tool(ctx context.Context, req sandbox.ToolRequest) (sandbox.ToolResult, error) {
	return c.Sandbox.(sandbox.Tooler).Tool(ctx, req)
}

// OpenShell passes the persistent shells through.
func (c *countedBox) OpenShell(ctx context.Context, opts sandbox.ShellOptions) (sandbox.ShellSession, error) {
	return c.Sandbox.(sandbox.Shell).OpenShell(ctx, opts)
}

// ScratchDir passes the local box's scratch directory through.
func (c *countedBox) ScratchDir() string { return c.Sandbox.(sandbox.Scratch).ScratchDir() }

func (o *localOpener) Open(ctx context.Context, t *task.Task) (sandbox.Sandbox, string, error) {
	src := t.SourceDir
	if src == "" {
		src = o.src
	}
	box, err := o.b.Open(ctx, sandbox.Spec{Image: src})
	if err != nil {
		return nil, "", err
	}
	o.open.Add(1)
	o.all.Add(1)
	return &countedBox{Sandbox: box, o: o}, ".", nil
}

func newLocalOpener(t testing.TB) *localOpener {
	t.Helper()
	b, err := local.New(sandbox.Options{ShimPath: testutil.SwerveBinary(t), RunID: "sessions-test"})
	if err != nil {
		t.Fatal(err)
	}
	b.TempDir = t.TempDir()
	return &localOpener{b: b, src: filepath.Join(testutil.RepoRoot(t), "examples", "sample", "repo")}
}

// sampleTasks loads the shipped sample tasks (local repositories, pytest
// tests).
func sampleTasks(t testing.TB) []task.Task {
	t.Helper()
	res, err := task.Load(context.Background(), filepath.Join(testutil.RepoRoot(t), "examples", "sample", "tasks.jsonl"), task.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return res.Tasks
}

// fakeVerifier records the patches it is given; reward 1 when the patch
// contains want.
type fakeVerifier struct {
	mu      sync.Mutex
	want    string
	patches []string
	err     error
}

func (f *fakeVerifier) Verify(ctx context.Context, t *task.Task, patch string) (*Verdict, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.patches = append(f.patches, patch)
	if f.err != nil {
		return nil, f.err
	}
	ok := f.want != "" && strings.Contains(patch, f.want)
	r := 0.0
	if ok {
		r = 1
	}
	return &Verdict{Reward: r, Resolved: ok, Reason: "fake"}, nil
}

func contains(s, sub string) bool { return len(sub) > 0 && len(s) >= len(sub) && indexOf(s, sub) >= 0 }

func indexOf(s, sub string) int {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return i
		}
	}
	return -1
}

// testServer is a Manager with both surfaces mounted on a loopback server.
type testServer struct {
	*httptest.Server
	m *Manager
	o *localOpener
}

func startServer(t testing.TB, opts Options) *testServer {
	t.Helper()
	o := newLocalOpener(t)
	if opts.Open == nil {
		opts.Open = o.Open
	}
	if opts.Tasks == nil {
		opts.Tasks = NewCatalog(sampleTasks(t), true)
	}
	m := New(opts)
	mux := http.NewServeMux()
	RegisterGym(mux, m, GymOptions{Aggregate: true})
	RegisterSandboxes(mux, m, "")
	// A test-only route: how many sessions are open.
	mux.HandleFunc("GET /sessions_open", func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, m.Len()) })
	srv := httptest.NewServer(mux)
	ts := &testServer{Server: srv, m: m, o: o}
	t.Cleanup(func() {
		srv.Close()
		if err := m.Close(context.Background()); err != nil {
			t.Errorf("close: %v", err)
		}
		if n := o.open.Load(); n != 0 {
			t.Errorf("%d boxes left open after Close", n)
		}
	})
	return ts
}

// sessionIDOf reads the session id out of a "name=value" cookie.
func sessionIDOf(t testing.TB, cookie string) string {
	t.Helper()
	req, _ := http.NewRequest("GET", "/", nil)
	req.Header.Set("Cookie", cookie)
	id := (&gym{opts: GymOptions{CookieName: DefaultCookieName}}).sessionID(req)
	if id == "" {
		t.Fatalf("no session id in cookie %q", cookie)
	}
	return id
}

func testingProcs() int { return runtime.GOMAXPROCS(0) }
