// Package history keeps the future out of an agent's box: the task's
// repository must hold nothing past its base commit, or a policy that looks
// for the fix in git (git log --all, the reflog, a stash, a dangling
// object) takes it instead of writing it.
//
// Strip removes, in the box's repository, every ref but the checked-out
// branch (or the detached HEAD) and the tags whose commit is in HEAD's
// history, the remotes, replace refs, notes, the stash, every reflog, the
// pseudo-refs git leaves behind (FETCH_HEAD, ORIG_HEAD, MERGE_HEAD, ...),
// the places git keeps copies of content outside the object store
// (rr-cache, lost-found, other worktrees' state) and the alternates; then it
// rewrites the objects into one pack of what is reachable, with a
// reachability bitmap. The history before HEAD stays: agents use git log
// and git blame honestly.
//
// Each submodule's git directory (under .git/modules, or a submodule's own
// .git directory) is stripped the same way around its own HEAD.
//
// Prove checks, cheaply and without trusting the strip, that a box is in
// that state (submodules included), that HEAD is the task's base commit
// where the dataset promises it (ExpectedHead), and that the task's hidden
// tests are neither in the work tree nor among the git objects (a hidden
// test's content HEAD already reaches is base_commit's own past: a note,
// not a finding). Thanks to the bitmap, counting the reachable
// objects costs milliseconds even on a full django history, so the proof
// runs in every box; Strip, which rewrites the pack, is paid once per image
// where the backend can keep a derived image.
package history

import (
	"cmp"
	"context"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/swerve-dev/swerve/internal/reward/tamper"
	"github.com/swerve-dev/swerve/internal/sandbox"
	"github.com/swerve-dev/swerve/internal/task"
)

// Proof is what Prove found in a box's repository. It goes into the task's
// record.
type Proof struct {
	// Clean: nothing past HEAD, and the hidden tests absent.
	Clean bool `json:"clean"`
	// NoRepo: the work directory is not a git repository (nothing to
	// prove; Clean is then true).
	NoRepo bool   `json:"no_repo,omitempty"`
	Head   string `json:"head,omitempty"`
	// BaseCommit is the commit HEAD was checked against (see
	// ExpectedHead); empty when the task's dataset does not promise one.
	BaseCommit string `json:"base_commit,omitempty"`
	// HeadNotBase: HEAD is not BaseCommit (a finding; no strip mends it).
	HeadNotBase bool `json:"head_not_base,omitempty"`
	// Branch is the checked-out branch; empty when HEAD is detached.
	Branch string `json:"branch,omitempty"`
	// Tags kept (each in HEAD's history).
	Tags int `json:"tags"`
	// Objects is how many objects the repository holds, Reachable how
	// many of them the kept refs reach.
	Objects   int64 `json:"objects"`
	Reachable int64 `json:"reachable"`
	// Submodules counts the submodules' git directories proved with it
	// (under .git/modules, or a submodule's own .git directory); their
	// findings are named after them.
	Submodules int `json:"submodules,omitempty"`
	// Stripped says Strip ran in this box (the image was not prepared).
	Stripped bool `json:"stripped,omitempty"`
	// Fingerprint hashes HEAD, the refs and the pack names (a pack's name
	// is the hash of its content): two boxes with the same fingerprint
	// hold the same git state.
	Fingerprint string `json:"git_fingerprint,omitempty"`
	// Findings name what was found past HEAD, one a line.
	Findings []string `json:"findings,omitempty"`
	// Notes name what was found that is not the future (a hidden test's
	// content already in base_commit's own history), one a line.
	Notes []string `json:"notes,omitempty"`
	// BeyondGit says what the proof checked outside git: the work tree for
	// the hidden tests' files, and, when the box was prepared for an agent
	// (WithCopies), copies of the project in package caches, wheels,
	// sdists and site-packages, searched once per image (CopyChecks).
	BeyondGit string `json:"beyond_git,omitempty"`
	// Copies is that search's answer; CopiesWithFix the copies whose files
	// hold the fix (findings: the box is not clean).
	Copies        *CopyCheck `json:"copies_check,omitempty"`
	CopiesWithFix []string   `json:"copies_with_fix,omitempty"`
	// Seconds is how long the proof (and the strip, when Stripped) took.
	Seconds float64 `json:"seconds"`
}

