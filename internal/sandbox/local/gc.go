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
		if b, err := os.ReadFile(filepath.Join(d, ".owner")); err == nil {
			for line := range strings.SplitSeq(string(b), "\n") {
				k, v, _ := strings.Cut(line, "=")
				switch k {
				case "pid":
					l.OwnerPID, _ = strconv.Atoi(v)
				case "run":
					l.RunID = v
				}
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
