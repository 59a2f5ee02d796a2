package build

import (
	"path"
	"slices"
	"strings"

	"github.com/swerve-dev/swerve/internal/lazyre"
)

// checkRepair compares a repaired eval script with the original and
// returns why the repair cannot be accepted, or nil: a repair may fix how
// the tests are run, not what is tested. It must keep
//
//   - the test patch: every line the original's test patch (a heredoc
//     holding a diff) adds or removes, in order, in a heredoc of the repair
//     that a git apply or patch command takes; and
//   - the test command: the command whose status the original saves
//     (the line before rc=$?, or the one echoing OMNIGRIL_EXIT_CODE=$?),
//     recognised by its program (the module for python -m) and its test
//     selectors (paths, file names, test ids, dotted labels, [tags]), on
//     one line of the repair. Flags may change.
//
// When the original has no test patch or no recognisable test command,
// there is nothing to keep and the check passes.
func checkRepair(original, repaired string) *Failure {
	if original == repaired {
		return nil
	}
	for _, p := range testPatches(original) {
		if !keepsPatch(repaired, p) {
			return &Failure{Stage: StageRepair, Reason: "repair dropped the test patch (" + patchDescription(p) + ")",
				Command: "compare the repaired eval script with the original", Output: "The original eval script applies this test patch; the repaired one must apply it unchanged:\n" + p}
		}
	}
	if cmd := testCommand(original); cmd != "" && !keepsCommand(repaired, cmd) {
		return &Failure{Stage: StageRepair, Reason: "repair dropped the test command `" + cmd + "`",
			Command: "compare the repaired eval script with the original", Output: "The original eval script runs this test command and reports its exit status: " + cmd}
	}
	return nil
}

// hereDoc is one here-document of a script: the line that opens it and
// its body.
type hereDoc struct {
	opener string
	body   []string
}

var heredocOpen = lazyre.New(`<<(-?)\s*(['"]?)([A-Za-z_][A-Za-z0-9_]*)(['"]?)`)

// heredocs lists the here-documents of a script.
func heredocs(script string) []hereDoc {
	lines := strings.Split(strings.ReplaceAll(script, "\r\n", "\n"), "\n")
	var out []hereDoc
	for i := 0; i < len(lines); i++ {
		m := heredocOpen.FindStringSubmatch(lines[i])
		if m == nil || isComment(lines[i]) {
			continue
		}
		h := hereDoc{opener: lines[i]}
		j := i + 1
		for ; j < len(lines); j++ {
			l := lines[j]
			if m[1] == "-" {
				l = strings.TrimLeft(l, "\t")
			}
			if l == m[3] {
				break
			}
			h.body = append(h.body, lines[j])
		}
		out = append(out, h)
		i = j
	}
	return out
}

// testPatches returns the diffs the script's heredocs hold.
func testPatches(script string) []string {
	var out []string
	for _, h := range heredocs(script) {
		if slices.ContainsFunc(h.body, func(l string) bool { return strings.HasPrefix(l, "diff --git ") }) {
			out = append(out, strings.Join(h.body, "\n"))
		}
	}
	return out
}

// changedLines are a diff's added and removed lines.
func changedLines(diff []string) []string {
	var out []string
	for _, l := range diff {
		if (strings.HasPrefix(l, "+") || strings.HasPrefix(l, "-")) && !strings.HasPrefix(l, "+++ ") && !strings.HasPrefix(l, "--- ") {
			out = append(out, strings.TrimRight(l, " \t"))
		}
	}
	return out
}

// isSubsequence reports whether want appears in have in order.
func isSubsequence(want, have []string) bool {
	i := 0
	for _, h := range have {
		if i < len(want) && strings.TrimRight(h, " \t") == want[i] {
			i++
		}
	}
	return i == len(want)
}

var applyCmd = lazyre.New(`\bgit\s+apply\b|(^|[;&|(\s])patch\s`)

// keepsPatch reports whether the repaired script still applies patch: a
// heredoc holding its changed lines, taken by git apply or patch (on the
// opening line, or later from the file the heredoc wrote).
func keepsPatch(repaired, patch string) bool {
	want := changedLines(strings.Split(patch, "\n"))
	for _, h := range heredocs(repaired) {
		if !isSubsequence(want, changedLines(h.body)) {
			continue
		}
		if applyCmd.MatchString(h.opener) {
			return true
		}
		for _, l := range strings.Split(repaired, "\n") {
			if !isComment(l) && applyCmd.MatchString(l) && !strings.Contains(l, "<<") {
				return true
			}
		}
	}
	return false
}

// patchDescription names the files a test patch changes.
func patchDescription(patch string) string {
	files := patchFiles(patch)
	if len(files) == 0 {
		return "its heredoc"
	}
	return "the heredoc applying " + strings.Join(files, ", ")
}

func isComment(line string) bool { return strings.HasPrefix(strings.TrimSpace(line), "#") }

// logicalLines joins backslash-continued lines.
func logicalLines(script string) []string {
	var out []string
	var cur strings.Builder
	for _, l := range strings.Split(strings.ReplaceAll(script, "\r\n", "\n"), "\n") {
		if strings.HasSuffix(l, "\\") {
			cur.WriteString(strings.TrimSuffix(l, "\\"))
			cur.WriteString(" ")
			continue
		}
		cur.WriteString(l)
		out = append(out, cur.String())
		cur.Reset()
	}
	return out
}

