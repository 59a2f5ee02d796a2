package agent

import (
	"github.com/swerve-dev/swerve/internal/llm"
	"github.com/swerve-dev/swerve/internal/task"
)

// Prompt renders the first two messages an episode of scaffold s would
// send for t (its system and instance templates), in mode, with the
// repository at workdir ("" means /testbed) and maxSteps as the step limit
// the prompt quotes (0: the default). It is what an episode's seed step
// sends, for tools that hand the prompt to someone else (swerve convert
// gym).
func Prompt(s *Scaffold, t *task.Task, mode Mode, workdir string, maxSteps int) ([]llm.Message, error) {
	if workdir == "" {
		workdir = "/testbed"
	}
	lim := Limits{MaxSteps: maxSteps}.withDefaults()
	data := PromptData{
		Task:             t,
		ProblemStatement: t.ProblemStatement,
		Workdir:          workdir,
		MaxSteps:         lim.MaxSteps,
		Mode:             mode.String(),
		FnCalling:        mode == ModeFn,
	}
	sys, err := render("system", s.System, data)
	if err != nil {
		return nil, err
	}
	inst, err := render("instance", s.Instance, data)
	if err != nil {
		return nil, err
	}
	return []llm.Message{{Role: llm.RoleSystem, Content: sys}, {Role: llm.RoleUser, Content: inst}}, nil
}
