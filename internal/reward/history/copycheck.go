package history

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/swerve-dev/swerve/internal/fsutil"
	"github.com/swerve-dev/swerve/internal/sandbox"
	"github.com/swerve-dev/swerve/internal/task"
)

// Copies of the project outside git. An image can keep the fix out of the
// repository's reach: a newer wheel in pip's cache, a source archive, the
// project installed in another environment's site-packages. A policy that
// looks for them (find / -name 'django-*') takes the fix as it would from
// a branch. The search is a walk of the image's file system, so it is made
// once per image and task and kept under the image's content id: every
// later box of the image is the same file system until something runs in
// it. The comparison with the fix happens outside the box (the box's files
// are read out and compared here): neither the gold patch nor anything
// derived from it ever enters a box.

// ErrCopyWithFix is wrapped by Proof.Err when the image keeps a copy of
// the project outside git whose files hold the fix.
var ErrCopyWithFix = errors.New("the image keeps the fix outside git")

// CopyCheck is what one search for copies of the project found.
type CopyCheck struct {
	// Project is the name searched for (ProjectName); empty when the task
	// names none (nothing is searched).
	Project string `json:"project,omitempty"`
	// ImageID is the content id the answer is kept under; empty when the
	// box names none (kept for the process, by image name).
	ImageID string `json:"image_id,omitempty"`
	// Copies, WithFix and Newer are as in Audit.
	Copies  []string `json:"copies,omitempty"`
	WithFix []string `json:"copies_with_fix,omitempty"`
	Newer   []string `json:"copies_newer,omitempty"`
	// Checked says where the search looked, one place a line.
	Checked []string `json:"checked,omitempty"`
	// NotChecked says why there was no search ("" when there was one).
	NotChecked string `json:"not_checked,omitempty"`
	// Seconds is what the search cost when it ran; Cached says this answer
	// was kept from an earlier box of the image.
	Seconds float64 `json:"seconds"`
	Cached  bool    `json:"cached,omitempty"`
}

// findCopies searches the box (its file system seen from root, "/" but in
// tests) for copies of t's project outside the repository at workdir, and
// reads each copy it can for the gold patch's added lines.
func findCopies(ctx context.Context, box sandbox.Sandbox, t *task.Task, workdir, root string) (*CopyCheck, error) {
	c := &CopyCheck{Project: ProjectName(t)}
	if c.Project == "" {
		c.NotChecked = "the task's repository has no plain package name to look for"
		return c, nil
	}
	if workdir == "" {
		workdir = "/testbed"
	}
	res, err := box.Exec(ctx, sandbox.ExecRequest{Cmd: []string{"sh", "-c", copiesScript, "sh", c.Project, workdir, root}, Timeout: 5 * time.Minute, MaxOutput: -1})
	if err != nil {
		return nil, fmt.Errorf("look for copies of %s: %w", c.Project, err)
	}
	fix := fixSignature(ctx, box, t, workdir)
	seen := map[string]bool{}
	for _, line := range strings.Split(string(res.Output), "\n") {
		kind, rest, ok := strings.Cut(line, " ")
		switch {
		case ok && kind == "checked":
			c.Checked = append(c.Checked, rest)
		case ok && kind == "meta":
			// An installed distribution's metadata: the repository's own
			// (editable) install has one too, so only a later version
			// than the task's counts.
			if v := archiveVersion(c.Project, path.Base(rest)); v != "" && newerSeries(v, t.Version) && !seen[rest] {
				seen[rest] = true
				c.Copies = append(c.Copies, "installed "+rest)
				c.Newer = append(c.Newer, fmt.Sprintf("%s (version %s, the task's %s)", rest, v, t.Version))
			}
		case ok && (kind == "cache" || kind == "archive" || kind == "installed"):
			if seen[rest] {
				continue
			}
			seen[rest] = true
			c.Copies = append(c.Copies, kind+" "+rest)
			if v := archiveVersion(c.Project, path.Base(rest)); v != "" && newerSeries(v, t.Version) {
				c.Newer = append(c.Newer, fmt.Sprintf("%s (version %s, the task's %s)", rest, v, t.Version))
			}
			if f := fix.heldBy(ctx, box, kind, rest); f != "" {
				c.WithFix = append(c.WithFix, fmt.Sprintf("%s (its %s holds the gold patch's added lines)", rest, f))
			}
		}
	}
	if len(fix) > 0 {
		c.Checked = append(c.Checked, "each copy's files against the gold patch's added lines ("+strconv.Itoa(len(fix))+" files), outside the box")
	}
	return c, nil
}

// Summary says in one line what c checked and found, for Proof.BeyondGit.
func (c *CopyCheck) Summary() string {
	if c == nil {
		return ""
	}
	if c.NotChecked != "" {
		return "copies of the project outside git: not checked (" + c.NotChecked + ")"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "copies of %s outside git, checked once per image", c.Project)
	if c.ImageID != "" {
		fmt.Fprintf(&b, " (%.19s", c.ImageID)
	} else {
		b.WriteString(" (by image name, for this process")
	}
	if c.Cached {
		b.WriteString(", kept from an earlier box)")
	} else {
		fmt.Fprintf(&b, ", %.1f s)", c.Seconds)
	}
	b.WriteString(": " + strings.Join(c.Checked, "; "))
	switch {
	case len(c.Copies) == 0:
		b.WriteString("; found none")
	default:
		b.WriteString("; found " + strings.Join(c.Copies, ", "))
	}
	return b.String()
}