var (
	saveStatus = lazyre.New(`^\s*[A-Za-z_][A-Za-z0-9_]*=\$\?`)
	echoStatus = lazyre.New(`OMNIGRIL_EXIT_CODE=\$\?`)
)

// testCommand finds the command whose exit status the script reports: the
// last command line before the first "rc=$?" (any variable name), or the
// one before an echo of OMNIGRIL_EXIT_CODE=$?. "" when there is none.
func testCommand(script string) string {
	lines := logicalLines(script)
	for i, l := range lines {
		if !saveStatus.MatchString(l) && !(echoStatus.MatchString(l) && !isComment(l)) {
			continue
		}
		for j := i - 1; j >= 0; j-- {
			c := strings.TrimSpace(lines[j])
			if c == "" || isComment(c) {
				continue
			}
			return c
		}
		return ""
	}
	return ""
}

// words splits a shell command line into words (quotes removed), stopping
// at a comment; operators and redirections are words of their own.
func words(line string) []string {
	var out []string
	var cur strings.Builder
	in := false
	var quote rune
	flush := func() {
		if in {
			out = append(out, cur.String())
			cur.Reset()
			in = false
		}
	}
	for _, r := range line {
		switch {
		case quote != 0:
			if r == quote {
				quote = 0
			} else {
				cur.WriteRune(r)
			}
		case r == '\'' || r == '"':
			quote, in = r, true
		case r == '#' && !in:
			flush()
			return out
		case r == ' ' || r == '\t':
			flush()
		default:
			cur.WriteRune(r)
			in = true
		}
	}
	flush()
	return out
}

// commandKey is what identifies a test command: its program and its test
// selectors.
type commandKey struct {
	program   string
	selectors []string
}

var (
	envAssign  = lazyre.New(`^[A-Za-z_][A-Za-z0-9_]*=`)
	pythonName = lazyre.New(`^python[0-9.]*$`)
	dotted     = lazyre.New(`^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)+$`)
	bracketed  = lazyre.New(`^\[.+\]$`)
	duration   = lazyre.New(`^[0-9.]+[smhd]?$`)
	wrappers   = map[string]bool{"timeout": true, "stdbuf": true, "nice": true, "env": true, "xvfb-run": true, "time": true, "exec": true}
)

// keyOf reads a command line's program and selectors.
func keyOf(line string) commandKey {
	ws := words(line)
	// The command itself ends at the first operator or pipe.
	for i, w := range ws {
		if w == "|" || w == "||" || w == "&&" || w == ";" || w == "|&" {
			ws = ws[:i]
			break
		}
	}
	i := 0
	for i < len(ws) {
		w := ws[i]
		if envAssign.MatchString(w) {
			i++
			continue
		}
		if _, ok := wrappers[path.Base(w)]; ok {
			i++
			if path.Base(w) == "timeout" {
				// timeout's options may take values; its duration ends them.
				for i < len(ws) && !duration.MatchString(ws[i]) {
					i++
				}
				i++
				continue
			}
			for i < len(ws) && strings.HasPrefix(ws[i], "-") {
				i++
			}
			continue
		}
		break
	}
	if i >= len(ws) {
		return commandKey{}
	}
	k := commandKey{program: path.Base(ws[i])}
	args := ws[i+1:]
	if pythonName.MatchString(k.program) {
		for j := 0; j < len(args); j++ {
			if (args[j] == "-W" || args[j] == "-X") && j+1 < len(args) {
				j++ // an option with a value
				continue
			}
			if args[j] == "-m" && j+1 < len(args) {
				k.program = args[j+1]
				args = args[j+2:]
				break
			}
			if !strings.HasPrefix(args[j], "-") {
				k.program = path.Base(args[j])
				args = args[j+1:]
				break
			}
		}
	}
	for _, a := range args {
		if strings.HasPrefix(a, "-") || strings.ContainsAny(a, "<>") || strings.Contains(a, "$") {
			continue
		}
		if isSelector(a) {
			k.selectors = append(k.selectors, strings.TrimPrefix(a, "./"))
		}
	}
	return k
}

// isSelector reports whether a command-line argument names tests: a path,
// a test id, a source file, a dotted module label or a [tag].
func isSelector(a string) bool {
	switch {
	case strings.Contains(a, "/"), strings.Contains(a, "::"), bracketed.MatchString(a), dotted.MatchString(a):
		return true
	}
	switch path.Ext(a) {
	case ".py", ".js", ".ts", ".jsx", ".tsx", ".go", ".rs", ".java", ".rb", ".php", ".c", ".cc", ".cpp", ".kt", ".scala", ".sh":
		return true
	}
	return false
}

// keepsCommand reports whether some command line of the repaired script
// runs the same program on the same selectors.
func keepsCommand(repaired, original string) bool {
	want := keyOf(original)
	if want.program == "" {
		return true
	}
	for _, l := range logicalLines(repaired) {
		if isComment(l) {
			continue
		}
		got := keyOf(strings.TrimSpace(l))
		if got.program != want.program {
			continue
		}
		if !slices.ContainsFunc(want.selectors, func(s string) bool { return !slices.Contains(got.selectors, s) }) {
			return true
		}
	}
	return false
}
