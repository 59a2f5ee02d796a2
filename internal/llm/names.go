package llm

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"
)

// Providers, as the part of a model name before the first slash.
const (
	ProviderOpenAI     = "openai"
	ProviderOpenRouter = "openrouter"
	ProviderAnthropic  = "anthropic"
	ProviderHostedVLLM = "hosted_vllm"
	ProviderReplay     = "replay"
	ProviderOracle     = "oracle"
	// ProviderCompatible is what ParseName reports for a name without a
	// known prefix: the whole name is the model, served by the
	// OpenAI-compatible server at LLM_BASE_URL.
	ProviderCompatible = "openai_compatible"
)

// Default endpoints.
const (
	DefaultOpenAIBaseURL     = "https://api.openai.com/v1"
	DefaultOpenRouterBaseURL = "https://openrouter.ai/api/v1"
	DefaultAnthropicBaseURL  = "https://api.anthropic.com"
)

// Defaults for Options.
const (
	DefaultTimeout    = 10 * time.Minute
	DefaultMaxRetries = 6
	DefaultBaseDelay  = time.Second
	DefaultMaxDelay   = time.Minute
	// DefaultAnthropicMaxTokens is the reply cap sent to Anthropic when the
	// request leaves MaxTokens at zero (the API requires one).
	DefaultAnthropicMaxTokens = 8192
)

// Options tune New. The zero value is ready to use.
type Options struct {
	// BaseURL and APIKey, when set, take precedence over the environment.
	BaseURL string
	APIKey  string
	// Timeout bounds each attempt (not the whole call with its retries).
	// Zero means DefaultTimeout.
	Timeout time.Duration
	// MaxRetries is how many failed attempts are retried. Zero means
	// DefaultMaxRetries; a negative value turns retries off.
	MaxRetries int
	// BaseDelay and MaxDelay shape the exponential backoff: the wait before
	// retry n is uniform in [0, min(MaxDelay, BaseDelay*2^n)). Zero means
	// DefaultBaseDelay / DefaultMaxDelay.
	BaseDelay time.Duration
	MaxDelay  time.Duration
	// Getenv reads the environment; nil means os.Getenv. Tests pass a map.
	Getenv func(string) string
	// HTTPClient carries the requests; nil means a plain client without a
	// timeout of its own (Timeout applies per attempt).
	HTTPClient *http.Client
	// Headers are added to every request (e.g. OpenRouter's HTTP-Referer).
	Headers map[string]string
	// ExtraBody fields are merged into every OpenAI-compatible request body
	// (vendor fields such as top_k or chat_template_kwargs).
	ExtraBody map[string]any
	// TokenIDs asks an OpenAI-compatible server for the token ids and
	// log-probs of each reply (logprobs, top_logprobs 0,
	// return_tokens_as_token_ids, return_token_ids), keeps them on the
	// assistant message and sends them back with it. For RL policy servers
	// (vLLM, NeMo RL, NeMo Gym); off by default, real APIs reject the fields.
	// Only the OpenAI-compatible client reads it; the others ignore it.
	TokenIDs bool
	// Scripted replies make New("oracle/...") return NewScripted(name,
	// Scripted). Other names ignore it.
	Scripted []Message

	// OnRetry, when set, is told about every retry before its wait (from
	// the goroutine of the call): the library prints nothing itself.
	OnRetry func(Retry)

	// sleep waits between attempts; tests replace it to record delays.
	sleep func(ctx context.Context, d time.Duration) error
}

func (o Options) getenv(key string) string {
	get := o.Getenv
	if get == nil {
		get = os.Getenv
	}
	return strings.TrimSpace(get(key))
}

