package cli

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/sync/errgroup"

	"github.com/swerve-dev/swerve/internal/fsutil"
	"github.com/swerve-dev/swerve/internal/reward/grader"
	"github.com/swerve-dev/swerve/internal/reward/swebench"
	"github.com/swerve-dev/swerve/internal/reward/tamper"
	"github.com/swerve-dev/swerve/internal/task"
)

// prediction is one row of a SWE-bench predictions file.
type prediction struct {
	InstanceID string  `json:"instance_id"`
	Model      string  `json:"model_name_or_path"`
	Patch      *string `json:"model_patch"`
}

// loadPredictions reads a predictions file: JSONL, a JSON list, or a JSON
// object keyed by instance id, as the harness accepts.
func loadPredictions(path string) (map[string]prediction, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("--predictions: %w", err)
	}
	var list []prediction
	trimmed := bytes.TrimSpace(data)
	switch {
	case bytes.HasPrefix(trimmed, []byte("[")):
		if err := json.Unmarshal(trimmed, &list); err != nil {
			return nil, fmt.Errorf("%s: not a JSON list of predictions: %w", path, err)
		}
	case bytes.HasPrefix(trimmed, []byte("{")) && !strings.HasSuffix(path, ".jsonl"):
		var byID map[string]prediction
		if err := json.Unmarshal(trimmed, &byID); err == nil {
			for id, p := range byID {
				if p.InstanceID == "" {
					p.InstanceID = id
				}
				list = append(list, p)
			}
			break
		}
		fallthrough
	default:
		sc := bufio.NewScanner(bytes.NewReader(data))
		sc.Buffer(nil, 1<<28)
		for n := 1; sc.Scan(); n++ {
			line := bytes.TrimSpace(sc.Bytes())
			if len(line) == 0 {
				continue
			}
			var p prediction
			if err := json.Unmarshal(line, &p); err != nil {
				return nil, fmt.Errorf("%s: line %d: %w", path, n, err)
			}
			list = append(list, p)
		}
		if err := sc.Err(); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
	}
	out := map[string]prediction{}
	for i, p := range list {
		if p.InstanceID == "" {
			return nil, fmt.Errorf("%s: prediction %d: instance_id: missing", path, i)
		}
		if p.Model == "" {
			return nil, fmt.Errorf("%s: prediction %d (%s): model_name_or_path: missing", path, i, p.InstanceID)
		}
		if _, dup := out[p.InstanceID]; dup {
			return nil, fmt.Errorf("%s: prediction %d (%s): instance_id: given twice", path, i, p.InstanceID)
		}
		out[p.InstanceID] = p
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: no predictions", path)
	}
	return out, nil
}

// reportResolved reads "resolved" from a report.json: the harness's
// {"<instance_id>": {...}} object, or a grader's own result object that
// carries it at the top (SWE-smith's report, the other graders' results).
func reportResolved(b []byte, id string) (bool, error) {
	var byID map[string]json.RawMessage
	if err := json.Unmarshal(b, &byID); err != nil {
		return false, err
	}
	entry, ok := byID[id]
	if !ok {
		entry = b
	}
	var rep struct {
		Resolved *bool `json:"resolved"`
	}
	if err := json.Unmarshal(entry, &rep); err != nil {
		return false, err
	}
	if rep.Resolved == nil {
		return false, fmt.Errorf("report has no resolved field")
	}
	return *rep.Resolved, nil
}

// runSummary is the harness's run report (schema_version 2).
type runSummary struct {
	Total               int               `json:"total_instances"`
	Submitted           int               `json:"submitted_instances"`
	Completed           int               `json:"completed_instances"`
	Resolved            int               `json:"resolved_instances"`
	Unresolved          int               `json:"unresolved_instances"`
	InfraFailures       int               `json:"infra_failure_instances"`
	AmbiguousFailures   int               `json:"ambiguous_failure_instances"`
	EmptyPatch          int               `json:"empty_patch_instances"`
	Errors              int               `json:"error_instances"`
	CompletedIDs        []string          `json:"completed_ids"`
	IncompleteIDs       []string          `json:"incomplete_ids"`
	EmptyPatchIDs       []string          `json:"empty_patch_ids"`
	SubmittedIDs        []string          `json:"submitted_ids"`
	ResolvedIDs         []string          `json:"resolved_ids"`
	UnresolvedIDs       []string          `json:"unresolved_ids"`
	InfraFailureIDs     []string          `json:"infra_failure_ids"`
	AmbiguousFailureIDs []string          `json:"ambiguous_failure_ids"`
	FailureReasons      map[string]string `json:"failure_reasons"`
	ErrorIDs            []string          `json:"error_ids"`
	// TamperedIDs are the instances the tamper defences found something
	// in (swerve's addition; the finding is in failure_reasons). Under
	// --tamper zero they are unresolved, whatever their report says.
	TamperedIDs   []string `json:"tampered_ids"`
	SchemaVersion int      `json:"schema_version"`
}

