package task

import (
	"fmt"
	"slices"
	"strings"
)

// Selection picks the tasks a command works on.
type Selection struct {
	// Split is a label stored in every selected task (it does not filter).
	Split string
	// StartIdx skips this many tasks (after the InstanceIDs filter).
	StartIdx int
	// K keeps at most this many tasks; 0 keeps all.
	K int
	// InstanceIDs keeps only these tasks, in dataset order. Every id must
	// exist.
	InstanceIDs []string
}

// Select applies sel to tasks and returns the chosen ones in dataset order.
// The input is not modified.
func Select(tasks []Task, sel Selection) ([]Task, error) {
	if sel.StartIdx < 0 {
		return nil, fmt.Errorf("start_idx %d: must not be negative", sel.StartIdx)
	}
	if sel.K < 0 {
		return nil, fmt.Errorf("k %d: must not be negative (0 means all)", sel.K)
	}
	picked := tasks
	if len(sel.InstanceIDs) > 0 {
		want := make(map[string]bool, len(sel.InstanceIDs))
		for _, id := range sel.InstanceIDs {
			want[id] = true
		}
		found := make(map[string]bool, len(want))
		picked = nil
		for _, t := range tasks {
			if want[t.InstanceID] {
				picked = append(picked, t)
				found[t.InstanceID] = true
			}
		}
		var missing []string
		for _, id := range sel.InstanceIDs {
			if !found[id] && !slices.Contains(missing, id) {
				missing = append(missing, id)
			}
		}
		if len(missing) > 0 {
			s := "s"
			if len(missing) == 1 {
				s = ""
			}
			return nil, fmt.Errorf("instance_ids: no task%s %s in the dataset", s, strings.Join(missing, ", "))
		}
	}
	if sel.StartIdx > len(picked) {
		return nil, fmt.Errorf("start_idx %d: past the end (%d tasks)", sel.StartIdx, len(picked))
	}
	picked = picked[sel.StartIdx:]
	if sel.K > 0 && sel.K < len(picked) {
		picked = picked[:sel.K]
	}
	out := make([]Task, len(picked))
	copy(out, picked)
	if sel.Split != "" {
		for i := range out {
			out[i].Split = sel.Split
		}
	}
	return out, nil
}
