package task

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestSelect(t *testing.T) {
	var tasks []Task
	for _, id := range []string{"a", "b", "c", "d", "e"} {
		tasks = append(tasks, Task{InstanceID: id, Split: "orig"})
	}
	ids := func(ts []Task) []string {
		var out []string
		for _, t := range ts {
			out = append(out, t.InstanceID)
		}
		return out
	}
	for _, tc := range []struct {
		name    string
		sel     Selection
		want    []string
		wantErr string
	}{
		{name: "all", sel: Selection{}, want: []string{"a", "b", "c", "d", "e"}},
		{name: "start", sel: Selection{StartIdx: 3}, want: []string{"d", "e"}},
		{name: "k", sel: Selection{K: 2}, want: []string{"a", "b"}},
		{name: "start and k", sel: Selection{StartIdx: 1, K: 2}, want: []string{"b", "c"}},
		{name: "k past the end", sel: Selection{StartIdx: 4, K: 10}, want: []string{"e"}},
		{name: "start at the end", sel: Selection{StartIdx: 5}, want: nil},
		{name: "ids keep dataset order", sel: Selection{InstanceIDs: []string{"d", "a"}}, want: []string{"a", "d"}},
		{name: "ids then slice", sel: Selection{InstanceIDs: []string{"e", "b", "c"}, StartIdx: 1, K: 1}, want: []string{"c"}},
		{name: "repeated id", sel: Selection{InstanceIDs: []string{"b", "b"}}, want: []string{"b"}},
		{name: "missing ids", sel: Selection{InstanceIDs: []string{"x", "a", "y", "x"}}, wantErr: "instance_ids: no tasks x, y in the dataset"},
		{name: "missing id", sel: Selection{InstanceIDs: []string{"zz"}}, wantErr: "instance_ids: no task zz in the dataset"},
		{name: "start past the end", sel: Selection{StartIdx: 6}, wantErr: "start_idx 6: past the end (5 tasks)"},
		{name: "negative start", sel: Selection{StartIdx: -1}, wantErr: "must not be negative"},
		{name: "negative k", sel: Selection{K: -1}, wantErr: "must not be negative"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Select(tasks, tc.sel)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, ids(got)); diff != "" {
				t.Errorf("selected (-want +got):\n%s", diff)
			}
		})
	}
}

func TestSelectSplitLabel(t *testing.T) {
	tasks := []Task{{InstanceID: "a", Split: "train"}, {InstanceID: "b"}}
	got, err := Select(tasks, Selection{Split: "eval"})
	if err != nil {
		t.Fatal(err)
	}
	if got[0].Split != "eval" || got[1].Split != "eval" {
		t.Errorf("splits = %q, %q; want eval", got[0].Split, got[1].Split)
	}
	if tasks[0].Split != "train" {
		t.Errorf("Select changed its input")
	}
	kept, _ := Select(tasks, Selection{})
	if kept[0].Split != "train" {
		t.Errorf("an empty Split label replaced the row's own")
	}
}
