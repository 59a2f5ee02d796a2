package cli

// End-to-end tests of `swerve run`: the static binary runs as a subprocess,
// the way a user runs it, and is killed, interrupted and resumed.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/moby/moby/client"

	"github.com/swerve-dev/swerve/internal/demo"
	"github.com/swerve-dev/swerve/internal/run"
	"github.com/swerve-dev/swerve/internal/sandbox/docker"
	"github.com/swerve-dev/swerve/internal/sandbox/local"
	"github.com/swerve-dev/swerve/internal/testutil"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// e2eEnv is the environment of a swerve subprocess: /usr/bin first in PATH
// (a python3 with pytest), box directories under tmp, and the static binary
// as the shim.
func e2eEnv(t *testing.T, tmp string) []string {
	t.Helper()
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch k {
		case "PATH", "TMPDIR", "SWERVE_SHIM_BINARY":
			continue
		}
		env = append(env, kv)
	}
	return append(env,
		// A python3 without pytest first, as on machines with a pyenv or
		// conda python: the local backend must still grade with one that
		// has it.
		"PATH="+testutil.DecoyPython(t)+":"+os.Getenv("PATH"),
		"TMPDIR="+tmp,
		"SWERVE_SHIM_BINARY="+testutil.SwerveBinary(t),
	)
}

// swerveProc is one swerve subprocess.
type swerveProc struct {
	cmd    *exec.Cmd
	stdout bytes.Buffer
	stderr syncBuffer
	done   chan struct{}
	err    error
}

// syncBuffer is a buffer a test may read while the process writes it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// startSwerve starts the binary with args. If events is set, stdout goes to
// it instead of the buffer (for --json progress).
func startSwerve(t *testing.T, env []string, dir string, events io.Writer, args ...string) *swerveProc {
	t.Helper()
	p := &swerveProc{done: make(chan struct{})}
	p.cmd = exec.Command(testutil.SwerveBinary(t), args...)
	p.cmd.Env, p.cmd.Dir = env, dir
	p.cmd.Stdout, p.cmd.Stderr = &p.stdout, &p.stderr
	if events != nil {
		p.cmd.Stdout = events
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.err = p.cmd.Wait(); close(p.done) }()
	t.Cleanup(func() {
		select {
		case <-p.done:
		default:
			p.cmd.Process.Kill()
			<-p.done
		}
	})
	return p
}

// wait waits for the process (at most limit) and returns its exit code.
func (p *swerveProc) wait(t *testing.T, limit time.Duration) int {
	t.Helper()
	select {
	case <-p.done:
	case <-time.After(limit):
		p.cmd.Process.Kill()
		<-p.done
		t.Fatalf("swerve %s did not finish within %s\nstderr:\n%s", strings.Join(p.cmd.Args[1:], " "), limit, p.stderr.String())
	}
	var ee *exec.ExitError
	switch {
	case p.err == nil:
		return 0
	case errors.As(p.err, &ee):
		return ee.ExitCode()
	default:
		t.Fatal(p.err)
		return -1
	}
}

// runSwerve runs the binary to the end and returns stdout, stderr and the
// exit code.
func runSwerve(t *testing.T, env []string, dir string, limit time.Duration, args ...string) (string, string, int) {
	t.Helper()
	p := startSwerve(t, env, dir, nil, args...)
	code := p.wait(t, limit)
	return p.stdout.String(), p.stderr.String(), code
}

// e2eDataset writes one dataset of the sample and demo tasks with their
// source_dir made absolute, each task repeated copies times under its own
// instance id (the first copy keeps the original id), and returns its path
// and the instance ids.
func e2eDataset(t *testing.T, dir string, copies int) (string, []string) {
	t.Helper()
	root := testutil.RepoRoot(t)
	var out bytes.Buffer
	var ids []string
	for c := range copies {
		for _, rel := range []string{"internal/demo/tasks/tasks.jsonl", "examples/sample/tasks.jsonl"} {
			for _, row := range readRows(t, filepath.Join(root, rel)) {
				if sd, _ := row["source_dir"].(string); sd != "" && !filepath.IsAbs(sd) {
					row["source_dir"] = filepath.Join(root, filepath.Dir(rel), sd)
				}
				if c > 0 {
					row["instance_id"] = fmt.Sprintf("%s-copy%d", row["instance_id"], c)
				}
				ids = append(ids, row["instance_id"].(string))
				b, err := json.Marshal(row)
				if err != nil {
					t.Fatal(err)
				}
				out.Write(b)
				out.WriteByte('\n')
			}
		}
	}
	path := filepath.Join(dir, "tasks.jsonl")
	if err := os.WriteFile(path, out.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	sort.Strings(ids)
	return path, ids
}

// readRows reads a JSON Lines file of objects.
func readRows(t *testing.T, path string) []map[string]any {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var rows []map[string]any
	for line := range strings.SplitSeq(strings.TrimSpace(string(data)), "\n") {
		if strings.TrimSpace(line) == "" {
			continue
		}
		var row map[string]any
		if err := json.Unmarshal([]byte(line), &row); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		rows = append(rows, row)
	}
	return rows
}

// wholeLines reads a JSON Lines file that must hold only whole lines, each
// one JSON value. A missing file is nil.
func wholeLines(t *testing.T, path string) []json.RawMessage {
	t.Helper()
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	if len(data) == 0 {
		return []json.RawMessage{}
	}
	if data[len(data)-1] != '\n' {
		t.Errorf("%s: the last line is not whole (no newline at the end)", path)
	}
	out := []json.RawMessage{}
	for i, line := range bytes.Split(bytes.TrimSuffix(data, []byte("\n")), []byte("\n")) {
		if !json.Valid(line) {
			t.Errorf("%s: line %d is not JSON (%d bytes)", path, i+1, len(line))
			continue
		}
		out = append(out, json.RawMessage(line))
	}
	return out
}

// noTempFiles fails for any temporary file under dir.
func noTempFiles(t *testing.T, dir string) {
	t.Helper()
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && strings.Contains(d.Name(), ".tmp") {
			t.Errorf("temporary file left behind: %s", p)
		}
		return nil
	})
}

