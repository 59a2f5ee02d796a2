package hub_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/swerve-dev/swerve/internal/hub"
	"github.com/swerve-dev/swerve/internal/hub/hubtest"
	"github.com/swerve-dev/swerve/internal/testutil"
)

const verifiedRepo = "princeton-nlp/SWE-bench_Verified"

// verifiedBytes is SWE-bench Verified's test split from ../shared.
func verifiedBytes(t testing.TB) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(testutil.SharedDir(t), "data", "swebench", "verified-test.parquet"))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// smallRepos is a hub with a few layouts, none needing ../shared.
func smallRepos() map[string]*hubtest.Repo {
	return map[string]*hubtest.Repo{
		"acme/sharded": {Revisions: map[string]map[string][]byte{"main": {
			".gitattributes":                       []byte("*.parquet filter=lfs\n"),
			"README.md":                            []byte("---\nlicense: mit\n---\n"),
			"data/train-00000-of-00002.parquet":    []byte("PAR1 train 0"),
			"data/train-00001-of-00002.parquet":    []byte("PAR1 train 1"),
			"data/test-00000-of-00001.parquet":     []byte("PAR1 test"),
			"data/dev_10pr-00000-of-00001.parquet": []byte("PAR1 dev"),
		}}},
		"acme/small": {Revisions: map[string]map[string][]byte{"main": {
			"test.jsonl": []byte(`{"instance_id":"a"}` + "\n"),
		}, "v1": {
			"train.jsonl": []byte(`{"instance_id":"old"}` + "\n"),
		}, "v2": {
			"train.jsonl": []byte(`{"instance_id":"b"}` + "\n"),
			"valid.jsonl": []byte(`{"instance_id":"c"}` + "\n"),
		}}},
		"acme/gated":    {Gated: true, Revisions: map[string]map[string][]byte{"main": {"data/test-00000-of-00001.parquet": []byte("PAR1 gated")}}},
		"acme/private":  {Private: true, Revisions: map[string]map[string][]byte{"main": {"test.parquet": []byte("PAR1 private")}}},
		"acme/old-name": {MovedTo: "acme/sharded"},
		"acme/csv": {Revisions: map[string]map[string][]byte{
			"main":                 {"test.csv": []byte("a,b\n")},
			"refs/convert/parquet": {"default/test/0000.parquet": []byte("PAR1 converted")},
		}},
	}
}

func newClient(t testing.TB, s *hubtest.Server) *hub.Client {
	return &hub.Client{Config: hub.Config{Endpoint: s.Hub.URL, CacheDir: t.TempDir()}}
}

func paths(reqs []hubtest.Request) []string {
	var out []string
	for _, r := range reqs {
		host := "hub"
		if r.CDN {
			host = "cdn"
		}
		out = append(out, r.Method+" "+host+" "+r.Path)
	}
	return out
}