func (o Options) policy() policy {
	p := policy{
		maxRetries: o.MaxRetries,
		timeout:    o.Timeout,
		baseDelay:  o.BaseDelay,
		maxDelay:   o.MaxDelay,
		sleep:      o.sleep,
		onRetry:    o.OnRetry,
	}
	switch {
	case p.maxRetries == 0:
		p.maxRetries = DefaultMaxRetries
	case p.maxRetries < 0:
		p.maxRetries = 0
	}
	if p.timeout <= 0 {
		p.timeout = DefaultTimeout
	}
	if p.baseDelay <= 0 {
		p.baseDelay = DefaultBaseDelay
	}
	if p.maxDelay <= 0 {
		p.maxDelay = DefaultMaxDelay
	}
	if p.maxDelay < p.baseDelay {
		p.maxDelay = p.baseDelay
	}
	if p.sleep == nil {
		p.sleep = sleepCtx
	}
	return p
}

var defaultHTTPClient = &http.Client{}

func (o Options) httpClient() *http.Client {
	if o.HTTPClient != nil {
		return o.HTTPClient
	}
	return defaultHTTPClient
}

// ParseName splits a LiteLLM-style model name into its provider and the
// model as the provider knows it. Names without a known prefix are
// ProviderCompatible with the whole name as the model.
func ParseName(name string) (provider, model string, err error) {
	name = strings.TrimSpace(name)
	if name == "" {
		return "", "", errors.New("llm: empty model name")
	}
	prefix, rest, ok := strings.Cut(name, "/")
	if !ok {
		return ProviderCompatible, name, nil
	}
	switch prefix {
	case ProviderOpenAI, ProviderOpenRouter, ProviderAnthropic, ProviderHostedVLLM, ProviderReplay, ProviderOracle:
		if strings.TrimSpace(rest) == "" {
			what := "model"
			if prefix == ProviderReplay {
				what = "file"
			}
			return "", "", fmt.Errorf("llm: model name %q has no %s after %q", name, what, prefix+"/")
		}
		return prefix, rest, nil
	}
	return ProviderCompatible, name, nil
}

// Endpoint is where a model name resolves to. The key itself is kept out of
// it so an Endpoint can be logged.
type Endpoint struct {
	// Name is the model name as given.
	Name string
	// Provider is one of the Provider constants.
	Provider string
	// Model is the model as sent to the API (for replay, the file).
	Model string
	// BaseURL is the API root; empty for offline models.
	BaseURL string
	// KeyFrom says where the key came from: an environment variable name,
	// "options", or "" when no key is needed or a placeholder is sent.
	KeyFrom string

	apiKey string
}

