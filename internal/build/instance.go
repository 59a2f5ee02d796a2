package build

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/swerve-dev/swerve/internal/fsutil"
	"github.com/swerve-dev/swerve/internal/llm"
	"github.com/swerve-dev/swerve/internal/sandbox"
	"github.com/swerve-dev/swerve/internal/sandbox/docker"
	"github.com/swerve-dev/swerve/internal/task"
)

// LabelInstance labels the images Stage 1 builds with their instance id.
const LabelInstance = "swerve.build.instance"

// instanceLog is an instance's instance.log, rewritten whole (atomically)
// at every line. Lines have the shape of SWE-Factory's: "<date> <time>,<ms>
// INFO <message>".
type instanceLog struct {
	mu   sync.Mutex
	path string
	buf  bytes.Buffer
}

func (l *instanceLog) printf(format string, args ...any) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	fmt.Fprintf(&l.buf, "%s INFO %s\n", time.Now().Format("2006-01-02 15:04:05,000"), strings.TrimRight(fmt.Sprintf(format, args...), "\n"))
	return fsutil.WriteFileAtomic(l.path, l.buf.Bytes(), false)
}

// instance runs the attempts of one task. The error is for an interrupt
// or an output directory that cannot be written; everything else ends in
// the returned status.
func (r *runner) instance(ctx context.Context, t *task.Task) (*Status, error) {
	o := r.opts
	dir := InstanceDir(o.Output, t.InstanceID)
	if err := os.RemoveAll(dir); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	start := time.Now()
	st := &Status{
		InstanceID: t.InstanceID, Status: StatusRunning, DockerImage: ImageTag(t.InstanceID),
		MaxIterations: o.MaxIterations, History: []Iteration{}, Started: start.UTC(),
		Model: ModelUsage{Name: o.ModelName}, Mode: "auto",
		Iterations: []IterationEntry{}, ResponseLogs: []string{}, Artifacts: map[string]string{},
	}
	lg := &instanceLog{path: filepath.Join(dir, FileLog)}
	write := func(name, data string) error {
		return fsutil.WriteFileAtomic(filepath.Join(dir, name), []byte(data), false)
	}
	for _, f := range []struct{ name, data string }{
		{FileDockerfileOriginal, t.Dockerfile}, {FileRunTestsOriginal, t.EvalScript}, {FileEvalOriginal, t.EvalScript},
	} {
		if err := write(f.name, f.data); err != nil {
			return nil, err
		}
	}
	st.Artifacts = artifacts(dir)
	if err := writeJSON(filepath.Join(dir, FileStatus), st); err != nil {
		return nil, err
	}
	if err := lg.printf("instance %s: image %s, at most %d attempts, eval limit %s", t.InstanceID, st.DockerImage, o.MaxIterations, o.EvalTimeout); err != nil {
		return nil, err
	}
	if own := rowImage(t, ""); own != "" && own != st.DockerImage {
		lg.printf("the row names the image %s: the transferred row keeps that name, as SWE-Factory does; the image built here is %s", own, st.DockerImage)
	}

	dockerfile, script := t.Dockerfile, t.EvalScript
	// resolved is the Dockerfile last built (after the repo-cache
	// rewrite); proof is the proving iteration's result.
	var resolved string
	var proof any
	finish := func(status, stage, reason string) (*Status, error) {
		st.Status, st.Stage, st.Reason = status, stage, reason
		st.Finished = time.Now().UTC()
		st.GeneratedAt = st.Finished.Format(time.RFC3339)
		st.Timings.TotalSeconds = time.Since(start).Seconds()
		st.Aggregate = AggregateTotals{TotalCost: st.Model.Cost, TotalInputTokens: st.Model.Usage.InputTokens, TotalOutputTokens: st.Model.Usage.OutputTokens}
		if stage == StageTimeout {
			er := ExitReasonTimeout
			st.ExitReason = &er
		}
		files := []struct{ name, data string }{{FileDockerfile, dockerfile}, {FileRunTests, script}, {FileEvalScript, script}}
		if status == StatusSuccess {
			files = append(files, struct{ name, data string }{FileDockerfileResolved, resolved})
		}
		for _, f := range files {
			if err := write(f.name, f.data); err != nil {
				return nil, err
			}
		}
		if status == StatusSuccess {
			if err := writeJSON(filepath.Join(dir, FileCheckSummary), proof); err != nil {
				return nil, err
			}
		}
		st.Artifacts = artifacts(dir)
		if err := writeJSON(filepath.Join(dir, FileStatus), st); err != nil {
			return nil, err
		}
		msg := status
		if reason != "" {
			msg += ": " + reason
		}
		return st, lg.printf("instance %s: %s", t.InstanceID, msg)
	}
	if strings.TrimSpace(t.Patch) == "" {
		return finish(StatusFailed, StageInput, "the row has no gold patch (patch), so nothing can prove the environment")
	}

	var (
		model    llm.Client
		conv     []llm.Message
		lastReal *Failure
		source   = "original"
		noChange string
		notes    []string
		// the model call that produced this attempt's files
		itCalls     int
		itCost      float64
		itIn, itOut int
		itReply     *string
	)
	for n := 1; ; n++ {
		itStart := time.Now()
		itDir := filepath.Join(dir, IterationDir(n))
		for _, f := range []struct{ name, data string }{
			{FileDockerfile, dockerfile}, {FileEvalScript, script},
		} {
			if err := fsutil.WriteFileAtomic(filepath.Join(itDir, f.name), []byte(f.data), false); err != nil {
				return nil, err
			}
		}
		it := Iteration{Iteration: n - 1, Source: source, Notes: notes}
		var f *Failure
		if noChange != "" {
			f = &Failure{Stage: StageModel, Reason: noChange}
			lg.printf("attempt %d: not built: %s", n, noChange)
		} else if rf := checkRepair(t.EvalScript, script); rf != nil {
			f = rf
			lg.printf("attempt %d: not built: %s", n, rf.Reason)
		} else {
			res, err := r.attempt(ctx, t, n, itDir, dockerfile, script, st, lg)
			if err != nil {
				if ctx.Err() != nil {
					return nil, ctx.Err()
				}
				st.TotalIterations, st.LastIterationAttempted = n, ptr(n-1)
				lg.printf("attempt %d: engine error: %v", n, err)
				return finish(StatusError, "", "engine: "+err.Error())
			}
			f = res.failure
			resolved = res.dockerfile
			it.BuildSeconds, it.CheckSeconds = res.build.Seconds(), res.check.Seconds()
			st.Timings.BuildSeconds += it.BuildSeconds
			st.Timings.CheckSeconds += it.CheckSeconds
		}
		it.OK = f == nil
		if f != nil {
			it.Stage, it.Reason = f.Stage, f.Reason
		}
		st.History = append(st.History, it)
		st.TotalIterations, st.LastIterationAttempted = n, ptr(n-1)
		result := struct {
			Iteration
			Failure *Failure `json:"failure,omitempty"`
		}{it, f}
		if err := writeJSON(filepath.Join(itDir, FileResult), result); err != nil {
			return nil, err
		}
		meta := IterationMetadata{
			Iteration: n - 1, IterationDir: IterationDir(n), StartTime: itStart.UTC().Format(time.RFC3339Nano),
			Status: "failed", EndTime: time.Now().UTC().Format(time.RFC3339Nano), DurationSeconds: time.Since(itStart).Seconds(),
			LLMCalls: itCalls, Cost: itCost, InputTokens: itIn, OutputTokens: itOut,
		}
		if f == nil {
			meta.Status = "success"
			st.FinalIteration = ptr(n - 1)
			proof = result
		} else {
			meta.Error = &IterationError{Type: f.Stage, Message: f.Reason}
		}
		if err := writeJSON(filepath.Join(itDir, FileMetadata), meta); err != nil {
			return nil, err
		}
		st.Iterations = append(st.Iterations, IterationEntry{
			Iteration: n - 1, Status: meta.Status, MetadataPath: IterationDir(n) + "/" + FileMetadata,
			Cost: itCost, LLMCalls: itCalls, ResponseLog: itReply,
		})
		itCalls, itCost, itIn, itOut, itReply = 0, 0, 0, 0, nil
		if err := writeJSON(filepath.Join(dir, FileStatus), st); err != nil {
			return nil, err
		}
		r.mu.Lock()
		r.emit(Event{Kind: EventIteration, InstanceID: t.InstanceID, Iteration: n, Status: map[bool]string{true: StatusSuccess, false: StatusFailed}[f == nil], Reason: it.Reason})
		r.mu.Unlock()
		if f == nil {
			lg.printf("attempt %d: proven", n)
			return finish(StatusSuccess, "", "")
		}
		lg.printf("attempt %d: failed at %s: %s", n, f.Stage, f.Reason)
		if f.Stage != StageModel {
			lastReal = f
		}
		final := func() (*Status, error) {
			base := f
			var extra []string
			if f.Stage == StageModel && lastReal != nil {
				base = lastReal
				extra = append(extra, f.Reason)
			}
			if !f.Final && n >= o.MaxIterations && o.MaxIterations > 1 {
				extra = append(extra, fmt.Sprintf("still failing after %d attempts", n))
			}
			reason := base.Reason
			if len(extra) > 0 {
				reason += " (" + strings.Join(extra, "; ") + ")"
			}
			return finish(StatusFailed, base.Stage, reason)
		}
		if f.Final || n >= o.MaxIterations || o.NewModel == nil {
			return final()
		}
		if r.stopping() {
			lg.printf("stopped before attempt %d; the instance runs again next time", n+1)
			return nil, errStopped
		}

		// Ask for a repair of the last real failure.
		if model == nil {
			m, err := o.NewModel(t)
			if err != nil {
				lg.printf("repair model: %v", err)
				return finish(StatusError, lastReal.Stage, "repair model: "+err.Error())
			}
			model = m
			st.Model.Name, st.Model.Offline = m.Name(), llm.IsOffline(m)
			conv = []llm.Message{{Role: llm.RoleSystem, Content: SystemPrompt()}}
		}
		prompt := repairPrompt(t, n, o.MaxIterations, lastReal, dockerfile, script)
		if f.Stage == StageModel {
			prompt = "Your last reply changed nothing that could be built: " + f.Reason + ".\n\n" + prompt
		}
		conv = append(conv, llm.Message{Role: llm.RoleUser, Content: prompt})
		next := filepath.Join(dir, IterationDir(n+1))
		if err := writeJSON(filepath.Join(next, FileModelRequest), conv); err != nil {
			return nil, err
		}
		lg.printf("asking %s for a repair", model.Name())
		mstart := time.Now()
		resp, err := model.Complete(ctx, llm.Request{Messages: conv})
		st.Timings.ModelSeconds += time.Since(mstart).Seconds()
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			lg.printf("repair model failed: %v", err)
			reason := lastReal.Reason + " (the repair model failed: " + err.Error() + ")"
			if errors.Is(err, llm.ErrExhausted) || errors.Is(err, llm.ErrContextWindow) {
				return finish(StatusFailed, lastReal.Stage, reason)
			}
			return finish(StatusError, lastReal.Stage, reason)
		}
		st.Model.Calls++
		st.Model.Usage = st.Model.Usage.Add(resp.Usage)
		st.Model.Cost += resp.Cost
		itCalls, itCost, itIn, itOut = 1, resp.Cost, resp.Usage.InputTokens, resp.Usage.OutputTokens
		replyLog := IterationDir(n+1) + "/" + FileModelReply
		itReply = &replyLog
		st.ResponseLogs = append(st.ResponseLogs, replyLog)
		reply := resp.Message
		conv = append(conv, llm.Message{Role: llm.RoleAssistant, Content: reply.Content})
		if err := fsutil.WriteFileAtomic(filepath.Join(next, FileModelReply), []byte(withNewline(reply.Content)), false); err != nil {
			return nil, err
		}
		p := ParseReply(reply.Content)
		notes = p.Notes
		for _, note := range p.Notes {
			lg.printf("reply: %s", note)
		}
		newD, newS := dockerfile, script
		var changed []string
		if p.Dockerfile != "" && p.Dockerfile != dockerfile {
			newD = p.Dockerfile
			changed = append(changed, "Dockerfile")
		}
		if p.EvalScript != "" && p.EvalScript != script {
			newS = p.EvalScript
			changed = append(changed, "eval script")
		}
		noChange = ""
		if len(changed) == 0 {
			noChange = "the model's reply changed neither the Dockerfile nor the eval script"
		} else {
			lg.printf("the model changed the %s", strings.Join(changed, " and the "))
		}
		dockerfile, script, source = newD, newS, "model"
	}
}

