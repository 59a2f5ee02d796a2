package fsutil

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

func TestSafeName(t *testing.T) {
	for _, tc := range []struct{ id, want string }{
		{"django__django-16901", "django__django-16901"},
		{"pandas-dev__pandas.95280573.pr_53652", "pandas-dev__pandas.95280573.pr_53652"},
		{"ünïcode.id", "ünïcode.id"},
		{"a/b", "a%2Fb"},
		{"a__b", "a__b"},
		{"a:b", "a%3Ab"},
		{"a_b", "a_b"},
		{"100%", "100%25"},
		{"a%2Fb", "a%252Fb"},
		{"back\\slash", "back%5Cslash"},
		{"new\nline", "new%0Aline"},
		{".", "%2E"},
		{"..", "%2E%2E"},
		{"...", "..."},
		{"", "%"},
	} {
		if got := SafeName(tc.id); got != tc.want {
			t.Errorf("SafeName(%q) = %q, want %q", tc.id, got, tc.want)
		}
	}
}

// Two different ids never share a directory: the ids that collided under
// the old mapping ("/" as "__", ":" as "_") and ones built to collide with
// the escapes themselves.
func TestSafeNameOneToOne(t *testing.T) {
	ids := []string{
		"a/b", "a__b", "a:b", "a_b", "a%2Fb", "a%3Ab", "a%b", "a%25b",
		".", "..", "%2E", "%2E%2E", "", "%", "\x00", "%00",
		"x\x7f", "x%7F", "x\\y", "x%5Cy",
	}
	seen := map[string]string{}
	for _, id := range ids {
		name := SafeName(id)
		if other, dup := seen[name]; dup {
			t.Errorf("SafeName(%q) = SafeName(%q) = %q", id, other, name)
		}
		seen[name] = id
		if name == "." || name == ".." || name == "" {
			t.Errorf("SafeName(%q) = %q: not a usable path element", id, name)
		}
		for _, c := range []byte(name) {
			if c == '/' || c == 0 {
				t.Errorf("SafeName(%q) = %q holds %q", id, name, c)
			}
		}
	}
}

// TestRunFilesReadable: files and directories swerve writes for people are
// readable by others on the machine (0644/0755 under a 022 umask), not
// 0600/0700 as os.CreateTemp and os.MkdirTemp make them; the umask still
// applies.
func TestRunFilesReadable(t *testing.T) {
	for _, tc := range []struct {
		umask     int
		file, dir os.FileMode
		name      string
	}{
		{0o022, 0o644, 0o755, "umask 022"},
		{0o077, 0o600, 0o700, "umask 077"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			old := syscall.Umask(tc.umask)
			defer syscall.Umask(old)
			dir := t.TempDir()
			p := filepath.Join(dir, "sub", "result.json")
			if err := WriteFileAtomic(p, []byte("{}\n"), true); err != nil {
				t.Fatal(err)
			}
			f, err := CreateTemp(dir, ".x.tmp-*")
			if err != nil {
				t.Fatal(err)
			}
			f.Close()
			d, err := MkdirTemp(dir, ".d-")
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range []struct {
				path string
				want os.FileMode
			}{{p, tc.file}, {f.Name(), tc.file}, {d, tc.dir}, {filepath.Dir(p), tc.dir}} {
				fi, err := os.Stat(c.path)
				if err != nil {
					t.Fatal(err)
				}
				if got := fi.Mode().Perm(); got != c.want {
					t.Errorf("%s: mode %o, want %o", c.path, got, c.want)
				}
			}
			if !strings.HasPrefix(filepath.Base(f.Name()), ".x.tmp-") || !strings.HasPrefix(filepath.Base(d), ".d-") {
				t.Errorf("names %s %s", f.Name(), d)
			}
		})
	}
}
