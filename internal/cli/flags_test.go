package cli

import (
	"bytes"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// TestWorkerFlagsRefuseBelowOne: every command's worker, concurrency or
// jobs count refuses 0 and negative numbers at once, naming the flag,
// instead of quietly running one at a time.
func TestWorkerFlagsRefuseBelowOne(t *testing.T) {
	for _, tc := range []struct {
		cmd  []string
		flag string
	}{
		{[]string{"run"}, "max_workers"},
		{[]string{"grade"}, "max_workers"},
		{[]string{"validate"}, "max_workers"},
		{[]string{"demo"}, "max_workers"},
		{[]string{"build"}, "max-workers"},
		{[]string{"collect"}, "concurrency"},
		{[]string{"serve"}, "concurrency"},
		{[]string{"serve"}, "max_sessions"},
		{[]string{"convert", "harbor"}, "jobs"},
	} {
		for _, v := range []string{"0", "-3"} {
			var stdout, stderr bytes.Buffer
			root := NewRoot(&stdout, &stderr)
			root.SetArgs(append(append([]string{}, tc.cmd...), "--"+tc.flag, v))
			err := root.Execute()
			name := strings.ReplaceAll(tc.flag, "_", "-")
			if err == nil || !strings.Contains(err.Error(), "--"+name) || !strings.Contains(err.Error(), "at least 1") {
				t.Errorf("%v --%s %s: %v, want a refusal naming --%s", tc.cmd, tc.flag, v, err, name)
			}
		}
	}
}

// helpOf runs "swerve <path...> <flag>" in process and returns stdout.
func helpOf(t *testing.T, path []string, flag string) string {
	t.Helper()
	var stdout, stderr bytes.Buffer
	root := NewRoot(&stdout, &stderr)
	root.SetArgs(append(append([]string{}, path...), flag))
	if err := root.Execute(); err != nil {
		if ee, ok := err.(exitError); !ok || ee.code != 0 {
			t.Fatalf("%v %s: %v\n%s", path, flag, err, stderr.String())
		}
	}
	return stdout.String()
}

// listed says whether a help text lists --name ("--name type" or, for a
// boolean, "--name[=true|false]").
func listed(help, name string) bool {
	return strings.Contains(help, "--"+name+" ") || strings.Contains(help, "--"+name+"[")
}

// section returns the lines of a help text's section (after "title:" up to
// the next blank line).
func section(help, title string) []string {
	_, rest, ok := strings.Cut(help, "\n"+title+":\n")
	if !ok {
		return nil
	}
	block, _, _ := strings.Cut(rest, "\n\n")
	return strings.Split(strings.TrimRight(block, "\n"), "\n")
}

// TestHelpGroupsFlags walks every command's --help: the backends' own
// flags (apptainer, e2b, k8s) are not in it but under --help-backend,
// which lists every flag the command has; no flag's help says its time
// format twice; and run's common flags are not buried.
func TestHelpGroupsFlags(t *testing.T) {
	root := NewRoot(&bytes.Buffer{}, &bytes.Buffer{})
	var walk func(c *cobra.Command)
	checked, withBackend := 0, 0
	walk = func(c *cobra.Command) {
		for _, sub := range c.Commands() {
			if sub.IsAvailableCommand() {
				walk(sub)
			}
		}
		if c == root {
			return
		}
		path := strings.Fields(c.CommandPath())[1:]
		help := helpOf(t, path, "--help")
		full := helpOf(t, path, "--help-backend")
		checked++
		backend := backendFlagNames(c)
		if len(backend) > 0 {
			withBackend++
			if !strings.Contains(help, c.CommandPath()+" --help-backend") {
				t.Errorf("%s --help does not point at --help-backend", c.CommandPath())
			}
		}
		for _, name := range backend {
			if listed(help, name) {
				t.Errorf("%s --help lists the backend flag --%s", c.CommandPath(), name)
			}
		}
		c.LocalFlags().VisitAll(func(f *pflag.Flag) {
			if !f.Hidden && !listed(full, f.Name) {
				t.Errorf("%s --help-backend lacks --%s", c.CommandPath(), f.Name)
			}
		})
		for _, line := range strings.Split(full, "\n") {
			if strings.Count(line, "duration") > 1 || strings.Contains(line, "in seconds (seconds") {
				t.Errorf("%s: help repeats itself: %s", c.CommandPath(), strings.TrimSpace(line))
			}
		}
	}
	walk(root)
	if checked < 15 || withBackend < 5 {
		t.Errorf("walked %d commands, %d with backend flags: the walk missed commands", checked, withBackend)
	}

	run := helpOf(t, []string{"run"}, "--help")
	if n := len(section(run, "Flags")); n == 0 || n > 30 {
		t.Errorf("run --help: %d common flags; want them grouped (at most 30)", n)
	}
	for _, flag := range []string{"--dataset", "--llm-name", "--max-workers", "--traj-dir", "--backend"} {
		if !strings.Contains(strings.Join(section(run, "Flags"), "\n"), flag+" ") {
			t.Errorf("run --help: %s not among the common flags", flag)
		}
	}
	flat := strings.Join(strings.Fields(run), " ")
	if strings.Contains(flat, "kubernetes) are refused") || !strings.Contains(flat, "--backend kubernetes is k8s") {
		t.Errorf("run --help misstates --backend kubernetes:\n%s", run)
	}
}