// checkConsistent checks what any run, finished or killed, leaves: whole
// files only, and aggregates that name recorded tasks only, each once. It
// returns the recorded instance ids.
func checkConsistent(t *testing.T, traj, exp string) []string {
	t.Helper()
	recs, err := run.LoadRecords(traj)
	if err != nil {
		t.Fatalf("records: %v", err)
	}
	var recorded []string
	for id, rec := range recs {
		recorded = append(recorded, id)
		for _, f := range []string{"agent.log", "output_patch.diff", "test_output.log", "metadata.json"} {
			if _, err := os.Stat(filepath.Join(run.TaskDir(traj, id), f)); err != nil {
				t.Errorf("%s is recorded but: %v", id, err)
			}
		}
		if rec.Fingerprint == "" || rec.Finished.IsZero() {
			t.Errorf("%s: record without fingerprint or finish time", id)
		}
	}
	sort.Strings(recorded)
	lines := wholeLines(t, filepath.Join(traj, exp+".jsonl"))
	seen := map[string]bool{}
	for _, l := range lines {
		var v struct {
			InstanceID string `json:"instance_id"`
		}
		json.Unmarshal(l, &v)
		if seen[v.InstanceID] {
			t.Errorf("%s.jsonl: %s twice", exp, v.InstanceID)
		}
		seen[v.InstanceID] = true
		if recs[v.InstanceID] == nil {
			t.Errorf("%s.jsonl: %s has no record", exp, v.InstanceID)
		}
	}
	wholeLines(t, filepath.Join(traj, "trajectories.jsonl"))
	wholeLines(t, filepath.Join(traj, "trajectories_rejection_sampling.jsonl"))
	for _, f := range []string{"reward_summary.json", "preds.json"} {
		b, err := os.ReadFile(filepath.Join(traj, f))
		if err == nil && !json.Valid(b) {
			t.Errorf("%s is not whole JSON", f)
		}
	}
	return recorded
}

// checkFinished checks a finished run of ids, all resolved: every task is
// in every file exactly once, and nothing temporary is left.
func checkFinished(t *testing.T, traj, exp string, ids []string) map[string]*run.Record {
	t.Helper()
	if got := checkConsistent(t, traj, exp); !slices.Equal(got, ids) {
		t.Fatalf("recorded %d tasks %v, want %d %v", len(got), got, len(ids), ids)
	}
	recs, _ := run.LoadRecords(traj)
	var lineIDs []string
	var histories []json.RawMessage
	for _, l := range wholeLines(t, filepath.Join(traj, exp+".jsonl")) {
		var v struct {
			InstanceID string          `json:"instance_id"`
			History    json.RawMessage `json:"history"`
			Tools      json.RawMessage `json:"tools"`
		}
		if err := json.Unmarshal(l, &v); err != nil {
			t.Fatal(err)
		}
		lineIDs = append(lineIDs, v.InstanceID)
		h := v.History
		if len(v.Tools) > 0 {
			h, _ = json.Marshal(map[string]json.RawMessage{"messages": v.History, "tools": v.Tools})
		}
		histories = append(histories, h)
	}
	if !slices.Equal(lineIDs, ids) {
		t.Errorf("%s.jsonl holds %v, want each of %v once, in order", exp, lineIDs, ids)
	}
	// trajectories.jsonl: one line per task, the same conversations as
	// <exp>.jsonl in the same order.
	trajs := wholeLines(t, filepath.Join(traj, "trajectories.jsonl"))
	if len(trajs) != len(ids) {
		t.Errorf("trajectories.jsonl has %d lines, want %d", len(trajs), len(ids))
	} else {
		for i := range trajs {
			if !jsonEqual(trajs[i], histories[i]) {
				t.Errorf("trajectories.jsonl line %d is not %s's conversation", i+1, ids[i])
			}
		}
	}
	if n := len(wholeLines(t, filepath.Join(traj, "trajectories_rejection_sampling.jsonl"))); n != len(ids) {
		t.Errorf("trajectories_rejection_sampling.jsonl has %d lines, want %d", n, len(ids))
	}
	var preds []struct {
		InstanceID string `json:"instance_id"`
		Patch      string `json:"model_patch"`
	}
	readJSONInto(t, filepath.Join(traj, "preds.json"), &preds)
	var predIDs []string
	for _, p := range preds {
		predIDs = append(predIDs, p.InstanceID)
		if r := recs[p.InstanceID]; r == nil || r.Patch != p.Patch || p.Patch == "" {
			t.Errorf("preds.json: %s's patch is not its record's", p.InstanceID)
		}
	}
	if !slices.Equal(predIDs, ids) {
		t.Errorf("preds.json holds %v, want %v", predIDs, ids)
	}
	var sum run.RewardSummary
	readJSONInto(t, filepath.Join(traj, "reward_summary.json"), &sum)
	if sum.Total != len(ids) || sum.Reward1.Count != len(ids) || sum.Reward0.Count != 0 || !slices.Equal(sum.Reward1.InstanceIDs, ids) {
		t.Errorf("reward_summary.json: total %d, resolved %d (%v), unresolved %d (%v); want all %d resolved",
			sum.Total, sum.Reward1.Count, sum.Reward1.InstanceIDs, sum.Reward0.Count, sum.Reward0.InstanceIDs, len(ids))
	}
	noTempFiles(t, traj)
	return recs
}

func jsonEqual(a, b []byte) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	xa, _ := json.Marshal(x)
	ya, _ := json.Marshal(y)
	return bytes.Equal(xa, ya)
}

