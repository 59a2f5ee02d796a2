package tamper

import (
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/swerve-dev/swerve/internal/task"
)

func TestCargoFilters(t *testing.T) {
	for _, tc := range []struct {
		cmd  string
		want string // filters joined by "|", "!" for not ok
	}{
		{`(cargo test --package ruff_linter --lib rules::eradicate) | cat`, "rules::eradicate"},
		{`(RUSTFLAGS=-Awarnings cargo test --package bat --test integration_tests pag) | cat`, "pag"},
		{`(cargo test --no-fail-fast -- test_cp_cp test_cp_same_file) | cat`, "test_cp_cp|test_cp_same_file"},
		{`(cargo test --test sync_mpsc --no-fail-fast) | cat`, ""},
		{`(RUSTFLAGS="--cfg tokio_unstable" cargo test --features full --test rt_metrics) | cat`, ""},
		{`(cargo test -p nu-command --no-fail-fast --test main find::) | cat`, "find::"},
		{`(RUSTFLAGS=-Awarnings cargo test --package ripgrep --test integration -- regression::r2208 --exact) | cat`, "!"},
		{`go test ./...`, "!"},
	} {
		f, ok := cargoFilters(tc.cmd)
		got := strings.Join(f, "|")
		if !ok {
			got = "!"
		}
		if got != tc.want {
			t.Errorf("%s: %q, want %q", tc.cmd, got, tc.want)
		}
	}
}

const rsSample = `use std::io;

// fn commented_out() {}

#[test]
fn parses_empty() {
    let s = "a { b"; // a brace in a string
    let c = '{';
    assert_eq!(parse(s), 3);
    assert_eq!(c, '{');
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn render_label() {
        let r = r#"raw "quoted" }"#;
        assert_eq!(render(r), "label");
    }

    #[tokio::test]
    async fn reads_all() {
        let _s: &'static str = "}";
        assert!(ready().await);
    }

    #[test]
    fn early_exit() {
        if skip() {
            return;
        }
        assert_eq!(one(), 1u8);
    }

    #[test]
    #[should_panic]
    fn panics() {
        assert_eq!(boom(), 0);
    }

    #[test]
    fn under_if() {
        if cond() {
            assert_eq!(one(), 1);
        } else {
            assert_eq!(two(), 2);
        }
        let v = vec![1, 2];
        assert_eq!(v.len(), 0x2);
    }
}
`

func TestRustMutation(t *testing.T) {
	fns, ok := rsTests(rsSample)
	if !ok {
		t.Fatal("sample not read")
	}
	by := map[string]rsFn{}
	for _, f := range fns {
		by[f.name] = f
	}
	if len(fns) != 6 {
		t.Fatalf("found %d tests, want 6", len(fns))
	}
	for _, tc := range []struct {
		fn     string
		negate bool
		old    string // the text the edit replaces ("" for an insertion)
		want   string // prefix of the new text; "-" for no change
	}{
		{"parses_empty", false, "3", "2"},
		{"render_label", false, "", ""},
		{"reads_all", false, "", "-"},
		{"reads_all", true, "ready().await", "!(ready().await)"},
		{"early_exit", false, "", "-"},
		{"under_if", false, "", "-"}, // 0x2 is not read; the others sit under if
		{"parses_empty", true, "assert_eq!", "assert_ne!"},
	} {
		m, ok := rsMutation(rand.New(rand.NewPCG(1, 2)), rsSample, by[tc.fn], tc.negate)
		if tc.want == "-" {
			if ok {
				t.Errorf("%s: changed %q to %q, want no change", tc.fn, rsSample[m.start:m.end], m.text)
			}
			continue
		}
		if !ok || rsSample[m.start:m.end] != tc.old || !strings.HasPrefix(m.text, tc.want) {
			t.Errorf("%s negate=%v: changed %q to %q (ok %v), want %q to %q", tc.fn, tc.negate, rsSample[m.start:m.end], m.text, ok, tc.old, tc.want)
		}
		if tc.fn == "render_label" && (m.start != strings.Index(rsSample, `label");`)+5 || m.text == "") {
			t.Errorf("render_label: the string is not lengthened before its quote: %+v", m)
		}
	}
	if rsPlainTest(by["panics"]) || !rsPlainTest(by["reads_all"]) {
		t.Error("rsPlainTest: should_panic must not be plain, tokio::test must")
	}
}

