package apptainer

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/swerve-dev/swerve/internal/sandbox"
)

// Instances lists the names of the running instances of this user whose
// name starts with prefix.
func (b *Backend) Instances(ctx context.Context, prefix string) ([]string, error) {
	out, err := b.exec(ctx, "instance", "list", "--json").Output()
	if err != nil {
		return nil, fmt.Errorf("apptainer: instance list: %w", err)
	}
	var list struct {
		Instances []struct {
			Instance string `json:"instance"`
		} `json:"instances"`
	}
	if err := json.Unmarshal(out, &list); err != nil {
		return nil, fmt.Errorf("apptainer: instance list: %w", err)
	}
	var names []string
	for _, in := range list.Instances {
		if strings.HasPrefix(in.Instance, prefix) {
			names = append(names, in.Instance)
		}
	}
	return names, nil
}

// Leftovers lists the instances swerve started whose owner process is gone
// (all of them with opts.All), and state directories no instance uses any
// more.
func (b *Backend) Leftovers(ctx context.Context, opts sandbox.LeftoverOptions) ([]sandbox.Leftover, error) {
	names, err := b.Instances(ctx, NamePrefix)
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	dirs, _ := filepath.Glob(filepath.Join(b.stateDir, NamePrefix+"*"))
	for _, d := range dirs {
		names = append(names, filepath.Base(d))
	}
	var out []sandbox.Leftover
	for _, n := range names {
		if seen[n] {
			continue
		}
		seen[n] = true
		o := readOwner(filepath.Join(b.stateDir, n, "owner"))
		if o.pid == 0 {
			o.pid = namePID(n)
		}
		if opts.RunID != "" && o.run != opts.RunID {
			continue
		}
		if !opts.All && sandbox.ProcessAlive(o.pid) {
			continue
		}
		out = append(out, sandbox.Leftover{ID: n, Image: o.image, RunID: o.run, Task: o.task})
	}
	return out, nil
}

// Remove stops a leftover instance and removes its state directory.
func (b *Backend) Remove(ctx context.Context, l sandbox.Leftover) error {
	if !strings.HasPrefix(l.ID, NamePrefix) || strings.ContainsAny(l.ID, "/\x00") {
		return fmt.Errorf("apptainer: %q is not an instance of swerve's", l.ID)
	}
	if err := b.stop(ctx, l.ID); err != nil {
		return err
	}
	if err := removeAll(filepath.Join(b.stateDir, l.ID)); err != nil {
		return fmt.Errorf("apptainer: remove state of %s: %w", l.ID, err)
	}
	return nil
}

type owner struct {
	pid              int
	run, task, image string
}

func readOwner(path string) owner {
	var o owner
	data, err := os.ReadFile(path)
	if err != nil {
		return o
	}
	for line := range strings.SplitSeq(string(data), "\n") {
		k, v, _ := strings.Cut(line, "=")
		switch k {
		case "pid":
			o.pid, _ = strconv.Atoi(v)
		case "run":
			o.run = v
		case "task":
			o.task = v
		case "image":
			o.image = v
		}
	}
	return o
}

// namePID reads the owner's pid from an instance name swerve-<pid>-<n>-<r>.
func namePID(name string) int {
	rest := strings.TrimPrefix(name, NamePrefix)
	p, _, _ := strings.Cut(rest, "-")
	pid, _ := strconv.Atoi(p)
	return pid
}
