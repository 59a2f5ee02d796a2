package docker

import (
	"context"
	"fmt"
	"os/exec"
	"slices"
	"testing"
	"time"

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
// and the same create/attach/start/wait/remove through the API. swerve opens
// hardened boxes with the CLI's default limits; swerve-unhardened is the same
// box without hardening or limits, what the hardening costs.
//
// The four ways run round by round, one of each per iteration (the first of
// a round moves on by one every round), so a shared machine's drift falls on
// all of them alike; timing them one after another in separate
// sub-benchmarks let the ratio swing by a fifth between runs. Besides each
// way's median (ms), it reports the median of the per-round ratios: swerve
// against `docker run --rm` (x-docker-run), against the API run
// (x-engine-run), and hardened against unhardened (x-unhardened). ns/op is a
// whole round.
//
//	go test -run '^$' -bench 'OpenClose' -benchtime 20x ./internal/sandbox/docker
func BenchmarkOpenClose(b *testing.B) {
	be := testBackend(b, "bench-openclose")
	ctx := context.Background()
	img := testutil.TestImage()
	if _, err := exec.LookPath("docker"); err != nil {
		testutil.SkipOrFail(b, "no docker CLI: %v", err)
	}
	openClose := func(spec sandbox.Spec) func() error {
		return func() error {
			box, err := be.Open(ctx, spec)
			if err != nil {
				return err
			}
			return box.Close(ctx)
		}
	}
	ways := []struct {
		name string
		run  func() error
	}{
		{"swerve", openClose(sandbox.Spec{Image: img, Limits: sandbox.Limits{CPUs: 2, MemoryMiB: 4096, PIDs: 1024}})},
		{"swerve-unhardened", openClose(sandbox.Spec{Image: img, Security: sandbox.Security{Unhardened: true}})},
		{"docker-run-cli", func() error {
			if out, err := exec.Command("docker", "run", "--rm", "--network", "none", img, "true").CombinedOutput(); err != nil {
				return fmt.Errorf("%w: %s", err, out)
			}
			return nil
		}},
		{"engine-run", func() error { return engineRun(ctx, be.cli, img) }},
	}
	times := make([][]float64, len(ways)) // ms, one per round
	round := 0
	for b.Loop() {
		for k := range ways {
			i := (round + k) % len(ways)
			start := time.Now()
			if err := ways[i].run(); err != nil {
				b.Fatalf("%s: %v", ways[i].name, err)
			}
			times[i] = append(times[i], float64(time.Since(start))/float64(time.Millisecond))
		}
		round++
	}
	for i, w := range ways {
		b.ReportMetric(median(times[i]), w.name+"-ms")
	}
	ratio := func(a, c int) float64 {
		r := make([]float64, len(times[a]))
		for k := range r {
			r[k] = times[a][k] / times[c][k]
		}
		return median(r)
	}
	b.ReportMetric(ratio(0, 2), "x-docker-run")
	b.ReportMetric(ratio(0, 3), "x-engine-run")
	b.ReportMetric(ratio(0, 1), "x-unhardened")
}

// median returns the middle of xs (the mean of the two middle values for an
// even count); 0 for none.
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	if n := len(s); n%2 == 0 {
		return (s[n/2-1] + s[n/2]) / 2
	}
	return s[len(s)/2]
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
