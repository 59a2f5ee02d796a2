package history

import (
	"context"
	"fmt"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/swerve-dev/swerve/internal/lazyre"
	"github.com/swerve-dev/swerve/internal/sandbox"
	"github.com/swerve-dev/swerve/internal/task"
)

// Audit is what an image holds past its task's base commit, found without
// changing anything.
type Audit struct {
	Image string `json:"image"`
	// Instances are the tasks that use the image.
	Instances []string `json:"instance_ids"`
	// BaseCommit is the task's; HeadIsBase says the repository's HEAD is
	// it (always, for datasets whose HEAD is not promised: see ExpectedHead).
	BaseCommit string `json:"base_commit,omitempty"`
	HeadIsBase bool   `json:"head_is_base"`
	// Proof is the history proof of the image as it is (see Prove): its
	// findings are the git leaks.
	Proof *Proof `json:"proof,omitempty"`
	// Newer counts the commits any ref or reflog reaches that are dated
	// after HEAD (the proof does not look at dates: once no ref reaches
	// past HEAD, such commits are its ancestors).
	Newer int64 `json:"newer_commits"`
	// Copies are copies of the project outside its repository: package
	// caches, wheels and sdists, installed packages that are not the
	// repository's own (editable) install.
	Copies []string `json:"copies,omitempty"`
	// Checked says what the audit looked at beyond git, one place a line.
	Checked []string `json:"checked_beyond_git,omitempty"`
	// WithFix are the copies whose files hold the gold patch's added lines
	// (the fix itself, outside git); NewerCopies those whose version, read
	// from the file name, is a later major.minor than the task's version.
	// Both are among Copies and count among the leaks there.
	WithFix     []string `json:"copies_with_fix,omitempty"`
	NewerCopies []string `json:"copies_newer,omitempty"`
	// Error says why the image could not be audited.
	Error string `json:"error,omitempty"`
}

// Leaks counts what the audit found.
func (a *Audit) Leaks() int {
	n := len(a.Copies)
	if a.Proof != nil {
		n += len(a.Proof.Findings)
	}
	return n
}

// copiesScript looks for copies of the project named $1 outside the
// repository at $2, under the root $3 ("/" in a box): in pip's and conda's
// caches, as wheels or source archives anywhere on the image's own file
// system, and as installed packages whose files are not the repository's.
// "checked" lines say where it looked.
const copiesScript = `name="$1"; repo="$2"; root="${3%/}"
for d in /root/.cache/pip /home/*/.cache/pip /opt/conda/pkgs /opt/miniconda3/pkgs /root/miniconda3/pkgs /usr/local/conda/pkgs /root/.conda/pkgs; do
  d="$root$d"
  [ -d "$d" ] || continue
  echo "checked cache ${d#"$root"}"
  find "$d" -maxdepth 3 -iname "$name-*" 2>/dev/null | head -20 | sed 's/^/cache /'
  [ -d "$d/wheels" ] && find "$d/wheels" -iname "$name-*.whl" 2>/dev/null | head -20 | sed 's/^/cache /'
done
echo "checked archives $name-*.whl, .tar.gz, .tar.bz2, .conda, .zip on ${root:-/} (its own file system, not /proc, /sys or the repository)"
find "${root:-/}" -xdev \( -path "$root/proc" -o -path "$root/sys" -o -path "$repo" \) -prune -o \
  \( -iname "$name-*.whl" -o -iname "$name-*.tar.gz" -o -iname "$name-*.tar.bz2" -o -iname "$name-*.conda" -o -iname "$name-*.zip" \) -print 2>/dev/null | head -20 | sed 's/^/archive /'
echo "checked installed site-packages/$name, $name.py (dist-packages too)"
find "${root:-/}" -xdev \( -path "$root/proc" -o -path "$root/sys" -o -path "$repo" \) -prune -o \
  \( -type d \( -path "*/site-packages/$name" -o -path "*/dist-packages/$name" \) -o \
  -type f \( -path "*/site-packages/$name.py" -o -path "*/dist-packages/$name.py" \) \) -print 2>/dev/null | head -20 | sed 's/^/installed /'
echo "checked installed versions site-packages/$name-*.dist-info, .egg-info (dist-packages too)"
find "${root:-/}" -xdev \( -path "$root/proc" -o -path "$root/sys" -o -path "$repo" \) -prune -o \
  -type d \( -ipath "*/site-packages/$name-*.dist-info" -o -ipath "*/site-packages/$name-*.egg-info" \
  -o -ipath "*/dist-packages/$name-*.dist-info" -o -ipath "*/dist-packages/$name-*.egg-info" \) -print 2>/dev/null | head -20 | sed 's/^/meta /'
echo end
`

var safeName = lazyre.New(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)

// ProjectName is the package name the audit looks for: the repository's
// name ("django/django" → "django"), or "" when it is not a plain name.
func ProjectName(t *task.Task) string {
	name := path.Base(strings.TrimSuffix(t.Repo, ".git"))
	if i := strings.LastIndex(name, "__"); i >= 0 { // SWE-smith's owner__name.hash
		name = name[i+2:]
		if j := strings.Index(name, "."); j > 0 {
			name = name[:j]
		}
	}
	if !safeName.MatchString(name) {
		return ""
	}
	return name
}

// AuditBox audits the box's repository at workdir as it is (no strip): the
// history proof, whether HEAD is the task's base commit, and copies of the
// project outside the repository.
func AuditBox(ctx context.Context, box sandbox.Sandbox, t *task.Task, workdir string) (*Audit, error) {
	return auditBoxAt(ctx, box, t, workdir, "/")
}

// auditBoxAt is AuditBox with the box's file system seen from root (a
// directory standing for "/", for tests).
func auditBoxAt(ctx context.Context, box sandbox.Sandbox, t *task.Task, workdir, root string) (*Audit, error) {
	a := &Audit{Image: t.Image, Instances: []string{t.InstanceID}, BaseCommit: t.BaseCommit}
	p, err := Prove(ctx, box, t, workdir)
	if err != nil {
		return nil, err
	}
	a.Proof = p
	a.HeadIsBase = !p.HeadNotBase
	if !p.NoRepo {
		res, err := box.Exec(ctx, sandbox.ExecRequest{Cmd: sandbox.Bash(`git rev-list --all --reflog --count --since=$(( $(git log -1 --format=%ct HEAD) + 1 ))`), Cwd: workdir, Timeout: 5 * time.Minute})
		if err != nil {
			return nil, fmt.Errorf("audit dates: %w", err)
		}
		if n, err := strconv.ParseInt(strings.TrimSpace(string(res.Output)), 10, 64); err == nil {
			a.Newer = n
		}
	}
	c, err := findCopies(ctx, box, t, workdir, root)
	if err != nil {
		return nil, fmt.Errorf("audit copies: %w", err)
	}
	if c.NotChecked == "" {
		a.Copies, a.WithFix, a.NewerCopies, a.Checked = c.Copies, c.WithFix, c.Newer, c.Checked
	}
	return a, nil
}
