package tamper

import (
	"context"
	cryptorand "crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"path"
	"strings"
	"time"
	"unicode"

	"github.com/swerve-dev/swerve/internal/sandbox"
	"github.com/swerve-dev/swerve/internal/task"
)

// PlanPytest plans canaries for a grader that runs pytest over hidden
// test files it controls itself (R2E-Gym's r2e_tests, SWE-smith's reset
// test files) rather than through a SWE-bench eval script. Tests are
// named by pytest node id (file::[Class::]function[params]); first are
// the tests whose copies are tried first (the ones a fix makes pass),
// others next. The must-fail canary is a mutant of one of them and the
// must-pass one a copy of a test of the same class, both placed in that
// test's file (Canaries.File, as the node id names it); when no listed
// test has an assertion to change, they are fixed-template module-level
// functions in the file of the first test. src reads a test file as the
// run will see it. The caller writes the injector (Injector, with File
// pointed at where the file really is) and runs it before the tests.
func PlanPytest(first, others []string, src Source) *Canaries {
	var b [16]byte
	_, _ = cryptorand.Read(b[:])
	return PlanPytestSeeded(first, others, src, binary.LittleEndian.Uint64(b[:8]), binary.LittleEndian.Uint64(b[8:]))
}

// PlanPytestSeeded is PlanPytest from a fixed seed (for tests).
func PlanPytestSeeded(first, others []string, src Source, seed1, seed2 uint64) *Canaries {
	t := &task.Task{FailToPass: first, PassToPass: others}
	rng := rand.New(rand.NewPCG(seed1, seed2))
	taken := takenNames(t)
	why := "no test file could be read"
	if src != nil {
		c, reason := safePlan(t, frameworkPytest, "", src, rng, taken)
		if c != nil {
			c.framework = frameworkPytest
			return c
		}
		why = reason
	}
	file := ""
	for _, n := range append(append([]string{}, first...), others...) {
		if f, _, ok := strings.Cut(n, "::"); ok && strings.HasSuffix(f, ".py") {
			file = f
			break
		}
	}
	if file == "" {
		return &Canaries{Unavailable: "not available: no listed test names its file"}
	}
	c := &Canaries{framework: frameworkPytest, Template: why, File: file}
	c.seed = rng.Uint64() >> 12
	c.MustFail = testName(rng, "", taken)
	c.MustPass = testName(rng, "", taken)
	c.blocks[0] = canaryBlock{Source: canaryBody(rng, c.MustFail, false, false)}
	c.blocks[1] = canaryBlock{Source: canaryBody(rng, c.MustPass, false, true)}
	return c
}

// takenNames are the listed tests' names and every word in them: no
// canary may be named like one.
func takenNames(t *task.Task) map[string]bool {
	taken := map[string]bool{}
	for _, n := range append(append([]string{}, t.FailToPass...), t.PassToPass...) {
		taken[n] = true
		for _, w := range strings.FieldsFunc(n, func(r rune) bool { return !(r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r)) }) {
			taken[w] = true
		}
	}
	return taken
}

// Names are the canaries' two test names (must fail, must pass); none
// when there are no canaries.
func (c *Canaries) Names() []string {
	if !c.Available() {
		return nil
	}
	return []string{c.MustFail, c.MustPass}
}

// IsCanary reports whether a test name, in any form a parser gives it
// ("path::Class::fn", "Class.fn", "fn"), names one of the canaries.
func (c *Canaries) IsCanary(name string) bool {
	for _, n := range c.Names() {
		if containsWord(name, n) {
			return true
		}
	}
	return false
}

// DefinesTest reports whether Python source src defines test fn, in class
// class ("" for a module-level function).
func DefinesTest(src, class, fn string) bool {
	_, ok := findTest(src, class, fn)
	return ok
}

// Inject adds the canaries to the test file at file (an absolute path in
// the box, the file Canaries.File names as the run sees it): it writes
// the injector into dir (root's alone) and runs it as root with an
// isolated Python that reads no site configuration, then removes it. It
// says why it failed, "" when the canaries are in.
func Inject(ctx context.Context, box sandbox.Sandbox, c *Canaries, file, dir string) string {
	ic := *c
	ic.File = file
	var b [6]byte
	_, _ = cryptorand.Read(b[:])
	inj := path.Join(dir, "."+hex.EncodeToString(b[:])+".py")
	if err := box.WriteFile(ctx, inj, ic.Injector(), 0o600); err != nil {
		return "write the canary injector: " + err.Error()
	}
	res, err := box.Exec(ctx, sandbox.ExecRequest{
		Cmd: []string{"/bin/sh", "-c", `p=$(command -v python3 || command -v python) && "$p" -I -S "$1"; rc=$?; rm -f "$1"; exit $rc`, "sh", inj},
		Cwd: "/", Timeout: time.Minute,
	})
	switch {
	case err != nil:
		return "run the canary injector: " + err.Error()
	case res.ExitCode != 0:
		return fmt.Sprintf("the canary injector failed (exit %d): %s", res.ExitCode, lastLine(string(res.Output)))
	}
	return ""
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}
