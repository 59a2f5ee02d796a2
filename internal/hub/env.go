// Package hub downloads dataset files from the Hugging Face Hub the way
// the huggingface_hub and datasets Python libraries do: the repository's
// revision API lists its files, the files of one split are picked by the
// same naming rules, and each file comes through the resolve route into
// the same cache layout (HF_HOME/hub/datasets--owner--name/...), so a cache
// filled by Python is reused and the other way round.
package hub

import (
	"os"
	"path/filepath"
	"strings"
)

// DefaultEndpoint is the public Hub.
const DefaultEndpoint = "https://huggingface.co"

// Config says where the Hub is and where its files are cached.
type Config struct {
	// Endpoint is the Hub's base URL (HF_ENDPOINT).
	Endpoint string
	// Token is sent as a bearer token (HF_TOKEN, else the token file).
	Token string
	// CacheDir is the hub cache (HF_HUB_CACHE, else HF_HOME/hub).
	CacheDir string
	// Offline forbids every request (HF_HUB_OFFLINE or HF_DATASETS_OFFLINE).
	Offline bool
}

// ConfigFromEnv reads the environment variables huggingface_hub reads,
// with its defaults.
func ConfigFromEnv() Config {
	return configFrom(os.Getenv)
}

func configFrom(getenv func(string) string) Config {
	c := Config{Endpoint: strings.TrimRight(getenv("HF_ENDPOINT"), "/")}
	if c.Endpoint == "" {
		c.Endpoint = DefaultEndpoint
	}
	home := expand(getenv("HF_HOME"), getenv)
	if home == "" {
		cache := getenv("XDG_CACHE_HOME")
		if cache == "" {
			if h, err := os.UserHomeDir(); err == nil {
				cache = filepath.Join(h, ".cache")
			}
		}
		home = filepath.Join(cache, "huggingface")
	}
	c.CacheDir = expand(firstSet(getenv, "HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE"), getenv)
	if c.CacheDir == "" {
		c.CacheDir = filepath.Join(home, "hub")
	}
	c.Token = strings.TrimSpace(firstSet(getenv, "HF_TOKEN", "HUGGING_FACE_HUB_TOKEN"))
	if c.Token == "" {
		path := expand(getenv("HF_TOKEN_PATH"), getenv)
		if path == "" {
			path = filepath.Join(home, "token")
		}
		if b, err := os.ReadFile(path); err == nil {
			c.Token = strings.TrimSpace(string(b))
		}
	}
	c.Offline = isTrue(getenv("HF_HUB_OFFLINE")) || isTrue(getenv("HF_DATASETS_OFFLINE")) || isTrue(getenv("TRANSFORMERS_OFFLINE"))
	return c
}

func firstSet(getenv func(string) string, names ...string) string {
	for _, n := range names {
		if v := getenv(n); v != "" {
			return v
		}
	}
	return ""
}

// expand resolves ~ and $VARS as Python's expanduser and expandvars do.
func expand(p string, getenv func(string) string) string {
	if p == "" {
		return ""
	}
	if p == "~" || strings.HasPrefix(p, "~/") {
		if h, err := os.UserHomeDir(); err == nil {
			p = h + p[1:]
		}
	}
	return os.Expand(p, getenv)
}

// isTrue follows huggingface_hub's reading of boolean variables.
func isTrue(v string) bool {
	switch strings.ToUpper(strings.TrimSpace(v)) {
	case "1", "ON", "YES", "TRUE":
		return true
	}
	return false
}
