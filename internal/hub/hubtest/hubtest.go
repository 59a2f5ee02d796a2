// Package hubtest is a fake Hugging Face Hub for tests. It answers the
// routes swerve's hub client uses, with the status codes, headers and
// redirects of the real Hub: GET /api/datasets/{repo}/revision/{rev}, and
// HEAD/GET /datasets/{repo}/resolve/{rev}/{path}, which for large (LFS)
// files redirects to a second server standing in for the CDN.
package hubtest

import (
	"bytes"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"
)

// Repo is one dataset repository.
type Repo struct {
	// Revisions maps a branch or tag ("main", "refs/convert/parquet") to
	// its files; each revision gets its own commit hash.
	Revisions map[string]map[string][]byte
	// Configs is the README's "configs" list, served in cardData.
	Configs []map[string]any
	// Gated repos need a token for their files.
	Gated bool
	// Private repos answer 401 RepoNotFound without the token.
	Private bool
	// MovedTo, when set, is the repository's new name: every route answers
	// 307 with a relative Location there, as the Hub does for renamed
	// repositories.
	MovedTo string
}

// Request is one request a server saw.
type Request struct {
	Method, Path, Auth, Range string
	CDN                       bool
}

// Server is the fake Hub and its CDN.
type Server struct {
	Hub, CDN *httptest.Server
	// Token, when set, is the only token the Hub accepts for gated and
	// private repos.
	Token string
	// LFSMin is the size from which files are LFS (redirected to the
	// CDN); 0 means every .parquet file.
	LFSMin int
	// BreakAfter, when positive, makes the CDN cut a body off after that
	// many bytes, Breaks times.
	BreakAfter, Breaks int
	// Corrupt makes the CDN flip a byte of every body it serves.
	Corrupt bool

	mu    sync.Mutex
	repos map[string]*Repo
	reqs  []Request
	blobs map[string][]byte // sha256 -> content
}

// New starts a fake Hub serving repos (keyed "owner/name").
func New(repos map[string]*Repo) *Server {
	s := &Server{repos: repos, blobs: map[string][]byte{}}
	s.Hub = httptest.NewServer(http.HandlerFunc(s.hub))
	s.CDN = httptest.NewServer(http.HandlerFunc(s.cdn))
	return s
}

// Close stops both servers.
func (s *Server) Close() {
	s.Hub.Close()
	s.CDN.Close()
}

// Requests returns the requests seen so far and forgets them.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.reqs
	s.reqs = nil
	return r
}

func (s *Server) log(r *http.Request, cdn bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reqs = append(s.reqs, Request{Method: r.Method, Path: r.URL.EscapedPath(), Auth: r.Header.Get("Authorization"), Range: r.Header.Get("Range"), CDN: cdn})
}

// Commit is the commit hash the fake gives a repository's revision.
func Commit(repo, rev string) string {
	h := sha1.Sum([]byte(repo + "@" + rev))
	return hex.EncodeToString(h[:])
}

func (s *Server) revision(repo *Repo, name, rev string) (string, map[string][]byte) {
	for r, files := range repo.Revisions {
		if r == rev || Commit(name, r) == rev {
			return Commit(name, r), files
		}
	}
	return "", nil
}

func hubError(w http.ResponseWriter, status int, code, msg string) {
	if code != "" {
		w.Header().Set("X-Error-Code", code)
	}
	w.Header().Set("X-Error-Message", msg)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(map[string]string{"error": msg})
}

// access applies the Hub's rules for private and gated repos.
func (s *Server) access(w http.ResponseWriter, r *http.Request, repo *Repo, files bool) bool {
	auth := r.Header.Get("Authorization")
	ok := s.Token != "" && auth == "Bearer "+s.Token
	switch {
	case repo.Private && !ok:
		hubError(w, http.StatusUnauthorized, "RepoNotFound", "Repository Not Found")
		return false
	case repo.Gated && files && auth == "":
		hubError(w, http.StatusUnauthorized, "GatedRepo", "Access to dataset is restricted. You must have access to it and be authenticated to access it.")
		return false
	case repo.Gated && files && !ok:
		hubError(w, http.StatusForbidden, "GatedRepo", "Access to dataset is restricted and you are not in the authorized list.")
		return false
	}
	return true
}

func (s *Server) hub(w http.ResponseWriter, r *http.Request) {
	s.log(r, false)
	p := r.URL.EscapedPath()
	switch {
	case strings.HasPrefix(p, "/api/datasets/") && r.Method == http.MethodGet:
		// /api/datasets/{owner}/{name}/revision/{rev}
		parts := strings.SplitN(strings.TrimPrefix(p, "/api/datasets/"), "/", 4)
		if len(parts) != 4 || parts[2] != "revision" {
			hubError(w, http.StatusNotFound, "", "Not Found")
			return
		}
		s.info(w, r, parts[0]+"/"+parts[1], unescape(parts[3]))
	case strings.HasPrefix(p, "/datasets/") && (r.Method == http.MethodGet || r.Method == http.MethodHead):
		// /datasets/{owner}/{name}/resolve/{rev}/{path...}
		parts := strings.SplitN(strings.TrimPrefix(p, "/datasets/"), "/", 5)
		if len(parts) != 5 || parts[2] != "resolve" {
			hubError(w, http.StatusNotFound, "", "Not Found")
			return
		}
		s.resolve(w, r, parts[0]+"/"+parts[1], unescape(parts[3]), unescape(parts[4]))
	default:
		hubError(w, http.StatusNotFound, "", "Not Found")
	}
}