func readJSONInto(t *testing.T, path string, v any) {
	t.Helper()
	if err := readJSONFile(path, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

// noLocalBoxes fails if any local box directory is left under tmp.
func noLocalBoxes(t *testing.T, tmp, when string) {
	t.Helper()
	left, err := local.Leftovers(context.Background(), tmp, true)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range left {
		t.Errorf("%s: local box %s (owner pid %d, run %s) is left", when, l.Dir, l.OwnerPID, l.RunID)
	}
}

// e2eSeed is the random seed of a test: $SWERVE_E2E_SEED, else the clock.
func e2eSeed(t *testing.T) uint64 {
	t.Helper()
	if s := os.Getenv("SWERVE_E2E_SEED"); s != "" {
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("SWERVE_E2E_SEED: %v", err)
		}
		return v
	}
	return uint64(time.Now().UnixNano())
}

// TestRunKillResume kills `swerve run` with SIGKILL at random points, more
// than once per output directory, and reruns the same command until it
// finishes: every task is then recorded exactly once, all resolved, no file
// is half written, and no box of a killed process survives gc or the next
// run's start.
func TestRunKillResume(t *testing.T) {
	testutil.NeedPytest(t)
	work := t.TempDir()
	tmp := filepath.Join(work, "tmp")
	os.Mkdir(tmp, 0o755)
	env := e2eEnv(t, tmp)
	data, ids := e2eDataset(t, work, 2) // 10 tasks
	args := func(traj string) []string {
		return []string{"run", "--dataset", data, "--llm_name", "oracle/gold", "--scaffold", "r2egym", "--backend", "local",
			"--max_workers", "2", "--traj_dir", traj, "--exp_name", "e"}
	}

	// A run nobody kills: how long a whole run takes, and the results the
	// killed ones must end with.
	ref := filepath.Join(work, "ref")
	start := time.Now()
	if _, stderr, code := runSwerve(t, env, work, 5*time.Minute, args(ref)...); code != 0 {
		t.Fatalf("reference run: exit %d\n%s", code, stderr)
	}
	full := time.Since(start)
	refRecs := checkFinished(t, ref, "e", ids)
	noLocalBoxes(t, tmp, "after the reference run")

	// Each kill point falls anywhere from 50ms to about how long the tasks
	// still to run take, so that kills land in every phase: opening
	// boxes, mid-episode, grading, writing a task's files, rebuilding the
	// aggregates at the end.
	seed := e2eSeed(t)
	rng := rand.New(rand.NewPCG(seed, 0))
	t.Logf("a whole run takes %s; seed %d (SWERVE_E2E_SEED=%d repeats the kill points)", full.Round(time.Millisecond), seed, seed)

	const iterations, killsPerIteration = 3, 3
	for it := range iterations {
		traj := filepath.Join(work, fmt.Sprintf("traj%d", it))
		var recorded []string
		for k := range killsPerIteration {
			left := len(ids) - len(recorded)
			if left == 0 {
				break
			}
			span := max(full*time.Duration(left)/time.Duration(len(ids)), 300*time.Millisecond)
			delay := 50*time.Millisecond + time.Duration(rng.Int64N(int64(span)))
			p := startSwerve(t, env, work, nil, args(traj)...)
			killed := false
			select {
			case <-p.done:
			case <-time.After(delay):
				killed = p.cmd.Process.Signal(syscall.SIGKILL) == nil
				<-p.done
			}
			recorded = checkConsistent(t, traj, "e")
			what := "SIGKILL"
			if !killed {
				what = "finished before the kill"
			}
			t.Logf("iteration %d, run %d (pid %d): %s at %s; %d of %d tasks recorded", it, k, p.cmd.Process.Pid, what, delay.Round(time.Millisecond), len(recorded), len(ids))
			if k%2 == 1 {
				// gc removes the boxes of the killed process (its
				// helpers die with it; the directories stay).
				out, stderr, code := runSwerve(t, env, work, time.Minute, "gc")
				if code != 0 {
					t.Fatalf("swerve gc: exit %d\n%s%s", code, out, stderr)
				}
				noLocalBoxes(t, tmp, fmt.Sprintf("iteration %d, run %d: after swerve gc", it, k))
			}
		}
		// The same command again, to the end; its start removes what the
		// last killed run left.
		_, stderr, code := runSwerve(t, env, work, 5*time.Minute, args(traj)...)
		if code != 0 {
			t.Fatalf("iteration %d: the resumed run: exit %d\n%s", it, code, stderr)
		}
		recs := checkFinished(t, traj, "e", ids)
		for _, id := range ids {
			if recs[id].Patch != refRecs[id].Patch || recs[id].Reward != 1 {
				t.Errorf("iteration %d: %s: reward %g, patch differs from the uninterrupted run's: %v", it, id, recs[id].Reward, recs[id].Patch != refRecs[id].Patch)
			}
		}
		noLocalBoxes(t, tmp, fmt.Sprintf("iteration %d: after the resumed run", it))
	}
}

// jsonEvents collects `swerve run --json` progress events from a pipe and
// calls on for each.
func jsonEvents(t *testing.T, r io.Reader, on func(run.Event)) <-chan []run.Event {
	ch := make(chan []run.Event, 1)
	go func() {
		var all []run.Event
		sc := bufio.NewScanner(r)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			var e run.Event
			if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
				t.Errorf("progress line %q: %v", sc.Text(), err)
				continue
			}
			all = append(all, e)
			on(e)
		}
		ch <- all
	}()
	return ch
}

