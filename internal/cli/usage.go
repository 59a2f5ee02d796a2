package cli

import (
	"fmt"
	"sort"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// Flag groups: --help lists a command's common flags first, then its agent,
// box and upstream-runner flags; the backends' own settings (apptainer, e2b, k8s: dozens of
// flags) only under --help-backend. Every flag works whether shown or not.
const (
	flagGroupKey     = "swerve_flag_group"
	groupAgent       = "agent"
	groupBox         = "box"
	groupUpstream    = "upstream"
	groupBackend     = "backend"
	helpBackendFlag  = "help-backend"
	helpBackendUsage = "help, with the flags of the apptainer, e2b and k8s backends too"
)

// setFlagGroup puts the named flags of fs in group.
func setFlagGroup(fs *pflag.FlagSet, group string, names ...string) {
	for _, n := range names {
		if fs.Lookup(n) == nil {
			panic("flag group " + group + ": no flag " + n)
		}
		if err := fs.SetAnnotation(n, flagGroupKey, []string{group}); err != nil {
			panic(err)
		}
	}
}

// flagGroup is the group a flag was put in ("" for the common flags).
func flagGroup(f *pflag.Flag) string {
	if g := f.Annotations[flagGroupKey]; len(g) > 0 {
		return g[0]
	}
	return ""
}

// showBackendFlags says whether --help-backend was given.
func showBackendFlags(c *cobra.Command) bool {
	f := c.Flag(helpBackendFlag)
	return f != nil && f.Changed
}

// usage writes a command's usage with its flags grouped (see flagGroupKey).
func usage(c *cobra.Command) error {
	w := c.OutOrStderr()
	fmt.Fprint(w, "Usage:\n")
	if c.Runnable() {
		fmt.Fprintf(w, "  %s\n", c.UseLine())
	}
	if c.HasAvailableSubCommands() {
		fmt.Fprintf(w, "  %s [command]\n", c.CommandPath())
	}
	if len(c.Aliases) > 0 {
		fmt.Fprintf(w, "\nAliases:\n  %s\n", c.NameAndAliases())
	}
	if c.HasExample() {
		fmt.Fprintf(w, "\nExamples:\n%s\n", c.Example)
	}
	if c.HasAvailableSubCommands() {
		fmt.Fprint(w, "\nAvailable Commands:\n")
		for _, sub := range c.Commands() {
			if sub.IsAvailableCommand() || sub.Name() == "help" {
				fmt.Fprintf(w, "  %-*s %s\n", c.NamePadding(), sub.Name(), sub.Short)
			}
		}
	}
	groups := map[string]*pflag.FlagSet{}
	c.LocalFlags().VisitAll(func(f *pflag.Flag) {
		if f.Hidden {
			return
		}
		g := flagGroup(f)
		if groups[g] == nil {
			groups[g] = pflag.NewFlagSet(g, pflag.ContinueOnError)
			groups[g].SortFlags = c.LocalFlags().SortFlags
		}
		groups[g].AddFlag(f)
	})
	section := func(title string, fs *pflag.FlagSet) {
		if fs != nil && fs.HasAvailableFlags() {
			fmt.Fprintf(w, "\n%s:\n%s", title, fs.FlagUsages())
		}
	}
	section("Flags", groups[""])
	section("Agent flags", groups[groupAgent])
	section("Box flags", groups[groupBox])
	section("Upstream runner's flags", groups[groupUpstream])
	if be := groups[groupBackend]; be != nil && be.HasAvailableFlags() {
		if showBackendFlags(c) {
			section("Backend flags (apptainer, e2b, k8s)", be)
		} else {
			n := 0
			be.VisitAll(func(*pflag.Flag) { n++ })
			fmt.Fprintf(w, "\nBackend flags:\n  %d settings of the apptainer, e2b and k8s backends: %s --%s\n", n, c.CommandPath(), helpBackendFlag)
		}
	}
	section("Global Flags", c.InheritedFlags())
	if c.HasAvailableSubCommands() {
		fmt.Fprintf(w, "\nUse \"%s [command] --help\" for more information about a command.\n", c.CommandPath())
	}
	return nil
}

// backendFlagNames lists the flags of a command in the backend group, for
// tests and docs.
func backendFlagNames(c *cobra.Command) []string {
	var names []string
	c.LocalFlags().VisitAll(func(f *pflag.Flag) {
		if flagGroup(f) == groupBackend {
			names = append(names, f.Name)
		}
	})
	sort.Strings(names)
	return names
}
