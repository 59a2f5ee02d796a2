package shim

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"testing"

	"github.com/swerve-dev/swerve/internal/sandbox"
)

// TestForwardWithoutClient: a box whose helper never answered refuses
// every request with ErrClosed rather than panicking.
func TestForwardWithoutClient(t *testing.T) {
	var f Forward
	ctx := context.Background()
	for name, err := range map[string]error{
		"Exec":      second(f.Exec(ctx, sandbox.ExecRequest{Cmd: []string{"true"}})),
		"WriteFile": f.WriteFile(ctx, "/x", nil, 0o644),
		"ReadFile":  second(f.ReadFile(ctx, "/x")),
		"Tool":      second(f.Tool(ctx, sandbox.ToolRequest{Name: "search"})),
		"OpenShell": second(f.OpenShell(ctx, sandbox.ShellOptions{})),
	} {
		if !errors.Is(err, sandbox.ErrClosed) {
			t.Errorf("%s without a client: %v, want ErrClosed", name, err)
		}
	}
}

func second[T any](_ T, err error) error { return err }

// TestForwardEnv: Env goes under a command's and a shell's own variables,
// which win; without Env a request is passed on as it is.
func TestForwardEnv(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name string
		env  []string
		req  []string
		want string
	}{
		{"no base", nil, []string{"B=req"}, "-req\n"},
		{"base only", []string{"A=base", "B=base"}, nil, "base-base\n"},
		{"request wins", []string{"A=base", "B=base"}, []string{"B=req"}, "base-req\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := Forward{Client: pair(t), Env: tt.env}
			res, err := f.Exec(ctx, sandbox.ExecRequest{Cmd: []string{"sh", "-c", `echo "$A-$B"`}, Env: tt.req})
			if err != nil || string(res.Output) != tt.want {
				t.Errorf("Exec: %q, %v; want %q", res.Output, err, tt.want)
			}
			sh, err := f.OpenShell(ctx, sandbox.ShellOptions{Env: tt.req})
			if err != nil {
				t.Fatal(err)
			}
			defer sh.Close(ctx)
			sres, err := sh.Run(ctx, sandbox.ShellRequest{Cmd: `echo "$A-$B"`})
			if err != nil || string(sres.Output) != tt.want {
				t.Errorf("shell: %q, %v; want %q", sres.Output, err, tt.want)
			}
		})
	}
}

// TestForwardFilesAndTools: files and tools reach the helper unchanged.
func TestForwardFilesAndTools(t *testing.T) {
	ctx := context.Background()
	f := Forward{Client: pair(t), Env: []string{"IGNORED=1"}}
	p := filepath.Join(t.TempDir(), "f.txt")
	if err := f.WriteFile(ctx, p, []byte("needle\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got, err := f.ReadFile(ctx, p); err != nil || string(got) != "needle\n" {
		t.Errorf("ReadFile = %q, %v", got, err)
	}
	res, err := f.Tool(ctx, sandbox.ToolRequest{Name: "file_editor", Args: json.RawMessage(`{"command":"view","path":"` + p + `"}`)})
	if err != nil || res.Error || res.Output == "" {
		t.Errorf("Tool(view) = %+v, %v", res, err)
	}
	res, err = f.Tool(ctx, sandbox.ToolRequest{Name: "file_editor", Args: json.RawMessage(`{"command":"view","path":"/no/such/file"}`)})
	if err != nil || !res.Error {
		t.Errorf("Tool(view missing) = %+v, %v; want an error result", res, err)
	}
	if _, err := f.Tool(ctx, sandbox.ToolRequest{Name: "teleport"}); err == nil {
		t.Error("Tool(teleport): no error for an unknown tool")
	}
}
