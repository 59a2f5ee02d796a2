package harbor

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/swerve-dev/swerve/internal/fsutil"
	"github.com/swerve-dev/swerve/internal/task"
)

// Convert renders every task and writes one Harbor task directory per task
// under opts.OutDir. Everything is checked before anything is written: rows
// that cannot be converted (unless SkipUnsupported), two ids that would
// share a directory, and directories that exist already (unless Force).
// Each directory is assembled under a temporary name and renamed into
// place, so an interrupted run leaves no half-written task behind.
func Convert(ctx context.Context, tasks []task.Task, opts Options) (*Result, error) {
	if opts.OutDir == "" {
		return nil, errors.New("convert harbor: no output directory")
	}
	if err := opts.Config.Validate(); err != nil {
		return nil, fmt.Errorf("convert harbor: %w", err)
	}
	res := &Result{}
	var rendered []*Task
	var bad []*UnsupportedError
	for i := range tasks {
		r, err := Render(&tasks[i], opts)
		if ue, ok := errors.AsType[*UnsupportedError](err); ok {
			bad = append(bad, ue)
			continue
		}
		if err != nil {
			return nil, err
		}
		rendered = append(rendered, r)
	}
	if len(bad) > 0 && !opts.SkipUnsupported {
		return nil, unsupportedList(bad)
	}
	res.Skipped = bad

	// Names compared without case: "Foo" and "foo" are one directory on
	// macOS and Windows.
	byName := make(map[string]string)
	var exist []string
	for _, r := range rendered {
		key := strings.ToLower(r.Name)
		if other, dup := byName[key]; dup {
			return nil, fmt.Errorf("tasks %s and %s would both be written to %s", other, r.InstanceID, dirOf(opts, r))
		}
		byName[key] = r.InstanceID
		if _, err := os.Lstat(dirOf(opts, r)); err == nil {
			exist = append(exist, dirOf(opts, r))
		} else if !errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
	}
	if len(exist) > 0 && !opts.Force {
		more := ""
		if len(exist) > 1 {
			more = fmt.Sprintf(" (and %d more)", len(exist)-1)
		}
		return nil, fmt.Errorf("%s exists already%s; pass --force to replace it", exist[0], more)
	}

	if err := os.MkdirAll(opts.OutDir, 0o755); err != nil {
		return nil, fmt.Errorf("convert harbor: %w", err)
	}
	// Opts.Jobs workers write the directories; Written keeps input order.
	jobs := max(opts.Jobs, 1)
	written := make([]*Written, len(rendered))
	errs := make([]error, len(rendered))
	next := make(chan int)
	var wg sync.WaitGroup
	for range min(jobs, max(len(rendered), 1)) {
		wg.Go(func() {
			for i := range next {
				r := rendered[i]
				if err := ctx.Err(); err != nil {
					errs[i] = err
					continue
				}
				replaced, err := r.write(opts.OutDir)
				if err != nil {
					errs[i] = fmt.Errorf("task %s: %w", r.InstanceID, err)
					continue
				}
				written[i] = &Written{
					InstanceID: r.InstanceID, Name: r.Name, Dir: dirOf(opts, r), Env: r.Env, Solution: r.Solution, Replaced: replaced,
				}
			}
		})
	}
	for i := range rendered {
		next <- i
	}
	close(next)
	wg.Wait()
	for i := range rendered {
		if written[i] != nil {
			res.Written = append(res.Written, *written[i])
		}
	}
	for _, err := range errs {
		if err != nil {
			return res, err
		}
	}
	return res, nil
}

// unsupportedList is the error for rows that cannot be converted.
func unsupportedList(bad []*UnsupportedError) error {
	if len(bad) == 1 {
		return bad[0]
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d tasks cannot be converted to Harbor tasks:", len(bad))
	for _, e := range bad {
		fmt.Fprintf(&b, "\n  %s: %s", e.InstanceID, e.Reason)
	}
	return errors.New(b.String())
}

// write puts the task at <out>/<name>, replacing what is there. It
// reports whether something was replaced.
func (r *Task) write(out string) (bool, error) {
	tmp, err := os.MkdirTemp(out, ".swerve-tmp-"+r.Name+"-")
	if err != nil {
		return false, err
	}
	defer os.RemoveAll(tmp)
	if err := os.Chmod(tmp, 0o755); err != nil {
		return false, err
	}
	if err := r.WriteTo(tmp); err != nil {
		return false, err
	}
	final := filepath.Join(out, r.Name)
	replaced := false
	if _, err := os.Lstat(final); err == nil {
		old, err := os.MkdirTemp(out, ".swerve-old-"+r.Name+"-")
		if err != nil {
			return false, err
		}
		defer os.RemoveAll(old)
		if err := os.Rename(final, filepath.Join(old, r.Name)); err != nil {
			return false, fmt.Errorf("move the old %s aside: %w", final, err)
		}
		replaced = true
	}
	if err := os.Rename(tmp, final); err != nil {
		return false, err
	}
	return replaced, nil
}

// WriteTo writes the task's files into dir (which must exist), with
// environment/repo copied from SourceDir when set.
func (r *Task) WriteTo(dir string) error {
	for _, f := range r.Files {
		p := filepath.Join(dir, filepath.FromSlash(f.Path))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, f.Data, f.Mode); err != nil {
			return err
		}
		// WriteFile's mode is filtered by the umask; the scripts must be
		// executable whatever it is.
		if err := os.Chmod(p, f.Mode); err != nil {
			return err
		}
	}
	if r.SourceDir != "" {
		if err := fsutil.CopyTree(r.SourceDir, filepath.Join(dir, "environment", RepoDir), fsutil.CopyOptions{}); err != nil {
			return fmt.Errorf("copy %s: %w", r.SourceDir, err)
		}
	}
	return nil
}
