package shim

import (
	"context"
	"io/fs"
	"slices"

	"github.com/swerve-dev/swerve/internal/sandbox"
)

// Forward is the part of a box that only passes requests to the box's
// helper: Exec, WriteFile, ReadFile, Tool and OpenShell, the same for every
// backend whose boxes run one. A backend's box embeds it and sets Client
// once its helper has answered; until then each method returns
// sandbox.ErrClosed.
type Forward struct {
	// Client reaches the box's helper. A backend may replace it while it
	// opens the box (docker moves to a socket when one answers), never
	// once the box is in use.
	Client *Client
	// Env, when set, goes under the environment of every command and shell
	// (a request's own variables win): for backends whose helper does not
	// start with the task's environment.
	Env []string
}

var (
	_ sandbox.Tooler = (*Forward)(nil)
	_ sandbox.Shell  = (*Forward)(nil)
)

// Exec runs a command through the helper.
func (f *Forward) Exec(ctx context.Context, req sandbox.ExecRequest) (sandbox.ExecResult, error) {
	if f.Client == nil {
		return sandbox.ExecResult{}, sandbox.ErrClosed
	}
	if len(f.Env) > 0 {
		req.Env = slices.Concat(f.Env, req.Env)
	}
	return f.Client.Exec(ctx, req)
}

// WriteFile writes a file in the box through the helper.
func (f *Forward) WriteFile(ctx context.Context, path string, data []byte, mode fs.FileMode) error {
	if f.Client == nil {
		return sandbox.ErrClosed
	}
	return f.Client.WriteFile(ctx, path, data, mode)
}

// ReadFile reads a file in the box through the helper.
func (f *Forward) ReadFile(ctx context.Context, path string) ([]byte, error) {
	if f.Client == nil {
		return nil, sandbox.ErrClosed
	}
	return f.Client.ReadFile(ctx, path)
}

// Tool runs one of the helper's native tools (file editor, search);
// relative paths are the helper's working directory's.
func (f *Forward) Tool(ctx context.Context, req sandbox.ToolRequest) (sandbox.ToolResult, error) {
	if f.Client == nil {
		return sandbox.ToolResult{}, sandbox.ErrClosed
	}
	res, err := f.Client.Tool(ctx, req.Name, req.Args)
	if err != nil {
		return sandbox.ToolResult{}, err
	}
	return sandbox.ToolResult{Output: res.Output, Error: res.Error}, nil
}

// OpenShell starts a persistent shell in the box, run by the helper, with
// Env under the shell's own variables.
func (f *Forward) OpenShell(ctx context.Context, opts sandbox.ShellOptions) (sandbox.ShellSession, error) {
	if f.Client == nil {
		return nil, sandbox.ErrClosed
	}
	if len(f.Env) > 0 {
		opts.Env = slices.Concat(f.Env, opts.Env)
	}
	return f.Client.OpenShell(ctx, opts)
}