// TestRunSignal interrupts `swerve run` with SIGINT mid-run: once (graceful:
// exit 130, summaries of what finished, the rest not recorded, no boxes
// left) and twice in quick succession (cancel now: the same guarantees);
// each time a rerun completes.
func TestRunSignal(t *testing.T) {
	testutil.NeedPytest(t)
	work := t.TempDir()
	tmp := filepath.Join(work, "tmp")
	os.Mkdir(tmp, 0o755)
	env := e2eEnv(t, tmp)
	data, ids := e2eDataset(t, work, 2)

	for _, tc := range []struct {
		name    string
		signals int
	}{{"once", 1}} {
		t.Run(tc.name, func(t *testing.T) {
			traj := filepath.Join(work, tc.name)
			args := []string{"run", "--dataset", data, "--llm_name", "oracle/gold", "--scaffold", "r2egym", "--backend", "local",
				"--max_workers", "2", "--traj_dir", traj, "--exp_name", "e"}
			pr, pw := io.Pipe()
			// The process's output waits in the pipe until it is read.
			p := startSwerve(t, env, work, pw, append(args, "--json")...)
			sent := make(chan struct{})
			signalled := false
			events := jsonEvents(t, pr, func(e run.Event) {
				// Interrupt once the first task is recorded: the run is
				// then surely under way, with tasks left.
				if e.Kind == run.EventDone && !signalled {
					signalled = true
					for i := range tc.signals {
						if i > 0 {
							time.Sleep(5 * time.Millisecond)
						}
						p.cmd.Process.Signal(syscall.SIGINT)
					}
					close(sent)
				}
			})
			code := p.wait(t, 5*time.Minute)
			pw.Close()
			all := <-events
			select {
			case <-sent:
			default:
				t.Fatalf("no task finished, nothing was interrupted (exit %d)\n%s", code, p.stderr.String())
			}
			stderr := p.stderr.String()
			if code != 130 {
				t.Fatalf("exit %d, want 130\n%s", code, stderr)
			}
			if !strings.Contains(stderr, "interrupted; rerun the same command") {
				t.Errorf("stderr does not say how to resume:\n%s", stderr)
			}
			if tc.signals == 2 && !strings.Contains(stderr, "again: cancelling now") {
				t.Errorf("the second SIGINT was not taken as cancel-now:\n%s", stderr)
			}
			var done, aborted []string
			for _, e := range all {
				switch e.Kind {
				case run.EventDone:
					done = append(done, e.InstanceID)
				case run.EventAborted:
					aborted = append(aborted, e.InstanceID)
				}
			}
			sort.Strings(done)
			recorded := checkConsistent(t, traj, "e")
			if !slices.Equal(recorded, done) {
				t.Errorf("recorded %v, but the tasks reported done are %v", recorded, done)
			}
			if len(recorded) == 0 || len(recorded) >= len(ids) {
				t.Errorf("%d of %d tasks recorded: the interrupt did not land mid-run", len(recorded), len(ids))
			}
			for _, id := range aborted {
				if slices.Contains(recorded, id) {
					t.Errorf("%s was interrupted but recorded", id)
				}
			}
			// The summaries are written and cover exactly what was
			// recorded.
			for _, f := range []string{"e.jsonl", "trajectories.jsonl", "trajectories_rejection_sampling.jsonl", "reward_summary.json", "preds.json"} {
				if _, err := os.Stat(filepath.Join(traj, f)); err != nil {
					t.Errorf("summary not written: %v", err)
				}
			}
			var sum run.RewardSummary
			readJSONInto(t, filepath.Join(traj, "reward_summary.json"), &sum)
			if sum.Total != len(recorded) || sum.Reward1.Count != len(recorded) {
				t.Errorf("reward_summary.json: total %d, resolved %d; want %d", sum.Total, sum.Reward1.Count, len(recorded))
			}
			if n := len(wholeLines(t, filepath.Join(traj, "e.jsonl"))); n != len(recorded) {
				t.Errorf("e.jsonl has %d lines, want %d", n, len(recorded))
			}
			noTempFiles(t, traj)
			noLocalBoxes(t, tmp, "after the interrupted run")
			t.Logf("%d signal(s): %d recorded, %d interrupted (%v)", tc.signals, len(recorded), len(aborted), aborted)

			_, stderr, code = runSwerve(t, env, work, 5*time.Minute, args...)
			if code != 0 {
				t.Fatalf("rerun: exit %d\n%s", code, stderr)
			}
			if want := fmt.Sprintf("%d ran, %d finished before", len(ids)-len(recorded), len(recorded)); !strings.Contains(stderr, want) {
				t.Errorf("rerun's summary does not say %q:\n%s", want, stderr)
			}
			checkFinished(t, traj, "e", ids)
			noLocalBoxes(t, tmp, "after the rerun")
		})
	}
}

// goldenNormalizer masks what differs between two identical runs.
type goldenNormalizer struct {
	literal [][2]string // exact strings, in order
}

var (
	// A pack's name (in the history proof's fingerprint) depends on git's
	// version, and the demo repositories are committed when a box opens.
	reGitFingerprint = regexp.MustCompile(`"git_fingerprint":"[0-9a-f]+"`)
	reHistoryHead    = regexp.MustCompile(`("history":\{[^{}]*"head":")[0-9a-f]+`)
	reBox            = regexp.MustCompile(`<TMP>/swerve-local-[0-9]+(-[0-9]+)?`)
	reTime           = regexp.MustCompile(`[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]+)?(Z|[+-][0-9]{2}:[0-9]{2})`)
	reDuration       = regexp.MustCompile(`"(llm_exec_time|env_exec_time|total_step_time|total_time_traj|llm_time|env_time|total_time|reward_calc_time|duration|seconds)":(\s*)-?[0-9][0-9.eE+-]*`)
	// Token counts are estimated from the conversation, which holds the
	// box's path; its random part changes the count.
	reTokenObj   = regexp.MustCompile(`"(token_usage|tokens)":\s*\{[^{}]*\}`)
	reTokenField = regexp.MustCompile(`"(input|output|total|conversation_total|token_usage_prompt|token_usage_completion|token_usage_total)":(\s*)[0-9]+`)
	reTokenStep  = regexp.MustCompile(`"(token_usage_prompt|token_usage_completion|token_usage_total)":[0-9]+`)
	reLogStep    = regexp.MustCompile(`\(model [0-9.]+s, tools [0-9.]+s, tokens in [0-9]+ out [0-9]+\)`)
	reRan        = regexp.MustCompile(`Ran ([0-9]+) tests? in [0-9.]+s`)
	rePytestTime = regexp.MustCompile(`passed in [0-9.]+s`)
	reSumTokens  = regexp.MustCompile(`tokens +in [0-9]+, out [0-9]+`)
	reWall       = regexp.MustCompile(`wall time +[0-9hms.]+`)
	reEventSecs  = regexp.MustCompile(`· [0-9]+s ·`)
	// agent.log's upstream-shaped lines.
	reLogTime   = regexp.MustCompile(`(?m)^[0-9]{4}-[0-9]{2}-[0-9]{2} [0-9]{2}:[0-9]{2}:[0-9]{2} \[`)
	reLogReward = regexp.MustCompile(`reward in seconds: [0-9.]+`)
	reLogTokens = regexp.MustCompile(`(Prompt|Completion|Total) Tokens: [0-9]+`)
)

