package llm

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
)

// readTokenIDs fills msg's token fields from a chat.completion, taking them
// from the first of these sources that has them, as NeMo Gym's vLLM model
// server does:
//
//  1. prompt_token_ids, generation_token_ids and generation_log_probs on
//     the message (NeMo RL's vLLM server);
//  2. vLLM's top-level prompt_token_ids and choices[0].token_ids
//     (return_token_ids), with the log-probs of logprobs.content;
//  3. logprobs.content alone, whose tokens read "token_id:N"
//     (return_tokens_as_token_ids), with the prompt's ids from the server's
//     /tokenize (older vLLM).
//
// Sources present together must agree. A reply without token ids, with a
// source only partly there, or with a log-prob that is not a number is an
// error that is not retried: asking again would not change it, and a
// rollout without ids cannot be trained on.
func (c *openAIClient) readTokenIDs(ctx context.Context, msg *Message, cc *oaCompletion, reqBody []byte) error {
	err := c.tokenIDsFrom(ctx, msg, cc, reqBody)
	var tok errTokenize
	if err != nil && !errors.As(err, &tok) {
		err = permanent{fmt.Errorf("token ids: %w", err)}
	}
	return err
}

// errTokenize marks a /tokenize failure, which is retried like any call.
type errTokenize struct{ err error }

func (e errTokenize) Error() string { return "token ids: /tokenize: " + e.err.Error() }
func (e errTokenize) Unwrap() error { return e.err }

func (c *openAIClient) tokenIDsFrom(ctx context.Context, msg *Message, cc *oaCompletion, reqBody []byte) error {
	ch := &cc.Choices[0]
	m := &ch.Message

	// Source 2's ids, checked against the others when present.
	respPrompt, respGen := cc.PromptTokenIDs, ch.TokenIDs
	if (respPrompt == nil) != (respGen == nil) {
		if respPrompt == nil {
			return errors.New("reply has choices[0].token_ids but no prompt_token_ids")
		}
		return errors.New("reply has prompt_token_ids but no choices[0].token_ids")
	}

	// Source 1.
	if m.PromptTokenIDs != nil || m.GenerationTokenIDs != nil || m.GenerationLogProbs != nil {
		switch {
		case m.PromptTokenIDs == nil:
			return errors.New("message has generation ids but no prompt_token_ids")
		case m.GenerationTokenIDs == nil:
			return errors.New("message has no generation_token_ids")
		case m.GenerationLogProbs == nil:
			return errors.New("message has no generation_log_probs")
		}
		logProbs, err := logProbs(len(m.GenerationLogProbs), func(i int) json.RawMessage { return m.GenerationLogProbs[i] }, "generation_log_probs[%d]")
		if err != nil {
			return err
		}
		if len(logProbs) != len(m.GenerationTokenIDs) {
			return fmt.Errorf("%d log-probs for %d generation ids", len(logProbs), len(m.GenerationTokenIDs))
		}
		if respPrompt != nil && (!slices.Equal(respPrompt, m.PromptTokenIDs) || !slices.Equal(respGen, m.GenerationTokenIDs)) {
			return errors.New("the message's token ids disagree with the reply's prompt_token_ids / token_ids")
		}
		msg.PromptTokenIDs, msg.GenerationTokenIDs, msg.GenerationLogProbs = m.PromptTokenIDs, m.GenerationTokenIDs, logProbs
		return nil
	}

	// Sources 2 and 3 need logprobs.content.
	if ch.Logprobs == nil || ch.Logprobs.Content == nil {
		return errors.New("reply has no token ids and no logprobs (is this a vLLM server? it needs logprobs, top_logprobs 0, return_tokens_as_token_ids)")
	}
	content := ch.Logprobs.Content
	gen := make([]int, len(content))
	for i, e := range content {
		id, ok := strings.CutPrefix(e.Token, "token_id:")
		n, err := strconv.Atoi(id)
		if !ok || err != nil {
			return fmt.Errorf("logprobs.content[%d].token %q is not token_id:N (was return_tokens_as_token_ids honoured?)", i, e.Token)
		}
		gen[i] = n
	}
	logProbs, err := logProbs(len(content), func(i int) json.RawMessage { return content[i].Logprob }, "logprobs.content[%d].logprob")
	if err != nil {
		return err
	}
	prompt := respPrompt
	if respPrompt != nil {
		if !slices.Equal(respGen, gen) {
			return errors.New("choices[0].token_ids disagree with the ids of logprobs.content")
		}
	} else {
		prompt, err = c.tokenize(ctx, reqBody)
		if err != nil {
			return errTokenize{err}
		}
	}
	msg.PromptTokenIDs, msg.GenerationTokenIDs, msg.GenerationLogProbs = prompt, gen, logProbs
	return nil
}

