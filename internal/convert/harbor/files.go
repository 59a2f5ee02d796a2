package harbor

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/pelletier/go-toml/v2"

	"github.com/swerve-dev/swerve/internal/lazyre"
	"github.com/swerve-dev/swerve/internal/reward/harbor"
	"github.com/swerve-dev/swerve/internal/reward/swefactory"
	"github.com/swerve-dev/swerve/internal/task"
)

// The task.toml schema, in the order Harbor's own tasks write it. Harbor
// keeps [metadata] as a free table; author_name, author_email, difficulty,
// category and tags are the keys its tasks and registry use, and the rest
// say where the task came from.
type tomlConfig struct {
	Version     string          `toml:"version"`
	Metadata    tomlMetadata    `toml:"metadata"`
	Verifier    tomlTimeout     `toml:"verifier"`
	Agent       tomlTimeout     `toml:"agent"`
	Environment tomlEnvironment `toml:"environment"`
}

type tomlMetadata struct {
	AuthorName  string   `toml:"author_name"`
	AuthorEmail string   `toml:"author_email"`
	Difficulty  string   `toml:"difficulty"`
	Category    string   `toml:"category"`
	Tags        []string `toml:"tags"`
	InstanceID  string   `toml:"instance_id"`
	Repo        string   `toml:"repo,omitempty"`
	BaseCommit  string   `toml:"base_commit,omitempty"`
}

type tomlTimeout struct {
	TimeoutSec float64 `toml:"timeout_sec"`
}

type tomlEnvironment struct {
	BuildTimeoutSec float64 `toml:"build_timeout_sec"`
	CPUs            int     `toml:"cpus"`
	MemoryMB        int     `toml:"memory_mb"`
	StorageMB       int     `toml:"storage_mb"`
}

// Validate checks that every timeout and resource is positive.
func (c Config) Validate() error {
	for _, f := range []struct {
		name string
		v    float64
	}{
		{"verifier timeout", c.VerifierTimeout.Seconds()}, {"agent timeout", c.AgentTimeout.Seconds()},
		{"build timeout", c.BuildTimeout.Seconds()}, {"cpus", float64(c.CPUs)},
		{"memory_mb", float64(c.MemoryMB)}, {"storage_mb", float64(c.StorageMB)},
	} {
		if f.v <= 0 {
			return fmt.Errorf("%s must be positive (got %v)", f.name, f.v)
		}
	}
	return nil
}

// taskTOML renders t's task.toml.
func taskTOML(t *task.Task, c Config) ([]byte, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	tags := []string{"swe"}
	for _, s := range []string{string(t.Dialect), t.Language} {
		if s != "" && !contains(tags, s) {
			tags = append(tags, s)
		}
	}
	conf := tomlConfig{
		Version: "1.0",
		Metadata: tomlMetadata{
			AuthorName:  c.AuthorName,
			AuthorEmail: c.AuthorEmail,
			Difficulty:  difficulty(t),
			Category:    c.Category,
			Tags:        tags,
			InstanceID:  t.InstanceID,
			Repo:        t.Repo,
			BaseCommit:  t.BaseCommit,
		},
		Verifier: tomlTimeout{c.VerifierTimeout.Seconds()},
		Agent:    tomlTimeout{c.AgentTimeout.Seconds()},
		Environment: tomlEnvironment{
			BuildTimeoutSec: c.BuildTimeout.Seconds(),
			CPUs:            c.CPUs,
			MemoryMB:        c.MemoryMB,
			StorageMB:       c.StorageMB,
		},
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, "# Harbor task made by swerve convert harbor from %s.\n", oneLine(t.InstanceID))
	enc := toml.NewEncoder(&b)
	enc.SetIndentTables(false)
	if err := enc.Encode(conf); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// difficulty maps SWE-bench Verified's time estimates onto Harbor's
// easy / medium / hard; rows without one are "unknown".
func difficulty(t *task.Task) string {
	raw, ok := t.RawField("difficulty")
	if !ok {
		return "unknown"
	}
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return "unknown"
	}
	switch strings.TrimSpace(s) {
	case "<15 min fix":
		return "easy"
	case "15 min - 1 hour":
		return "medium"
	case "1-4 hours", ">4 hours":
		return "hard"
	case "easy", "medium", "hard":
		return s
	}
	return "unknown"
}

// oneLine keeps an id on one comment line.
func oneLine(s string) string {
	return strings.Map(func(r rune) rune {
		if r < ' ' || r == 0x7f {
			return '_'
		}
		return r
	}, s)
}

// instruction is instruction.md: the issue text as the dataset has it,
// then where the repository is and what is asked, so an agent that reads
// only this file knows where to work.
func instruction(t *task.Task) string {
	var b strings.Builder
	b.WriteString(strings.TrimRight(t.ProblemStatement, "\n"))
	b.WriteString("\n\n---\n\n## Repository\n\n")
	if t.Repo != "" {
		fmt.Fprintf(&b, "- repository: `%s`\n", oneLine(t.Repo))
	}
	if t.BaseCommit != "" {
		fmt.Fprintf(&b, "- base commit: `%s`\n", oneLine(t.BaseCommit))
	}
	b.WriteString("- working copy: `/testbed`\n")
	fmt.Fprintf(&b, "- task: `%s`\n", oneLine(t.InstanceID))
	b.WriteString("\n## What to do\n\n" +
		"Change the code in `/testbed` so that the issue above is resolved. Hidden tests,\n" +
		"run after you finish, decide whether it is.\n")
	return b.String()
}