// attemptResult is one attempt's outcome.
type attemptResult struct {
	failure      *Failure
	build, check time.Duration
	// dockerfile is the Dockerfile built, after the repo-cache rewrite.
	dockerfile string
}

// attempt builds the image and proves it. Errors mean the engine failed.
func (r *runner) attempt(ctx context.Context, t *task.Task, n int, itDir, dockerfile, script string, st *Status, lg *instanceLog) (*attemptResult, error) {
	o := r.opts
	res := &attemptResult{}
	ctxDir, err := os.MkdirTemp("", "swerve-build-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(ctxDir)

	off, err := UseRepoCache(dockerfile, o.RepoCache)
	if err != nil {
		return nil, err
	}
	var cached []string
	for _, m := range off.Mirrors {
		if err := fsutil.CopyTree(m.Host, filepath.Join(ctxDir, filepath.FromSlash(m.Context)), fsutil.CopyOptions{Link: true}); err != nil {
			return nil, fmt.Errorf("repo cache: copy %s into the build context: %w", m.Host, err)
		}
		cached = append(cached, m.Repo)
		lg.printf("attempt %d: repo cache: cloning github.com/%s from %s (copied into the build context as %s; offline)", n, m.Repo, m.Host, m.Context)
	}
	for _, repo := range off.Missing {
		lg.printf("attempt %d: repo cache: github.com/%s is not in %s; its clone needs the network", n, repo, o.RepoCache)
	}
	if len(cached) > 0 {
		st.RepoCache = cached
	}
	res.dockerfile = off.Dockerfile
	if off.Dockerfile != dockerfile {
		if err := fsutil.WriteFileAtomic(filepath.Join(itDir, FileDockerfileResolved), []byte(off.Dockerfile), false); err != nil {
			return nil, err
		}
	}

	tag := ImageTag(t.InstanceID)
	lg.printf("attempt %d: building %s", n, tag)
	var buildLog bytes.Buffer
	bstart := time.Now()
	berr := o.Engine.Build(ctx, docker.BuildOptions{
		ContextDir: ctxDir, Dockerfile: off.Dockerfile, Tags: []string{tag},
		Labels: map[string]string{LabelInstance: t.InstanceID}, Progress: &buildLog,
	})
	res.build = time.Since(bstart)
	if berr != nil {
		fmt.Fprintf(&buildLog, "\nerror: %v\n", berr)
	}
	if err := fsutil.WriteFileAtomic(filepath.Join(itDir, FileBuildLog), buildLog.Bytes(), false); err != nil {
		return nil, err
	}
	if berr != nil {
		if ctx.Err() != nil || errors.Is(berr, sandbox.ErrUnavailable) {
			return nil, berr
		}
		res.failure = &Failure{Stage: StageBuild, Reason: "the image does not build: " + buildError(berr, tag),
			Command: "docker build (the Dockerfile below)", Output: tail(buildLog.String())}
		return res, nil
	}
	lg.printf("attempt %d: built in %.1fs; checking", n, res.build.Seconds())

	var checkLog bytes.Buffer
	p := &prover{eng: o.Engine, image: tag, t: withScript(t, script), timeout: o.EvalTimeout, log: &checkLog}
	cstart := time.Now()
	f, err := p.prove(ctx)
	res.check = time.Since(cstart)
	if werr := fsutil.WriteFileAtomic(filepath.Join(itDir, FileCheckLog), checkLog.Bytes(), false); werr != nil {
		return nil, werr
	}
	if err != nil {
		return nil, err
	}
	res.failure = f
	return res, nil
}

// withScript is t with another eval script.
func withScript(t *task.Task, script string) *task.Task {
	c := *t
	c.EvalScript = script
	return &c
}

// buildError is the engine's one-line message for a failed build.
func buildError(err error, tag string) string {
	msg := err.Error()
	if rest, ok := strings.CutPrefix(msg, "build "+tag+": "); ok {
		msg = rest
	} else if head, rest, ok := strings.Cut(msg, ": "); ok && strings.HasPrefix(head, "build ") && !strings.Contains(head, "\n") {
		msg = rest
	}
	if i := strings.IndexByte(msg, '\n'); i >= 0 {
		msg = msg[:i]
	}
	return strings.TrimSpace(msg)
}

// ptr returns a pointer to a copy of v.
func ptr[T any](v T) *T { return &v }

// artifacts is status.json's artifacts: SWE-Factory's keys for the files
// dir holds.
func artifacts(dir string) map[string]string {
	m := map[string]string{}
	for _, a := range []struct{ key, name string }{
		{"dockerfile", FileDockerfile}, {"run_tests", FileRunTests}, {"eval_script", FileEvalScript},
		{"dockerfile_original", FileDockerfileOriginal}, {"run_tests_original", FileRunTestsOriginal},
		{"eval_script_original", FileEvalOriginal}, {"checker_summary", FileCheckSummary},
	} {
		if _, err := os.Stat(filepath.Join(dir, a.name)); err == nil {
			m[a.key] = a.name
		}
	}
	return m
}