// logProbs reads n log-probs, each a number: null, "NaN" and the like (how
// Python servers write a NaN) are errors. field is a format naming log-prob
// i.
func logProbs(n int, at func(int) json.RawMessage, field string) ([]float64, error) {
	out := make([]float64, n)
	for i := range n {
		raw := bytes.TrimSpace(at(i))
		var f float64
		if err := json.Unmarshal(raw, &f); err != nil || len(raw) == 0 || string(raw) == "null" {
			if len(raw) == 0 {
				raw = []byte("(missing)")
			}
			return nil, fmt.Errorf(field+": log-prob %s is not a number", i, raw)
		}
		if math.IsNaN(f) {
			return nil, fmt.Errorf(field+": log-prob is NaN", i)
		}
		out[i] = f
	}
	return out, nil
}

// tokenize asks vLLM's /tokenize (beside /v1) for the ids of the request's
// prompt, sending the fields that shape it, as NeMo Gym does.
func (c *openAIClient) tokenize(ctx context.Context, reqBody []byte) ([]int, error) {
	var req map[string]json.RawMessage
	if err := json.Unmarshal(reqBody, &req); err != nil {
		return nil, err
	}
	body := map[string]json.RawMessage{}
	for _, k := range []string{"model", "messages", "tools", "chat_template_kwargs", "mm_processor_kwargs", "required_prefix_token_ids"} {
		if v, ok := req[k]; ok {
			body[k] = v
		}
	}
	b, err := json.Marshal(body)
	if err != nil {
		return nil, err
	}
	p := c.post
	p.url = strings.TrimSuffix(strings.TrimRight(c.ep.BaseURL, "/"), "/v1") + "/tokenize"
	var ans struct {
		Tokens []int `json:"tokens"`
	}
	if err := p.post(ctx, b, &ans); err != nil {
		return nil, err
	}
	if ans.Tokens == nil {
		return nil, errors.New("answer has no tokens")
	}
	return ans.Tokens, nil
}

// CheckTokenIDs checks the token ids of a conversation the way NeMo RL
// does before training on it: assistant messages without generation ids
// are skipped; every other one must have as many log-probs as generation
// ids, none NaN, and prompt ids that start with all the tokens seen so far
// (the previous prompt and its generation); and at least one message must
// carry ids.
func CheckTokenIDs(msgs []Message) error {
	var seen []int
	found := false
	for i, m := range msgs {
		if m.Role != RoleAssistant || !m.HasTokenIDs() {
			continue
		}
		found = true
		if len(m.GenerationLogProbs) != len(m.GenerationTokenIDs) {
			return fmt.Errorf("message %d: %d log-probs for %d generation ids", i, len(m.GenerationLogProbs), len(m.GenerationTokenIDs))
		}
		for j, lp := range m.GenerationLogProbs {
			if math.IsNaN(lp) {
				return fmt.Errorf("message %d: generation_log_probs[%d] is NaN", i, j)
			}
		}
		if len(m.PromptTokenIDs) < len(seen) || !slices.Equal(m.PromptTokenIDs[:len(seen)], seen) {
			return fmt.Errorf("message %d: prompt_token_ids (%d) do not start with the %d tokens seen so far (first difference at %d)", i, len(m.PromptTokenIDs), len(seen), firstDiff(m.PromptTokenIDs, seen))
		}
		seen = append(slices.Clone(m.PromptTokenIDs), m.GenerationTokenIDs...)
	}
	if !found {
		return errors.New("no assistant message carries token ids")
	}
	return nil
}

func firstDiff(a, b []int) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}
