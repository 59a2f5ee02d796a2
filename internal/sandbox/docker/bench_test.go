package docker

import (
	"context"
	"os/exec"
	"testing"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"

	"github.com/swerve-dev/swerve/internal/sandbox"
	"github.com/swerve-dev/swerve/internal/testutil"
)

// BenchmarkExec compares one command (`true`) run three ways in the same
// process: a plain engine exec (what tools without a helper pay per
// command), through swerve's shim, and the floor, a bare fork+exec of the
// same binary on this kernel with nothing in between.
//
//	go test -run '^$' -bench 'Exec' -benchtime 200x ./internal/sandbox/docker
func BenchmarkExec(b *testing.B) {
	be := testBackend(b, "bench-exec")
	ctx := context.Background()
	box, err := be.Open(ctx, sandbox.Spec{Image: testutil.TestImage()})
	if err != nil {
		b.Fatal(err)
	}
	defer box.Close(ctx)
	db := box.(*Box)

	b.Run("docker-exec", func(b *testing.B) {
		for b.Loop() {
			code, _, err := db.engineExec(ctx, []string{"true"})
			if err != nil || code != 0 {
				b.Fatalf("engine exec: code %d, %v", code, err)
			}
		}
	})
	b.Run("shim", func(b *testing.B) {
		for b.Loop() {
			res, err := box.Exec(ctx, sandbox.ExecRequest{Cmd: []string{"true"}})
			if err != nil || res.ExitCode != 0 {
				b.Fatalf("shim exec: %+v, %v", res, err)
			}
		}
	})
	// The stream alone: a request that forks nothing.
	b.Run("shim-read-file", func(b *testing.B) {
		for b.Loop() {
			if _, err := box.ReadFile(ctx, "/etc/hostname"); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("fork-exec", func(b *testing.B) {
		for b.Loop() {
			if err := exec.Command("true").Run(); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkOpenClose measures a box from nothing to ready for its first
// command and back to nothing, against the engine doing the least it can for
// a container that runs `true`: `docker run --rm IMAGE true` through the CLI,
// and the same create/attach/start/wait/remove through the API.
//
//	go test -run '^$' -bench 'OpenClose' -benchtime 20x ./internal/sandbox/docker
func BenchmarkOpenClose(b *testing.B) {
	be := testBackend(b, "bench-openclose")
	ctx := context.Background()
	img := testutil.TestImage()

	// swerve opens hardened boxes with the CLI's default limits;
	// swerve-unhardened is the same box without hardening or limits, what
	// the hardening costs.
	for _, v := range []struct {
		name string
		spec sandbox.Spec
	}{
		{"swerve", sandbox.Spec{Image: img, Limits: sandbox.Limits{CPUs: 2, MemoryMiB: 4096, PIDs: 1024}}},
		{"swerve-unhardened", sandbox.Spec{Image: img, Security: sandbox.Security{Unhardened: true}}},
	} {
		b.Run(v.name, func(b *testing.B) {
			for b.Loop() {
				box, err := be.Open(ctx, v.spec)
				if err != nil {
					b.Fatal(err)
				}
				if err := box.Close(ctx); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	b.Run("docker-run-cli", func(b *testing.B) {
		if _, err := exec.LookPath("docker"); err != nil {
			b.Skip("no docker CLI")
		}
		for b.Loop() {
			if out, err := exec.Command("docker", "run", "--rm", "--network", "none", img, "true").CombinedOutput(); err != nil {
				b.Fatalf("docker run: %v: %s", err, out)
			}
		}
	})
	b.Run("engine-run", func(b *testing.B) {
		for b.Loop() {
			if err := engineRun(ctx, be.cli, img); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// engineRun is `docker run --rm IMAGE true` done with the API.
func engineRun(ctx context.Context, cli *client.Client, img string) error {
	c, err := cli.ContainerCreate(ctx, client.ContainerCreateOptions{
		Config:     &container.Config{Image: img, Cmd: []string{"true"}, AttachStdout: true, AttachStderr: true},
		HostConfig: &container.HostConfig{NetworkMode: "none"},
	})
	if err != nil {
		return err
	}
	defer cli.ContainerRemove(context.WithoutCancel(ctx), c.ID, client.ContainerRemoveOptions{Force: true})
	att, err := cli.ContainerAttach(ctx, c.ID, client.ContainerAttachOptions{Stream: true, Stdout: true, Stderr: true})
	if err != nil {
		return err
	}
	defer att.Close()
	wait := cli.ContainerWait(ctx, c.ID, client.ContainerWaitOptions{Condition: container.WaitConditionNextExit})
	if _, err := cli.ContainerStart(ctx, c.ID, client.ContainerStartOptions{}); err != nil {
		return err
	}
	select {
	case <-wait.Result:
	case err := <-wait.Error:
		return err
	}
	return nil
}
