package sessions

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/swerve-dev/swerve/internal/task"
)

// TaskSource turns a request into a task: by instance id from datasets
// loaded when the server started, or from a full dataset row sent with the
// request (a NeMo Gym row is a SWE-bench row plus Gym's fields).
type TaskSource interface {
	Task(ctx context.Context, instanceID string, row json.RawMessage) (*task.Task, error)
}

// Catalog is a TaskSource: the tasks of the loaded datasets by instance id;
// a request that carries a row with more than an instance id is read as a
// one-row dataset when RowsAllowed (the row then wins).
type Catalog struct {
	Tasks map[string]*task.Task
	// RowsAllowed lets a request define its task by its row.
	RowsAllowed bool
}

// NewCatalog indexes tasks by instance id (the last of equal ids wins).
func NewCatalog(tasks []task.Task, rowsAllowed bool) *Catalog {
	c := &Catalog{Tasks: make(map[string]*task.Task, len(tasks)), RowsAllowed: rowsAllowed}
	for i := range tasks {
		c.Tasks[tasks[i].InstanceID] = &tasks[i]
	}
	return c
}

// Task implements TaskSource.
func (c *Catalog) Task(ctx context.Context, instanceID string, row json.RawMessage) (*task.Task, error) {
	if c.RowsAllowed && hasTaskFields(row) {
		if namesHostDir(row) {
			return nil, fmt.Errorf("task %s: source_dir: a request may not name a host directory", instanceID)
		}
		t, err := TaskFromRow(ctx, row)
		if err != nil {
			return nil, err
		}
		if instanceID == "" || instanceID == t.InstanceID {
			return t, nil
		}
		return nil, fmt.Errorf("task %s: instance_id: the row is task %s", instanceID, t.InstanceID)
	}
	if instanceID == "" {
		var r struct {
			InstanceID string `json:"instance_id"`
		}
		_ = json.Unmarshal(row, &r)
		instanceID = r.InstanceID
	}
	if instanceID == "" {
		return nil, fmt.Errorf("instance_id: the request names no task")
	}
	t := c.Tasks[instanceID]
	if t == nil {
		return nil, fmt.Errorf("task %s: instance_id: not in the served datasets", instanceID)
	}
	cp := *t
	return &cp, nil
}

// hasTaskFields says whether a row carries a task of its own (a repository
// or an image to open), not just an id.
func hasTaskFields(row json.RawMessage) bool {
	if len(row) == 0 {
		return false
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(row, &m) != nil {
		return false
	}
	for _, k := range []string{"repo", "image", "image_name", "docker_image", "source_dir"} {
		if _, ok := m[k]; ok {
			return true
		}
	}
	return false
}

// namesHostDir says whether a row names a host directory to copy into a
// box (only datasets the server was started with may).
func namesHostDir(row json.RawMessage) bool {
	var m map[string]json.RawMessage
	if json.Unmarshal(row, &m) != nil {
		return false
	}
	v, ok := m["source_dir"]
	return ok && string(v) != "null" && string(v) != `""`
}

// TaskFromRow reads one dataset row (any dialect task.Load reads) as a
// task.
func TaskFromRow(ctx context.Context, row json.RawMessage) (*task.Task, error) {
	dir, err := os.MkdirTemp("", "swerve-row-")
	if err != nil {
		return nil, fmt.Errorf("read row: %w", err)
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "row.json")
	if err := os.WriteFile(path, row, 0o600); err != nil {
		return nil, fmt.Errorf("read row: %w", err)
	}
	res, err := task.Load(ctx, path, task.LoadOptions{})
	if err != nil {
		return nil, fmt.Errorf("read row: %s", strings.ReplaceAll(err.Error(), path+": ", ""))
	}
	if len(res.Tasks) != 1 {
		return nil, fmt.Errorf("read row: want one task, got %d", len(res.Tasks))
	}
	return &res.Tasks[0], nil
}
