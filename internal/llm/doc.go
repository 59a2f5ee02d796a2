// Package llm is how swerve talks to models: one Client interface with
// implementations for OpenAI-compatible chat completions (OpenAI, vLLM,
// SGLang, OpenRouter, anything behind LLM_BASE_URL), the Anthropic Messages
// API, and two offline models for tests and demos: replay/<file> (recorded
// replies) and scripted policies such as oracle/gold.
//
// Messages use the OpenAI chat shape (role, content, tool_calls,
// tool_call_id), which is also the shape trajectories are written in, so a
// history can be handed to a trainer unchanged. The Anthropic client
// translates to and from that shape at the wire.
//
// # Model names
//
// Names follow LiteLLM's provider/model convention. The part before the first
// slash picks the provider; everything after it is sent as the model:
//
//	openai/<model>             OpenAI (or any server at OPENAI_BASE_URL)
//	openrouter/<vendor>/<m>    OpenRouter; "<vendor>/<m>" is the model
//	anthropic/<model>          Anthropic Messages API
//	hosted_vllm/<model>        an OpenAI-compatible server at LLM_BASE_URL
//	replay/<file>              recorded replies read from <file> (offline)
//	oracle/<policy>            a scripted policy built by the agent (offline)
//	<anything else>            the whole name is the model, served by the
//	                           OpenAI-compatible server at LLM_BASE_URL
//
// A name such as "Qwen/Qwen3-8B" has no known prefix, so it is a bare model
// name and needs LLM_BASE_URL.
//
// # Environment
//
// Base URLs, first one set wins:
//
//	openai/        Options.BaseURL, LLM_BASE_URL, OPENAI_BASE_URL, https://api.openai.com/v1
//	openrouter/    Options.BaseURL, LLM_BASE_URL, OPENROUTER_API_BASE_URL, https://openrouter.ai/api/v1
//	anthropic/     Options.BaseURL, ANTHROPIC_BASE_URL, https://api.anthropic.com
//	hosted_vllm/   Options.BaseURL, LLM_BASE_URL, HOSTED_VLLM_API_BASE (required)
//	bare names     Options.BaseURL, LLM_BASE_URL (required)
//
// Keys, first one set wins:
//
//	openai/        Options.APIKey, OPENAI_API_KEY; required when the base URL
//	               is api.openai.com, otherwise "EMPTY" is sent
//	openrouter/    Options.APIKey, OPENROUTER_API_KEY (required)
//	anthropic/     Options.APIKey, ANTHROPIC_API_KEY (required)
//	hosted_vllm/   Options.APIKey, HOSTED_VLLM_API_KEY, OPENAI_API_KEY, "EMPTY"
//	bare names     Options.APIKey, OPENAI_API_KEY, "EMPTY"
//
// A required key that is missing makes New (and Check) fail with an error
// wrapping ErrNoKey that names the variable to set, so a run stops before any
// sandbox starts.
//
// The clients speak the two HTTP APIs directly (JSON over net/http, no
// provider SDK) and send only the resolved base URL and key: OPENAI_BASE_URL,
// OPENAI_ORG_ID, OPENAI_PROJECT_ID, OPENAI_CUSTOM_HEADERS, ANTHROPIC_AUTH_TOKEN
// and friends have no effect on a call except through the table above, so a
// stray OPENAI_BASE_URL cannot send an OpenRouter or vLLM request elsewhere.
//
// # Retries
//
// Each Complete call makes up to
// 1+Options.MaxRetries attempts, each bounded by Options.Timeout. Rate limits
// (429), server errors (5xx, including Anthropic's 529 "overloaded"), 408,
// 409, connection errors and attempt timeouts are retried with exponential
// backoff and full jitter; a Retry-After or retry-after-ms header from the
// server replaces the computed wait. Other 4xx statuses (400, 401, 403, 404,
// ...) are final at once. A request that does not fit the model's context
// gives an error wrapping ErrContextWindow; provider HTTP errors are
// *APIError values. The library prints nothing: Options.OnRetry is told
// about each retry (Retry.String is the line a command prints).
//
// Probe asks an endpoint once, before a run, whether it answers, takes the
// key and serves the model.
//
// # Token counts
//
// Usage comes from the provider when it reports it. Otherwise, and for the
// offline models, input and output tokens are counted offline with the
// o200k_base vocabulary and Usage.Estimated is set. EstimateTokens gives the
// same count for a history, for context-limit checks.
package llm
