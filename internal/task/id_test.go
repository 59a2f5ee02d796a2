package task

import (
	"strings"
	"testing"
)

func TestCheckID(t *testing.T) {
	for _, tc := range []struct {
		id   string
		want string // part of the error; empty: accepted
	}{
		{"django__django-16901", ""},
		{"pandas-dev__pandas.95280573.pr_53652", ""},
		{"aiohttp-0123456789ab", ""},
		{"Acme__Widgets-15", ""},
		{"dns-blacklisting", ""},
		{"with:colon", ""},
		{"ünïcode", ""},
		{strings.Repeat("a", MaxIDLen), ""},
		{"", "empty"},
		{".", "names a directory itself"},
		{"..", "names a directory itself"},
		{"a/b", `contains "/"`},
		{"../escape", `contains "/"`},
		{"/abs", `contains "/"`},
		{"nul\x00byte", "control character"},
		{"new\nline", "control character"},
		{"tab\there", "control character"},
		{"del\x7f", "control character"},
		{"c1\u0085", "control character"},
		{"bad\xffutf8", "not valid UTF-8"},
		{strings.Repeat("a", MaxIDLen+1), "over the 255"},
	} {
		err := CheckID(tc.id)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("CheckID(%q) = %v, want accepted", tc.id, err)
		case tc.want != "" && err == nil:
			t.Errorf("CheckID(%q) accepted, want an error with %q", tc.id, tc.want)
		case tc.want != "" && !strings.Contains(err.Error(), tc.want):
			t.Errorf("CheckID(%q) = %v, want an error with %q", tc.id, err, tc.want)
		case err != nil && strings.ContainsAny(err.Error(), "\n\x00"):
			t.Errorf("CheckID(%q) = %q: not one line", tc.id, err)
		}
	}
}
