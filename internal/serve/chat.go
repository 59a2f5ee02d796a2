package serve

import (
	"encoding/json"
	"fmt"

	"github.com/swerve-dev/swerve/internal/llm"
)

// FromChat splits a chat conversation into a Responses request input (the
// messages before the model's first reply: system and task) and output
// items (everything after). An assistant reply becomes a message item with
// its text (when it has any) followed by one function_call item per tool
// call; a tool result becomes a function_call_output; any other message (a
// text-mode observation) becomes a message item with its own role and input_text
// content, as Gym's recorded mini-swe rows have them. tokens, when given, holds the token fields of
// the i-th model call; they go on the last item that call produced.
func FromChat(msgs []llm.Message, tokens []*Tokens) (json.RawMessage, []OutputItem) {
	first := len(msgs)
	for i, m := range msgs {
		if m.Role == "assistant" {
			first = i
			break
		}
	}
	type inMsg struct {
		Type    string `json:"type"`
		Role    string `json:"role"`
		Content string `json:"content"`
	}
	in := make([]inMsg, 0, first)
	for _, m := range msgs[:first] {
		in = append(in, inMsg{Type: "message", Role: m.Role, Content: m.Content})
	}
	input, _ := json.Marshal(in)

	out := []OutputItem{}
	call := 0
	for i, m := range msgs[first:] {
		switch {
		case m.Role == "assistant":
			if m.Content != "" || len(m.ToolCalls) == 0 {
				out = append(out, OutputItem{Type: "message", ID: fmt.Sprintf("msg_%d", i), Role: "assistant",
					Status: "completed", Content: []ContentPart{{Type: "output_text", Text: m.Content, Annotations: []any{}}}})
			}
			for _, tc := range m.ToolCalls {
				out = append(out, OutputItem{Type: "function_call", ID: tc.ID, CallID: tc.ID, Name: tc.Function.Name,
					Arguments: tc.Function.Arguments, Status: "completed"})
			}
			if call < len(tokens) && tokens[call] != nil {
				last := &out[len(out)-1]
				last.PromptTokenIDs = tokens[call].PromptTokenIDs
				last.GenerationTokenIDs = tokens[call].GenerationTokenIDs
				last.GenerationLogProbs = tokens[call].GenerationLogProbs
			}
			call++
		case m.Role == "tool":
			out = append(out, OutputItem{Type: "function_call_output", CallID: m.ToolCallID, Output: m.Content})
		default:
			out = append(out, OutputItem{Type: "message", ID: fmt.Sprintf("msg_%d", i), Role: m.Role,
				Status: "completed", Content: []ContentPart{{Type: "input_text", Text: m.Content, Annotations: []any{}}}})
		}
	}
	return input, out
}