func TestFetchVerifiedThenCache(t *testing.T) {
	data := verifiedBytes(t)
	s := hubtest.New(map[string]*hubtest.Repo{verifiedRepo: {Revisions: map[string]map[string][]byte{"main": {
		".gitattributes":                   []byte("*.parquet filter=lfs diff=lfs merge=lfs -text\n"),
		"README.md":                        []byte("---\ndataset_info:\n---\n"),
		"data/test-00000-of-00001.parquet": data,
	}}}})
	defer s.Close()
	c := newClient(t, s)
	ref, _ := hub.ParseRef(verifiedRepo)
	res, err := c.Fetch(context.Background(), ref, hub.Options{})
	if err != nil {
		t.Fatal(err)
	}
	commit := hubtest.Commit(verifiedRepo, "main")
	if res.Split != "test" || res.Commit != commit || res.Downloaded != 1 || !slices.Equal(res.Splits, []string{"test"}) {
		t.Fatalf("result = %+v", res)
	}
	got, err := os.ReadFile(res.Files[0])
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("cached file differs from the served one (err %v)", err)
	}
	// huggingface_hub's layout: a relative link into blobs/, refs/main.
	repoDir := filepath.Join(c.CacheDir, "datasets--princeton-nlp--SWE-bench_Verified")
	if want := filepath.Join(repoDir, "snapshots", commit, "data", "test-00000-of-00001.parquet"); res.Files[0] != want {
		t.Errorf("file = %s, want %s", res.Files[0], want)
	}
	link, err := os.Readlink(res.Files[0])
	if err != nil || !strings.HasPrefix(link, "../../../blobs/") {
		t.Errorf("snapshot entry is not a relative link into blobs/: %q, %v", link, err)
	}
	if b, _ := os.ReadFile(filepath.Join(repoDir, "refs", "main")); string(b) != commit {
		t.Errorf("refs/main = %q, want %q", b, commit)
	}
	want := []string{
		"GET hub /api/datasets/princeton-nlp/SWE-bench_Verified/revision/main",
		"HEAD hub /datasets/princeton-nlp/SWE-bench_Verified/resolve/" + commit + "/data/test-00000-of-00001.parquet",
	}
	reqs := s.Requests()
	if got := paths(reqs); len(got) != 3 || !slices.Equal(got[:2], want) || !strings.HasPrefix(got[2], "GET cdn /repos/") {
		t.Fatalf("requests = %q", got)
	}

	// Second load: only the revision check, no download.
	res2, err := c.Fetch(context.Background(), ref, hub.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if res2.Downloaded != 0 || res2.Files[0] != res.Files[0] {
		t.Errorf("second load = %+v", res2)
	}
	if got := paths(s.Requests()); !slices.Equal(got, want[:1]) {
		t.Errorf("second load requests = %q, want only the revision check", got)
	}

	// Offline: no request at all, same file.
	off := *c
	off.Offline = true
	res3, err := off.Fetch(context.Background(), ref, hub.Options{Split: "test"})
	if err != nil {
		t.Fatal(err)
	}
	if res3.Files[0] != res.Files[0] || res3.Commit != commit {
		t.Errorf("offline load = %+v", res3)
	}
	if got := s.Requests(); len(got) != 0 {
		t.Errorf("offline load made requests: %q", paths(got))
	}

	// Hub unreachable: the cache answers, with a warning.
	s.Close()
	res4, err := c.Fetch(context.Background(), ref, hub.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if res4.Files[0] != res.Files[0] || !strings.Contains(res4.Warning, "could not be reached") {
		t.Errorf("unreachable hub: %+v", res4)
	}
}

func TestFetchSplitsAndRevisions(t *testing.T) {
	s := hubtest.New(smallRepos())
	defer s.Close()
	c := newClient(t, s)
	ctx := context.Background()
	cases := []struct {
		ref, split, config string
		wantSplit          string
		wantFiles          []string
	}{
		{"acme/sharded", "", "", "test", []string{"data/test-00000-of-00001.parquet"}},
		{"acme/sharded", "train", "", "train", []string{"data/train-00000-of-00002.parquet", "data/train-00001-of-00002.parquet"}},
		{"acme/sharded", "dev_10pr", "", "dev_10pr", []string{"data/dev_10pr-00000-of-00001.parquet"}},
		{"acme/small", "", "", "test", []string{"test.jsonl"}},
		{"acme/small@v1", "", "", "train", []string{"train.jsonl"}},
		{"datasets/acme/small@" + hubtest.Commit("acme/small", "v1"), "", "", "train", []string{"train.jsonl"}},
		{"acme/csv", "", "", "test", []string{"default/test/0000.parquet"}},
		{"acme/old-name", "dev_10pr", "", "dev_10pr", []string{"data/dev_10pr-00000-of-00001.parquet"}},
	}
	for _, tc := range cases {
		ref, ok := hub.ParseRef(tc.ref)
		if !ok {
			t.Fatalf("ParseRef(%q) failed", tc.ref)
		}
		res, err := c.Fetch(ctx, ref, hub.Options{Split: tc.split, Config: tc.config})
		if err != nil {
			t.Errorf("%s %s: %v", tc.ref, tc.split, err)
			continue
		}
		if res.Split != tc.wantSplit || !slices.Equal(res.RepoFiles, tc.wantFiles) || len(res.Files) != len(tc.wantFiles) {
			t.Errorf("%s %s: split %q files %q, want %q %q", tc.ref, tc.split, res.Split, res.RepoFiles, tc.wantSplit, tc.wantFiles)
		}
	}
	// A pinned commit that is cached needs the revision check only.
	s.Requests()
	ref, _ := hub.ParseRef("acme/small@v1")
	if _, err := c.Fetch(ctx, ref, hub.Options{}); err != nil {
		t.Fatal(err)
	}
	if got := paths(s.Requests()); len(got) != 1 {
		t.Errorf("cached revision fetch made %q", got)
	}
	// A cached commit needs none.
	ref, _ = hub.ParseRef("acme/small@" + hubtest.Commit("acme/small", "v1"))
	if res, err := c.Fetch(ctx, ref, hub.Options{}); err != nil || res.RepoFiles[0] != "train.jsonl" {
		t.Fatalf("cached commit: %+v, %v", res, err)
	}
	if got := paths(s.Requests()); len(got) != 0 {
		t.Errorf("cached commit fetch made %q", got)
	}
	// The parquet conversion's ref is cached under its own name, and
	// found offline.
	if _, err := os.Stat(filepath.Join(c.CacheDir, "datasets--acme--csv", "refs", "refs", "convert", "parquet")); err != nil {
		t.Errorf("conversion ref not cached: %v", err)
	}
	off := *c
	off.Offline = true
	ref, _ = hub.ParseRef("acme/csv")
	if res, err := off.Fetch(ctx, ref, hub.Options{}); err != nil || !slices.Equal(res.RepoFiles, []string{"default/test/0000.parquet"}) {
		t.Errorf("offline conversion load: %+v, %v", res, err)
	}
}

func TestFetchToken(t *testing.T) {
	s := hubtest.New(smallRepos())
	s.Token = "hf_secret"
	defer s.Close()
	c := newClient(t, s)
	c.Token = "hf_secret"
	for _, name := range []string{"acme/gated", "acme/private"} {
		ref, _ := hub.ParseRef(name)
		if _, err := c.Fetch(context.Background(), ref, hub.Options{}); err != nil {
			t.Fatalf("%s with token: %v", name, err)
		}
	}
	for _, r := range s.Requests() {
		if r.CDN && r.Auth != "" {
			t.Errorf("token sent to the CDN: %s %s", r.Method, r.Path)
		}
		if !r.CDN && r.Auth != "Bearer hf_secret" {
			t.Errorf("%s %s: Authorization %q, want the token", r.Method, r.Path, r.Auth)
		}
	}
}

func TestFetchErrors(t *testing.T) {
	s := hubtest.New(smallRepos())
	s.Token = "hf_right"
	defer s.Close()
	dead := hubtest.New(nil)
	dead.Close()
	cases := []struct {
		name, ref, split, token, endpoint string
		offline                           bool
		kind                              string
		msg                               []string
	}{
		{name: "unknown repo", ref: "acme/nope", kind: hub.ErrNotFound, msg: []string{"dataset acme/nope:", "not found", "HF_TOKEN"}},
		{name: "unknown repo with token", ref: "acme/nope", token: "hf_right", kind: hub.ErrNotFound, msg: []string{"not found", "check the name"}},
		{name: "private", ref: "acme/private", kind: hub.ErrNotFound, msg: []string{"private", "HF_TOKEN"}},
		{name: "gated without token", ref: "acme/gated", kind: hub.ErrAuth, msg: []string{"gated", "set HF_TOKEN", "/datasets/acme/gated"}},
		{name: "gated wrong token", ref: "acme/gated", token: "hf_wrong", kind: hub.ErrAuth, msg: []string{"gated", "no access"}},
		{name: "missing split", ref: "acme/sharded", split: "validation", kind: hub.ErrSplit, msg: []string{`no split "validation"`, "train, test, dev_10pr"}},
		{name: "no test split", ref: "acme/small@v2", kind: hub.ErrSplit, msg: []string{"--split", "train, validation"}},
		{name: "unknown revision", ref: "acme/small@v9", kind: hub.ErrNotFound, msg: []string{"revision v9 not found"}},
		{name: "offline empty cache", ref: "acme/small", offline: true, kind: hub.ErrOffline, msg: []string{"HF_HUB_OFFLINE", "load it once online"}},
		{name: "unreachable", ref: "acme/small", endpoint: dead.Hub.URL, kind: hub.ErrNetwork, msg: []string{"cannot reach", "HF_HUB_OFFLINE"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := newClient(t, s)
			c.Token, c.Offline = tc.token, tc.offline
			if tc.endpoint != "" {
				c.Endpoint = tc.endpoint
			}
			ref, _ := hub.ParseRef(tc.ref)
			_, err := c.Fetch(context.Background(), ref, hub.Options{Split: tc.split})
			var he *hub.Error
			if !errors.As(err, &he) || he.Kind != tc.kind {
				t.Fatalf("err = %v, want kind %s", err, tc.kind)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("error is not one line: %q", err)
			}
			for _, m := range tc.msg {
				if !strings.Contains(err.Error(), m) {
					t.Errorf("error %q lacks %q", err, m)
				}
			}
		})
	}
}

func TestFetchResumesBrokenDownload(t *testing.T) {
	body := bytes.Repeat([]byte("0123456789"), 10000)
	s := hubtest.New(map[string]*hubtest.Repo{"acme/big": {Revisions: map[string]map[string][]byte{"main": {
		"data/test-00000-of-00001.parquet": body,
	}}}})
	defer s.Close()
	c := newClient(t, s)
	ref, _ := hub.ParseRef("acme/big")
	// Every attempt of this run breaks: the error says to run again and the
	// snapshot holds no partial file.
	s.BreakAfter, s.Breaks = 30000, 3
	_, err := c.Fetch(context.Background(), ref, hub.Options{})
	var he *hub.Error
	if !errors.As(err, &he) || he.Kind != hub.ErrNetwork || !strings.Contains(err.Error(), "run again") {
		t.Fatalf("err = %v, want a network error saying to run again", err)
	}
	snap := filepath.Join(c.CacheDir, "datasets--acme--big", "snapshots")
	if _, err := os.Stat(snap); !os.IsNotExist(err) {
		t.Errorf("a snapshot exists after a failed download: %v", err)
	}
	parts, _ := filepath.Glob(filepath.Join(c.CacheDir, "datasets--acme--big", "blobs", "*.incomplete"))
	if len(parts) != 1 {
		t.Fatalf("incomplete blobs = %q, want one", parts)
	}
	s.Requests()
	// The next run resumes where the last attempt stopped.
	res, err := c.Fetch(context.Background(), ref, hub.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(res.Files[0]); !bytes.Equal(got, body) {
		t.Fatal("resumed file differs from the served one")
	}
	var ranged bool
	for _, r := range s.Requests() {
		if r.CDN && r.Range != "" {
			ranged = true
		}
	}
	if !ranged {
		t.Error("the second run did not resume with a Range request")
	}
}

func TestFetchRetriesWithinOneRun(t *testing.T) {
	body := bytes.Repeat([]byte("abcdefghij"), 5000)
	s := hubtest.New(map[string]*hubtest.Repo{"acme/big": {Revisions: map[string]map[string][]byte{"main": {"test.parquet": body}}}})
	defer s.Close()
	s.BreakAfter, s.Breaks = 1000, 1
	c := newClient(t, s)
	ref, _ := hub.ParseRef("acme/big")
	res, err := c.Fetch(context.Background(), ref, hub.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(res.Files[0]); !bytes.Equal(got, body) {
		t.Fatal("file differs from the served one")
	}
}

func TestFetchRejectsCorruptDownload(t *testing.T) {
	s := hubtest.New(map[string]*hubtest.Repo{"acme/big": {Revisions: map[string]map[string][]byte{"main": {"test.parquet": []byte("PAR1 some bytes PAR1")}}}})
	defer s.Close()
	s.Corrupt = true
	c := newClient(t, s)
	ref, _ := hub.ParseRef("acme/big")
	_, err := c.Fetch(context.Background(), ref, hub.Options{})
	var he *hub.Error
	if !errors.As(err, &he) || he.Kind != hub.ErrCorrupt || !strings.Contains(err.Error(), "checksum") {
		t.Fatalf("err = %v, want a checksum error", err)
	}
	left, _ := filepath.Glob(filepath.Join(c.CacheDir, "datasets--acme--big", "blobs", "*"))
	if len(left) != 0 {
		t.Errorf("cache keeps %q after a bad download", left)
	}
}

// BenchmarkFetchVerified measures getting SWE-bench Verified's test split
// (2.1 MB of parquet) through the fake Hub: cold downloads into an empty
// cache each time; cached finds it in the cache after the revision check.
func BenchmarkFetchVerified(b *testing.B) {
	data := verifiedBytes(b)
	s := hubtest.New(map[string]*hubtest.Repo{verifiedRepo: {Revisions: map[string]map[string][]byte{"main": {
		"data/test-00000-of-00001.parquet": data,
	}}}})
	defer s.Close()
	ref, _ := hub.ParseRef(verifiedRepo)
	ctx := context.Background()
	b.Run("cold", func(b *testing.B) {
		root := b.TempDir()
		for i := 0; b.Loop(); i++ {
			c := &hub.Client{Config: hub.Config{Endpoint: s.Hub.URL, CacheDir: filepath.Join(root, strconv.Itoa(i))}}
			if _, err := c.Fetch(ctx, ref, hub.Options{}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("cached", func(b *testing.B) {
		c := newClient(b, s)
		if _, err := c.Fetch(ctx, ref, hub.Options{}); err != nil {
			b.Fatal(err)
		}
		for b.Loop() {
			if _, err := c.Fetch(ctx, ref, hub.Options{}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("offline", func(b *testing.B) {
		c := newClient(b, s)
		if _, err := c.Fetch(ctx, ref, hub.Options{}); err != nil {
			b.Fatal(err)
		}
		c.Offline = true
		for b.Loop() {
			if _, err := c.Fetch(ctx, ref, hub.Options{}); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func TestFetchProgress(t *testing.T) {
	s := hubtest.New(smallRepos())
	defer s.Close()
	c := newClient(t, s)
	var buf bytes.Buffer
	c.Progress = &buf
	ref, _ := hub.ParseRef("acme/sharded")
	if _, err := c.Fetch(context.Background(), ref, hub.Options{Split: "train"}); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	for _, want := range []string{"downloading acme/sharded data/train-00000-of-00002.parquet", "downloading acme/sharded data/train-00001-of-00002.parquet"} {
		if !strings.Contains(out, want) {
			t.Errorf("progress %q lacks %q", out, want)
		}
	}
	if n := strings.Count(out, "\n"); n != 2 {
		t.Errorf("progress ends %d lines, want one per file", n)
	}
	// Cached: nothing to show.
	buf.Reset()
	if _, err := c.Fetch(context.Background(), ref, hub.Options{Split: "train"}); err != nil {
		t.Fatal(err)
	}
	if buf.Len() != 0 {
		t.Errorf("cached load drew progress: %q", buf.String())
	}
}

// TestFetchReusesPythonCache lays out a cache by hand the way
// huggingface_hub documents it (blobs/<etag>, snapshots/<commit>/<file> as a
// relative link, refs/main holding the commit) and loads from it.
func TestFetchReusesPythonCache(t *testing.T) {
	content := []byte("PAR1 cached by python PAR1")
	s := hubtest.New(map[string]*hubtest.Repo{"acme/py": {Revisions: map[string]map[string][]byte{"main": {
		"data/test-00000-of-00001.parquet": content,
	}}}})
	defer s.Close()
	c := newClient(t, s)
	commit := hubtest.Commit("acme/py", "main")
	repo := filepath.Join(c.CacheDir, "datasets--acme--py")
	etag := "0f0e0d0c0b0a09080706050403020100f0e0d0c0b0a090807060504030201000"
	for _, d := range []string{"blobs", "refs", "snapshots/" + commit + "/data"} {
		if err := os.MkdirAll(filepath.Join(repo, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.WriteFile(filepath.Join(repo, "blobs", etag), content, 0o644))
	must(os.WriteFile(filepath.Join(repo, "refs", "main"), []byte(commit), 0o644))
	must(os.Symlink("../../../blobs/"+etag, filepath.Join(repo, "snapshots", commit, "data", "test-00000-of-00001.parquet")))

	ref, _ := hub.ParseRef("acme/py")
	off := *c
	off.Offline = true
	for _, cl := range []*hub.Client{&off, c} {
		res, err := cl.Fetch(context.Background(), ref, hub.Options{})
		if err != nil {
			t.Fatalf("offline %v: %v", cl.Offline, err)
		}
		if got, _ := os.ReadFile(res.Files[0]); !bytes.Equal(got, content) || res.Downloaded != 0 {
			t.Errorf("offline %v: downloaded %d, content %q", cl.Offline, res.Downloaded, got)
		}
	}
	if got := paths(s.Requests()); len(got) != 1 || !strings.Contains(got[0], "/revision/main") {
		t.Errorf("requests = %q, want only the online revision check", got)
	}
}
