package hub

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// Client fetches dataset files from the Hub into the cache.
type Client struct {
	Config
	// HTTP makes the requests; nil means a client with connect and answer
	// timeouts that honours HTTPS_PROXY.
	HTTP *http.Client
	// Progress, when set, receives a one-line download meter (meant for a
	// terminal).
	Progress io.Writer
	// UserAgent is sent with every request.
	UserAgent string
}

// Options pick what to fetch.
type Options struct {
	// Split is the split to fetch; empty means "test" when the dataset has
	// one, else its only split.
	Split string
	// Config is the dataset configuration (a README "configs" name, or a
	// folder of the parquet conversion); empty means the default one.
	Config string
}

// Result is what Fetch put in the cache.
type Result struct {
	Ref    Ref
	Commit string
	// Split is the split fetched; Splits are all the dataset has.
	Split  string
	Splits []string
	// RepoFiles are the split's files in the repository and Files their
	// paths in the cache, in the same order.
	RepoFiles []string
	Files     []string
	// Downloaded counts the files this call downloaded (0: all cached).
	Downloaded int
	// Warning says the cache was used because the Hub could not be reached.
	Warning string
}

// parquetRevision is the branch where the Hub keeps its parquet conversion
// of datasets stored in other formats.
const parquetRevision = "refs/convert/parquet"

// repoInfo is the part of /api/datasets/{repo}/revision/{rev} swerve uses.
type repoInfo struct {
	SHA      string `json:"sha"`
	Siblings []struct {
		RFilename string `json:"rfilename"`
	} `json:"siblings"`
	CardData struct {
		Configs []configSpec `json:"configs"`
	} `json:"cardData"`
}

func (i *repoInfo) files() []string {
	var out []string
	for _, s := range i.Siblings {
		out = append(out, s.RFilename)
	}
	return out
}

// Fetch makes sure the files of one split of ref are in the cache and
// returns their paths. Online it asks the Hub for the revision's commit and
// file list, then downloads the files the cache lacks; offline, or when the
// Hub cannot be reached and the revision is cached, it reads the cache. A
// revision that is a commit hash already cached needs no request.
func (c *Client) Fetch(ctx context.Context, ref Ref, opts Options) (*Result, error) {
	if c.Offline {
		return c.fromCache(ref, opts, "")
	}
	if isCommit(ref.rev()) {
		// A commit never changes: when its files are cached, ask nothing.
		if res, err := c.fromCacheAt(ref, opts, ""); err == nil {
			return res, nil
		}
	}
	info, err := c.info(ctx, ref, ref.rev())
	if err != nil {
		var he *Error
		if errors.As(err, &he) && he.Kind == ErrNetwork {
			if res, cerr := c.fromCache(ref, opts, "the Hub could not be reached ("+he.Msg+"); using the cached copy"); cerr == nil {
				return res, nil
			}
		}
		return nil, err
	}
	if info.SHA == "" {
		return nil, &Error{Ref: ref, Kind: ErrHubStatus, Msg: "the Hub's revision answer has no commit (sha); is HF_ENDPOINT " + c.Endpoint + " a Hugging Face Hub?"}
	}
	files, splits := splitFiles(info.files(), info.CardData.Configs, opts.Config)
	commit := info.SHA
	if len(splits) == 0 {
		// No file swerve reads: use the Hub's parquet conversion.
		pinfo, perr := c.info(ctx, ref, parquetRevision)
		if perr != nil {
			return nil, &Error{Ref: ref, Kind: ErrNoData, Msg: "no parquet, JSON or JSONL data files, and no parquet conversion (" + perr.Error() + ")"}
		}
		files, splits = conversionFiles(pinfo.files(), opts.Config)
		commit = pinfo.SHA
		if len(splits) == 0 {
			return nil, &Error{Ref: ref, Kind: ErrNoData, Msg: "no parquet, JSON or JSONL data files in the repository or its parquet conversion"}
		}
		ref = Ref{Repo: ref.Repo, Revision: parquetRevision}
	}
	split, err := pickSplit(ref, splits, opts.Split)
	if err != nil {
		return nil, err
	}
	res := &Result{Ref: ref, Commit: commit, Split: split, Splits: splits, RepoFiles: files[split]}
	repoDir := filepath.Join(c.CacheDir, ref.folder())
	for _, f := range res.RepoFiles {
		local := filepath.Join(repoDir, "snapshots", commit, filepath.FromSlash(f))
		if _, err := os.Stat(local); err != nil {
			if err := c.download(ctx, ref, commit, f, local); err != nil {
				return nil, err
			}
			res.Downloaded++
		}
		res.Files = append(res.Files, local)
	}
	if !isCommit(ref.rev()) {
		if err := writeRef(repoDir, ref.rev(), commit); err != nil {
			return nil, &Error{Ref: ref, Kind: ErrCorrupt, Msg: "write the cache's ref: " + err.Error()}
		}
	}
	return res, nil
}