func unescape(s string) string {
	if u, err := url.PathUnescape(s); err == nil {
		return u
	}
	return s
}

func (s *Server) lookup(w http.ResponseWriter, r *http.Request, name string) *Repo {
	repo := s.repos[name]
	if repo != nil && repo.MovedTo != "" {
		loc := strings.Replace(r.URL.EscapedPath(), "/"+name+"/", "/"+repo.MovedTo+"/", 1)
		if r.URL.RawQuery != "" {
			loc += "?" + r.URL.RawQuery
		}
		w.Header().Set("Location", loc)
		w.WriteHeader(http.StatusTemporaryRedirect)
		return nil
	}
	if repo == nil {
		// The Hub does not tell missing from private to strangers.
		if r.Header.Get("Authorization") == "" {
			hubError(w, http.StatusUnauthorized, "RepoNotFound", "Repository Not Found")
		} else {
			hubError(w, http.StatusNotFound, "RepoNotFound", "Repository Not Found")
		}
	}
	return repo
}

func (s *Server) info(w http.ResponseWriter, r *http.Request, name, rev string) {
	repo := s.lookup(w, r, name)
	if repo == nil || !s.access(w, r, repo, false) {
		return
	}
	sha, files := s.revision(repo, name, rev)
	if sha == "" {
		hubError(w, http.StatusNotFound, "RevisionNotFound", "Invalid rev id: "+rev)
		return
	}
	var siblings []map[string]string
	for _, f := range sortedKeys(files) {
		siblings = append(siblings, map[string]string{"rfilename": f})
	}
	body := map[string]any{
		"_id": "0", "id": name, "author": strings.Split(name, "/")[0], "sha": sha,
		"lastModified": time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), "private": repo.Private,
		"gated": repo.Gated, "disabled": false, "siblings": siblings, "tags": []string{},
		"cardData": map[string]any{"configs": repo.Configs},
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	json.NewEncoder(w).Encode(body)
}

func sortedKeys(m map[string][]byte) []string {
	var k []string
	for f := range m {
		k = append(k, f)
	}
	slices.Sort(k)
	return k
}

func (s *Server) isLFS(path string, data []byte) bool {
	if s.LFSMin > 0 {
		return len(data) >= s.LFSMin
	}
	return strings.HasSuffix(path, ".parquet")
}

func (s *Server) resolve(w http.ResponseWriter, r *http.Request, name, rev, path string) {
	repo := s.lookup(w, r, name)
	if repo == nil || !s.access(w, r, repo, true) {
		return
	}
	sha, files := s.revision(repo, name, rev)
	if sha == "" {
		hubError(w, http.StatusNotFound, "RevisionNotFound", "Invalid rev id: "+rev)
		return
	}
	data, ok := files[path]
	if !ok {
		hubError(w, http.StatusNotFound, "EntryNotFound", "Entry not found")
		return
	}
	w.Header().Set("X-Repo-Commit", sha)
	gitSHA := sha1.Sum(fmt.Appendf(nil, "blob %d\x00%s", len(data), data))
	if s.isLFS(path, data) {
		sum := sha256.Sum256(data)
		oid := hex.EncodeToString(sum[:])
		s.mu.Lock()
		s.blobs[oid] = data
		s.mu.Unlock()
		pointer := fmt.Sprintf("version https://git-lfs.github.com/spec/v1\noid sha256:%s\nsize %d\n", oid, len(data))
		psha := sha1.Sum(fmt.Appendf(nil, "blob %d\x00%s", len(pointer), pointer))
		w.Header().Set("ETag", `"`+hex.EncodeToString(psha[:])+`"`)
		w.Header().Set("X-Linked-Etag", `"`+oid+`"`)
		w.Header().Set("X-Linked-Size", fmt.Sprint(len(data)))
		w.Header().Set("Location", s.CDN.URL+"/repos/"+oid[:2]+"/"+oid+"?response-content-disposition=attachment")
		w.WriteHeader(http.StatusFound)
		return
	}
	w.Header().Set("ETag", `"`+hex.EncodeToString(gitSHA[:])+`"`)
	http.ServeContent(w, r, path, time.Time{}, bytes.NewReader(data))
}

func (s *Server) cdn(w http.ResponseWriter, r *http.Request) {
	s.log(r, true)
	oid := r.URL.Path[strings.LastIndexByte(r.URL.Path, '/')+1:]
	s.mu.Lock()
	data, ok := s.blobs[oid]
	cut := 0
	if s.Breaks > 0 {
		cut = s.BreakAfter
		s.Breaks--
	}
	corrupt := s.Corrupt
	s.mu.Unlock()
	if !ok {
		http.Error(w, "NoSuchKey", http.StatusNotFound)
		return
	}
	if corrupt {
		data = bytes.Clone(data)
		data[len(data)/2] ^= 0xff
	}
	if cut > 0 && cut < len(data) {
		w.Header().Set("Content-Length", fmt.Sprint(len(data)))
		w.WriteHeader(http.StatusOK)
		w.Write(data[:cut])
		w.(http.Flusher).Flush()
		// Drop the connection with the body unfinished.
		if hj, ok := w.(http.Hijacker); ok {
			if c, _, err := hj.Hijack(); err == nil {
				c.Close()
			}
		}
		return
	}
	w.Header().Set("ETag", `"`+oid+`"`)
	http.ServeContent(w, r, oid, time.Time{}, bytes.NewReader(data))
}
