package sandbox_test

import (
	"context"
	"fmt"
	"time"

	"github.com/swerve-dev/swerve/internal/sandbox"
)

// Example opens a box on a registered backend (a program links them with
// a blank import of sandbox/all), runs one command in it and closes it.
// It is compiled, not run: it needs an engine and the image.
func Example() {
	ctx := context.Background()
	b, err := sandbox.New(ctx, "docker", sandbox.Options{RunID: "my-run"})
	if err != nil {
		fmt.Println(err)
		return
	}
	box, err := b.Open(ctx, sandbox.Spec{Image: "swebench/sweb.eval.x86_64.django_1776_django-16901:latest", Task: "django__django-16901"})
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