// conversionFiles reads the parquet conversion's layout,
// <config>/<split>/NNNN.parquet (or <config>/partial-<split>/...).
func conversionFiles(files []string, config string) (map[string][]string, []string) {
	byConfig := map[string]map[string][]string{}
	for _, f := range files {
		parts := strings.Split(f, "/")
		if len(parts) != 3 || !strings.HasSuffix(f, ".parquet") {
			continue
		}
		split := strings.TrimPrefix(parts[1], "partial-")
		if byConfig[parts[0]] == nil {
			byConfig[parts[0]] = map[string][]string{}
		}
		byConfig[parts[0]][split] = append(byConfig[parts[0]][split], f)
	}
	if config == "" {
		config = "default"
		if _, ok := byConfig[config]; !ok && len(byConfig) == 1 {
			for k := range byConfig {
				config = k
			}
		}
	}
	m := byConfig[config]
	for _, fs := range m {
		slices.Sort(fs)
	}
	return m, keys(m)
}

func pickSplit(ref Ref, splits []string, want string) (string, error) {
	if want == "" {
		switch {
		case slices.Contains(splits, "test"):
			return "test", nil
		case len(splits) == 1:
			return splits[0], nil
		}
		return "", &Error{Ref: ref, Kind: ErrSplit, Msg: "no \"test\" split; pass --split with one of: " + strings.Join(splits, ", ")}
	}
	if !slices.Contains(splits, want) {
		return "", &Error{Ref: ref, Kind: ErrSplit, Msg: fmt.Sprintf("no split %q; it has: %s", want, strings.Join(splits, ", "))}
	}
	return want, nil
}

// fromCache answers from the cache alone: the revision's commit from
// refs/, the files from the snapshot.
func (c *Client) fromCache(ref Ref, opts Options, warning string) (*Result, error) {
	res, err := c.fromCacheAt(ref, opts, warning)
	if err != nil && ref.Revision == "" {
		// A dataset read through its parquet conversion is cached under
		// that branch.
		if res2, err2 := c.fromCacheAt(Ref{Repo: ref.Repo, Revision: parquetRevision}, opts, warning); err2 == nil {
			return res2, nil
		}
	}
	return res, err
}