func (n goldenNormalizer) apply(s string) string {
	for _, l := range n.literal {
		if l[0] != "" {
			s = strings.ReplaceAll(s, l[0], l[1])
		}
	}
	s = reBox.ReplaceAllString(s, "<BOX>")
	s = reGitFingerprint.ReplaceAllString(s, `"git_fingerprint":"<FP>"`)
	s = reHistoryHead.ReplaceAllString(s, `${1}<HEAD>`)
	s = reTime.ReplaceAllString(s, "<TIME>")
	s = reDuration.ReplaceAllString(s, `"$1":${2}0`)
	s = reTokenObj.ReplaceAllStringFunc(s, func(obj string) string {
		return reTokenField.ReplaceAllString(obj, `"$1":${2}0`)
	})
	s = reTokenStep.ReplaceAllString(s, `"$1":0`)
	s = reLogStep.ReplaceAllString(s, "(model 0s, tools 0s, tokens in N out N)")
	s = reRan.ReplaceAllString(s, "Ran $1 tests in 0s")
	s = rePytestTime.ReplaceAllString(s, "passed in 0s")
	s = reSumTokens.ReplaceAllString(s, "tokens        in N, out N")
	s = reWall.ReplaceAllString(s, "wall time     0s")
	s = reEventSecs.ReplaceAllString(s, "· 0s ·")
	s = reLogTime.ReplaceAllString(s, "<TIME> [")
	s = reLogReward.ReplaceAllString(s, "reward in seconds: 0")
	s = reLogTokens.ReplaceAllString(s, "$1 Tokens: N")
	return s
}

