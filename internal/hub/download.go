package hub

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/swerve-dev/swerve/internal/lazyre"
)

// fileMeta is what a HEAD on the resolve route says about a file.
type fileMeta struct {
	etag     string
	size     int64 // -1 when unknown
	location string
}

var sha256RE = lazyre.New(`^[0-9a-f]{64}$`)

// download fetches one file of the commit into the cache the way
// huggingface_hub does: a HEAD on /datasets/{repo}/resolve/{commit}/{file}
// gives the blob's ETag and where it lives (often a CDN, without the
// token); the body goes to blobs/<etag>.incomplete (resumed with a Range
// request when a previous attempt left one), is checked, becomes
// blobs/<etag>, and snapshots/<commit>/<file> links to it.
func (c *Client) download(ctx context.Context, ref Ref, commit, file, local string) error {
	u := c.Endpoint + "/datasets/" + ref.Repo + "/resolve/" + commit + "/" + escapePath(file)
	meta, err := c.head(ctx, ref, u, file)
	if err != nil {
		return err
	}
	repoDir := filepath.Join(c.CacheDir, ref.folder())
	blob := filepath.Join(repoDir, "blobs", meta.etag)
	if err := os.MkdirAll(filepath.Dir(blob), 0o755); err != nil {
		return &Error{Ref: ref, Kind: ErrCorrupt, Msg: "cache " + c.CacheDir + ": " + err.Error()}
	}
	unlock, err := lockBlob(filepath.Join(c.CacheDir, ".locks", ref.folder(), meta.etag+".lock"))
	if err != nil {
		return &Error{Ref: ref, Kind: ErrCorrupt, Msg: "lock the cache " + c.CacheDir + ": " + err.Error()}
	}
	defer unlock()
	if _, err := os.Stat(blob); err != nil {
		var lastErr error
		for attempt := range 3 {
			if attempt > 0 {
				select {
				case <-ctx.Done():
					return ctx.Err()
				case <-time.After(time.Duration(attempt) * retryWait):
				}
			}
			lastErr = c.fetchBlob(ctx, ref, u, file, meta, blob)
			var he *Error
			if lastErr == nil || ctx.Err() != nil || !errors.As(lastErr, &he) || he.Kind != ErrNetwork {
				break
			}
		}
		if lastErr != nil {
			return lastErr
		}
	}
	if err := os.MkdirAll(filepath.Dir(local), 0o755); err != nil {
		return &Error{Ref: ref, Kind: ErrCorrupt, Msg: "cache " + c.CacheDir + ": " + err.Error()}
	}
	rel, err := filepath.Rel(filepath.Dir(local), blob)
	if err != nil {
		rel = blob
	}
	tmp := local + ".swerve-link"
	os.Remove(tmp)
	if err := os.Symlink(rel, tmp); err != nil {
		return &Error{Ref: ref, Kind: ErrCorrupt, Msg: "link " + local + ": " + err.Error()}
	}
	if err := os.Rename(tmp, local); err != nil {
		return &Error{Ref: ref, Kind: ErrCorrupt, Msg: "link " + local + ": " + err.Error()}
	}
	return nil
}

