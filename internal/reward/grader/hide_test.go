package grader

import (
	"context"
	"io/fs"
	"strings"
	"testing"

	"github.com/swerve-dev/swerve/internal/sandbox"
	"github.com/swerve-dev/swerve/internal/task"
)

// recBox is a box that records the commands it is asked to run.
type recBox struct{ cmds []string }

func (b *recBox) ID() string { return "rec" }
func (b *recBox) Exec(_ context.Context, req sandbox.ExecRequest) (sandbox.ExecResult, error) {
	b.cmds = append(b.cmds, strings.Join(req.Cmd, " "))
	return sandbox.ExecResult{}, nil
}
func (b *recBox) WriteFile(context.Context, string, []byte, fs.FileMode) error { return nil }
func (b *recBox) ReadFile(context.Context, string) ([]byte, error)             { return nil, sandbox.ErrNotFound }
func (b *recBox) Close(context.Context) error                                  { return nil }

func TestHideTests(t *testing.T) {
	for _, tc := range []struct {
		name   string
		t      task.Task
		force  string
		want   []string // each must be in some command
		noExec bool
	}{
		{"swebench keeps its tests outside the image", task.Task{InstanceID: "a__b-1", Grader: task.GraderSWEBench, Dialect: task.DialectSWEBench}, "", nil, true},
		{"swefactory", task.Task{InstanceID: "a__b-2", Grader: task.GraderSWEFactory, Dialect: task.DialectSWEFactory}, "", nil, true},
		{"swesmith", task.Task{InstanceID: "a__b-3", Grader: task.GraderSWESmith, Dialect: task.DialectSWESmith}, "", nil, true},
		{"r2e", task.Task{InstanceID: "r-1", Grader: task.GraderR2E, Dialect: task.DialectR2E}, "", []string{"rm -rf /r2e_tests /root/r2e_tests", "rm -rf r2e_tests", "rm -rf -- /run_tests.sh"}, false},
		{"r2e copy of swebench", task.Task{InstanceID: "r-2", Image: "namanjain12/x", Grader: task.GraderSWEBench, Dialect: task.DialectR2E}, "", []string{"rm -rf /r2e_tests", "rm -rf -- /run_tests.sh"}, false},
		{"r2e forced on another dialect", task.Task{InstanceID: "r-3", Dialect: task.DialectSWEBench}, "r2e", []string{"rm -rf /r2e_tests"}, false},
		{"harbor", task.Task{InstanceID: "h", Grader: task.GraderHarbor, Dialect: task.DialectHarbor}, "", []string{"rm -rf -- /tests /solution"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			box := &recBox{}
			if err := HideTests(context.Background(), box, &tc.t, tc.force, "/testbed"); err != nil {
				t.Fatal(err)
			}
			if tc.noExec && len(box.cmds) > 0 {
				t.Errorf("ran %q, want nothing", box.cmds)
			}
			all := strings.Join(box.cmds, "\n")
			for _, w := range tc.want {
				if !strings.Contains(all, w) {
					t.Errorf("commands %q lack %q", box.cmds, w)
				}
			}
		})
	}
}