// Summary is the proof in one line, for people.
func (p *Proof) Summary() string {
	switch {
	case p == nil:
		return "history: not proved"
	case p.NoRepo:
		return "history: no git repository"
	case !p.Clean:
		return "history: NOT clean: " + strings.Join(append(append([]string{}, p.Findings...), p.CopiesWithFix...), "; ")
	}
	how := "as found"
	if p.Stripped {
		how = "after stripping"
	}
	return fmt.Sprintf("history: clean %s (HEAD %.12s, %d tags, %d objects, %.0f ms)", how, p.Head, p.Tags, p.Objects, p.Seconds*1000)
}

// Err is the one-line refusal of a box whose proof is not clean.
func (p *Proof) Err(instance string) error {
	if p == nil || p.Clean {
		return nil
	}
	if len(p.Findings) == 0 && len(p.CopiesWithFix) > 0 {
		return fmt.Errorf("task %s: %w: %s", instance, ErrCopyWithFix, strings.Join(p.CopiesWithFix, "; "))
	}
	return fmt.Errorf("task %s: %w: %s", instance, ErrNotClean, strings.Join(p.Findings, "; "))
}

// ErrNotClean is wrapped by Proof.Err.
var ErrNotClean = errors.New("repository holds more than base_commit's history")

// pseudo are files in the git directory that name commits or hold content
// outside the object store; Strip removes them and Prove reports them.
var pseudo = []string{
	"FETCH_HEAD", "ORIG_HEAD", "MERGE_HEAD", "MERGE_MSG", "MERGE_RR", "CHERRY_PICK_HEAD", "REVERT_HEAD",
	"REBASE_HEAD", "AUTO_MERGE", "BISECT_LOG", "BISECT_START", "BISECT_EXPECTED_REV", "BISECT_TERMS", "BISECT_NAMES",
	"rebase-merge", "rebase-apply", "sequencer", "rr-cache", "lost-found", "worktrees",
	"info/refs", "objects/info/alternates", "objects/info/http-alternates",
}

// submodsFn lists, one a line, the git directories of the repository's
// submodules: those git keeps under .git/modules (nested ones included) and
// those a submodule's work tree holds itself (<path>/.git a directory).
// Each is a repository of its own that can hold its project's future.
const submodsFn = `submods() {
  if [ -d "$gd/modules" ]; then
    find "$gd/modules" -type f -name HEAD 2>/dev/null | while IFS= read -r h; do
      d=${h%/HEAD}; if [ -d "$d/objects" ] && [ -d "$d/refs" ]; then echo "$d"; fi
    done
  fi
  git ls-files -s 2>/dev/null | grep '^160000 ' | cut -f2- | while IFS= read -r p; do
    if [ -d "$p/.git" ] && [ ! -L "$p/.git" ]; then (cd "$p/.git" && pwd -P); fi
  done
  true
}
`

