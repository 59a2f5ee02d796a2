package verl

import (
	"fmt"
	"strings"

	"github.com/swerve-dev/swerve/internal/task"
)

// Workdir is where the repository is in the sandbox the tools reach.
const Workdir = "/testbed"

// The tool names the rows' tools_kwargs are keyed by: verl's tool agent
// loop looks a call's create_kwargs up by the called function's name.
const (
	ToolBash   = "bash"
	ToolSubmit = "submit_solution"
)

// SystemPrompt is the system message of a task's prompt: the tool rules
// and where the repository is.
func SystemPrompt(t *task.Task) string {
	var b strings.Builder
	fmt.Fprintf(&b, "You are a software engineer resolving an issue in the %s repository", orUnknown(t.Repo))
	if t.BaseCommit != "" {
		fmt.Fprintf(&b, " at commit %s", t.BaseCommit)
	}
	fmt.Fprintf(&b, ". A copy of it is checked out in %s inside a sandbox that only your tools can reach.\n\n", Workdir)
	b.WriteString("Tools:\n")
	fmt.Fprintf(&b, "- %s: runs one command line in a bash shell that starts in %s and lasts the whole episode (cd and exported variables carry over from one call to the next), and returns what it printed and its exit status. Use it to read code, edit files and run commands.\n", ToolBash, Workdir)
	fmt.Fprintf(&b, "- %s: ends your work. The changes you made in %s, taken as a diff against the starting commit, are graded by tests you do not see.\n\n", ToolSubmit, Workdir)
	b.WriteString("Rules:\n")
	b.WriteString("- Change source files only; edits to existing tests are not what is graded and may be undone.\n")
	b.WriteString("- Every command must finish on its own: no interactive programs, no servers left running.\n")
	fmt.Fprintf(&b, "- Call %s exactly once, when the fix is in place.", ToolSubmit)
	return b.String()
}

// patchExample is a small patch shown to the model as the shape of a
// change (the prompt's <patch> section).
const patchExample = `--- a/shapes.py
+++ b/shapes.py
@@ -3,7 +3,9 @@ import math
 
 def area(radius):
-    return 3.14 * radius * radius
+    if radius < 0:
+        raise ValueError("radius must not be negative")
+    return math.pi * radius ** 2
 
 
 def perimeter(radius):
-    return 2 * 3.14 * radius
+    return 2 * math.pi * radius`

// UserPrompt is the user message of a task's prompt, laid out like
// SWE-bench's style-3 prompts: an opening line, the issue in <issue>, the
// code base in <code> (here: where to find it, since the model reaches
// it through its tools), a word on patches with an example in <patch>,
// the instruction and a closing cue.
func UserPrompt(t *task.Task) string {
	var b strings.Builder
	b.WriteString("An issue has been reported against the code base described below; the code itself is in your sandbox.\n")
	b.WriteString("<issue>\n")
	b.WriteString(strings.TrimRight(t.ProblemStatement, "\n"))
	b.WriteString("\n</issue>\n\n<code>\n")
	fmt.Fprintf(&b, "repository: %s\n", orUnknown(t.Repo))
	if t.BaseCommit != "" {
		fmt.Fprintf(&b, "base commit: %s\n", t.BaseCommit)
	}
	fmt.Fprintf(&b, "checked out in: %s (use the %s tool to look around)\n", Workdir, ToolBash)
	b.WriteString("</code>\n\n")
	b.WriteString("A patch describes changes to a code base: for every file it changes, the file's name, where each change is (line numbers) and which lines go and which come in. One patch can cover several files. For example:\n")
	b.WriteString("<patch>\n" + patchExample + "\n</patch>\n\n")
	fmt.Fprintf(&b, "Resolve the issue by changing the files in %s with the %s tool. What you leave there becomes a single patch that is applied to the base commit with git apply and tested. Call %s when you are done.\n", Workdir, ToolBash, ToolSubmit)
	b.WriteString("Start below:")
	return b.String()
}

func orUnknown(s string) string {
	if s == "" {
		return "(unnamed)"
	}
	return s
}
