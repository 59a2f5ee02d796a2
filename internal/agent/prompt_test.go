package agent_test

import (
	"context"
	"reflect"
	"testing"

	"github.com/swerve-dev/swerve/internal/agent"
)

// Prompt gives the messages an episode starts with, for every scaffold
// and mode.
func TestPromptIsTheEpisodesStart(t *testing.T) {
	tk := sampleTasks(t)["sample__calc-1"]
	box, wd := openLocal(t, tk)
	for _, name := range agent.Scaffolds() {
		s, err := agent.Lookup(name)
		if err != nil {
			t.Fatal(err)
		}
		for _, mode := range s.Modes {
			m := &fakeModel{replies: []reply{text("no action here")}}
			opts := agent.Options{Scaffold: s, Mode: mode, Model: m, Box: box, Task: tk, Workdir: wd, Limits: agent.Limits{MaxSteps: 7, MaxFormatErrors: 1}}
			if _, err := agent.Run(context.Background(), opts); err != nil {
				t.Fatal(err)
			}
			if len(m.calls) == 0 || len(m.calls[0].Messages) < 2 {
				t.Fatalf("%s/%s: no model call", name, mode)
			}
			got, err := agent.Prompt(s, tk, mode, wd, 7)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, m.calls[0].Messages[:2]) {
				t.Errorf("%s/%s: Prompt differs from the episode's first messages:\n%+v\n%+v", name, mode, got, m.calls[0].Messages[:2])
			}
		}
	}
}
