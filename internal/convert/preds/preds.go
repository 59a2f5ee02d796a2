// Package preds converts between a swerve run's task records and
// SWE-bench prediction files, both ways: a run's records become
// predictions, and predictions with the dataset they were made on become a
// dataset of patches, each task row carrying its prediction.
package preds

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"sort"

	"github.com/swerve-dev/swerve/internal/run"
	"github.com/swerve-dev/swerve/internal/task"
)

// Prediction is one row of a SWE-bench predictions file.
type Prediction struct {
	InstanceID string `json:"instance_id"`
	Model      string `json:"model_name_or_path"`
	Patch      string `json:"model_patch"`
}

// Skipped is a record left out of the predictions, with the reason.
type Skipped struct {
	InstanceID string
	Reason     string
}

// FromRun reads the task records under trajDir and returns one prediction
// per graded task, by instance id. Records of tasks that failed outside the
// model (status error: the box, the grader or the model's provider broke)
// are left out and listed: their patch, if any, says nothing of the model.
func FromRun(trajDir string) ([]Prediction, []Skipped, error) {
	recs, err := run.LoadRecords(trajDir)
	if err != nil {
		return nil, nil, err
	}
	if len(recs) == 0 {
		return nil, nil, fmt.Errorf("%s: no task records (<instance_id>/result.json); is it a swerve run's --traj_dir?", trajDir)
	}
	ids := make([]string, 0, len(recs))
	for id := range recs {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	var out []Prediction
	var skipped []Skipped
	for _, id := range ids {
		rec := recs[id]
		if rec.Failed() {
			skipped = append(skipped, Skipped{InstanceID: id, Reason: fmt.Sprintf("%s error: %s", rec.ErrorKind, rec.Error)})
			continue
		}
		if rec.Model == "" {
			return nil, nil, fmt.Errorf("%s: record %s: model: empty", trajDir, id)
		}
		out = append(out, Prediction{InstanceID: id, Model: rec.Model, Patch: rec.Patch})
	}
	return out, skipped, nil
}

// Write writes predictions: one JSON object a line with jsonl, else a
// JSON list (the form swerve run's preds.json has).
func Write(w io.Writer, ps []Prediction, jsonl bool) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if jsonl {
		for _, p := range ps {
			if err := enc.Encode(p); err != nil {
				return err
			}
		}
	} else {
		enc.SetIndent("", "  ")
		if ps == nil {
			ps = []Prediction{}
		}
		if err := enc.Encode(ps); err != nil {
			return err
		}
	}
	_, err := w.Write(buf.Bytes())
	return err
}

// PatchRows returns, in dataset order, the normalised row of every task
// that has a prediction (as swerve tasks ls --json writes it, so any swerve
// command loads it again) with the prediction's instance_id,
// model_name_or_path and model_patch beside the task's fields. The file
// is then both the dataset and the predictions of swerve grade
// --predictions. A prediction for a task not in tasks is an error.
func PatchRows(tasks []task.Task, ps map[string]Prediction) ([][]byte, error) {
	known := make(map[string]bool, len(tasks))
	for i := range tasks {
		known[tasks[i].InstanceID] = true
	}
	missing := []string{}
	for id := range ps {
		if !known[id] {
			missing = append(missing, id)
		}
	}
	if len(missing) > 0 {
		sort.Strings(missing)
		more := ""
		if len(missing) > 1 {
			more = fmt.Sprintf(" (and %d more)", len(missing)-1)
		}
		return nil, fmt.Errorf("prediction %s%s: instance_id: not in the dataset", missing[0], more)
	}
	var out [][]byte
	for i := range tasks {
		t := tasks[i]
		p, ok := ps[t.InstanceID]
		if !ok {
			continue
		}
		b, err := t.MarshalJSONL(true)
		if err != nil {
			return nil, err
		}
		var m map[string]json.RawMessage
		if err := json.Unmarshal(b, &m); err != nil {
			return nil, fmt.Errorf("task %s: %w", t.InstanceID, err)
		}
		if _, clash := m["model_patch"]; clash {
			return nil, fmt.Errorf("task %s: model_patch: the task row has one already", t.InstanceID)
		}
		// Appended after the task's own fields, keeping their order.
		extra, err := marshal(map[string]string{"model_name_or_path": p.Model, "model_patch": p.Patch})
		if err != nil {
			return nil, err
		}
		line := bytes.TrimRight(b, "\n")
		line = append(line[:len(line)-1], ',')
		line = append(line, extra[1:]...)
		out = append(out, append(line, '\n'))
	}
	return out, nil
}

func marshal(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimRight(buf.Bytes(), "\n"), nil
}