// stripScript runs in the repository ($1). It keeps HEAD, its branch and the
// tags in HEAD's history, and drops everything else; then it does the same
// in each submodule's git directory.
const stripScript = `set -eu
export GIT_NO_REPLACE_OBJECTS=1
cd "$1"
gd=$(git rev-parse --absolute-git-dir)
top=$(git rev-parse --show-toplevel)
# Only a repository's own .git is stripped: a .git that is a link or a file
# naming another git directory (a worktree, a submodule, a local box's copy
# of the user's checkout) shares its refs and objects with something else.
if [ "$gd" != "$top/.git" ] || [ -L "$top/.git" ] || [ -L "$gd/objects" ] || [ -L "$gd/refs" ]; then
  echo "the git directory $gd is not the repository's own: not stripped"; exit 3
fi
` + submodsFn + `strip() (
export GIT_DIR="$1"
g="$1"
head=$(git rev-parse --verify -q HEAD^{commit})
branch=$(git symbolic-ref -q HEAD || true)
for r in $(git remote); do git remote remove "$r" >/dev/null 2>&1 || true; done
hist=$(mktemp)
git rev-list "$head" >"$hist"
git for-each-ref --format='%(refname)' | while IFS= read -r ref; do
  [ "$ref" = "$branch" ] && continue
  case "$ref" in
  refs/tags/*)
    c=$(git rev-parse -q --verify "$ref^{commit}" 2>/dev/null || true)
    if [ -n "$c" ] && grep -qxF "$c" "$hist"; then continue; fi ;;
  esac
  git update-ref --no-deref -d "$ref" 2>/dev/null || {
    # a ref git cannot parse: remove it by hand
    rm -f "$g/$ref"; git pack-refs --all --prune; }
done
rm -f "$hist"
if [ -s "$g/objects/info/alternates" ]; then git repack -a -d -q; fi
` + `for p in ` + "PSEUDO" + `; do rm -rf "$g/$p"; done
rm -rf "$g/logs" "$g/refs/original"
rm -f "$g"/objects/pack/*.keep "$g"/objects/info/commit-graph "$g"/objects/info/multi-pack-index
rm -rf "$g"/objects/info/commit-graphs
git reflog expire --expire=now --expire-unreachable=now --all 2>/dev/null || true
git pack-refs --all --prune
git -c pack.writeBitmapHashCache=true repack -a -d -b -n -q
git prune --expire=now
git -c core.commitGraph=true commit-graph write --reachable >/dev/null 2>&1 || true
)
subs=$(mktemp)
submods >"$subs"
strip "$gd"
while IFS= read -r m; do
  [ -n "$m" ] || continue
  strip "$m" || { echo "submodule git directory $m: strip failed"; exit 3; }
done <"$subs"
rm -f "$subs"
echo "swerve-strip ok"
`

// proveScript runs in the repository ($1); the hidden tests' paths and blob
// ids follow as "p:<path>" and "b:<id>". It prints what it finds, one item a
// line, each behind a key: first the repository's git state, then each
// submodule's behind a "submodule <git dir>" line, then the hidden tests.
const proveScript = `export GIT_NO_REPLACE_OBJECTS=1
cd "$1" 2>/dev/null || { echo "nodir"; exit 0; }
shift
gd=$(git rev-parse --absolute-git-dir 2>/dev/null) || { echo "norepo"; exit 0; }
` + submodsFn + `state() (
export GIT_DIR="$1"
g="$1"
echo "head $(git rev-parse -q --verify HEAD^{commit})"
echo "branch $(git symbolic-ref -q HEAD)"
git for-each-ref --format='ref %(objectname) %(objecttype) %(refname)'
git for-each-ref --format='peel %(refname) %(*objecttype)' refs/tags
for r in $(git remote); do echo "remote $r"; done
for p in PSEUDO; do [ -e "$g/$p" ] && echo "pseudo $p"; done
if [ -d "$g/logs" ]; then find "$g/logs" -type f -size +0c | sed "s|^$g/|reflog |"; fi
git count-objects -v | sed 's/^/count /'
ls "$g/objects/pack" 2>/dev/null | sed 's/^/pack /'
echo "beyond $(git rev-list --use-bitmap-index --count --all --not HEAD 2>&1)"
echo "reachable $(git rev-list --objects --all --use-bitmap-index --count 2>&1)"
)
state "$gd"
submods | while IFS= read -r m; do
  [ -n "$m" ] || continue
  echo "submodule ${m#"$gd"/}"
  state "$m"
done
echo "tests"
found=""
for a in "$@"; do
  case "$a" in
  p:*) [ -e "${a#p:}" ] || [ -L "${a#p:}" ] && echo "testfile ${a#p:}" ;;
  b:*) git cat-file -e "${a#b:}" 2>/dev/null && found="$found ${a#b:}" ;;
  esac
done
# A hidden test's blob that HEAD reaches is base_commit's own past (the file
# had that content once), not the future: only then is the whole history
# listed.
if [ -n "$found" ]; then
  set --
  for id in $found; do set -- "$@" -e "$id"; done
  past=$(git rev-list --objects --use-bitmap-index HEAD 2>/dev/null | cut -d' ' -f1 | grep -xF "$@")
  for id in $found; do
    if printf '%s\n' "$past" | grep -qxF "$id"; then echo "pastblob $id"; else echo "testblob $id"; fi
  done
fi
echo "end"
`

