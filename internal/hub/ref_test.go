package hub

import (
	"os"
	"path/filepath"
	"testing"
)

func TestParseRef(t *testing.T) {
	cases := []struct {
		in   string
		want Ref
		ok   bool
	}{
		{"princeton-nlp/SWE-bench_Verified", Ref{Repo: "princeton-nlp/SWE-bench_Verified"}, true},
		{"R2E-Gym/R2E-Gym-Lite@v1.0", Ref{Repo: "R2E-Gym/R2E-Gym-Lite", Revision: "v1.0"}, true},
		{"hf://datasets/SWE-bench/SWE-bench_Lite", Ref{Repo: "SWE-bench/SWE-bench_Lite"}, true},
		{"datasets/a/b", Ref{Repo: "a/b"}, true},
		{"a/b@", Ref{}, false},
		{"data.parquet", Ref{}, false},
		{"./a/b", Ref{}, false},
		{"/abs/path", Ref{}, false},
		{"a/b/c.parquet", Ref{}, false},
		{"data/test.jsonl", Ref{}, false},
		{"examples/tasks.JSON", Ref{}, false},
		{"../x", Ref{}, false},
	}
	for _, tc := range cases {
		got, ok := ParseRef(tc.in)
		if ok != tc.ok || got != tc.want {
			t.Errorf("ParseRef(%q) = %+v, %v; want %+v, %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
}

func TestConfigFromEnv(t *testing.T) {
	home := t.TempDir()
	if err := os.WriteFile(filepath.Join(home, "token"), []byte("hf_file\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		env  map[string]string
		want Config
	}{
		{"HF_HOME with a token file", map[string]string{"HF_HOME": home},
			Config{Endpoint: DefaultEndpoint, Token: "hf_file", CacheDir: filepath.Join(home, "hub")}},
		{"HF_TOKEN wins over the file", map[string]string{"HF_HOME": home, "HF_TOKEN": "hf_env"},
			Config{Endpoint: DefaultEndpoint, Token: "hf_env", CacheDir: filepath.Join(home, "hub")}},
		{"HF_HUB_CACHE, HF_ENDPOINT, offline", map[string]string{"HF_HOME": home, "HF_HUB_CACHE": "/c", "HF_ENDPOINT": "http://mirror/", "HF_HUB_OFFLINE": "1"},
			Config{Endpoint: "http://mirror", Token: "hf_file", CacheDir: "/c", Offline: true}},
		{"XDG_CACHE_HOME", map[string]string{"XDG_CACHE_HOME": "/x", "HF_TOKEN_PATH": "/none", "HF_DATASETS_OFFLINE": "yes"},
			Config{Endpoint: DefaultEndpoint, CacheDir: "/x/huggingface/hub", Offline: true}},
		{"offline off", map[string]string{"HF_HOME": home, "HF_HUB_OFFLINE": "0"},
			Config{Endpoint: DefaultEndpoint, Token: "hf_file", CacheDir: filepath.Join(home, "hub")}},
	}
	for _, tc := range cases {
		got := configFrom(func(k string) string { return tc.env[k] })
		if got != tc.want {
			t.Errorf("%s: %+v, want %+v", tc.name, got, tc.want)
		}
	}
}
