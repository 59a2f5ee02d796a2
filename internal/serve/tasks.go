package serve

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/swerve-dev/swerve/internal/task"
)

// Tasks finds the task a row asks for: in a dataset loaded up front, by
// instance_id, else from the row's own fields (any dialect swerve loads).
type Tasks struct {
	byID map[string]task.Task
}

// NewTasks indexes a dataset's tasks by instance_id (none: every task comes
// from its row).
func NewTasks(dataset []task.Task) *Tasks {
	ts := &Tasks{byID: make(map[string]task.Task, len(dataset))}
	for _, t := range dataset {
		ts.byID[t.InstanceID] = t
	}
	return ts
}

// rowOnlyKeys are wrapper fields that are not the task's and are never
// written to disk.
var rowOnlyKeys = []string{"policy_base_url", "policy_api_key"}

// Find returns the row's task.
func (ts *Tasks) Find(ctx context.Context, row Row) (*task.Task, error) {
	id := row.String("instance_id")
	if t, ok := ts.byID[id]; ok {
		return &t, nil
	}
	if _, has := row["repo"]; !has && len(ts.byID) > 0 {
		return nil, fmt.Errorf("task %q: not in the dataset, and the row has no task fields", id)
	}
	r := row.Clone()
	for _, k := range rowOnlyKeys {
		delete(r, k)
	}
	data, err := json.Marshal(r)
	if err != nil {
		return nil, fmt.Errorf("task %q: %w", id, err)
	}
	dir, err := os.MkdirTemp("", "swerve-row-")
	if err != nil {
		return nil, fmt.Errorf("task %q: %w", id, err)
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "row.jsonl")
	if err := os.WriteFile(path, append(data, '\n'), 0o600); err != nil {
		return nil, fmt.Errorf("task %q: %w", id, err)
	}
	res, err := task.Load(ctx, path, task.LoadOptions{})
	if err != nil {
		return nil, fmt.Errorf("task %q from the row: %w", id, err)
	}
	if len(res.Tasks) != 1 {
		return nil, fmt.Errorf("task %q from the row: %d tasks", id, len(res.Tasks))
	}
	return &res.Tasks[0], nil
}
