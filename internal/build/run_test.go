package build

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/swerve-dev/swerve/internal/llm"
	"github.com/swerve-dev/swerve/internal/sandbox"
	"github.com/swerve-dev/swerve/internal/sandbox/docker"
	"github.com/swerve-dev/swerve/internal/task"
)

// fakeEngine fails every build with err (after started is told and block
// is closed, when set) and opens no boxes: it drives the loop without Docker.
type fakeEngine struct {
	err     error
	builds  atomic.Int32
	started chan struct{}
	block   chan struct{}
}

func (f *fakeEngine) Build(ctx context.Context, opts docker.BuildOptions) error {
	f.builds.Add(1)
	if opts.Progress != nil {
		fmt.Fprintf(opts.Progress, "Step 1/1 : %s\n", strings.SplitN(opts.Dockerfile, "\n", 2)[0])
	}
	if f.started != nil {
		f.started <- struct{}{}
	}
	if f.block != nil {
		select {
		case <-f.block:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return f.err
}

func (f *fakeEngine) Open(context.Context, sandbox.Spec) (sandbox.Sandbox, error) {
	return nil, errors.New("the fake engine opens no boxes")
}

var errNoBuild = errors.New("build x_swefactory_root: The command '/bin/sh -c make' returned a non-zero code: 2\nmake: *** [all] Error 2")

func fakeTasks(ids ...string) []task.Task {
	var ts []task.Task
	for _, id := range ids {
		ts = append(ts, task.Task{
			InstanceID: id, Repo: "o/r", BaseCommit: "abc", Patch: "diff --git a/x b/x\n",
			Dockerfile: "FROM scratch\nRUN make\n", EvalScript: "echo OMNIGRIL_EXIT_CODE=0\n",
			Raw: []byte(fmt.Sprintf(`{"instance_id":%q,"repo":"o/r"}`, id)),
		})
	}
	return ts
}

func TestBuildRunBuildFailure(t *testing.T) {
	out := t.TempDir()
	eng := &fakeEngine{err: errNoBuild}
	sum, err := Run(context.Background(), Options{Tasks: fakeTasks("o__r-1"), Output: out, Stem: "in", MaxIterations: 1, Engine: eng})
	if err != nil {
		t.Fatal(err)
	}
	st, err := ReadStatus(InstanceDir(out, "o__r-1"))
	if err != nil {
		t.Fatal(err)
	}
	want := "the image does not build: The command '/bin/sh -c make' returned a non-zero code: 2"
	if st.Status != StatusFailed || st.Stage != StageBuild || st.Reason != want || st.TotalIterations != 1 ||
		st.FinalIteration != nil || st.LastIterationAttempted == nil || *st.LastIterationAttempted != 0 {
		t.Errorf("status %+v", st)
	}
	if sum.Main.Failed != 1 || sum.Main.FailedInstances[0].Reason != want {
		t.Errorf("summary %+v", sum.Main)
	}
	log, err := os.ReadFile(filepath.Join(InstanceDir(out, "o__r-1"), "iteration_0", FileBuildLog))
	if err != nil || !strings.Contains(string(log), "Step 1/1 : FROM scratch") || !strings.Contains(string(log), "Error 2") {
		t.Errorf("build.log: %q, %v", log, err)
	}
}

// TestBuildRunRepairsUntilMax: every failed attempt is sent to the model,
// every reply is kept, and the last failure is the reason.
func TestBuildRunRepairsUntilMax(t *testing.T) {
	out := t.TempDir()
	eng := &fakeEngine{err: errNoBuild}
	var prompts []string
	model := func(*task.Task) (llm.Client, error) {
		return &recorder{Client: llm.NewScripted("replay/fake", []llm.Message{
			{Content: "Try this.\n```dockerfile\nFROM scratch\nRUN make all\n```\n"},
			{Content: "Or this.\n```dockerfile\nFROM scratch\nRUN make -j1\n```\n"},
		}), prompts: &prompts}, nil
	}
	_, err := Run(context.Background(), Options{Tasks: fakeTasks("o__r-1"), Output: out, Stem: "in", MaxIterations: 3, Engine: eng, NewModel: model})
	if err != nil {
		t.Fatal(err)
	}
	dir := InstanceDir(out, "o__r-1")
	st, err := ReadStatus(dir)
	if err != nil {
		t.Fatal(err)
	}
	if eng.builds.Load() != 3 || st.Model.Calls != 2 || st.TotalIterations != 3 || len(st.Iterations) != 3 || st.Iterations[2].LLMCalls != 1 || !st.Model.Offline ||
		!strings.HasSuffix(st.Reason, "(still failing after 3 attempts)") {
		t.Errorf("builds %d, status %+v", eng.builds.Load(), st)
	}
	final, _ := os.ReadFile(filepath.Join(dir, FileDockerfile))
	orig, _ := os.ReadFile(filepath.Join(dir, FileDockerfileOriginal))
	if string(final) != "FROM scratch\nRUN make -j1\n" || string(orig) != "FROM scratch\nRUN make\n" {
		t.Errorf("final %q, original %q", final, orig)
	}
	for n := 2; n <= 3; n++ {
		for _, f := range []string{FileModelRequest, FileModelReply, FileDockerfile, FileResult} {
			if _, err := os.Stat(filepath.Join(dir, IterationDir(n), f)); err != nil {
				t.Errorf("iteration %d: %v", n, err)
			}
		}
	}
	if len(prompts) != 2 || !strings.Contains(prompts[0], "Attempt 1 of 3") || !strings.Contains(prompts[1], "RUN make all") ||
		!strings.Contains(prompts[1], "Error 2") {
		t.Errorf("prompts:\n%s", strings.Join(prompts, "\n----\n"))
	}
}

// recorder keeps the last user message of every request.
type recorder struct {
	llm.Client
	prompts *[]string
}

func (r *recorder) Complete(ctx context.Context, req llm.Request) (llm.Response, error) {
	*r.prompts = append(*r.prompts, req.Messages[len(req.Messages)-1].Content)
	return r.Client.Complete(ctx, req)
}

func (r *recorder) Offline() bool { return llm.IsOffline(r.Client) }

// TestBuildRunEngineError: an engine that is gone is not the task's fault:
// the instance is an error, counted as failed, and runs again under
// --skip-existing.
func TestBuildRunEngineError(t *testing.T) {
	out := t.TempDir()
	eng := &fakeEngine{err: fmt.Errorf("build: %w", sandbox.ErrUnavailable)}
	opts := Options{Tasks: fakeTasks("o__r-1"), Output: out, Stem: "in", MaxIterations: 2, Engine: eng, SkipExisting: true}
	sum, err := Run(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	if sum.Errors != 1 || sum.Main.Failed != 1 || !strings.HasPrefix(sum.Main.FailedInstances[0].Reason, "error (runs again next time): engine: ") {
		t.Errorf("summary %+v", sum)
	}
	if _, err := Run(context.Background(), opts); err != nil {
		t.Fatal(err)
	}
	if eng.builds.Load() != 2 {
		t.Errorf("%d builds; the errored instance should have run again", eng.builds.Load())
	}
}

// TestBuildRunInterrupted: an instance cancelled mid-build keeps a status
// that is not final and runs again next time; Stop starts nothing new.
func TestBuildRunInterrupted(t *testing.T) {
	out := t.TempDir()
	eng := &fakeEngine{err: errNoBuild, started: make(chan struct{}, 1), block: make(chan struct{})}
	ctx, cancel := context.WithCancel(context.Background())
	go func() { <-eng.started; cancel() }()
	opts := Options{Tasks: fakeTasks("o__r-1", "o__r-2"), Output: out, Stem: "in", MaxIterations: 1, Engine: eng, SkipExisting: true}
	sum, err := Run(ctx, opts)
	if !errors.Is(err, ErrInterrupted) || sum.Ran != 0 || sum.Main.Total != 2 || sum.Main.Failed != 2 {
		t.Fatalf("interrupted run: %v, %+v", err, sum)
	}
	// in_failed.json lists both rows: the one cut short and the one never
	// started.
	data, err := os.ReadFile(sum.FailedFile)
	if err != nil {
		t.Fatal(err)
	}
	var failed []struct {
		ID     string `json:"instance_id"`
		Reason string `json:"failure_reason"`
		Image  string `json:"docker_image"`
	}
	if err := json.Unmarshal(data, &failed); err != nil || len(failed) != 2 ||
		failed[0].Reason != ReasonInterrupted || failed[1].Reason != ReasonNotRun || failed[1].Image != "o__r-2_swefactory_root" {
		t.Fatalf("in_failed.json after the interrupt (%v):\n%s", err, data)
	}
	st, err := ReadStatus(InstanceDir(out, "o__r-1"))
	if err != nil || st == nil || st.Status != StatusRunning {
		t.Fatalf("status after the interrupt: %+v, %v", st, err)
	}

	stop := make(chan struct{})
	close(stop)
	opts.Stop = stop
	if sum, err := Run(context.Background(), opts); !errors.Is(err, ErrInterrupted) || sum.Ran != 0 {
		t.Fatalf("stopped run: %v, %+v", err, sum)
	}

	opts.Stop = nil
	eng.started, eng.block = nil, nil
	sum, err = Run(context.Background(), opts)
	if err != nil || sum.Ran != 2 || sum.Main.Failed != 2 {
		t.Fatalf("resumed run: %v, %+v", err, sum)
	}
}

func TestBuildRunInputChecks(t *testing.T) {
	out := t.TempDir()
	eng := &fakeEngine{err: errNoBuild}
	ts := fakeTasks("o__r-1")
	ts[0].Patch = ""
	sum, err := Run(context.Background(), Options{Tasks: ts, Output: out, Stem: "in", Engine: eng, EvalTimeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if eng.builds.Load() != 0 || sum.Main.Failed != 1 || !strings.Contains(sum.Main.FailedInstances[0].Reason, "no gold patch") {
		t.Errorf("no patch: %d builds, %+v", eng.builds.Load(), sum.Main)
	}
	if _, err := Run(context.Background(), Options{Tasks: fakeTasks("O/r", "o:r"), Output: out, Stem: "in", Engine: eng}); err == nil ||
		!strings.Contains(err.Error(), "share the image tag o-r_swefactory_root") {
		t.Errorf("tag collision: %v", err)
	}
}

// TestBuildRunSkipExisting: --skip-existing keeps successes only; a failed
// instance is built again, as SWE-Factory retries its failures.
func TestBuildRunSkipExisting(t *testing.T) {
	out := t.TempDir()
	eng := &fakeEngine{err: errNoBuild}
	opts := Options{Tasks: fakeTasks("o__r-1", "o__r-2"), Output: out, Stem: "in", MaxIterations: 1, Engine: eng, SkipExisting: true}
	if _, err := Run(context.Background(), opts); err != nil {
		t.Fatal(err)
	}
	// o__r-1 succeeded in an earlier run (its files written by hand).
	d := InstanceDir(out, "o__r-1")
	if err := writeJSON(filepath.Join(d, FileStatus), Status{InstanceID: "o__r-1", Status: StatusSuccess, DockerImage: ImageTag("o__r-1")}); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{FileDockerfile, FileRunTests} {
		if err := os.WriteFile(filepath.Join(d, f), []byte("x\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	sum, err := Run(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	if eng.builds.Load() != 3 || sum.Skipped != 1 || sum.Ran != 1 || sum.Main.Succeeded != 1 || sum.Main.Failed != 1 {
		t.Errorf("%d builds, %+v; want 3 builds (o__r-2 twice), 1 kept, 1 run", eng.builds.Load(), sum)
	}
	if len(sum.Summary) != 1 || sum.Summary[0].InstanceID != "o__r-2" {
		t.Errorf("summary.json lists %+v; want this run's o__r-2 only", sum.Summary)
	}
}
