package reward

import (
	"crypto/rand"
	"encoding/hex"
	"strconv"
	"strings"
)

// A sealed run makes bash's own trace of the eval script tell itself apart
// from anything the code under test prints.
//
// The script runs under a small bash program (sealedRunner) that first
// reads a fresh random nonce from its standard input — never from argv or
// the environment, so /proc/PID/cmdline and environ do not show it — and
// sets PS4 to "+<nonce> ", unexported. Every line bash's xtrace writes then
// reads "++<nonce> cmd" (one more '+' per level, as bash repeats PS4's first
// character; sourcing the script adds one). The script runs in a subshell,
// so whatever it does (exit, exec, its own EXIT trap, a signal that kills
// it), the runner afterwards prints "<nonce> end <status>" with the
// script's own exit status. Programs the script starts are exec'd without
// the unexported variables and cannot learn the nonce, so they cannot
// print a line bash would have traced, nor the end line.
//
// From the raw output, ParseSealed produces the log upstream tools would
// have written (each "+<nonce>" removed, which turns "++<nonce> " into the
// "+ " of `bash /eval.sh`), cut before the end line: anything printed after
// it was printed after the script ended. It also lists the trusted trace
// lines, which graders anchor their verdicts on.
//
// The runner's own stderr goes to /dev/null (the script's is restored), so
// bash's notice of a script killed by a signal is not added to the log.
//
// The script runs with `source`, so $0 and ${BASH_SOURCE[0]} are the
// script's path, as they are for `bash /eval.sh`. Differences that remain:
// $BASH_SUBSHELL is 1, not 0, and a top-level `return` ends the script
// instead of being an error.
//
// The runner is started with sandbox.ExecRequest.PrivateMemory: it is
// non-dumpable, so the tests cannot read the nonce out of its memory
// either. bash started that way does not source BASH_ENV; the helper hands
// it over as SWERVE_BASH_ENV and the runner sources it, as bash would have.
const sealedRunner = `set +xa; IFS= read -r n || exit 125; exec </dev/null; ` +
	`if [ -n "${SWERVE_BASH_ENV-}" ]; then export BASH_ENV="$SWERVE_BASH_ENV"; unset SWERVE_BASH_ENV; . "$BASH_ENV"; fi; ` +
	`PS4="+$n "; declare +x PS4 n; unset BASH_XTRACEFD; ` +
	`exec 3>&2 2>/dev/null; ( exec 2>&3 3>&-; source "$0" ); c=$?; ` +
	`printf '\n%s end %d\n' "$n" "$c"`

// Trace is what bash itself traced during a sealed run: the only lines of
// the log that code under test cannot have written.
type Trace struct {
	// Lines are the trusted trace lines in the order bash wrote them.
	Lines []TraceLine
	// Ended is set when the runner's end line was seen: the script ended
	// (by itself or killed) and ExitCode on the ScriptRun is its status.
	Ended bool
}

// TraceLine is one line bash's xtrace wrote.
type TraceLine struct {
	// Text is the traced command as bash printed it after PS4 (for
	// `: '>>>>> Start Test Output'`, exactly that), up to the end of the
	// line, a trailing "\r" removed.
	Text string
	// Start and End are the byte offsets of Text in the run's Log.
	Start, End int
}

// Find returns the index of the first trusted line at or after from whose
// text is text, or -1.
func (tr *Trace) Find(text string, from int) int {
	if tr == nil {
		return -1
	}
	for i := max(from, 0); i < len(tr.Lines); i++ {
		if tr.Lines[i].Text == text {
			return i
		}
	}
	return -1
}

// newNonce returns 128 random bits in hex.
func newNonce() string {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic("reward: no randomness for a sealed run: " + err.Error())
	}
	return hex.EncodeToString(b[:])
}

// ParseSealed turns the raw output of a sealed run into the upstream log,
// the trusted trace and the script's exit status (-1 when no end line).
func ParseSealed(raw, nonce string) (log string, tr *Trace, exitCode int) {
	tr = &Trace{}
	exitCode = -1
	// The end line: the runner prints "\n<nonce> end <n>\n"; the "\n" it
	// puts first is not the script's.
	endMark := "\n" + nonce + " end "
	if i := strings.Index(raw, endMark); i >= 0 {
		rest := raw[i+len(endMark):]
		line, _, _ := strings.Cut(rest, "\n")
		if n, err := strconv.Atoi(strings.TrimSuffix(line, "\r")); err == nil {
			tr.Ended, exitCode = true, n
		}
		raw = raw[:i]
	}
	// Rewrite the prefixes and note where each trusted line lands.
	tag := "+" + nonce
	var b strings.Builder
	b.Grow(len(raw))
	for {
		i := strings.Index(raw, tag)
		if i < 0 {
			b.WriteString(raw)
			break
		}
		b.WriteString(raw[:i])
		raw = raw[i+len(tag):]
		// What follows PS4's "+<nonce>" is its " ", then the command.
		if !strings.HasPrefix(raw, " ") {
			continue
		}
		b.WriteByte(' ')
		raw = raw[1:]
		line, _, _ := strings.Cut(raw, "\n")
		text := strings.TrimSuffix(line, "\r")
		start := b.Len()
		tr.Lines = append(tr.Lines, TraceLine{Text: text, Start: start, End: start + len(text)})
	}
	return b.String(), tr, exitCode
}