// Resolve works out where name's requests go and which key they carry,
// without contacting anything. A missing required key gives an error
// wrapping ErrNoKey that names the variable to set.
func Resolve(name string, opts Options) (Endpoint, error) {
	provider, model, err := ParseName(name)
	if err != nil {
		return Endpoint{}, err
	}
	ep := Endpoint{Name: strings.TrimSpace(name), Provider: provider, Model: model}

	// first returns the first non-empty source, with where it came from.
	type source struct{ from, value string }
	opt := func(v string) source { return source{"options", strings.TrimSpace(v)} }
	env := func(k string) source { return source{k, opts.getenv(k)} }
	lit := func(v string) source { return source{"", v} }
	first := func(srcs ...source) source {
		for _, s := range srcs {
			if s.value != "" {
				return s
			}
		}
		return source{}
	}
	var base, key source
	needKey := "" // env var to name when a required key is missing

	switch provider {
	case ProviderReplay, ProviderOracle:
		return ep, nil
	case ProviderOpenAI:
		base = first(opt(opts.BaseURL), env("LLM_BASE_URL"), env("OPENAI_BASE_URL"), lit(DefaultOpenAIBaseURL))
		key = first(opt(opts.APIKey), env("OPENAI_API_KEY"))
		if key.value == "" {
			if isOfficialOpenAI(base.value) {
				needKey = "OPENAI_API_KEY"
			} else {
				key = lit("EMPTY")
			}
		}
	case ProviderOpenRouter:
		base = first(opt(opts.BaseURL), env("LLM_BASE_URL"), env("OPENROUTER_API_BASE_URL"), lit(DefaultOpenRouterBaseURL))
		key = first(opt(opts.APIKey), env("OPENROUTER_API_KEY"))
		needKey = "OPENROUTER_API_KEY"
	case ProviderAnthropic:
		base = first(opt(opts.BaseURL), env("ANTHROPIC_BASE_URL"), lit(DefaultAnthropicBaseURL))
		key = first(opt(opts.APIKey), env("ANTHROPIC_API_KEY"))
		needKey = "ANTHROPIC_API_KEY"
	case ProviderHostedVLLM:
		base = first(opt(opts.BaseURL), env("LLM_BASE_URL"), env("HOSTED_VLLM_API_BASE"))
		if base.value == "" {
			return Endpoint{}, fmt.Errorf("llm: model %q needs the server's URL: set LLM_BASE_URL (e.g. http://localhost:8000/v1)", name)
		}
		key = first(opt(opts.APIKey), env("HOSTED_VLLM_API_KEY"), env("OPENAI_API_KEY"), lit("EMPTY"))
	default: // ProviderCompatible
		base = first(opt(opts.BaseURL), env("LLM_BASE_URL"))
		if base.value == "" {
			return Endpoint{}, fmt.Errorf("llm: model %q has no known provider prefix (openai/, openrouter/, anthropic/, hosted_vllm/, replay/); "+
				"set LLM_BASE_URL to serve it from an OpenAI-compatible server", name)
		}
		key = first(opt(opts.APIKey), env("OPENAI_API_KEY"), lit("EMPTY"))
	}
	if key.value == "" {
		return Endpoint{}, fmt.Errorf("llm: model %q needs an API key: set %s: %w", name, needKey, ErrNoKey)
	}
	if err := checkBaseURL(base.value); err != nil {
		from := base.from
		if from == "" {
			from = "base URL"
		}
		return Endpoint{}, fmt.Errorf("llm: model %q: %s: %w", name, from, err)
	}
	ep.BaseURL = base.value
	ep.KeyFrom = key.from
	ep.apiKey = key.value
	return ep, nil
}

// Check validates a model name and the keys it needs without building a
// client or contacting anything. For replay/<file> it checks that the file
// exists. getenv may be nil (os.Getenv).
func Check(name string, getenv func(string) string) error {
	ep, err := Resolve(name, Options{Getenv: getenv})
	if err != nil {
		return err
	}
	if ep.Provider == ProviderReplay {
		if _, err := os.Stat(ep.Model); err != nil {
			return fmt.Errorf("llm: replay model %q: %w", name, err)
		}
	}
	return nil
}

// New builds the client for a model name. It fails, without contacting
// anything, on a malformed name or a missing key (wrapping ErrNoKey).
func New(name string, opts Options) (Client, error) {
	ep, err := Resolve(name, opts)
	if err != nil {
		return nil, err
	}
	switch ep.Provider {
	case ProviderReplay:
		return NewReplay(ep.Name, ep.Model)
	case ProviderOracle:
		if opts.Scripted == nil {
			return nil, fmt.Errorf("llm: %q is a scripted policy: the agent builds it (pass Options.Scripted)", name)
		}
		return NewScripted(ep.Name, opts.Scripted), nil
	case ProviderAnthropic:
		return newAnthropic(ep, opts), nil
	default:
		return newOpenAI(ep, opts), nil
	}
}

func isOfficialOpenAI(base string) bool {
	u, err := url.Parse(base)
	return err == nil && strings.EqualFold(u.Hostname(), "api.openai.com")
}

func checkBaseURL(base string) error {
	u, err := url.Parse(base)
	if err != nil {
		return fmt.Errorf("bad URL %q: %w", base, err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("bad URL %q: want http(s)://host[:port]/path", base)
	}
	return nil
}
