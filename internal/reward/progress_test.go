package reward

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// TestCheckDiff: what grade --patch refuses before opening a box. Every
// shape an applier of the harness takes passes; text with no file header
// at all (a README, a log) does not; an empty patch is "no change".
func TestCheckDiff(t *testing.T) {
	for _, tc := range []struct {
		name, patch string
		ok          bool
	}{
		{"empty", "", true},
		{"blank", "\n  \n", true},
		{"git", "diff --git a/x b/x\nindex 1..2 100644\n--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\n", true},
		{"git rename only", "diff --git a/x b/y\nsimilarity index 100%\nrename from x\nrename to y\n", true},
		{"unified", "--- x.orig\n+++ x\n@@ -1 +1 @@\n-a\n+b\n", true},
		{"unified crlf", "--- x.orig\r\n+++ x\r\n@@ -1 +1 @@\r\n-a\r\n+b\r\n", true},
		{"leading prose", "Here is my fix:\n\n--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\n", true},
		{"context", "*** a/x\n--- b/x\n***************\n*** 1 ****\n! a\n--- 1 ----\n! b\n", true},
		{"markdown", "# Title\n\nSome text.\n\n---\n\nMore text\n", false},
		{"a log", "PASSED tests/test_x.py::test_a\n+++ not after a --- line\n", false},
		{"lone minus line", "--- a/x\nno plus line\n", false},
	} {
		err := CheckDiff(tc.patch)
		if (err == nil) != tc.ok || (err != nil && !errors.Is(err, ErrNotADiff)) {
			t.Errorf("%s: %v, want ok=%v", tc.name, err, tc.ok)
		}
	}
	// The repository's own README is the file a newcomer passes by mistake.
	if b, err := os.ReadFile(filepath.Join("..", "..", "README.md")); err == nil {
		if CheckDiff(string(b)) == nil {
			t.Error("README.md passes as a diff")
		}
	}
}

func TestPhase(t *testing.T) {
	Phase(context.Background(), "nobody listens") // no reporter: nothing happens
	var got []string
	ctx := WithPhases(context.Background(), func(p string) { got = append(got, p) })
	Phase(ctx, "a")
	Phase(ctx, "b")
	if len(got) != 2 || got[0] != "a" || got[1] != "b" {
		t.Errorf("phases %v", got)
	}
}
