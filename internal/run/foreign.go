package run

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/swerve-dev/swerve/internal/fsutil"
)

// manifestFile, in the run directory, records the run-level files swerve
// wrote there, so that it never replaces one it did not write.
const manifestFile = ".swerve-aggregates.json"

// manifest is manifestFile: each run-level file's accepted stamps.
type manifest struct {
	Files map[string][]fileStamp `json:"files"`
}

// fileStamp identifies one version of a file: its size, modification time
// and, when known, its SHA-256.
type fileStamp struct {
	Size     int64  `json:"size"`
	ModNanos int64  `json:"mtime_ns,omitempty"`
	SHA256   string `json:"sha256,omitempty"`
}

func (m manifest) write(trajDir string) error {
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	return fsutil.WriteFileAtomic(filepath.Join(trajDir, manifestFile), b, false)
}

// ForeignError says a run-level file under the run directory was not
// written by swerve (another tool wrote it, or it was changed since): swerve
// neither deletes nor rewrites it, and refuses to run there.
type ForeignError struct {
	Path   string
	Reason string
}

func (e *ForeignError) Error() string {
	return fmt.Sprintf("--traj_dir: %s %s; swerve never rewrites a file it did not write: move it away, or use another --traj_dir or --exp_name", e.Path, e.Reason)
}

// CheckAggregates makes sure every run-level file present under trajDir
// (<expName>.jsonl, trajectories.jsonl,
// trajectories_rejection_sampling.jsonl, preds.json, reward_summary.json)
// is one swerve wrote and may rebuild; otherwise it returns a
// *ForeignError naming the file. A file swerve wrote and no one changed
// since matches the stamp swerve recorded for it. In a directory of an
// older swerve, which recorded none, the files are swerve's when every row
// of <expName>.jsonl is a swerve row of a task that has a record there.
func CheckAggregates(trajDir, expName string) error {
	_, err := checkAggregates(trajDir, expName)
	return err
}

// checkAggregates is CheckAggregates; it also returns the record of
// swerve's files to keep: the stamps of expName's files present, and the
// recorded ones of other experiments' files.
func checkAggregates(trajDir, expName string) (manifest, error) {
	cur := manifest{Files: map[string][]fileStamp{}}
	var old *manifest
	if b, err := os.ReadFile(filepath.Join(trajDir, manifestFile)); err == nil {
		old = &manifest{}
		if err := json.Unmarshal(b, old); err != nil {
			return cur, fmt.Errorf("--traj_dir: %s is not swerve's record of its files (%v); move it away", filepath.Join(trajDir, manifestFile), err)
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return cur, fmt.Errorf("--traj_dir: %w", err)
	}
	if old != nil {
		// Other experiments' files in the same directory stay recorded.
		for name, stamps := range old.Files {
			cur.Files[name] = stamps
		}
	}
	legacy := false
	for i, name := range aggregateNames(expName) {
		path := filepath.Join(trajDir, name)
		st, err := stampOf(path)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return cur, fmt.Errorf("--traj_dir: %w", err)
		}
		switch {
		case old != nil:
			ok, err := matches(path, st, old.Files[name])
			if err != nil {
				return cur, fmt.Errorf("--traj_dir: %w", err)
			}
			if !ok {
				return cur, &ForeignError{path, "holds rows swerve did not write (it changed after swerve wrote it, or another tool wrote it)"}
			}
		case i == 0:
			if err := legacyRows(trajDir, path); err != nil {
				return cur, err
			}
			legacy = true
		case !legacy:
			return cur, &ForeignError{path, "was not written by swerve (swerve has no record of writing it, and " + expName + ".jsonl, which it writes with it, is missing)"}
		}
		cur.Files[name] = []fileStamp{st}
	}
	return cur, nil
}

// stampOf is path's size and modification time.
func stampOf(path string) (fileStamp, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return fileStamp{}, err
	}
	return fileStamp{Size: fi.Size(), ModNanos: fi.ModTime().UnixNano()}, nil
}

// matches reports whether the file at path, of stamp st, is one of the
// accepted versions: same size, and same modification time or contents.
func matches(path string, st fileStamp, accepted []fileStamp) (bool, error) {
	sum := ""
	for _, a := range accepted {
		if a.Size != st.Size {
			continue
		}
		if a.ModNanos != 0 && a.ModNanos == st.ModNanos {
			return true, nil
		}
		if a.SHA256 == "" {
			continue
		}
		if sum == "" {
			f, err := os.Open(path)
			if err != nil {
				return false, err
			}
			h := sha256.New()
			_, err = io.Copy(h, f)
			f.Close()
			if err != nil {
				return false, err
			}
			sum = hex.EncodeToString(h.Sum(nil))
		}
		if a.SHA256 == sum {
			return true, nil
		}
	}
	return false, nil
}

// legacyRows checks that every row of an older swerve's <exp_name>.jsonl
// is a swerve row (it names its scaffold) of a task with a record under
// trajDir.
func legacyRows(trajDir, path string) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("--traj_dir: %w", err)
	}
	defer f.Close()
	r := bufio.NewReader(f)
	for n := 1; ; n++ {
		line, err := r.ReadBytes('\n')
		if len(line) > 0 {
			var row struct {
				InstanceID *string          `json:"instance_id"`
				Scaffold   *json.RawMessage `json:"scaffold"`
			}
			if len(line) > 0 && line[len(line)-1] != '\n' {
				return &ForeignError{path, fmt.Sprintf("ends in a partial row (line %d has no end)", n)}
			}
			if json.Unmarshal(line, &row) != nil || row.InstanceID == nil || row.Scaffold == nil {
				return &ForeignError{path, fmt.Sprintf("holds a row swerve did not write (line %d)", n)}
			}
			if _, err := os.Stat(filepath.Join(TaskDir(trajDir, *row.InstanceID), "result.json")); err != nil {
				return &ForeignError{path, fmt.Sprintf("holds a row of %s, a task swerve has no record of (line %d)", *row.InstanceID, n)}
			}
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("--traj_dir: read %s: %w", path, err)
		}
	}
}
