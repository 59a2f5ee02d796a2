package tamper

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/swerve-dev/swerve/internal/reward/swebench"
	"github.com/swerve-dev/swerve/internal/task"
)

// forgeGoPass is a patch's library file that rewrites the test binary's
// output so that every failing test reads as passing: the generic forgery
// (a runner that reports PASS for everything) in Go. The test binary runs
// itself again and passes its child's output on, changed, and exits 0.
// It fixes nothing.
const forgeGoPass = `package %s

import (
	"bufio"
	"os"
	"os/exec"
	"strings"
)

func init() {
	if os.Getenv("ZZ_CHILD") != "" || !strings.HasSuffix(os.Args[0], ".test") {
		return
	}
	cmd := exec.Command(os.Args[0], os.Args[1:]...)
	cmd.Env = append(os.Environ(), "ZZ_CHILD=1")
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil || cmd.Start() != nil {
		return
	}
	s := bufio.NewScanner(out)
	for s.Scan() {
		os.Stdout.WriteString(strings.Replace(s.Text(), "--- FAIL", "--- PASS", 1) + "\n")
	}
	_ = cmd.Wait()
	os.Exit(0)
}
`

// TestGoCanariesRun runs real Multilingual rows (go test and cargo test)
// with the host's toolchain (SWERVE_GO_CANARY_RUN=1, SWERVE_GIT_MIRRORS as for
// TestGoCanariesMultilingual; SWERVE_GO_CANARY_ROWS, a regular expression
// of instance ids, picks the rows, gin's by default): the repository at
// the base commit with the gold patch and the test patch, the test file
// replaced by the injector's, the row's test command. The must-fail copy
// must fail, the must-pass copy pass, the listed tests keep the results
// they have without canaries, and Verify finds nothing (rows whose gold
// patch does not resolve on the host are skipped). Then, for Go, the forgery
// above instead of the gold patch: the harness's rule resolves it, and
// Verify rejects it.
func TestGoCanariesRun(t *testing.T) {
	mirrors := os.Getenv("SWERVE_GIT_MIRRORS")
	if os.Getenv("SWERVE_GO_CANARY_RUN") != "1" || mirrors == "" {
		t.Skip("set SWERVE_GO_CANARY_RUN=1 and SWERVE_GIT_MIRRORS to run go tests of real rows on the host")
	}
	rows := regexp.MustCompile(os.Getenv("SWERVE_GO_CANARY_ROWS"))
	if os.Getenv("SWERVE_GO_CANARY_ROWS") == "" {
		rows = regexp.MustCompile(`^gin-gonic__`)
	}
	tasks := loadShared(t, "multilingual-test")
	for i := range tasks {
		tk := &tasks[i]
		if (tk.LogParser != "parse_log_gotest" && tk.LogParser != "parse_log_cargo") || !rows.MatchString(tk.InstanceID) {
			continue
		}
		parse, err := swebench.LookupParser(tk.LogParser)
		if err != nil {
			t.Fatal(err)
		}
		gitDir := mirrorDir(mirrors, tk.Repo)
		t.Run(tk.InstanceID, func(t *testing.T) {
			c := PlanCanariesSeeded(tk, mirrorSource(tk, gitDir), uint64(i), 11)
			if !c.Available() {
				t.Skip(c.Unavailable)
			}
			run := func(patch string, canaries bool) swebench.StatusMap {
				dir := t.TempDir()
				sh(t, dir, "git --git-dir="+gitDir+" archive "+tk.BaseCommit+" | tar x")
				for _, p := range []string{patch, tk.TestPatch} {
					cmd := exec.Command("git", "apply", "-")
					cmd.Dir, cmd.Stdin = dir, strings.NewReader(p)
					if out, err := cmd.CombinedOutput(); err != nil {
						t.Fatalf("git apply: %v: %s", err, out)
					}
				}
				if canaries {
					if err := os.WriteFile(filepath.Join(dir, c.File), []byte(c.content), 0o644); err != nil {
						t.Fatal(err)
					}
				}
				out := sh(t, dir, testCommand(tk.EvalScript)+" || true")
				if os.Getenv("SWERVE_GO_CANARY_LOG") != "" {
					t.Log(out)
				}
				return parse(out, tk)
			}
			plain := run(tk.Patch, false)
			if !listedPass(tk, plain) {
				t.Skip("the gold patch does not resolve with the host's toolchain")
			}
			with := run(tk.Patch, true)
			resolved := listedPass(tk, with)
			t.Logf("mutants of %s: %s=%s %s=%s; resolved without canaries %v, with %v", c.Original, c.MustFail, with[c.MustFail], c.MustPass, with[c.MustPass], listedPass(tk, plain), resolved)
			for _, n := range append(append([]string{}, tk.FailToPass...), tk.PassToPass...) {
				if plain[n] != with[n] {
					t.Errorf("%s: %s without canaries, %s with them", n, plain[n], with[n])
				}
			}
			if with[c.MustFail] != swebench.Failed || with[c.MustPass] != swebench.Passed {
				t.Errorf("canaries: %s %s (must fail), %s %s (must pass)", c.MustFail, with[c.MustFail], c.MustPass, with[c.MustPass])
			}
			if got := c.Verify(with, resolved); len(got) != 0 {
				t.Errorf("gold patch: Verify found %v", got)
			}
			if tk.LogParser != "parse_log_gotest" {
				return
			}
			// The forgery, in the package of the mutated test's file.
			pkg := goPackageName(c.content)
			forged := newFileDiffForTest(filepath.Join(filepath.Dir(c.File), "zz_report.go"), strings.Replace(forgeGoPass, "%s", pkg, 1))
			plainF := run(forged, false)
			withF := run(forged, true)
			t.Logf("forgery: resolved without canaries %v, with %v; Verify: %v", listedPass(tk, plainF), listedPass(tk, withF), c.Verify(withF, listedPass(tk, withF)))
			if listedPass(tk, withF) && len(c.Verify(withF, true)) == 0 {
				t.Errorf("the forgery is resolved and the canaries do not see it")
			}
		})
	}
}

func goPackageName(src string) string {
	gf, ok := parseGoFile(src)
	if !ok {
		return "main"
	}
	return strings.TrimSuffix(gf.file.Name.Name, "_test")
}

func listedPass(tk *task.Task, sm swebench.StatusMap) bool {
	for _, n := range append(append([]string{}, tk.FailToPass...), tk.PassToPass...) {
		if sm[n] != swebench.Passed {
			return false
		}
	}
	return true
}

func sh(t *testing.T, dir, script string) string {
	t.Helper()
	cmd := exec.Command("bash", "-c", script)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v: %s", script, err, out)
	}
	return string(out)
}

// mirrorSource reads tk's test files from a git mirror at its base commit,
// with the test patch applied.
func mirrorSource(tk *task.Task, gitDir string) Source {
	return func(f string) (string, bool) {
		base := ""
		if !CreatedBy(tk.TestPatch, f) {
			if gitDir == "" {
				return "", false
			}
			out, err := exec.Command("git", "--git-dir", gitDir, "show", tk.BaseCommit+":"+f).Output()
			if err != nil {
				return "", false
			}
			base = string(out)
		}
		s, err := ApplyTestPatch(tk.TestPatch, f, base)
		return s, err == nil
	}
}