func TestRustLiteralEdit(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"0", "1"}, {"7usize", "6usize"}, {"1_000", "999"}, {"1.5", "2.5"}, {"2f32", "3f32"}, {"true", "false"},
		{"0x2", ""}, {"'a'", ""}, {"x", ""}, {"1e3", ""},
	} {
		m, ok := rsLiteralEdit(rand.New(rand.NewPCG(1, 1)), tc.in, 0, len(tc.in))
		if tc.want == "" {
			if ok {
				t.Errorf("%s: changed to %q", tc.in, m.text)
			}
			continue
		}
		if !ok || m.text != tc.want {
			t.Errorf("%s: %q (ok %v), want %q", tc.in, m.text, ok, tc.want)
		}
	}
}

// TestRustCanariesMultilingual plans Rust canaries for every
// parse_log_cargo row of Multilingual from git mirrors (see
// TestGoCanariesMultilingual); every injected file must be read back
// with two more tests, and parse with rustfmt where it is installed.
func TestRustCanariesMultilingual(t *testing.T) {
	withRustCanaries(t)
	tasks := loadShared(t, "multilingual-test")
	mirrors := os.Getenv("SWERVE_GIT_MIRRORS")
	rustfmt, _ := exec.LookPath("rustfmt")
	planned, rows := 0, 0
	reasons := map[string]int{}
	for i := range tasks {
		tk := &tasks[i]
		if tk.LogParser != "parse_log_cargo" {
			continue
		}
		rows++
		gitDir := mirrorDir(mirrors, tk.Repo)
		c := PlanCanariesSeeded(tk, mirrorSource(tk, gitDir), uint64(i), 11)
		if !c.Available() {
			why := c.Unavailable
			if gitDir == "" {
				why += " (no mirror)"
			}
			reasons[why]++
			t.Logf("%s: %s", tk.InstanceID, why)
			continue
		}
		planned++
		if rustfmt != "" {
			// rustfmt parses the file (exit 1 on a syntax error); it would
			// look for the files of out-of-line modules, which are not
			// here, so their declarations are left out.
			f := filepath.Join(t.TempDir(), "x.rs")
			if err := os.WriteFile(f, []byte(outOfLineMod.ReplaceAllString(c.content, "")), 0o644); err != nil {
				t.Fatal(err)
			}
			if out, err := exec.Command(rustfmt, "--edition", "2021", "--emit", "stdout", f).CombinedOutput(); err != nil {
				t.Errorf("%s: rustfmt: %v: %s", tk.InstanceID, err, lastLine(string(out)))
			}
		}
		t.Logf("%s: mutants of %s in %s: %s (must fail), %s (must pass)", tk.InstanceID, c.Original, c.File, c.MustFail, c.MustPass)
	}
	t.Logf("Rust canaries planned for %d of %d parse_log_cargo rows", planned, rows)
	for why, n := range reasons {
		t.Logf("  %d: %s", n, why)
	}
	if rows != 43 {
		t.Errorf("%d parse_log_cargo rows, want 43", rows)
	}
}

var outOfLineMod = regexp.MustCompile(`(?m)^[ \t]*(pub(\([\w:]+\))? )?mod \w+;[ \t]*$`)

// mirrorDir finds the git mirror of repo under dir (owner+name/repo, the
// name's case as GitHub spells it), "" when there is none.
func mirrorDir(dir, repo string) string {
	if dir == "" {
		return ""
	}
	want := strings.ToLower(strings.ReplaceAll(repo, "/", "+"))
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if strings.ToLower(e.Name()) == want {
			return filepath.Join(dir, e.Name(), "repo")
		}
	}
	return ""
}