// testScript is tests/test.sh: source the eval script in the verifier's own
// shell and turn the status its own `echo OMNIGRIL_EXIT_CODE=...` carries
// into reward.txt (0, in any number of digits, is a pass).
//
// The status is taken from the command, not from the output: a DEBUG trap
// sees each command before bash runs it, and when it is the eval script's
// echo of the marker, expands its words in the verifier's shell. Whatever
// the code under test prints — a marker line of its own, before or after
// the script's, from a detached child — is never read, and a test that
// kills the shell leaves no reward file, which Harbor reads as 0. The
// reward is written by the shell's EXIT trap, so it is written however the
// eval script ends (unless it sets an EXIT trap of its own, which
// SWE-Factory's scripts do not: then there is no reward file, a 0).
//
// With record, pytest is asked for a result line per test (-rA, through
// PYTEST_ADDOPTS): swerve's grader reads the tests that tests/
// expected_tests.json names from them (see expectedTests).
func testScript(id string, record bool) string {
	var b strings.Builder
	fmt.Fprintf(&b, "#!/bin/bash\n# Harbor verifier for %s, made by swerve convert harbor.\n", oneLine(id))
	if record {
		b.WriteString(`#
# pytest prints a result line for every test (-rA): swerve's grader requires
# those of the tests that ` + harbor.ExpectedTests + ` names to be there and PASSED.
export PYTEST_ADDOPTS="-rA${PYTEST_ADDOPTS:+ $PYTEST_ADDOPTS}"
`)
	}
	b.WriteString(`#
# tests/eval.sh is the dataset's eval script, unchanged: it puts the hidden
# tests into the repository, runs them and echoes
# ` + swefactory.Marker + `=<exit status of the tests>. The reward is 1 when
# the status in that echo (its last one) is 0, read from the command as bash
# runs it, never from what is printed; and 0 otherwise.
verifier=` + harbor.VerifierDir + `
mkdir -p "$verifier"
swerve_status=
swerve_reward() {
	local reward=0
	case "${swerve_status-}" in
	"") echo "swerve: the eval script did not echo ` + swefactory.Marker + `: its tests did not finish" >&2 ;;
	*[!0-9]*) ;;
	*[!0]*) ;;
	*) reward=1 ;;
	esac
	echo "swerve: ` + swefactory.Marker + `=${swerve_status:-none}, reward $reward"
	echo "$reward" > "$verifier/` + harbor.RewardText + `"
}
trap '{ case $BASH_COMMAND in echo*` + swefactory.Marker + `=*) swerve_status=$(eval "printf %s ${BASH_COMMAND#echo}"); swerve_status=${swerve_status##*` + swefactory.Marker + `=} ;; esac; } 2>/dev/null' DEBUG
trap swerve_reward EXIT
set -o functrace # the DEBUG trap also sees the commands of the sourced script
source ` + harbor.TestsDir + `/eval.sh
`)
	return b.String()
}

// expectedTests is tests/expected_tests.json for a row whose eval script
// runs pytest: the module-level test functions the test patch adds (or
// rewrites the def line of) in the files the eval script names, as pytest
// names them ("tests/test_x.py::test_y"). nil when there are none.
func expectedTests(t *task.Task) []byte {
	if !pytestRun.MatchString(t.EvalScript) {
		return nil
	}
	var tests []string
	seen := map[string]bool{}
	file := ""
	for _, l := range strings.Split(t.TestPatch, "\n") {
		switch {
		case strings.HasPrefix(l, "+++ "):
			file = ""
			if f, ok := strings.CutPrefix(strings.TrimSpace(l[4:]), "b/"); ok && strings.HasSuffix(f, ".py") && strings.Contains(t.EvalScript, f) {
				file = f
			}
		case file != "" && strings.HasPrefix(l, "+"):
			if m := addedTest.FindStringSubmatch(l[1:]); m != nil && !seen[file+"::"+m[1]] {
				seen[file+"::"+m[1]] = true
				tests = append(tests, file+"::"+m[1])
			}
		}
	}
	if len(tests) == 0 {
		return nil
	}
	b, _ := json.MarshalIndent(harbor.Expected{Runner: "pytest", Tests: tests}, "", "  ")
	return append(b, '\n')
}

var (
	pytestRun = lazyre.New(`(^|[\s/;&|(])(py\.test|pytest)($|[\s;&|)])`)
	addedTest = lazyre.New(`^(?:async\s+)?def\s+(test\w*)\s*\(`)
)

// solveScript is solution/solve.sh: the gold patch, inlined as a quoted
// heredoc, applied with git apply in the repository (/testbed when the box
// has it, else the working directory).
func solveScript(id, patch string) string {
	if !strings.HasSuffix(patch, "\n") {
		patch += "\n"
	}
	eof := heredocDelimiter(patch, "EOF_SWERVE_GOLD_PATCH")
	var b strings.Builder
	fmt.Fprintf(&b, "#!/bin/bash\n# Reference solution for %s, made by swerve convert harbor:\n", oneLine(id))
	b.WriteString(`# the dataset's gold patch, applied to the repository.
set -euo pipefail

if [ -d /testbed ]; then cd /testbed; fi
patch_file=$(mktemp)
trap 'rm -f "$patch_file"' EXIT
cat > "$patch_file" <<'` + eof + `'
` + patch + eof + `
if ! git apply --verbose "$patch_file"; then
	echo "swerve: git apply failed; trying patch" >&2
	patch --batch --forward --fuzz=5 -p1 -i "$patch_file"
fi
`)
	return b.String()
}

// heredocDelimiter returns base, with a numeric suffix if needed, so that
// no line of body equals it.
func heredocDelimiter(body, base string) string {
	lines := make(map[string]bool)
	for _, l := range strings.Split(body, "\n") {
		lines[l] = true
	}
	eof := base
	for i := 1; lines[eof]; i++ {
		eof = fmt.Sprintf("%s_%d", base, i)
	}
	return eof
}
