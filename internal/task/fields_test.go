package task

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// parseStringList must agree with encoding/json on lists of strings and
// refuse everything else.
func TestParseStringList(t *testing.T) {
	for _, in := range []string{
		`[]`, ` [ ] `, `["a"]`, `["a", "b"]`, "[\n  \"x\",\n  \"y\"\n]\n",
		`["tab\tand \"quote\" and \\ and \u00e9 and \ud83d\ude00"]`,
		`["caf` + "\u00e9" + `", "日本"]`, `["a]", "[b", ",c,"]`,
	} {
		got, ok := parseStringList([]byte(in))
		var want []string
		if err := json.Unmarshal([]byte(in), &want); err != nil {
			t.Fatalf("%s: %v", in, err)
		}
		if !ok || !cmp.Equal(want, got) {
			t.Errorf("parseStringList(%s) = %q, %v; want %q", in, got, ok, want)
		}
	}
	for _, in := range []string{
		``, `[`, `["a"`, `["a",]`, `["a" "b"]`, `[null]`, `["a", null]`, `[1]`, `[["a"]]`,
		`["a"] x`, `{"a": 1}`, `"[]"`, "[\"a\x01\"]", `["unterminated]`,
	} {
		if got, ok := parseStringList([]byte(in)); ok {
			t.Errorf("parseStringList(%q) = %q, true; want false", in, got)
		}
	}
}

func TestFieldsNative(t *testing.T) {
	f := &fields{
		m:      map[string]json.RawMessage{"s": json.RawMessage(`"x"`), "n": json.RawMessage(`5`), "l": json.RawMessage(`["a"]`), "z": json.RawMessage(`null`)},
		native: map[string]any{"s": "x", "n": int64(5), "l": []any{"a"}, "z": nil},
	}
	if f.str("s") != "x" || f.scalar("n") != "5" || !cmp.Equal(f.list("l"), []string{"a"}) || f.has("z") || f.str("missing") != "" {
		t.Errorf("native fields misread")
	}
	if f.err != nil {
		t.Fatal(f.err)
	}
	f.str("n")
	if f.err == nil || f.err.Error() != "n: not a string (got a number)" {
		t.Errorf("str of a number: %v", f.err)
	}
}