// TestRunGoldenFiles runs the demo tasks deterministically (oracle/gold, one
// worker, local boxes) and compares every output file, with times, paths,
// box names and token estimates masked, with testdata/run. -update rewrites
// them.
func TestRunGoldenFiles(t *testing.T) {
	testutil.HostPython(t) // the demo tasks' tests run on the host
	root := testutil.RepoRoot(t)
	work := t.TempDir()
	tmp := filepath.Join(work, "tmp")
	os.Mkdir(tmp, 0o755)
	env := e2eEnv(t, tmp)
	traj := filepath.Join(work, "out")
	data := filepath.Join(root, "internal", "demo", "tasks", "tasks.jsonl")
	_, stderr, code := runSwerve(t, env, work, 5*time.Minute, "run", "--dataset", data, "--llm_name", "oracle/gold",
		"--backend", "local", "--max_workers", "1", "--traj_dir", traj, "--exp_name", "golden")
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	norm := goldenNormalizer{literal: [][2]string{{traj, "<TRAJ>"}, {tmp, "<TMP>"}, {root, "<REPO>"}}}
	got := map[string]string{}
	filepath.WalkDir(traj, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || d.Name() == ".swerve-aggregates.json" { // sizes and times
			return err
		}
		rel, _ := filepath.Rel(traj, p)
		if rel == run.LockName { // holds the run's pid; TestRunLock tests it
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		got[filepath.ToSlash(rel)] = norm.apply(string(b))
		return nil
	})
	// What the user reads on stderr (boxes gc removed for other killed
	// swerves on this machine are not this run's).
	var lines []string
	for line := range strings.SplitSeq(stderr, "\n") {
		if !strings.HasPrefix(line, "swerve: removed ") {
			lines = append(lines, line)
		}
	}
	got["stderr.txt"] = norm.apply(strings.Join(lines, "\n"))

	golden := filepath.Join(root, "internal", "cli", "testdata", "run")
	if *update {
		os.RemoveAll(golden)
		for name, content := range got {
			p := filepath.Join(golden, filepath.FromSlash(name))
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		t.Logf("wrote %d golden files under %s", len(got), golden)
		return
	}
	want := map[string]string{}
	filepath.WalkDir(golden, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(golden, p)
		b, _ := os.ReadFile(p)
		want[filepath.ToSlash(rel)] = string(b)
		return nil
	})
	if len(want) == 0 {
		t.Fatalf("no golden files under %s (run go test ./internal/cli -run TestRunGoldenFiles -update)", golden)
	}
	var names []string
	for name := range got {
		names = append(names, name)
	}
	for name := range want {
		if _, ok := got[name]; !ok {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	for _, name := range names {
		g, inGot := got[name]
		w, inWant := want[name]
		switch {
		case !inWant:
			t.Errorf("%s: written by the run, but has no golden file", name)
		case !inGot:
			t.Errorf("%s: has a golden file, but the run did not write it", name)
		case g != w:
			t.Errorf("%s differs from its golden file (-update rewrites it):\n%s", name, firstDiff(w, g))
		}
	}
	// The token counts that were masked are still counted.
	var sum run.RewardSummary
	readJSONInto(t, filepath.Join(traj, "reward_summary.json"), &sum)
	if sum.Tokens.Input <= 0 || sum.Tokens.Output <= 0 || sum.Tokens.Total != sum.Tokens.Input+sum.Tokens.Output || !sum.Tokens.Estimated {
		t.Errorf("reward_summary.json tokens %+v", sum.Tokens)
	}
	noLocalBoxes(t, tmp, "after the run")
}

// firstDiff shows the first line where want and got differ.
func firstDiff(want, got string) string {
	wl, gl := strings.Split(want, "\n"), strings.Split(got, "\n")
	for i := range max(len(wl), len(gl)) {
		var w, g string
		if i < len(wl) {
			w = wl[i]
		}
		if i < len(gl) {
			g = gl[i]
		}
		if w != g {
			clip := func(s string) string {
				if len(s) > 400 {
					return s[:400] + "…"
				}
				return s
			}
			return fmt.Sprintf("line %d:\n  want: %s\n  got:  %s", i+1, clip(w), clip(g))
		}
	}
	return "(same lines)"
}

// e2eDocker returns a docker backend, skipping (or failing under
// SWERVE_DOCKER_TESTS=1) without an engine.
func e2eDocker(t *testing.T) *docker.Backend {
	t.Helper()
	if err := docker.Probe(t.Context()); err != nil {
		testutil.SkipOrFail(t, "no container engine: %v", err)
	}
	b, err := docker.New(t.Context(), docker.Config{})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// runContainers lists every container a swerve process made, running or
// not.
func runContainers(t *testing.T, b *docker.Backend, pid int) []string {
	t.Helper()
	out, err := listRunContainers(b, pid)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func listRunContainers(b *docker.Backend, pid int) ([]string, error) {
	f := make(client.Filters).Add("label", docker.LabelManaged+"=true").Add("label", docker.LabelOwnerPID+"="+strconv.Itoa(pid))
	res, err := b.Client().ContainerList(context.Background(), client.ContainerListOptions{All: true, Filters: f})
	if err != nil {
		return nil, err
	}
	var out []string
	for _, c := range res.Items {
		out = append(out, fmt.Sprintf("%.12s (%s, %s, task %s)", c.ID, c.Image, c.State, c.Labels[docker.LabelTask]))
	}
	return out, nil
}

// TestRunDocker runs the oracle on the sample and demo tasks in Docker: each
// task's repository is baked into an image of its own (FROM the test image,
// at /testbed, committed), the dataset names those images, and every task
// must resolve with no container of the run left afterwards.
func TestRunDocker(t *testing.T) {
	b := e2eDocker(t)
	ctx := t.Context()
	base := testutil.TestImage()
	if ok, err := b.ImageExists(ctx, base); err != nil || !ok {
		testutil.SkipOrFail(t, "test image %s missing (scripts/test-image.sh): %v", base, err)
	}
	work := t.TempDir()
	tmp := filepath.Join(work, "tmp")
	os.Mkdir(tmp, 0o755)
	env := e2eEnv(t, tmp)
	_, ids := e2eDataset(t, work, 1)
	rows := readRows(t, filepath.Join(work, "tasks.jsonl"))

	// One image per task source (the two sample tasks share one): the
	// source, committed on the host, at /testbed; the commit is the row's
	// base_commit.
	start := time.Now()
	type built struct{ ref, commit string }
	images := map[string]built{}
	tag := fmt.Sprintf("swerve-e2e-%d", os.Getpid())
	dockerfile := "FROM " + base + "\nCOPY . /testbed\nWORKDIR /testbed\n"
	var out bytes.Buffer
	for _, row := range rows {
		src := row["source_dir"].(string)
		if images[src].ref == "" {
			ctxDir := filepath.Join(work, "src-"+filepath.Base(src))
			if err := os.CopyFS(ctxDir, os.DirFS(src)); err != nil {
				t.Fatal(err)
			}
			commit := gitCommitAll(t, ctxDir)
			ref := fmt.Sprintf("%s-%s:latest", tag, strings.ToLower(filepath.Base(src)))
			out.Reset()
			if err := b.Build(ctx, docker.BuildOptions{ContextDir: ctxDir, Dockerfile: dockerfile, Tags: []string{ref}, Progress: &out}); err != nil {
				t.Fatalf("build %s: %v\n%s", ref, err, out.String())
			}
			images[src] = built{ref, commit}
			t.Cleanup(func() {
				b.Client().ImageRemove(context.Background(), ref, client.ImageRemoveOptions{Force: true, PruneChildren: true})
			})
		}
		row["image"], row["base_commit"] = images[src].ref, images[src].commit
		delete(row, "source_dir")
	}
	t.Logf("built %d images in %s", len(images), time.Since(start).Round(time.Millisecond))
	var ds bytes.Buffer
	for _, row := range rows {
		line, _ := json.Marshal(row)
		ds.Write(line)
		ds.WriteByte('\n')
	}
	data := filepath.Join(work, "docker-tasks.jsonl")
	os.WriteFile(data, ds.Bytes(), 0o644)

	traj := filepath.Join(work, "out")
	p := startSwerve(t, env, work, nil, "run", "--dataset", data, "--llm_name", "oracle/gold", "--scaffold", "r2egym",
		"--backend", "docker", "--pull", "never", "--max_workers", "2", "--traj_dir", traj, "--exp_name", "e")
	// Watch the run's containers come and go, so that "none left" below
	// is known to look at the right ones.
	seen := make(chan int, 1)
	go func() {
		n := 0
		for {
			select {
			case <-p.done:
				seen <- n
				return
			case <-time.After(100 * time.Millisecond):
				if cs, err := listRunContainers(b, p.cmd.Process.Pid); err == nil {
					n = max(n, len(cs))
				}
			}
		}
	}()
	code := p.wait(t, 10*time.Minute)
	if n := <-seen; n == 0 {
		t.Errorf("no container of the run was ever seen (pid %d)", p.cmd.Process.Pid)
	}
	if code != 0 {
		for _, id := range ids {
			b, _ := os.ReadFile(filepath.Join(run.TaskDir(traj, id), "metadata.json"))
			t.Logf("%s", b)
		}
		t.Fatalf("exit %d\n%s", code, p.stderr.String())
	}
	recs := checkFinished(t, traj, "e", ids)
	for id, rec := range recs {
		if !strings.HasPrefix(rec.DockerImage, tag) {
			t.Errorf("%s ran in %q, not its own image", id, rec.DockerImage)
		}
		if tr := rec.Trajectory; tr == nil || len(tr.Messages) < 2 || !strings.Contains(tr.Messages[1].Content, "/testbed") {
			t.Errorf("%s: the agent was not pointed at /testbed in a container", id)
		}
	}
	if left := runContainers(t, b, p.cmd.Process.Pid); len(left) > 0 {
		t.Errorf("containers of the run left: %v", left)
	}
}

// TestRunRealTasks runs five real SWE-bench Verified django tasks (images
// built by ../shared/realtasks/build.sh; CI sets SWERVE_REALTASKS=1): with
// --run_golden every task resolves; with a model that submits at once,
// none does, graded by running the dataset's own eval_script.
func TestRunRealTasks(t *testing.T) {
	if os.Getenv("SWERVE_REALTASKS") != "1" {
		t.Skip("SWERVE_REALTASKS=1 runs the real django tasks (images from ../shared/realtasks/build.sh)")
	}
	b := e2eDocker(t)
	shared := testutil.SharedDir(t)
	data := filepath.Join(shared, "realtasks", "instances.jsonl")
	rows := readRows(t, data)
	var ids []string
	for _, row := range rows {
		ids = append(ids, row["instance_id"].(string))
		if img, _ := row["image"].(string); img != "" {
			if ok, err := b.ImageExists(t.Context(), img); err != nil || !ok {
				t.Fatalf("SWERVE_REALTASKS=1 but image %s is missing (../shared/realtasks/build.sh): %v", img, err)
			}
		}
	}
	sort.Strings(ids)
	if len(ids) != 5 {
		t.Fatalf("%d real tasks, want 5", len(ids))
	}
	work := t.TempDir()
	tmp := filepath.Join(work, "tmp")
	os.Mkdir(tmp, 0o755)
	env := e2eEnv(t, tmp)
	common := []string{"run", "--dataset", data, "--backend", "docker", "--pull", "never", "--max_workers", "2"}

	t.Run("golden", func(t *testing.T) {
		start := time.Now()
		traj := filepath.Join(work, "golden")
		p := startSwerve(t, env, work, nil, append(common, "--run_golden", "--traj_dir", traj, "--exp_name", "golden")...)
		code := p.wait(t, 20*time.Minute)
		t.Logf("--run_golden on %d tasks: %s", len(ids), time.Since(start).Round(time.Second))
		recs, err := run.LoadRecords(traj)
		if err != nil {
			t.Fatal(err)
		}
		for _, id := range ids {
			r := recs[id]
			if r == nil {
				t.Errorf("%s: not recorded", id)
				continue
			}
			if r.Reward != 1 {
				t.Errorf("%s: gold patch reward %g (%s)", id, r.Reward, r.RewardReason)
			}
		}
		if code != 0 {
			t.Fatalf("exit %d\n%s", code, p.stderr.String())
		}
		var sum run.RewardSummary
		readJSONInto(t, filepath.Join(traj, "reward_summary.json"), &sum)
		if sum.Total != len(ids) || !slices.Equal(sum.Reward1.InstanceIDs, ids) {
			t.Errorf("reward_summary.json: total %d, resolved %v", sum.Total, sum.Reward1.InstanceIDs)
		}
		if left := runContainers(t, b, p.cmd.Process.Pid); len(left) > 0 {
			t.Errorf("containers of the run left: %v", left)
		}
	})

	t.Run("submit-at-once", func(t *testing.T) {
		start := time.Now()
		replay := filepath.Join(work, "submit.jsonl")
		reply, _ := json.Marshal("THOUGHT: Nothing to change; submitting.\n\n```bash\necho COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT\n```")
		os.WriteFile(replay, append(reply, '\n'), 0o644)
		traj := filepath.Join(work, "submit")
		p := startSwerve(t, env, work, nil, append(common, "--llm_name", "replay/"+replay, "--scaffold", "mini_swe_agent",
			"--traj_dir", traj, "--exp_name", "submit")...)
		code := p.wait(t, 20*time.Minute)
		t.Logf("submit-at-once on %d tasks: %s", len(ids), time.Since(start).Round(time.Second))
		if code != 0 {
			t.Fatalf("exit %d\n%s", code, p.stderr.String())
		}
		recs, err := run.LoadRecords(traj)
		if err != nil {
			t.Fatal(err)
		}
		for _, row := range rows {
			id := row["instance_id"].(string)
			r := recs[id]
			if r == nil {
				t.Errorf("%s: not recorded", id)
				continue
			}
			if r.Reward != 0 || r.Error != "" || r.ExitReason != "submitted" || r.Steps() != 1 || r.Grader != "swebench" {
				t.Errorf("%s: reward %g (%s), exit %s after %d steps, grader %q, error %q; want an unresolved, graded submission",
					id, r.Reward, r.RewardReason, r.ExitReason, r.Steps(), r.Grader, r.Error)
			}
			log, err := os.ReadFile(filepath.Join(run.TaskDir(traj, id), "test_output.log"))
			if err != nil || len(bytes.TrimSpace(log)) == 0 {
				t.Errorf("%s: test_output.log is empty or missing (%v): the eval script did not run", id, err)
				continue
			}
			// The log is the eval script's: django's test runner ran the
			// tests the task names.
			var f2p []string
			switch v := row["FAIL_TO_PASS"].(type) {
			case string:
				json.Unmarshal([]byte(v), &f2p)
			case []any:
				for _, x := range v {
					f2p = append(f2p, fmt.Sprint(x))
				}
			}
			if len(f2p) == 0 {
				t.Fatalf("%s: the row names no FAIL_TO_PASS test", id)
			}
			// Newer Pythons print "name (module.Class.name)" where the
			// dataset says "name (module.Class)": look for the name.
			name, _, _ := strings.Cut(f2p[0], " (")
			if !strings.Contains(string(log), name) {
				t.Errorf("%s: test_output.log does not show the FAIL_TO_PASS test %q:\n%s", id, f2p, tail(string(log), 2000))
			}
			if !strings.Contains(string(log), "runtests.py") {
				t.Errorf("%s: test_output.log does not show the eval script running django's tests:\n%s", id, tail(string(log), 2000))
			}
		}
		var sum run.RewardSummary
		readJSONInto(t, filepath.Join(traj, "reward_summary.json"), &sum)
		if sum.Total != len(ids) || !slices.Equal(sum.Reward0.InstanceIDs, ids) {
			t.Errorf("reward_summary.json: total %d, unresolved %v", sum.Total, sum.Reward0.InstanceIDs)
		}
		if left := runContainers(t, b, p.cmd.Process.Pid); len(left) > 0 {
			t.Errorf("containers of the run left: %v", left)
		}
	})
}

// gitCommitAll commits everything in dir as a new repository's first
// commit and returns its hash.
func gitCommitAll(t *testing.T, dir string) string {
	t.Helper()
	var head string
	for _, args := range [][]string{
		{"init", "-q"},
		{"add", "-A"},
		{"-c", "user.name=swerve", "-c", "user.email=swerve@localhost", "commit", "-q", "--no-verify", "-m", "task source"},
		{"rev-parse", "HEAD"},
	} {
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %s in %s: %v\n%s", args[0], dir, err, out)
		}
		head = strings.TrimSpace(string(out))
	}
	return head
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "…" + s[len(s)-n:]
}

// TestRunSignalTwice: a second SIGINT cancels at once, even while every
// running task is in the middle of a long command; nothing half-done is
// recorded and no box is left. (The second signal is sent only once swerve
// has acknowledged the first: two signals sent together may merge into one.)
func TestRunSignalTwice(t *testing.T) {
	work := t.TempDir()
	tmp := filepath.Join(work, "tmp")
	os.Mkdir(tmp, 0o755)
	env := e2eEnv(t, tmp)
	data, _ := e2eDataset(t, work, 1)
	replay := filepath.Join(work, "slow.json")
	os.WriteFile(replay, []byte(`["Waiting.\n\n`+"```bash\\nsleep 60\\n```"+`", "`+"```bash\\necho COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT\\n```"+`"]`), 0o644)
	traj := filepath.Join(work, "twice")
	args := []string{"run", "--dataset", data, "--llm_name", "replay/" + replay, "--scaffold", "mini_swe_agent", "--backend", "local",
		"--max_workers", "2", "--step_timeout", "120", "--traj_dir", traj, "--exp_name", "e", "--json"}
	pr, pw := io.Pipe()
	p := startSwerve(t, env, work, pw, args...)
	started := make(chan struct{}, 8)
	events := jsonEvents(t, pr, func(e run.Event) {
		if e.Kind == run.EventStart {
			started <- struct{}{}
		}
	})
	select {
	case <-started:
	case <-time.After(2 * time.Minute):
		t.Fatalf("no task started\n%s", p.stderr.String())
	}
	time.Sleep(time.Second) // the tasks are now inside `sleep 60`
	p.cmd.Process.Signal(syscall.SIGINT)
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(p.stderr.String(), "again to stop at once") {
		if time.Now().After(deadline) {
			t.Fatalf("the first SIGINT was not acknowledged\n%s", p.stderr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	sent := time.Now()
	p.cmd.Process.Signal(syscall.SIGINT)
	code := p.wait(t, 2*time.Minute)
	pw.Close()
	<-events
	stderr := p.stderr.String()
	if code != 130 {
		t.Fatalf("exit %d, want 130\n%s", code, stderr)
	}
	if d := time.Since(sent); d > 30*time.Second {
		t.Errorf("the second SIGINT took %s to stop the run: it waited for the running command", d)
	}
	if !strings.Contains(stderr, "again: cancelling now") {
		t.Errorf("the second SIGINT was not taken as cancel-now:\n%s", stderr)
	}
	if recorded := checkConsistent(t, traj, "e"); len(recorded) != 0 {
		t.Errorf("tasks cancelled mid-command were recorded: %v", recorded)
	}
	noTempFiles(t, traj)
	noLocalBoxes(t, tmp, "after the cancelled run")
}

// TestRunDockerContainerKilled kills one task's container while its agent
// runs a command: that task is recorded as a box error (no reward, exit
// status 3), the other tasks go on, no container of the run is left, and the
// same command run again runs that task alone, to the end.
func TestRunDockerContainerKilled(t *testing.T) {
	b := e2eDocker(t)
	ctx := t.Context()
	base := testutil.TestImage()
	if ok, err := b.ImageExists(ctx, base); err != nil || !ok {
		testutil.SkipOrFail(t, "test image %s missing (scripts/test-image.sh): %v", base, err)
	}
	work := t.TempDir()
	tmp := filepath.Join(work, "tmp")
	os.Mkdir(tmp, 0o755)
	env := e2eEnv(t, tmp)
	dir := filepath.Join(work, "tasks")
	if _, err := demo.Extract(ctx, dir); err != nil {
		t.Fatal(err)
	}
	data, err := demo.Images(ctx, b, dir, base, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	replay := filepath.Join(work, "slow.jsonl")
	os.WriteFile(replay, []byte("\"Waiting.\\n\\n```bash\\nsleep 8\\n```\"\n\"```bash\\necho COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT\\n```\"\n"), 0o644)
	traj := filepath.Join(work, "out")
	pr, pw := io.Pipe()
	args := []string{"run", "--dataset", data, "--llm_name", "replay/" + replay, "--scaffold", "mini_swe_agent",
		"--backend", "docker", "--pull", "never", "--max_workers", "3", "--traj_dir", traj, "--exp_name", "e", "--json"}
	p := startSwerve(t, env, work, pw, args...)
	events := jsonEvents(t, pr, func(run.Event) {})
	// Wait for the three agent boxes, then kill one.
	var victim string
	deadline := time.Now().Add(2 * time.Minute)
	for victim == "" {
		if time.Now().After(deadline) {
			t.Fatalf("the run's containers did not appear\n%s", p.stderr.String())
		}
		f := make(client.Filters).Add("label", docker.LabelOwnerPID+"="+strconv.Itoa(p.cmd.Process.Pid)).Add("status", "running")
		res, err := b.Client().ContainerList(ctx, client.ContainerListOptions{Filters: f})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Items) >= 3 {
			time.Sleep(time.Second) // inside `sleep 8`
			victim = res.Items[0].Labels[docker.LabelTask]
			if _, err := b.Client().ContainerKill(ctx, res.Items[0].ID, client.ContainerKillOptions{Signal: "KILL"}); err != nil {
				t.Fatal(err)
			}
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	code := p.wait(t, 3*time.Minute)
	pw.Close()
	<-events
	if code != exitTaskErrors {
		t.Fatalf("exit %d, want %d\n%s", code, exitTaskErrors, p.stderr.String())
	}
	recs, err := run.LoadRecords(traj)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 3 {
		t.Fatalf("%d records, want 3", len(recs))
	}
	for id, r := range recs {
		if id == victim {
			if !r.Failed() || r.ErrorKind != run.KindBox || r.ExitReason != "sandbox_error" || r.Trajectory == nil {
				t.Errorf("killed task %s: status %s, kind %s, exit %s, reward %g (%s)", id, r.Status, r.ErrorKind, r.ExitReason, r.Reward, r.RewardReason)
			}
			t.Logf("killed task %s: %s; %s", id, r.ExitDetail, r.RewardReason)
			continue
		}
		if r.ExitReason != "submitted" || r.Error != "" {
			t.Errorf("task %s: exit %s, error %q", id, r.ExitReason, r.Error)
		}
	}
	if left := runContainers(t, b, p.cmd.Process.Pid); len(left) > 0 {
		t.Errorf("containers left: %v", left)
	}
	var sum run.RewardSummary
	readJSONInto(t, filepath.Join(traj, "reward_summary.json"), &sum)
	if sum.Total != 2 || sum.Errors != 1 || !slices.Equal(sum.ErrorIDs, []string{victim}) || sum.ErrorKinds["box"] != 1 {
		t.Errorf("reward_summary.json: %+v", sum)
	}

	// The same command again: only the killed task runs, and finishes.
	_, stderr, code := runSwerve(t, env, work, 3*time.Minute, args[:len(args)-1]...)
	if code != 0 {
		t.Fatalf("rerun: exit %d\n%s", code, stderr)
	}
	recs, _ = run.LoadRecords(traj)
	if r := recs[victim]; r.Failed() || r.Attempts != 2 || r.ExitReason != "submitted" {
		t.Errorf("rerun: killed task %s: status %s, attempts %d, exit %s", victim, r.Status, r.Attempts, r.ExitReason)
	}
	if !strings.Contains(stderr, "this run      1 ran (1 again after an error), 2 finished before") {
		t.Errorf("rerun summary:\n%s", stderr)
	}
}
