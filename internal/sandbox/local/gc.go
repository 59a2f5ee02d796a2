package local

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/swerve-dev/swerve/internal/sandbox"
)

// Leftover is a box directory found by Leftovers.
type Leftover struct {
	Dir       string
	OwnerPID  int
	RunID     string
	Processes []int
	// Unclaimed is set for a directory whose owner died before writing
	// its .owner file (the pid comes from the directory's name): no
	// helper ever started in it, so it belongs to no run and any gc may
	// remove it.
	Unclaimed bool
}

// Leftovers lists the box directories under tempDir (os.TempDir() when
// empty). With all set it lists every box; otherwise only those whose owner
// process is gone.
func Leftovers(_ context.Context, tempDir string, all bool) ([]Leftover, error) {
	if tempDir == "" {
		tempDir = os.TempDir()
	}
	dirs, err := filepath.Glob(filepath.Join(tempDir, dirPrefix+"*"))
	if err != nil {
		return nil, err
	}
	var out []Leftover
	for _, d := range dirs {
		l := Leftover{Dir: d}
		if b, err := os.ReadFile(filepath.Join(d, ".owner")); os.IsNotExist(err) {
			l.OwnerPID, l.Unclaimed = namePID(d), true
		} else if err == nil {
			for line := range strings.SplitSeq(string(b), "\n") {
				k, v, _ := strings.Cut(line, "=")
				switch k {
				case "pid":
					l.OwnerPID, _ = strconv.Atoi(v)
				case "run":
					l.RunID = v
				}
			}
			if l.OwnerPID == 0 { // unreadable or cut short: as if absent
				l.OwnerPID, l.Unclaimed = namePID(d), true
			}
		}
		if !all && sandbox.ProcessAlive(l.OwnerPID) {
			continue // its owner still runs
		}
		l.Processes = processesUnder(d)
		out = append(out, l)
	}
	return out, nil
}

// Remove kills a leftover's processes and deletes its directory.
func (l Leftover) Remove() error {
	killUnder(l.Dir)
	if err := os.RemoveAll(l.Dir); err != nil {
		return fmt.Errorf("local: remove %s: %w", l.Dir, err)
	}
	return nil
}

// Leftovers lists, for swerve gc (sandbox.Collector), the box directories
// under b.TempDir whose owner is gone (opts.All: every one), each by its
// path. With opts.RunID it keeps that run's directories and those no run
// claimed (see Leftover.Unclaimed), which any gc may remove.
func (b *Backend) Leftovers(ctx context.Context, opts sandbox.LeftoverOptions) ([]sandbox.Leftover, error) {
	left, err := Leftovers(ctx, b.TempDir, opts.All)
	if err != nil {
		return nil, err
	}
	var out []sandbox.Leftover
	for _, l := range left {
		if opts.RunID != "" && l.RunID != opts.RunID && !l.Unclaimed {
			continue
		}
		out = append(out, sandbox.Leftover{ID: l.Dir, RunID: l.RunID})
	}
	return out, nil
}

// Remove kills the processes of a box directory Leftovers listed and
// deletes it. A path that is not a box directory is refused.
func (b *Backend) Remove(_ context.Context, l sandbox.Leftover) error {
	if !filepath.IsAbs(l.ID) || !strings.HasPrefix(filepath.Base(l.ID), dirPrefix) {
		return fmt.Errorf("local: remove %s: not a box directory", l.ID)
	}
	return Leftover{Dir: l.ID}.Remove()
}

var _ sandbox.Collector = (*Backend)(nil)

// namePID reads the owner's pid from a box directory's name
// (dirPrefix + pid + "-" + random); 0 when the name holds none, as in
// directories made before names carried it.
func namePID(dir string) int {
	rest, ok := strings.CutPrefix(filepath.Base(dir), dirPrefix)
	if !ok {
		return 0
	}
	p, _, ok := strings.Cut(rest, "-")
	if !ok {
		return 0
	}
	n, _ := strconv.Atoi(p)
	return n
}
