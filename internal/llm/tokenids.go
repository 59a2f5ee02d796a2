package llm

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
)

// readTokenIDs fills msg's token fields from a chat.completion. NeMo RL's
// vLLM server puts prompt_token_ids, generation_token_ids and
// generation_log_probs on the message; plain vLLM sends the prompt's ids at
// the top level (return_token_ids), the reply's as choices[0].token_ids or
// as logprobs.content[].token of the form "token_id:N"
// (return_tokens_as_token_ids), with one logprob each. A reply without
// token ids leaves msg as it is; one whose fields disagree, or with a
// log-prob that is not a number, is an error.
func readTokenIDs(msg *Message, cc *oaCompletion) error {
	ch := &cc.Choices[0]
	m := &ch.Message
	prompt, gen := m.PromptTokenIDs, m.GenerationTokenIDs
	var logProbs []float64
	for i, raw := range m.GenerationLogProbs {
		lp, err := logProb(raw)
		if err != nil {
			return fmt.Errorf("generation_log_probs[%d]: %w", i, err)
		}
		logProbs = append(logProbs, lp)
	}
	if len(gen) == 0 {
		if ch.Logprobs != nil && len(ch.Logprobs.Content) > 0 {
			logProbs = logProbs[:0]
			for i, c := range ch.Logprobs.Content {
				lp, err := logProb(c.Logprob)
				if err != nil {
					return fmt.Errorf("logprobs.content[%d].logprob: %w", i, err)
				}
				logProbs = append(logProbs, lp)
				id, ok := strings.CutPrefix(c.Token, "token_id:")
				if n, err := strconv.Atoi(id); ok && err == nil {
					gen = append(gen, n)
				} else if len(ch.TokenIDs) == 0 {
					return fmt.Errorf("logprobs.content[%d].token %q is not token_id:N (was return_tokens_as_token_ids honoured?)", i, c.Token)
				}
			}
			if len(ch.TokenIDs) > 0 {
				gen = ch.TokenIDs
			}
		} else {
			gen = ch.TokenIDs
		}
	}
	if len(prompt) == 0 {
		prompt = ch.PromptTokenIDs
	}
	if len(prompt) == 0 {
		prompt = cc.PromptTokenIDs
	}
	if len(gen) == 0 && len(prompt) == 0 && len(logProbs) == 0 {
		return nil
	}
	switch {
	case len(gen) == 0:
		return errors.New("reply has prompt ids or log-probs but no generation ids")
	case len(prompt) == 0:
		return errors.New("reply has generation ids but no prompt ids (the server needs return_token_ids or NeMo RL's fields)")
	case len(logProbs) != len(gen):
		return fmt.Errorf("%d log-probs for %d generation ids", len(logProbs), len(gen))
	}
	msg.PromptTokenIDs = slices.Clone(prompt)
	msg.GenerationTokenIDs = slices.Clone(gen)
	msg.GenerationLogProbs = logProbs
	return nil
}

// logProb reads one log-prob: a number. null, "NaN" and the like (how
// Python servers write a NaN) are errors.
func logProb(raw json.RawMessage) (float64, error) {
	raw = bytes.TrimSpace(raw)
	var f float64
	if err := json.Unmarshal(raw, &f); err != nil || len(raw) == 0 || string(raw) == "null" {
		return 0, fmt.Errorf("log-prob %s is not a number", orNothing(raw))
	}
	if math.IsNaN(f) {
		return 0, errors.New("log-prob is NaN")
	}
	return f, nil
}

func orNothing(raw []byte) string {
	if len(raw) == 0 {
		return "(missing)"
	}
	return string(raw)
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
