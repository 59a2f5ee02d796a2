package tamper

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// ApplyTestPatch gives a file the content git gives it (git is the oracle:
// git diff writes the patch and the expected file is the one it was made
// from), including a last line without a line end on either side.
func TestApplyTestPatchMatchesGit(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git on PATH")
	}
	cases := []struct{ name, before, after string }{
		{"change in the middle", "a\nb\nc\n", "a\nB\nc\n"},
		{"new last line without a line end", "a\nb\n", "a\nb\nc"},
		{"old last line without a line end, given one", "a\nb", "a\nb\n"},
		{"old last line without a line end, changed", "a\nb", "a\nc"},
		{"line end taken from the last line", "a\nb\n", "a\nb"},
		{"both without a line end, change above", "a\nb\nc\nd\ne\nf\ng\nh", "A\nb\nc\nd\ne\nf\ng\nh"},
		{"only deletes", "a\nb\nc\nd\n", "a\nd\n"},
		{"new file", "", "x\ny\n"},
		{"new file without a line end", "", "x\ny"},
		{"emptied", "a\nb", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			a, b := filepath.Join(dir, "a"), filepath.Join(dir, "b")
			for p, s := range map[string]string{a: tc.before, b: tc.after} {
				if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			cmd := exec.Command("git", "diff", "--no-index", "--no-prefix", "a", "b")
			cmd.Dir = dir
			out, _ := cmd.Output() // exit 1: the files differ
			diff := string(out)
			if tc.before == "" {
				diff = strings.Replace(diff, "--- a\n", "--- /dev/null\n", 1)
			}
			if !strings.Contains(diff, "+++ b\n") {
				t.Fatalf("git diff made no patch:\n%s", diff)
			}
			got, err := ApplyTestPatch(diff, "b", tc.before)
			if err != nil || got != tc.after {
				t.Errorf("ApplyTestPatch = %q, %v; want %q\n%s", got, err, tc.after, diff)
			}
		})
	}
}
