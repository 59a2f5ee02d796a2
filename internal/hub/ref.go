package hub

import (
	"fmt"
	"strings"

	"github.com/swerve-dev/swerve/internal/lazyre"
)

// Ref names a dataset repository on the Hub and a revision of it.
type Ref struct {
	// Repo is "owner/name".
	Repo string
	// Revision is a branch, tag or commit; empty means "main".
	Revision string
}

func (r Ref) String() string {
	if r.Revision == "" || r.Revision == "main" {
		return r.Repo
	}
	return r.Repo + "@" + r.Revision
}

func (r Ref) rev() string {
	if r.Revision == "" {
		return "main"
	}
	return r.Revision
}

var repoPart = lazyre.New(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)

// ParseRef reads "owner/name", "owner/name@revision", "datasets/owner/name"
// or "hf://datasets/owner/name". It reports false for anything else, so a
// caller can try it after a local path was not found.
func ParseRef(s string) (Ref, bool) {
	s = strings.TrimPrefix(s, "hf://")
	s = strings.TrimPrefix(s, "datasets/")
	name, rev, _ := strings.Cut(s, "@")
	owner, repo, ok := strings.Cut(name, "/")
	if !ok || !repoPart.MatchString(owner) || !repoPart.MatchString(repo) ||
		strings.Contains(name, "..") || strings.HasSuffix(repo, ".git") || looksLikeFile(repo) {
		return Ref{}, false
	}
	if strings.Contains(s, "@") && rev == "" {
		return Ref{}, false
	}
	return Ref{Repo: name, Revision: rev}, true
}

// looksLikeFile reports a name ending like a data file ("dir/x.jsonl"),
// which is a local path that does not exist rather than a repository.
func looksLikeFile(name string) bool {
	for _, ext := range []string{".parquet", ".jsonl", ".json", ".csv", ".toml", ".gz"} {
		if strings.HasSuffix(strings.ToLower(name), ext) {
			return true
		}
	}
	return false
}

// folder is the cache folder name huggingface_hub uses for the repository.
func (r Ref) folder() string {
	return "datasets--" + strings.ReplaceAll(r.Repo, "/", "--")
}

var commitRE = lazyre.New(`^[0-9a-f]{40}$`)

func isCommit(s string) bool { return commitRE.MatchString(s) }

// Error is a failure to get a dataset from the Hub. Its message is one line
// that names the dataset and says what to do.
type Error struct {
	Ref Ref
	// Kind is one of the Err* constants.
	Kind string
	Msg  string
}

// Kinds of Error.
const (
	ErrNotFound  = "not-found"
	ErrAuth      = "auth"
	ErrSplit     = "split"
	ErrOffline   = "offline"
	ErrNetwork   = "network"
	ErrCorrupt   = "corrupt"
	ErrNoData    = "no-data"
	ErrHubStatus = "status"
)

func (e *Error) Error() string { return fmt.Sprintf("dataset %s: %s", e.Ref, e.Msg) }