func (c *Client) fromCacheAt(ref Ref, opts Options, warning string) (*Result, error) {
	repoDir := filepath.Join(c.CacheDir, ref.folder())
	why := "HF_HUB_OFFLINE is set"
	if warning != "" {
		why = "the Hub could not be reached"
	}
	commit := ref.rev()
	if !isCommit(commit) {
		b, err := os.ReadFile(filepath.Join(repoDir, "refs", filepath.FromSlash(commit)))
		if err != nil {
			return nil, &Error{Ref: ref, Kind: ErrOffline, Msg: why + " and revision " + ref.rev() + " is not in the cache " + c.CacheDir + "; load it once online"}
		}
		commit = strings.TrimSpace(string(b))
	}
	snap := filepath.Join(repoDir, "snapshots", commit)
	var all []string
	err := filepath.WalkDir(snap, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			rel, _ := filepath.Rel(snap, p)
			all = append(all, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		return nil, &Error{Ref: ref, Kind: ErrOffline, Msg: why + " and commit " + commit + " is not in the cache " + c.CacheDir + "; load it once online"}
	}
	files, splits := splitFiles(all, nil, opts.Config)
	if ref.Revision == parquetRevision || len(splits) == 0 {
		files, splits = conversionFiles(all, opts.Config)
	}
	if len(splits) == 0 {
		return nil, &Error{Ref: ref, Kind: ErrOffline, Msg: why + " and no data file of it is cached in " + snap + "; load it once online"}
	}
	split, err := pickSplit(ref, splits, opts.Split)
	if err != nil {
		var he *Error
		if errors.As(err, &he) {
			he.Msg = why + ": " + he.Msg + " (cached splits only)"
		}
		return nil, err
	}
	res := &Result{Ref: ref, Commit: commit, Split: split, Splits: splits, RepoFiles: files[split], Warning: warning}
	for _, f := range res.RepoFiles {
		local := filepath.Join(snap, filepath.FromSlash(f))
		if _, err := os.Stat(local); err != nil {
			return nil, &Error{Ref: ref, Kind: ErrCorrupt, Msg: "cached file " + local + " is a broken link; delete " + repoDir + " and load it again online"}
		}
		res.Files = append(res.Files, local)
	}
	return res, nil
}

func writeRef(repoDir, rev, commit string) error {
	p := filepath.Join(repoDir, "refs", filepath.FromSlash(rev))
	if b, err := os.ReadFile(p); err == nil && strings.TrimSpace(string(b)) == commit {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	tmp := p + ".tmp" + fmt.Sprint(os.Getpid())
	if err := os.WriteFile(tmp, []byte(commit), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, p)
}

// info asks /api/datasets/{repo}/revision/{rev}.
func (c *Client) info(ctx context.Context, ref Ref, rev string) (*repoInfo, error) {
	u := c.Endpoint + "/api/datasets/" + ref.Repo + "/revision/" + url.PathEscape(rev)
	resp, err := c.do(ctx, ref, http.MethodGet, u, nil, true)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if err := c.statusError(ref, resp, "revision "+rev); err != nil {
		return nil, err
	}
	var info repoInfo
	if err := json.NewDecoder(io.LimitReader(resp.Body, 64<<20)).Decode(&info); err != nil {
		return nil, &Error{Ref: ref, Kind: ErrHubStatus, Msg: "the Hub's revision answer is not JSON (" + err.Error() + "); is HF_ENDPOINT " + c.Endpoint + " a Hugging Face Hub?"}
	}
	return &info, nil
}

// defaultHTTP gives up on a Hub that does not connect or answer, so a
// dead network fails in seconds; bodies may take as long as they need.
var defaultHTTP = &http.Client{Transport: &http.Transport{
	Proxy:                 http.ProxyFromEnvironment,
	DialContext:           (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
	TLSHandshakeTimeout:   10 * time.Second,
	ResponseHeaderTimeout: 60 * time.Second,
	IdleConnTimeout:       90 * time.Second,
	ForceAttemptHTTP2:     true,
}}

func (c *Client) httpClient() *http.Client {
	if c.HTTP != nil {
		return c.HTTP
	}
	return defaultHTTP
}

// do sends one request with the Hub's headers, retrying network errors,
// 429 and 5xx a few times. auth says whether the token goes along.
func (c *Client) do(ctx context.Context, ref Ref, method, u string, hdr http.Header, auth bool) (*http.Response, error) {
	var lastErr error
	for attempt := range 3 {
		if attempt > 0 {
			select {
			case <-ctx.Done():
				return nil, ctx.Err()
			case <-time.After(time.Duration(attempt) * retryWait):
			}
		}
		req, err := http.NewRequestWithContext(ctx, method, u, nil)
		if err != nil {
			return nil, &Error{Ref: ref, Kind: ErrNetwork, Msg: err.Error()}
		}
		for k, v := range hdr {
			req.Header[k] = v
		}
		ua := c.UserAgent
		if ua == "" {
			ua = "swerve"
		}
		req.Header.Set("User-Agent", ua)
		if auth && c.Token != "" {
			req.Header.Set("Authorization", "Bearer "+c.Token)
		}
		resp, err := c.httpClient().Do(req)
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			lastErr = &Error{Ref: ref, Kind: ErrNetwork, Msg: "cannot reach " + hostOf(u) + ": " + rootCause(err) + "; check the network or HF_ENDPOINT, or set HF_HUB_OFFLINE=1 to use the cache"}
			continue
		}
		if resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode >= 500 {
			lastErr = c.statusError(ref, resp, "")
			resp.Body.Close()
			continue
		}
		return resp, nil
	}
	return nil, lastErr
}

func hostOf(u string) string {
	if p, err := url.Parse(u); err == nil {
		return p.Host
	}
	return u
}

func rootCause(err error) string {
	for {
		u := errors.Unwrap(err)
		if u == nil {
			return err.Error()
		}
		err = u
	}
}

// statusError turns a Hub error answer into a one-line Error; nil for
// 2xx and 3xx.
func (c *Client) statusError(ref Ref, resp *http.Response, what string) error {
	if resp.StatusCode < 400 {
		return nil
	}
	code := resp.Header.Get("X-Error-Code")
	page := c.Endpoint + "/datasets/" + ref.Repo
	switch {
	case code == "GatedRepo" || (resp.StatusCode == http.StatusForbidden && code != "RepoNotFound"):
		if c.Token == "" {
			return &Error{Ref: ref, Kind: ErrAuth, Msg: "gated or private (" + resp.Status + "): accept its conditions at " + page + " and set HF_TOKEN (or put a token in HF_HOME/token)"}
		}
		return &Error{Ref: ref, Kind: ErrAuth, Msg: "gated (" + resp.Status + "): the token in HF_TOKEN has no access; accept its conditions at " + page}
	case code == "RevisionNotFound":
		return &Error{Ref: ref, Kind: ErrNotFound, Msg: what + " not found; check the revision (--revision or name@revision)"}
	case code == "EntryNotFound":
		return &Error{Ref: ref, Kind: ErrNotFound, Msg: what + " not found in the repository"}
	case code == "RepoNotFound" || resp.StatusCode == http.StatusNotFound || resp.StatusCode == http.StatusUnauthorized:
		if resp.StatusCode == http.StatusUnauthorized && c.Token != "" && code != "RepoNotFound" {
			return &Error{Ref: ref, Kind: ErrAuth, Msg: "the Hub rejected the token (" + resp.Status + "); check HF_TOKEN"}
		}
		hint := "check the name, or if it is private set HF_TOKEN"
		if c.Token != "" {
			hint = "check the name, and that the token in HF_TOKEN can read it"
		}
		return &Error{Ref: ref, Kind: ErrNotFound, Msg: "not found on " + c.Endpoint + " (" + resp.Status + "); " + hint}
	}
	msg := resp.Header.Get("X-Error-Message")
	if msg == "" {
		msg = resp.Status
	}
	return &Error{Ref: ref, Kind: ErrHubStatus, Msg: "the Hub answered " + msg + "; try again later"}
}

// retryWait is the pause before the first retry; later ones wait longer.
var retryWait = 500 * time.Millisecond