// CopyChecks keeps the answers of findCopies, per image content id and what
// of the task the search depends on (its project, repository directory,
// version and gold patch), in memory and, with Dir, on disk. Concurrent
// boxes of one image wait for one search. The zero value is ready.
type CopyChecks struct {
	// Dir keeps answers across processes; empty: in memory only.
	Dir string

	mu sync.Mutex
	m  map[string]*copyEntry
	// root stands for the box's "/" (tests); "" is "/".
	root string
}

type copyEntry struct {
	mu   sync.Mutex
	done bool
	c    CopyCheck
}

// copiesRecipe changes when the search does: answers kept by an older
// search are not read.
var copiesRecipe = func() string {
	h := sha256.Sum256([]byte(copiesScript))
	return hex.EncodeToString(h[:8])
}()

// copyKey names an answer: the image, and what of the task the search and
// the comparison read (a hash of the gold patch, never the patch).
func copyKey(t *task.Task, image, workdir string) string {
	h := sha256.New()
	for _, s := range []string{"copies/1", copiesRecipe, image, ProjectName(t), workdir, t.Version, t.Patch} {
		fmt.Fprintf(h, "%d:%s\n", len(s), s)
	}
	return "copies-" + hex.EncodeToString(h.Sum(nil))
}

// Check returns the copies of t's project in box's image, searching the
// box only when no earlier box of the same image (its content id, else its
// name in this process) was searched for the same task. box must be fresh
// from the image: nothing has run in it yet. A box whose file system is a
// directory of the host (sandbox.Scratch: the local backend) is not
// searched: its copies are the host's, not an image's.
func (cs *CopyChecks) Check(ctx context.Context, box sandbox.Sandbox, t *task.Task, workdir string) (*CopyCheck, error) {
	if _, ok := box.(sandbox.Scratch); ok {
		return &CopyCheck{Project: ProjectName(t), NotChecked: "the box is a copy of a directory on this machine, not an image"}, nil
	}
	if workdir == "" || workdir == "." {
		workdir = "/testbed"
	}
	id := ""
	if ii, ok := box.(sandbox.ImageIdentity); ok {
		id = ii.ImageID()
	}
	image := id
	if image == "" {
		image = "name:" + t.Image
	}
	key := copyKey(t, image, workdir)
	cs.mu.Lock()
	if cs.m == nil {
		cs.m = map[string]*copyEntry{}
	}
	e := cs.m[key]
	if e == nil {
		e = &copyEntry{}
		cs.m[key] = e
	}
	cs.mu.Unlock()
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.done {
		c := e.c
		c.Cached = true
		return &c, nil
	}
	if id != "" {
		if c, ok := cs.load(key); ok {
			e.done, e.c = true, *c
			c.Cached = true
			return c, nil
		}
	}
	start := time.Now()
	root := cs.root
	if root == "" {
		root = "/"
	}
	c, err := findCopies(ctx, box, t, workdir, root)
	if err != nil {
		return nil, err
	}
	c.ImageID, c.Seconds = id, time.Since(start).Seconds()
	e.done, e.c = true, *c
	if id != "" {
		cs.store(key, c)
	}
	return c, nil
}

func (cs *CopyChecks) load(key string) (*CopyCheck, bool) {
	if cs.Dir == "" {
		return nil, false
	}
	data, err := os.ReadFile(filepath.Join(cs.Dir, key+".json"))
	if err != nil {
		return nil, false
	}
	var c CopyCheck
	if json.Unmarshal(data, &c) != nil {
		return nil, false
	}
	return &c, true
}

// store keeps an answer on disk, best effort.
func (cs *CopyChecks) store(key string, c *CopyCheck) {
	if cs.Dir == "" {
		return
	}
	data, err := json.Marshal(c)
	if err != nil || os.MkdirAll(cs.Dir, 0o755) != nil {
		return
	}
	_ = fsutil.WriteFileAtomic(filepath.Join(cs.Dir, key+".json"), data, false)
}

// WithCopies adds c to the proof: what was checked beyond git, and a
// finding for each copy that holds the fix (the box is then not clean).
func (p *Proof) WithCopies(c *CopyCheck) {
	if p == nil || c == nil {
		return
	}
	p.Copies = c
	p.BeyondGit = beyondGitTree + "; " + c.Summary()
	for _, n := range c.Newer {
		p.Notes = append(p.Notes, "a newer copy of the project outside git: "+n)
	}
	if len(c.WithFix) > 0 {
		p.Clean = false
		p.CopiesWithFix = append(p.CopiesWithFix, c.WithFix...)
	}
}