func withPseudo(s string) string {
	return strings.Replace(s, "PSEUDO", strings.Join(pseudo, " "), 1)
}

// Strip removes everything past HEAD from the repository at workdir (see
// the package comment). A directory that is not a git repository is left
// alone.
func Strip(ctx context.Context, box sandbox.Sandbox, workdir string) error {
	if workdir == "" {
		workdir = "."
	}
	probe, err := box.Exec(ctx, sandbox.ExecRequest{Cmd: []string{"git", "-C", workdir, "rev-parse", "--git-dir"}, Timeout: time.Minute})
	if err != nil {
		return fmt.Errorf("strip history: %w", err)
	}
	if probe.ExitCode != 0 {
		return nil
	}
	res, err := box.Exec(ctx, sandbox.ExecRequest{
		Cmd:     []string{"sh", "-c", withPseudo(stripScript), "sh", workdir},
		Timeout: 30 * time.Minute, MaxOutput: 64 << 10,
	})
	if err != nil {
		return fmt.Errorf("strip history: %w", err)
	}
	if res.ExitCode != 0 || !strings.Contains(string(res.Output), "swerve-strip ok") {
		return fmt.Errorf("strip history: exit %d: %s", res.ExitCode, lastLines(string(res.Output), 3))
	}
	return nil
}

// Prove checks the repository at workdir: the only refs are HEAD's branch
// and tags in HEAD's history (no commit reachable from a ref is outside
// HEAD's history), no remotes, no reflog, no pseudo-refs, every object
// reachable from the refs, and none of t's hidden test files in the work
// tree or among the objects. It
// errs only when the box cannot run the check; what it finds is in the
// Proof.
func Prove(ctx context.Context, box sandbox.Sandbox, t *task.Task, workdir string) (*Proof, error) {
	start := time.Now()
	if workdir == "" {
		workdir = "."
	}
	args := []string{"sh", "-c", withPseudo(proveScript), "sh", workdir}
	hidden := HiddenTests(t)
	for _, f := range hidden {
		args = append(args, "p:"+f.Path)
		if f.Blob != "" {
			args = append(args, "b:"+f.Blob)
		}
	}
	for _, b := range changedBlobs(ctx, box, t, workdir) {
		args = append(args, "b:"+b)
	}
	res, err := box.Exec(ctx, sandbox.ExecRequest{Cmd: args, Timeout: 10 * time.Minute, MaxOutput: -1})
	if err != nil {
		return nil, fmt.Errorf("prove history: %w", err)
	}
	out := string(res.Output)
	if res.ExitCode != 0 || !strings.Contains(out, "\nend") && !strings.HasPrefix(out, "norepo") && !strings.HasPrefix(out, "nodir") {
		return nil, fmt.Errorf("prove history: exit %d: %s", res.ExitCode, lastLines(out, 3))
	}
	p := judge(out, hidden)
	p.BeyondGit = beyondGit
	// A local box's repository is a copy of a directory on the host (or one
	// swerve committed it into): its HEAD is the user's, not the image's.
	_, local := box.(sandbox.Scratch)
	if want := ExpectedHead(t); want != "" && !p.NoRepo && !local {
		p.BaseCommit = want
		if p.Head != "" && !strings.HasPrefix(p.Head, strings.ToLower(want)) {
			p.HeadNotBase, p.Clean = true, false
			p.Findings = append(p.Findings, fmt.Sprintf("HEAD is %s, not the task's base_commit %s", p.Head, want))
		}
	}
	p.Seconds = time.Since(start).Seconds()
	return p, nil
}