// TestRustCanariesPlan plans canaries on the sample: the file gains the
// two copies and is otherwise unchanged, the names are new and contain the
// command's filter, the must-fail copy is changed.
func TestRustCanariesPlan(t *testing.T) {
	withRustCanaries(t)
	tk := &task.Task{
		InstanceID: "demo__demo-2", LogParser: "parse_log_cargo",
		EvalScript: "#!/bin/bash\n: '>>>>> Start Test Output'\n(cargo test --lib tests::) | cat\n: '>>>>> End Test Output'\n",
		TestPatch:  newFileDiffForTest("src/lib.rs", rsSample),
		FailToPass: []string{"tests::render_label"}, PassToPass: []string{"tests::reads_all", "parses_empty"},
	}
	src := func(f string) (string, bool) { return rsSample, f == "src/lib.rs" }
	for seed := range uint64(30) {
		c := PlanCanariesSeeded(tk, src, seed, 5)
		if !c.Available() {
			t.Fatalf("seed %d: %s", seed, c.Unavailable)
		}
		if c.Original != "tests::render_label" || c.Python() {
			t.Fatalf("seed %d: mutants of %s (python injector %v)", seed, c.Original, c.Python())
		}
		fail, pass := rsBlockOf(t, c.content, c.MustFail), rsBlockOf(t, c.content, c.MustPass)
		rest := strings.Replace(strings.Replace(c.content, fail+"\n\n", "", 1), pass+"\n\n", "", 1)
		rest = strings.Replace(strings.Replace(rest, "\n\n"+fail, "", 1), "\n\n"+pass, "", 1)
		if rest != rsSample {
			t.Fatalf("seed %d: the file changed beyond the two copies:\n%s", seed, c.content)
		}
		if strings.Contains(fail, `"label")`) || !strings.Contains(pass, "fn "+c.MustPass+"()") {
			t.Fatalf("seed %d: copies:\n%s\n%s", seed, fail, pass)
		}
		if !strings.Contains("tests::"+c.MustFail, "tests::") || strings.Contains(rsSample, c.MustFail) || strings.Contains(rsSample, c.MustPass) {
			t.Fatalf("seed %d: names %s %s", seed, c.MustFail, c.MustPass)
		}
		inj := string(c.Injector())
		if !strings.HasPrefix(inj, "cat > 'src/lib.rs' <<'EOF_") || !strings.Contains(inj, c.content) {
			t.Fatalf("seed %d: injector %q", seed, inj[:min(len(inj), 80)])
		}
	}
}

// rsBlockOf is the copy named name in content (its attributes to its
// closing brace).
func rsBlockOf(t *testing.T, content, name string) string {
	t.Helper()
	fns, ok := rsTests(content)
	if !ok {
		t.Fatal("content not read")
	}
	for _, f := range fns {
		if f.name == name {
			return content[f.start : f.end+1]
		}
	}
	t.Fatalf("no test %s in:\n%s", name, content)
	return ""
}

// TestShellInjectorWrites runs the shell injector with /bin/sh: it
// writes the planned file byte for byte, whatever the file holds
// (quotes, backslashes, dollars, a line like a here-document's end).
func TestShellInjectorWrites(t *testing.T) {
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("no sh")
	}
	for _, content := range []string{rsSample, "a $HOME `x` \\n 'q' \"d\"\nEOF\nEOF_0000000000000001\n", "no final newline"} {
		dir := t.TempDir()
		c := &Canaries{File: "src/lib.rs", content: content, seed: 1, framework: frameworkRust}
		if err := os.MkdirAll(filepath.Join(dir, "src"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "inj"), c.Injector(), 0o600); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(sh, "inj")
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%v: %s", err, out)
		}
		got, err := os.ReadFile(filepath.Join(dir, "src/lib.rs"))
		want := content
		if !strings.HasSuffix(want, "\n") {
			want += "\n"
		}
		if err != nil || string(got) != want {
			t.Errorf("wrote %q, want %q (%v)", got, want, err)
		}
	}
}

// withRustCanaries turns the Rust canaries on for one test (graders do
// not get them yet, see ExtraCanariesEnv).
func withRustCanaries(t *testing.T) {
	t.Helper()
	t.Setenv(ExtraCanariesEnv, frameworkRust)
}

// TestRustCanariesOff: graders get no Rust canaries yet.
func TestRustCanariesOff(t *testing.T) {
	tk := &task.Task{LogParser: "parse_log_cargo", EvalScript: ": '>>>>> Start Test Output'\ncargo test\n: '>>>>> End Test Output'\n", TestPatch: "x", FailToPass: []string{"a"}}
	if c := PlanCanariesSeeded(tk, func(string) (string, bool) { return "", false }, 1, 2); c.Available() || !strings.Contains(c.Unavailable, "parse_log_cargo") {
		t.Errorf("cargo row: %+v, want not available for parse_log_cargo", c)
	}
}
