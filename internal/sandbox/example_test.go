package sandbox_test

import (
	"context"
	"fmt"
	"time"

	"github.com/swerve-dev/swerve/internal/sandbox"
	_ "github.com/swerve-dev/swerve/internal/sandbox/docker" // registers "docker"
)

// ExampleNew is the package documentation's sequence: a backend by name, a
// box from an image, one command, the box closed. It has no Output comment,
// so it is compiled (it cannot drift from the API) but not run: it needs an
// engine and the image.
func ExampleNew() {
	ctx := context.Background()
	b, err := sandbox.New(ctx, "docker", sandbox.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	box, err := b.Open(ctx, sandbox.Spec{Image: "swebench/sweb.eval.x86_64.django_1776_django-16901:latest"})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer box.Close(context.WithoutCancel(ctx))
	res, err := box.Exec(ctx, sandbox.ExecRequest{Cmd: sandbox.Bash("git status"), Timeout: time.Minute})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("exit %d\n%s", res.ExitCode, res.Output)
}