// beyondGitTree is what every proof checks beyond git; beyondGit is
// Proof.BeyondGit of a proof made without the search for copies (see
// Proof.WithCopies).
const (
	beyondGitTree = "the work tree, for the hidden tests' files"
	beyondGit     = beyondGitTree + "; copies of the project outside git not searched here (grader.PrepareBox searches them once per image; swerve audit reports them)"
)

// ExpectedHead is the commit t's box must have checked out before an agent
// starts: its base_commit, for the datasets whose images promise HEAD at
// it (SWE-bench and its kin, SWE-Factory, NeMo Gym, swerve's own rows).
// SWE-smith's base_commit names the bug commit on a branch of its mirror,
// which the image does not hold (the bug is checked out or rebuilt only in
// the grading box), and R2E-Gym and Harbor rows make no such promise, so
// for those, for tasks without a base_commit and for tasks whose box is a
// copy of a directory (source_dir), it is "".
func ExpectedHead(t *task.Task) string {
	if t == nil || t.SourceDir != "" {
		return ""
	}
	switch {
	case t.Grader == task.GraderSWESmith, t.Dialect == task.DialectSWESmith,
		t.Grader == task.GraderR2E, t.Dialect == task.DialectR2E,
		t.Grader == task.GraderHarbor, t.Dialect == task.DialectHarbor:
		return ""
	}
	return strings.TrimSpace(t.BaseCommit)
}

// Secure proves the box, strips it when the proof finds anything, and
// proves it again; the returned proof is the last one. Its Err refuses the
// box when it is still not clean.
func Secure(ctx context.Context, box sandbox.Sandbox, t *task.Task, workdir string) (*Proof, error) {
	start := time.Now()
	p, err := Prove(ctx, box, t, workdir)
	if err != nil || p.Clean || p.HeadNotBase {
		return p, err
	}
	if err := Strip(ctx, box, workdir); err != nil {
		return nil, err
	}
	p, err = Prove(ctx, box, t, workdir)
	if err != nil {
		return nil, err
	}
	p.Stripped = true
	p.Seconds = time.Since(start).Seconds()
	return p, nil
}

// judge reads the prove script's output: the repository's state and the
// hidden tests, then each submodule's state, whose findings are the
// repository's, named after the submodule.
func judge(out string, hidden []HiddenFile) *Proof {
	if strings.HasPrefix(out, "norepo") || strings.HasPrefix(out, "nodir") {
		return judgeRepo(out, hidden)
	}
	type block struct {
		name string
		body strings.Builder
	}
	var top block
	var subs []*block
	cur := &top
	for _, line := range strings.SplitAfter(out, "\n") {
		switch {
		case strings.HasPrefix(line, "submodule "):
			subs = append(subs, &block{name: strings.TrimSpace(strings.TrimPrefix(line, "submodule "))})
			cur = subs[len(subs)-1]
			continue
		case line == "tests\n":
			cur = &top
			continue
		}
		cur.body.WriteString(line)
	}
	p := judgeRepo(top.body.String(), hidden)
	if len(subs) == 0 {
		return p
	}
	h := sha256.New()
	fmt.Fprintf(h, "%s\n", p.Fingerprint)
	for _, b := range subs {
		sp := judgeRepo(b.body.String(), nil)
		p.Submodules++
		for _, f := range sp.Findings {
			p.Findings = append(p.Findings, "submodule "+b.name+": "+f)
		}
		fmt.Fprintf(h, "submodule %s %s\n", b.name, sp.Fingerprint)
	}
	p.Fingerprint = hex.EncodeToString(h.Sum(nil))[:16]
	p.Clean = len(p.Findings) == 0
	return p
}