// gradePredictions grades every prediction for a task of the dataset and
// writes the harness's files.
func gradePredictions(cmd *cobra.Command, tasks []task.Task, preds map[string]prediction, bf *boxFlags, force string, timeout time.Duration, workers int, runID, logDir, reportDir string, mode tamper.Mode, learnGold bool) error {
	ctx := cmd.Context()
	stderr := &lockedWriter{w: cmd.ErrOrStderr()}
	instDir := func(p prediction) string {
		// The harness's layout; SafeName keeps a model named ".." (or an
		// id from elsewhere) inside logDir.
		return filepath.Join(logDir, fsutil.SafeName(runID), fsutil.SafeName(strings.ReplaceAll(p.Model, "/", "__")), fsutil.SafeName(p.InstanceID))
	}
	var mu sync.Mutex
	failures := map[string]string{}
	g := new(errgroup.Group)
	g.SetLimit(max(1, workers))
	for i := range tasks {
		t := &tasks[i]
		p, ok := preds[t.InstanceID]
		if !ok || p.Patch == nil || *p.Patch == "" {
			continue
		}
		dir := instDir(p)
		if _, err := os.Stat(filepath.Join(dir, "report.json")); err == nil {
			fmt.Fprintf(stderr, "%s: report exists, reusing it\n", t.InstanceID)
			continue
		}
		g.Go(func() error {
			if err := fsutil.WriteFileAtomic(filepath.Join(dir, "patch.diff"), []byte(*p.Patch), false); err != nil {
				return err
			}
			opts := grader.Options{Force: force, Patch: *p.Patch, EvalTimeout: timeout, Tamper: mode}
			if learnGold {
				// As grade --baseline: the gold run's test count first,
				// once per task and image.
				if err := grader.DefaultBaseline().LearnGold(ctx, t, opts, boxOpener(bf, stderr)); err != nil {
					if ctx.Err() != nil {
						return ctx.Err()
					}
					fmt.Fprintf(stderr, "%s: --baseline: %v\n", t.InstanceID, err)
				}
			}
			rr, err := gradeInBox(ctx, bf, t, opts, stderr)
			if err != nil {
				if ctx.Err() != nil {
					return ctx.Err()
				}
				kind := gradeErrorKind(err)
				fmt.Fprintf(stderr, "%s: %s error, no verdict: %v\n", t.InstanceID, kind, err)
				mu.Lock()
				failures[t.InstanceID] = fmt.Sprintf("%s error: %v", kind, err)
				mu.Unlock()
				return nil
			}
			if err := fsutil.WriteFileAtomic(filepath.Join(dir, "test_output.txt"), []byte(rr.Log), false); err != nil {
				return err
			}
			// Like the harness: a patch that did not apply or tests that timed
			// out leave no report.json, and count as errors in the summary.
			if !rr.ApplyFailed && !rr.TimedOut {
				if err := fsutil.WriteFileAtomic(filepath.Join(dir, "report.json"), append(rr.Report, '\n'), false); err != nil {
					return err
				}
			}
			verdict := "resolved"
			if !rr.Resolved {
				verdict = "not resolved: " + rr.Reason
			}
			fmt.Fprintf(stderr, "%s: %s (%.0fs)\n", t.InstanceID, verdict, rr.Duration.Seconds())
			for _, f := range rr.Tampered {
				fmt.Fprintf(stderr, "%s: tampered: %s\n", t.InstanceID, f)
			}
			if len(rr.Tampered) > 0 {
				// Kept beside the report, so that a rerun's summary counts
				// them too: swerve's verdict as grade prints it, without
				// the report (report.json beside it is that).
				v := newVerdict(rr, mode)
				v.Report = nil
				var b bytes.Buffer
				if err := writeVerdict(&b, v); err != nil {
					return err
				}
				return fsutil.WriteFileAtomic(filepath.Join(dir, tamperedFile), b.Bytes(), false)
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return err
	}

	sum := runSummary{Total: len(tasks), Submitted: len(preds), SchemaVersion: 2, FailureReasons: map[string]string{}}
	sets := map[*[]string]bool{}
	for _, s := range []*[]string{&sum.CompletedIDs, &sum.IncompleteIDs, &sum.EmptyPatchIDs, &sum.ResolvedIDs, &sum.UnresolvedIDs, &sum.InfraFailureIDs, &sum.AmbiguousFailureIDs, &sum.ErrorIDs, &sum.TamperedIDs} {
		*s = []string{}
		sets[s] = true
	}
	for id := range preds {
		sum.SubmittedIDs = append(sum.SubmittedIDs, id)
	}
	model := ""
	for _, t := range tasks {
		p, ok := preds[t.InstanceID]
		if !ok {
			sum.IncompleteIDs = append(sum.IncompleteIDs, t.InstanceID)
			continue
		}
		model = p.Model
		if p.Patch == nil || *p.Patch == "" {
			sum.EmptyPatchIDs = append(sum.EmptyPatchIDs, t.InstanceID)
			continue
		}
		b, err := os.ReadFile(filepath.Join(instDir(p), "report.json"))
		if err != nil {
			sum.ErrorIDs = append(sum.ErrorIDs, t.InstanceID)
			if r, ok := failures[t.InstanceID]; ok {
				sum.FailureReasons[t.InstanceID] = r
			}
			continue
		}
		sum.CompletedIDs = append(sum.CompletedIDs, t.InstanceID)
		resolved, err := reportResolved(b, t.InstanceID)
		if err != nil {
			sum.ErrorIDs = append(sum.ErrorIDs, t.InstanceID)
			continue
		}
		if found := readTampered(filepath.Join(instDir(p), tamperedFile)); len(found) > 0 {
			sum.TamperedIDs = append(sum.TamperedIDs, t.InstanceID)
			sum.FailureReasons[t.InstanceID] = "tampered: " + strings.Join(found, "; ")
			if mode == tamper.ModeZero {
				resolved = false
			}
		}
		if resolved {
			sum.ResolvedIDs = append(sum.ResolvedIDs, t.InstanceID)
		} else {
			sum.UnresolvedIDs = append(sum.UnresolvedIDs, t.InstanceID)
		}
	}
	// Unresolved and failed runs whose log shows an environment fault.
	for _, id := range append(append([]string{}, sum.UnresolvedIDs...), sum.ErrorIDs...) {
		log, err := os.ReadFile(filepath.Join(instDir(preds[id]), "test_output.txt"))
		if err != nil {
			continue
		}
		if reason, env := swebench.ClassifyInfra(string(log)); reason != "" {
			sum.FailureReasons[id] = reason
			if env {
				sum.InfraFailureIDs = append(sum.InfraFailureIDs, id)
			} else {
				sum.AmbiguousFailureIDs = append(sum.AmbiguousFailureIDs, id)
			}
		}
	}
	sum.InfraFailures, sum.AmbiguousFailures = len(sum.InfraFailureIDs), len(sum.AmbiguousFailureIDs)
	for s := range sets {
		sort.Strings(*s)
	}
	sort.Strings(sum.SubmittedIDs)
	sum.Completed, sum.Resolved, sum.Unresolved = len(sum.CompletedIDs), len(sum.ResolvedIDs), len(sum.UnresolvedIDs)
	sum.EmptyPatch, sum.Errors = len(sum.EmptyPatchIDs), len(sum.ErrorIDs)
	if model == "" {
		for _, p := range preds {
			model = p.Model
			break
		}
	}
	data, err := json.MarshalIndent(sum, "", "    ")
	if err != nil {
		return err
	}
	out := filepath.Join(reportDir, strings.ReplaceAll(model, "/", "__")+"."+runID+".json")
	if err := fsutil.WriteFileAtomic(out, append(data, '\n'), false); err != nil {
		return err
	}
	fmt.Fprintf(cmd.OutOrStdout(), "resolved %d of %d submitted (%d unresolved, %d empty patches, %d errors)\nreport: %s\nlogs: %s\n",
		sum.Resolved, sum.Submitted, sum.Unresolved, sum.EmptyPatch, sum.Errors, out, filepath.Join(logDir, runID))
	if len(failures) > 0 {
		fmt.Fprintf(stderr, "swerve: %d instances could not be graded (see failure_reasons); rerun the same command to grade them\n", len(failures))
		return exitError{exitTaskErrors}
	}
	return nil
}

// tamperedFile holds, beside an instance's report.json, swerve's verdict
// on a grade whose tamper defences found something (grade's stdout object
// without its report: reward, resolved, reason, the findings under
// "tampered", the --tamper mode); absent when there were none. Older runs
// wrote the findings alone, as a JSON list.
const tamperedFile = "tampered.json"

// readTampered reads a tamperedFile's findings; nil when there is none.
func readTampered(path string) []string {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	var v struct {
		Tampered []string `json:"tampered"`
	}
	if json.Unmarshal(b, &v) == nil && len(v.Tampered) > 0 {
		return v.Tampered
	}
	var found []string
	if json.Unmarshal(b, &found) != nil || len(found) == 0 {
		return []string{"unreadable " + tamperedFile}
	}
	return found
}
