package fsutil

import "testing"

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