// judgeRepo reads one repository's part of the prove script's output.
func judgeRepo(out string, hidden []HiddenFile) *Proof {
	p := &Proof{}
	if strings.HasPrefix(out, "norepo") || strings.HasPrefix(out, "nodir") {
		p.Clean, p.NoRepo = true, true
		for _, line := range strings.Split(out, "\n") {
			if f, ok := strings.CutPrefix(line, "testfile "); ok {
				p.Findings = append(p.Findings, "hidden test file in the work tree: "+f)
			}
		}
		p.Clean = len(p.Findings) == 0
		return p
	}
	type ref struct{ oid, typ, name string }
	var refs []ref
	peeled := map[string]string{}
	var packs []string
	var loose, inPack int64
	find := func(format string, a ...any) { p.Findings = append(p.Findings, fmt.Sprintf(format, a...)) }
	num := func(s string) int64 {
		n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
		if err != nil {
			find("git said %q", strings.TrimSpace(s))
			return -1
		}
		return n
	}
	var beyond int64
	for _, line := range strings.Split(out, "\n") {
		key, rest, _ := strings.Cut(line, " ")
		switch key {
		case "head":
			p.Head = rest
		case "branch":
			p.Branch = rest
		case "ref":
			f := strings.SplitN(rest, " ", 3)
			if len(f) == 3 {
				refs = append(refs, ref{f[0], f[1], f[2]})
			}
		case "peel":
			name, typ, _ := strings.Cut(rest, " ")
			peeled[name] = typ
		case "remote":
			find("remote %s", rest)
		case "pseudo":
			find("%s in the git directory", rest)
		case "reflog":
			find("reflog %s", rest)
		case "count":
			k, v, _ := strings.Cut(rest, ": ")
			switch k {
			case "count":
				loose = num(v)
			case "in-pack":
				inPack = num(v)
			}
		case "pack":
			if strings.HasSuffix(rest, ".pack") {
				packs = append(packs, rest)
			}
		case "beyond":
			beyond = num(rest)
		case "reachable":
			p.Reachable = num(rest)
		case "testfile":
			find("hidden test file in the work tree: %s", rest)
		case "testblob":
			find("hidden test content among the git objects: blob %s", rest)
		case "pastblob":
			p.Notes = append(p.Notes, "hidden test content in base_commit's history (HEAD reaches it): blob "+rest)
		}
	}
	if p.Head == "" {
		find("HEAD names no commit")
	}
	for _, r := range refs {
		switch {
		case r.name == p.Branch:
			if r.oid != p.Head {
				find("branch %s is not at HEAD", r.name)
			}
		case strings.HasPrefix(r.name, "refs/tags/"):
			if r.typ == "commit" || r.typ == "tag" && (peeled[r.name] == "commit" || peeled[r.name] == "tag") {
				p.Tags++
				continue
			}
			find("tag %s names a %s", r.name, cmp.Or(peeled[r.name], r.typ))
		default:
			find("ref %s", r.name)
		}
	}
	if beyond > 0 {
		find("%d commits reachable from refs but not from HEAD", beyond)
	}
	p.Objects = loose + inPack
	if len(packs) > 1 {
		find("%d packs (the strip leaves one)", len(packs))
	}
	if p.Reachable >= 0 && p.Objects > p.Reachable {
		find("%d objects not reachable from the refs kept", p.Objects-p.Reachable)
	}
	slices.Sort(packs)
	h := sha256.New()
	fmt.Fprintf(h, "head %s\nbranch %s\n", p.Head, p.Branch)
	for _, r := range refs {
		fmt.Fprintf(h, "ref %s %s\n", r.oid, r.name)
	}
	for _, pk := range packs {
		fmt.Fprintf(h, "pack %s\n", pk)
	}
	fmt.Fprintf(h, "loose %d\n", loose)
	p.Fingerprint = hex.EncodeToString(h.Sum(nil))[:16]
	p.Clean = len(p.Findings) == 0
	return p
}

