package history

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/bzip2"
	"compress/gzip"
	"context"
	"io"
	"path"
	"strconv"
	"strings"

	"github.com/swerve-dev/swerve/internal/sandbox"
	"github.com/swerve-dev/swerve/internal/task"
)

// signature is, for each file the gold patch changes, the lines it adds
// that the file at HEAD does not already hold (trimmed, at least 8
// characters): a copy of the file holding all of them holds the fix.
type signature map[string][]string

// fixSignature reads the gold patch's signature; files at HEAD are read
// from the box's repository at workdir.
func fixSignature(ctx context.Context, box sandbox.Sandbox, t *task.Task, workdir string) signature {
	added := map[string][]string{}
	file := ""
	for _, l := range strings.Split(t.Patch, "\n") {
		switch {
		case strings.HasPrefix(l, "diff --git "):
			file = ""
		case strings.HasPrefix(l, "+++ "):
			file = strings.TrimPrefix(strings.TrimSpace(strings.TrimPrefix(l, "+++ ")), "b/")
			if file == "/dev/null" {
				file = ""
			}
		case file != "" && strings.HasPrefix(l, "+"):
			if s := strings.TrimSpace(l[1:]); len(s) >= 8 {
				added[file] = append(added[file], s)
			}
		}
	}
	sig := signature{}
	for f, lines := range added {
		if strings.HasPrefix(f, "/") || strings.Contains(f, "..") {
			continue
		}
		base, _ := box.ReadFile(ctx, path.Join(workdir, f))
		have := lineSet(string(base))
		var want []string
		for _, s := range lines {
			if !have[s] {
				want = append(want, s)
			}
		}
		if len(want) > 0 {
			sig[f] = want
		}
	}
	return sig
}

func lineSet(s string) map[string]bool {
	m := map[string]bool{}
	for _, l := range strings.Split(s, "\n") {
		m[strings.TrimSpace(l)] = true
	}
	return m
}

// holds reports whether content holds every line of want.
func holds(content string, want []string) bool {
	have := lineSet(content)
	for _, s := range want {
		if !have[s] {
			return false
		}
	}
	return true
}

// maxCopy bounds the archives read whole from a box.
const maxCopy = 256 << 20

// heldBy names the patched file whose copy in the copy at p (an installed
// package directory, or an archive) holds the fix, or "".
func (sig signature) heldBy(ctx context.Context, box sandbox.Sandbox, kind, p string) string {
	if len(sig) == 0 {
		return ""
	}
	if kind == "installed" {
		// site-packages/<name>: the repository's <name>/x.py is at
		// site-packages/<name>/x.py (src/<name>/x.py too).
		for f, want := range sig {
			rel := strings.TrimPrefix(f, "src/")
			b, err := box.ReadFile(ctx, path.Join(path.Dir(p), rel))
			if err == nil && holds(string(b), want) {
				return f
			}
		}
		return ""
	}
	lower := strings.ToLower(p)
	if !strings.HasSuffix(lower, ".whl") && !strings.HasSuffix(lower, ".zip") && !strings.HasSuffix(lower, ".tar.gz") &&
		!strings.HasSuffix(lower, ".tgz") && !strings.HasSuffix(lower, ".tar.bz2") {
		return "" // a directory, or a .conda (zstd inside): not read
	}
	data, err := box.ReadFile(ctx, p)
	if err != nil || len(data) > maxCopy {
		return ""
	}
	found := ""
	each := func(name string, r io.Reader) bool {
		for f, want := range sig {
			rel := strings.TrimPrefix(f, "src/")
			if name != rel && !strings.HasSuffix(name, "/"+rel) {
				continue
			}
			b, err := io.ReadAll(io.LimitReader(r, maxCopy))
			if err == nil && holds(string(b), want) {
				found = f
				return false
			}
			return true
		}
		return true
	}
	switch {
	case strings.HasSuffix(lower, ".whl"), strings.HasSuffix(lower, ".zip"):
		zr, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
		if err != nil {
			return ""
		}
		for _, zf := range zr.File {
			rc, err := zf.Open()
			if err != nil {
				continue
			}
			more := each(zf.Name, rc)
			rc.Close()
			if !more {
				break
			}
		}
	default:
		var r io.Reader = bytes.NewReader(data)
		if strings.HasSuffix(lower, ".tar.bz2") {
			r = bzip2.NewReader(r)
		} else {
			gz, err := gzip.NewReader(r)
			if err != nil {
				return ""
			}
			r = gz
		}
		tr := tar.NewReader(r)
		for {
			h, err := tr.Next()
			if err != nil {
				break
			}
			if h.Typeflag == tar.TypeReg && !each(h.Name, tr) {
				break
			}
		}
	}
	return found
}

// archiveVersion reads the version from a wheel's or source archive's file
// name ("<name>-<version>-….whl", "<name>-<version>.tar.gz") or an installed
// distribution's metadata directory ("<name>-<version>.dist-info"), or "".
func archiveVersion(name, file string) string {
	if len(file) <= len(name)+1 || !strings.EqualFold(file[:len(name)], name) || file[len(name)] != '-' {
		return ""
	}
	rest := file[len(name)+1:]
	for _, ext := range []string{".whl", ".tar.gz", ".tar.bz2", ".zip", ".conda", ".tgz", ".dist-info", ".egg-info"} {
		rest = strings.TrimSuffix(rest, ext)
	}
	v, _, _ := strings.Cut(rest, "-")
	if v == "" || v[0] < '0' || v[0] > '9' {
		return ""
	}
	return v
}

// newerSeries reports whether version v's major.minor is later than
// base's; false when either cannot be read.
func newerSeries(v, base string) bool {
	a, ok1 := majorMinor(v)
	b, ok2 := majorMinor(base)
	if !ok1 || !ok2 {
		return false
	}
	return a[0] > b[0] || a[0] == b[0] && a[1] > b[1]
}

func majorMinor(v string) ([2]int, bool) {
	parts := strings.SplitN(v, ".", 3)
	var out [2]int
	if len(parts) < 2 {
		return out, false
	}
	for i := range 2 {
		digits := parts[i]
		if j := strings.IndexFunc(digits, func(r rune) bool { return r < '0' || r > '9' }); j >= 0 {
			digits = digits[:j]
		}
		n, err := strconv.Atoi(digits)
		if err != nil {
			return out, false
		}
		out[i] = n
	}
	return out, true
}
