package tamper

import (
	"crypto/sha1"
	"encoding/hex"
	"fmt"
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

// Every file the real datasets' test patches create, where the patch keeps
// git's "index 000…..<id>" line (Multilingual does), gets the content whose
// blob id that line names: git wrote it, so it is the oracle, and many of
// those files end without a line end.
func TestApplyTestPatchCreatedFilesMatchIndex(t *testing.T) {
	checked, noNL := 0, 0
	for _, name := range []string{"verified-test", "lite-test", "multilingual-test"} {
		for _, tk := range loadShared(t, name) {
			for _, f := range parseDiff(tk.TestPatch) {
				if !f.Added {
					continue
				}
				id := createdIndex(tk.TestPatch, f.Path)
				if id == "" {
					continue
				}
				got, err := ApplyTestPatch(tk.TestPatch, f.Path, "")
				if err != nil {
					t.Errorf("%s %s: %v", tk.InstanceID, f.Path, err)
					continue
				}
				h := sha1.New()
				fmt.Fprintf(h, "blob %d\x00%s", len(got), got)
				if sum := hex.EncodeToString(h.Sum(nil)); !strings.HasPrefix(sum, id) {
					t.Errorf("%s %s: blob %s, the patch says %s", tk.InstanceID, f.Path, sum, id)
				}
				checked++
				if !strings.HasSuffix(got, "\n") {
					noNL++
				}
			}
		}
	}
	t.Logf("%d created files checked against their index line, %d of them without a last line end", checked, noNL)
	if checked == 0 || noNL == 0 {
		t.Errorf("%d created files checked, %d without a last line end: the data no longer covers the case", checked, noNL)
	}
}

// createdIndex is the new blob id on the index line of the section that
// creates file ("index 000…..<id>"), or "".
func createdIndex(diff, file string) string {
	in := false
	for _, l := range strings.Split(diff, "\n") {
		switch {
		case strings.HasPrefix(l, "diff --git "):
			in = strings.HasSuffix(l, " b/"+file)
		case in && strings.HasPrefix(l, "index "):
			old, id, ok := strings.Cut(strings.Fields(l)[1], "..")
			if !ok || strings.Trim(old, "0") != "" {
				return ""
			}
			return id
		}
	}
	return ""
}
