package task

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/pelletier/go-toml/v2"
)

// loadHarbor reads a Harbor task directory (it holds task.toml) or a
// directory whose subdirectories are Harbor tasks.
func loadHarbor(ctx context.Context, dir string, opts LoadOptions) (*LoadResult, error) {
	res := &LoadResult{Path: dir, Format: FormatHarbor, Dialect: DialectHarbor}
	var dirs []string
	if fileExists(filepath.Join(dir, "task.toml")) {
		dirs = []string{dir}
	} else {
		entries, err := os.ReadDir(dir)
		if err != nil {
			return nil, fmt.Errorf("load dataset: %w", err)
		}
		for _, e := range entries {
			sub := filepath.Join(dir, e.Name())
			if e.IsDir() && fileExists(filepath.Join(sub, "task.toml")) {
				dirs = append(dirs, sub)
			}
		}
		sort.Strings(dirs)
		if len(dirs) == 0 {
			return nil, fmt.Errorf("%s: a directory, but neither a Harbor task (no task.toml) nor a directory of Harbor tasks", dir)
		}
	}
	var bad []RowError
	seen := make(map[string]int)
	for i, d := range dirs {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		t, ferr := harborTask(d)
		if ferr == nil {
			if err := CheckID(t.InstanceID); err != nil {
				ferr = fieldErrorf("instance_id", "%v", err)
			} else if first, dup := seen[t.InstanceID]; dup {
				ferr = fieldErrorf("", "duplicate of row %d", first)
			}
		}
		if ferr != nil {
			bad = append(bad, RowError{File: dir, Row: i, InstanceID: filepath.Base(d), Field: ferr.field, Reason: ferr.reason})
			continue
		}
		seen[t.InstanceID] = i
		res.Tasks = append(res.Tasks, t)
	}
	if len(bad) > 0 && !opts.SkipInvalid {
		return nil, &InvalidError{First: bad[0], More: len(bad) - 1}
	}
	res.Skipped = bad
	return res, nil
}

// harborTask reads one Harbor task directory. Its id is the directory name,
// its problem statement instruction.md; environment/Dockerfile (when there)
// is the task's Dockerfile and [environment] docker_image its image. Raw is
// task.toml as a JSON object.
func harborTask(dir string) (Task, *fieldError) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return Task{}, fieldErrorf("", "%v", err)
	}
	t := Task{
		InstanceID: filepath.Base(abs),
		Grader:     GraderHarbor,
		Dialect:    DialectHarbor,
		TaskDir:    abs,
		FailToPass: []string{},
		PassToPass: []string{},
	}
	conf, err := os.ReadFile(filepath.Join(abs, "task.toml"))
	if err != nil {
		return t, fieldErrorf("task.toml", "%v", err)
	}
	var doc map[string]any
	if err := toml.Unmarshal(conf, &doc); err != nil {
		return t, fieldErrorf("task.toml", "%s", strings.ReplaceAll(err.Error(), "\n", " "))
	}
	if t.Raw, err = json.Marshal(doc); err != nil {
		return t, fieldErrorf("task.toml", "%v", err)
	}
	if env, ok := doc["environment"].(map[string]any); ok {
		if img, ok := env["docker_image"].(string); ok {
			t.Image = img
		}
	}
	instr, err := os.ReadFile(filepath.Join(abs, "instruction.md"))
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return t, fieldErrorf("instruction.md", "missing")
	case err != nil:
		return t, fieldErrorf("instruction.md", "%v", err)
	}
	t.ProblemStatement = string(instr)
	if !fileExists(filepath.Join(abs, "tests", "test.sh")) {
		return t, fieldErrorf("tests/test.sh", "missing")
	}
	if df, err := os.ReadFile(filepath.Join(abs, "environment", "Dockerfile")); err == nil {
		t.Dockerfile = string(df)
	}
	if t.Image == "" && t.Dockerfile == "" {
		return t, fieldErrorf("environment/Dockerfile", "missing, and task.toml names no [environment] docker_image")
	}
	return t, nil
}

func fileExists(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && !fi.IsDir()
}