// HiddenFile is one file the task's test patch writes: its path in the
// repository, and the git blob id of its content after the patch when it
// can be known from the patch alone (a created file).
type HiddenFile struct {
	Path string
	// Created: the test patch creates the file (so it must not exist in
	// the agent's box).
	Created bool
	Blob    string
}

// HiddenTests lists the files t's test patch creates or changes. Only the
// created ones are looked for in the work tree (a changed one exists
// before the patch); the blobs of created files are looked for among the
// git objects.
func HiddenTests(t *task.Task) []HiddenFile {
	if t == nil || t.TestPatch == "" {
		return nil
	}
	var out []HiddenFile
	for _, f := range splitFiles(t.TestPatch) {
		if !f.created || f.path == "" || strings.HasPrefix(f.path, "/") || slices.Contains(strings.Split(f.path, "/"), "..") {
			continue
		}
		hf := HiddenFile{Path: path.Clean(f.path), Created: true}
		if f.text {
			if content, err := tamper.ApplyTestPatch(t.TestPatch, f.path, ""); err == nil {
				hf.Blob = BlobID([]byte(content))
			}
		}
		out = append(out, hf)
	}
	return out
}

// BlobID is git's object id (SHA-1) of a blob with content b.
func BlobID(b []byte) string {
	h := sha1.New()
	fmt.Fprintf(h, "blob %d\x00", len(b))
	h.Write(b)
	return hex.EncodeToString(h.Sum(nil))
}

type patchFile struct {
	path    string
	created bool
	other   bool // deleted, renamed, copied, mode change or binary
	text    bool // created from text
	hunks   int
}

// splitFiles reads what a git diff does to each file it names (the
// content is left to tamper.ApplyTestPatch, the one applier).
func splitFiles(patch string) []patchFile {
	var files []patchFile
	var cur *patchFile
	flush := func() {
		if cur == nil {
			return
		}
		cur.text = cur.created && !cur.other && cur.hunks > 0
		files = append(files, *cur)
	}
	inHunk := false
	for _, l := range strings.SplitAfter(patch, "\n") {
		switch {
		case strings.HasPrefix(l, "diff --git "):
			flush()
			f := strings.Fields(l)
			cur = &patchFile{path: strings.TrimPrefix(f[len(f)-1], "b/")}
			inHunk = false
		case cur == nil:
		case strings.HasPrefix(l, "@@ "):
			cur.hunks++
			inHunk = true
		case inHunk:
		case strings.HasPrefix(l, "new file mode"):
			cur.created = true
		case strings.HasPrefix(l, "+++ "):
			if p := strings.TrimSpace(strings.TrimPrefix(l, "+++ ")); p != "/dev/null" {
				cur.path = strings.TrimPrefix(p, "b/")
			}
		case strings.HasPrefix(l, "deleted file mode"), strings.HasPrefix(l, "rename from"),
			strings.HasPrefix(l, "copy from"), strings.HasPrefix(l, "old mode"),
			strings.HasPrefix(l, "GIT binary patch"), strings.HasPrefix(l, "Binary files"):
			cur.other = true
		}
	}
	flush()
	return files
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, " | ")
}

// changedBlobs are the blob ids of the files the test patch changes (not
// creates), as they are after the patch: their content before it is read
// from the work tree, which is at HEAD before an agent starts. A file whose
// hunks do not fit is left out.
func changedBlobs(ctx context.Context, box sandbox.Sandbox, t *task.Task, workdir string) []string {
	if t == nil || t.TestPatch == "" {
		return nil
	}
	var out []string
	for _, f := range splitFiles(t.TestPatch) {
		if f.created || f.other || f.hunks == 0 || f.path == "" || strings.HasPrefix(f.path, "/") || slices.Contains(strings.Split(f.path, "/"), "..") {
			continue
		}
		pre, err := box.ReadFile(ctx, path.Join(workdir, f.path))
		if err != nil {
			continue
		}
		if post, err := tamper.ApplyTestPatch(t.TestPatch, f.path, string(pre)); err == nil {
			out = append(out, BlobID([]byte(post)))
		}
	}
	return out
}