// head asks for the file's metadata, following only same-host (relative)
// redirects, as huggingface_hub does, so a CDN's Location is kept.
func (c *Client) head(ctx context.Context, ref Ref, u, file string) (*fileMeta, error) {
	hc := *c.httpClient()
	hc.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	cc := *c
	cc.HTTP = &hc
	hdr := http.Header{"Accept-Encoding": {"identity"}}
	for range 5 {
		resp, err := cc.do(ctx, ref, http.MethodHead, u, hdr, true)
		if err != nil {
			return nil, err
		}
		resp.Body.Close()
		if err := c.statusError(ref, resp, "file "+file); err != nil {
			return nil, err
		}
		loc := resp.Header.Get("Location")
		if resp.StatusCode >= 300 && resp.StatusCode < 400 && loc != "" {
			if base, err := url.Parse(u); err == nil {
				if next, err := base.Parse(loc); err == nil {
					loc = next.String()
					if next.Host == base.Host && resp.Header.Get("X-Linked-Etag") == "" && resp.Header.Get("ETag") == "" {
						u = loc // a renamed repository: follow
						continue
					}
				}
			}
		}
		m := &fileMeta{etag: normalizeETag(firstHeader(resp.Header, "X-Linked-Etag", "ETag")), size: -1, location: u}
		if loc != "" {
			m.location = loc
		}
		if s := resp.Header.Get("X-Linked-Size"); s != "" {
			m.size, _ = strconv.ParseInt(s, 10, 64)
		} else if resp.StatusCode < 300 && resp.ContentLength >= 0 {
			m.size = resp.ContentLength
		}
		if m.etag == "" || strings.ContainsAny(m.etag, `/\`) {
			return nil, &Error{Ref: ref, Kind: ErrHubStatus, Msg: "the Hub gave no ETag for " + file + "; is HF_ENDPOINT " + c.Endpoint + " a Hugging Face Hub?"}
		}
		return m, nil
	}
	return nil, &Error{Ref: ref, Kind: ErrHubStatus, Msg: "too many redirects for " + file}
}

func firstHeader(h http.Header, names ...string) string {
	for _, n := range names {
		if v := h.Get(n); v != "" {
			return v
		}
	}
	return ""
}

func normalizeETag(e string) string {
	return strings.Trim(strings.TrimPrefix(e, "W/"), `"`)
}

func escapePath(p string) string {
	parts := strings.Split(p, "/")
	for i, s := range parts {
		parts[i] = url.PathEscape(s)
	}
	return strings.Join(parts, "/")
}

// fetchBlob downloads meta.location into blob via blob.incomplete.
func (c *Client) fetchBlob(ctx context.Context, ref Ref, u, file string, meta *fileMeta, blob string) error {
	part := blob + ".incomplete"
	var have int64
	if fi, err := os.Stat(part); err == nil {
		have = fi.Size()
	}
	hdr := http.Header{}
	if have > 0 {
		hdr.Set("Range", fmt.Sprintf("bytes=%d-", have))
	}
	// The token goes only to the Hub's own host, never to a CDN.
	auth := hostOf(meta.location) == hostOf(u)
	resp, err := c.do(ctx, ref, http.MethodGet, meta.location, hdr, auth)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	flags := os.O_CREATE | os.O_WRONLY
	switch {
	case resp.StatusCode == http.StatusPartialContent && have > 0:
		flags |= os.O_APPEND
	case resp.StatusCode == http.StatusRequestedRangeNotSatisfiable && have > 0 && have == meta.size:
		return c.finishBlob(ref, file, meta, part, blob)
	case resp.StatusCode >= 200 && resp.StatusCode < 300:
		flags |= os.O_TRUNC
		have = 0
	default:
		if err := c.statusError(ref, resp, "file "+file); err != nil {
			return err
		}
		return &Error{Ref: ref, Kind: ErrHubStatus, Msg: "downloading " + file + ": unexpected " + resp.Status}
	}
	f, err := os.OpenFile(part, flags, 0o644)
	if err != nil {
		return &Error{Ref: ref, Kind: ErrCorrupt, Msg: "cache " + c.CacheDir + ": " + err.Error()}
	}
	var w io.Writer = f
	var meter *meter
	if c.Progress != nil {
		meter = newMeter(c.Progress, ref.Repo+" "+file, have, meta.size)
		w = io.MultiWriter(f, meter)
	}
	_, cerr := io.Copy(w, resp.Body)
	if meter != nil {
		meter.done()
	}
	if err := f.Close(); err != nil && cerr == nil {
		cerr = err
	}
	if cerr != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return &Error{Ref: ref, Kind: ErrNetwork, Msg: "download of " + file + " broke off (" + rootCause(cerr) + "); run again to resume it"}
	}
	return c.finishBlob(ref, file, meta, part, blob)
}

// finishBlob checks the downloaded size and, for LFS files whose ETag is
// their SHA-256, the content, then moves the file into place.
func (c *Client) finishBlob(ref Ref, file string, meta *fileMeta, part, blob string) error {
	fi, err := os.Stat(part)
	if err != nil {
		return &Error{Ref: ref, Kind: ErrCorrupt, Msg: "cache " + c.CacheDir + ": " + err.Error()}
	}
	if meta.size >= 0 && fi.Size() < meta.size {
		return &Error{Ref: ref, Kind: ErrNetwork, Msg: fmt.Sprintf("download of %s stopped at %d of %d bytes; run again to resume it", file, fi.Size(), meta.size)}
	}
	bad := meta.size >= 0 && fi.Size() != meta.size
	if !bad && sha256RE.MatchString(meta.etag) {
		f, err := os.Open(part)
		if err != nil {
			return &Error{Ref: ref, Kind: ErrCorrupt, Msg: "cache " + c.CacheDir + ": " + err.Error()}
		}
		h := sha256.New()
		_, err = io.Copy(h, f)
		f.Close()
		if err != nil {
			return &Error{Ref: ref, Kind: ErrCorrupt, Msg: "cache " + c.CacheDir + ": " + err.Error()}
		}
		bad = hex.EncodeToString(h.Sum(nil)) != meta.etag
	}
	if bad {
		os.Remove(part)
		return &Error{Ref: ref, Kind: ErrCorrupt, Msg: "downloaded " + file + " does not match the Hub's checksum (discarded); run again"}
	}
	if err := os.Rename(part, blob); err != nil {
		return &Error{Ref: ref, Kind: ErrCorrupt, Msg: "cache " + c.CacheDir + ": " + err.Error()}
	}
	return nil
}

// meter draws "name  12.3/45.6 MB" on one terminal line, at most ten
// times a second.
type meter struct {
	w     io.Writer
	name  string
	n     int64
	total int64
	last  time.Time
}

func newMeter(w io.Writer, name string, start, total int64) *meter {
	return &meter{w: w, name: name, n: start, total: total}
}

func (m *meter) Write(p []byte) (int, error) {
	m.n += int64(len(p))
	if time.Since(m.last) >= 100*time.Millisecond {
		m.last = time.Now()
		m.draw()
	}
	return len(p), nil
}

func (m *meter) draw() {
	if m.total > 0 {
		fmt.Fprintf(m.w, "\r\x1b[Kdownloading %s  %.1f/%.1f MB", m.name, float64(m.n)/1e6, float64(m.total)/1e6)
	} else {
		fmt.Fprintf(m.w, "\r\x1b[Kdownloading %s  %.1f MB", m.name, float64(m.n)/1e6)
	}
}

func (m *meter) done() {
	m.draw()
	fmt.Fprintln(m.w)
}
