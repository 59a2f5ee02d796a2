// Package fsutil holds the file-system chores several layers share:
// copying directory trees (the local backend's box copies, build contexts,
// converted task directories) and writing files atomically (run and build
// outputs, grading reports).
package fsutil

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// CopyOptions configure CopyTree.
type CopyOptions struct {
	// Link hard-links regular files where the file system allows, copying
	// them otherwise: for large trees that will only be read.
	Link bool
}

// CopyTree copies the directory src to dst: directories, regular files
// with their permission bits, and symbolic links as links. Sockets, devices
// and fifos are not part of a repository and are left out.
func CopyTree(src, dst string, opts CopyOptions) error {
	fi, err := os.Stat(src)
	if err != nil {
		return err
	}
	if !fi.IsDir() {
		return fmt.Errorf("%s is not a directory", src)
	}
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		target := filepath.Join(dst, rel)
		info, err := d.Info()
		if err != nil {
			return err
		}
		switch mode := info.Mode(); {
		case mode.IsDir():
			return os.MkdirAll(target, mode.Perm()|0o700)
		case mode&fs.ModeSymlink != 0:
			link, err := os.Readlink(p)
			if err != nil {
				return err
			}
			return os.Symlink(link, target)
		case mode.IsRegular():
			if opts.Link && os.Link(p, target) == nil {
				return nil
			}
			return CopyFile(p, target, mode.Perm())
		}
		return nil
	})
}

// CopyFile copies the regular file src to dst with the given permission
// bits, failing if dst exists.
func CopyFile(src, dst string, perm fs.FileMode) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// WriteFileAtomic writes data to a temporary name beside path (creating
// the directory) and renames it, so a reader or a killed writer never
// leaves half a file. With durable set, the data is flushed to disk before
// the rename, so a power cut cannot leave the file renamed but empty.
//
// Temporary names are .<name>.tmp-<pid>-<random>: TempOwner reads the
// writer's pid back, so whoever sweeps up after a killed writer can tell
// its leftovers from a live writer's files.
func WriteFileAtomic(path string, data []byte, durable bool) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	tmp, err := CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+tempMark+strconv.Itoa(os.Getpid())+"-*")
	if err != nil {
		return err
	}
	_, werr := tmp.Write(data)
	if werr == nil && durable {
		werr = tmp.Sync()
	}
	if cerr := tmp.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("write %s: %w", path, werr)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	return nil
}

const tempMark = ".tmp-"

// FileMode and DirMode are the modes of the files and directories swerve
// writes for people to read (trajectories, reports, logs, results), less
// the umask: colleagues on a shared machine can read a run. Secrets are
// written elsewhere, with their own modes.
const (
	FileMode os.FileMode = 0o644
	DirMode  os.FileMode = 0o755
)

// CreateTemp is os.CreateTemp (a new file named by pattern, its last "*"
// replaced by a random string) made with FileMode under the umask instead
// of 0600, for files that are renamed into place as run files.
func CreateTemp(dir, pattern string) (*os.File, error) {
	var f *os.File
	err := tempName(dir, pattern, func(name string) error {
		var err error
		f, err = os.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_EXCL, FileMode)
		return err
	})
	return f, err
}

// MkdirTemp is os.MkdirTemp made with DirMode under the umask instead of
// 0700, for directories that are renamed into place as run output.
func MkdirTemp(dir, pattern string) (string, error) {
	var out string
	err := tempName(dir, pattern, func(name string) error {
		out = name
		return os.Mkdir(name, DirMode)
	})
	return out, err
}

// tempName calls create with fresh names from pattern until one does not
// exist yet.
func tempName(dir, pattern string, create func(string) error) error {
	if dir == "" {
		dir = os.TempDir()
	}
	if strings.ContainsRune(pattern, os.PathSeparator) {
		return fmt.Errorf("temp name %q: pattern contains a path separator", pattern)
	}
	prefix, suffix := pattern, ""
	if i := strings.LastIndex(pattern, "*"); i >= 0 {
		prefix, suffix = pattern[:i], pattern[i+1:]
	}
	for try := 0; ; try++ {
		var b [6]byte
		_, _ = rand.Read(b[:])
		name := filepath.Join(dir, prefix+hex.EncodeToString(b[:])+suffix)
		err := create(name)
		if err == nil {
			return nil
		}
		if !os.IsExist(err) || try == 100 {
			return err
		}
	}
}

// TempOwner reads the writer's process id from the name of a temporary
// file WriteFileAtomic made.
func TempOwner(name string) (int, bool) {
	i := strings.LastIndex(name, tempMark)
	if i < 0 {
		return 0, false
	}
	digits, _, ok := strings.Cut(name[i+len(tempMark):], "-")
	if !ok {
		return 0, false
	}
	pid, err := strconv.Atoi(digits)
	return pid, err == nil && pid > 0
}

// SafeName makes an instance id usable as one path element, one-to-one: two
// different ids never share a name. Ids made only of safe characters (every
// id of the public datasets) are their own name; otherwise "%", "/", ":",
// "\\" and control bytes are written %XX (hex), and "." and ".." become
// "%2E" and "%2E%2E". The task loader refuses ids that would need the last
// two, so they are only a guard for ids that come from elsewhere.
func SafeName(id string) string {
	switch id {
	case "":
		return "%" // never an id; no escaped name is a lone "%"
	case ".":
		return "%2E"
	case "..":
		return "%2E%2E"
	}
	if !strings.ContainsFunc(id, needsEscape) {
		return id
	}
	var b strings.Builder
	for i := 0; i < len(id); i++ {
		c := id[i]
		if needsEscape(rune(c)) {
			fmt.Fprintf(&b, "%%%02X", c)
			continue
		}
		b.WriteByte(c)
	}
	return b.String()
}

// needsEscape reports the bytes SafeName writes as %XX.
func needsEscape(r rune) bool {
	return r == '%' || r == '/' || r == ':' || r == '\\' || r < 0x20 || r == 0x7f
}
