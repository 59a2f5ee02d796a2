package docker

import (
	"context"
	"testing"
	"time"

	"github.com/swerve-dev/swerve/internal/sandbox"
	"github.com/swerve-dev/swerve/internal/testutil"
)

func TestSmoke(t *testing.T) {
	b, err := New(context.Background(), Config{Options: sandbox.Options{ShimPath: testutil.SwerveBinary(t)}})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	box, err := b.Open(ctx, sandbox.Spec{Image: testutil.TestImage()})
	if err != nil {
		t.Fatal(err)
	}
	defer box.Close(ctx)
	r, err := box.Exec(ctx, sandbox.ExecRequest{Cmd: sandbox.Bash("echo a; echo b >&2; pwd; exit 3")})
	t.Logf("%+v %q %v", r, r.Output, err)
	r, err = box.Exec(ctx, sandbox.ExecRequest{Cmd: sandbox.Bash("sleep 1000 & echo $! > bg.pid; sleep 1000"), Timeout: time.Second})
	t.Logf("%+v %q %v", r, r.Output, err)
	r, err = box.Exec(ctx, sandbox.ExecRequest{Cmd: sandbox.Bash("cat /proc/$(cat bg.pid)/stat || echo gone")})
	t.Logf("%q %v", r.Output, err)
	r, err = box.Exec(ctx, sandbox.ExecRequest{Cmd: []string{"nonexistent-cmd"}})
	t.Logf("%+v %q %v", r, r.Output, err)
	start := time.Now()
	for range 200 {
		box.Exec(ctx, sandbox.ExecRequest{Cmd: []string{"true"}})
	}
	t.Logf("per exec %v", time.Since(start)/200)
}
