package task

import (
	"bytes"
	"encoding/json"
	"strings"
	"unicode/utf8"
)

// fields reads typed values out of one decoded row. It keeps the first
// problem it meets, so a converter can read everything and check once.
type fields struct {
	m   map[string]json.RawMessage
	raw json.RawMessage // the whole row
	// native holds the row's values as Go values when the reader had them
	// (parquet), which spares decoding the JSON again; m stays the source
	// for anything native cannot answer.
	native map[string]any
	err    *fieldError
}

func (f *fields) fail(field, format string, args ...any) {
	if f.err == nil {
		f.err = fieldErrorf(field, format, args...)
	}
}

// value returns the raw value of name, or nil when it is absent or null.
func (f *fields) value(name string) json.RawMessage {
	v, ok := f.m[name]
	if !ok || isNull(v) {
		return nil
	}
	return v
}

// has reports whether name is present and not null.
func (f *fields) has(name string) bool {
	if x, ok := f.native[name]; ok {
		return x != nil
	}
	return f.value(name) != nil
}

// str reads an optional string field; absent and null read as "".
func (f *fields) str(name string) string {
	if x, ok := f.native[name]; ok {
		switch x := x.(type) {
		case nil:
			return ""
		case string:
			return x
		}
	}
	v := f.value(name)
	if v == nil {
		return ""
	}
	s, ok := unquote(v)
	if !ok {
		f.fail(name, "not a string (got %s)", kindOf(v))
		return ""
	}
	return s
}

// unquote decodes a JSON string value. Rows were validated when they were
// split, so a string without escapes can be taken as it stands.
func unquote(v json.RawMessage) (string, bool) {
	if len(v) >= 2 && v[0] == '"' && v[len(v)-1] == '"' {
		body := v[1 : len(v)-1]
		if bytes.IndexByte(body, '\\') < 0 && bytes.IndexByte(body, '"') < 0 && utf8.Valid(body) {
			return string(body), true
		}
	}
	var s string
	if err := json.Unmarshal(v, &s); err != nil {
		return "", false
	}
	return s, true
}

// required reads a string field that must be present and not empty.
func (f *fields) required(name string) string {
	if !f.has(name) {
		f.fail(name, "missing")
		return ""
	}
	s := f.str(name)
	if s == "" && f.err == nil {
		f.fail(name, "empty")
	}
	return s
}

// present reads a string field that must be present but may be empty.
func (f *fields) present(name string) string {
	if !f.has(name) {
		f.fail(name, "missing")
		return ""
	}
	return f.str(name)
}

// scalar reads a string, or a number or boolean rendered as its JSON text
// (some datasets store version as 3.1 rather than "3.1").
func (f *fields) scalar(name string) string {
	v := f.value(name)
	if v == nil {
		return ""
	}
	switch v[0] {
	case '"':
		return f.str(name)
	case '{', '[':
		f.fail(name, "not a string or number (got %s)", kindOf(v))
		return ""
	default:
		return string(v)
	}
}

// list reads a list of strings stored either as a JSON array or as a string
// holding one (SWE-bench's FAIL_TO_PASS). Absent and null read as an empty
// list; use has to require the field.
func (f *fields) list(name string) []string {
	if x, ok := f.native[name]; ok {
		switch x := x.(type) {
		case nil:
			return []string{}
		case string:
			return f.listIn(name, x)
		case []any:
			out := make([]string, len(x))
			all := true
			for i, it := range x {
				out[i], all = it.(string)
				if !all {
					break
				}
			}
			if all {
				return out
			}
		}
	}
	v := f.value(name)
	if v == nil {
		return []string{}
	}
	if v[0] == '"' {
		s, ok := unquote(v)
		if !ok {
			f.fail(name, "not a JSON list of strings")
			return []string{}
		}
		return f.listIn(name, s)
	}
	return f.listOf(name, v)
}

// listIn decodes a string holding a JSON list of strings.
func (f *fields) listIn(name, s string) []string {
	s = strings.TrimSpace(s)
	if s == "" {
		f.fail(name, "not a JSON list of strings (empty string)")
		return []string{}
	}
	return f.listOf(name, json.RawMessage(s))
}

// listOf decodes a JSON list of strings.
func (f *fields) listOf(name string, v json.RawMessage) []string {
	if v[0] != '[' {
		f.fail(name, "not a JSON list of strings")
		return []string{}
	}
	if out, ok := parseStringList(v); ok {
		return out
	}
	// Find out what is wrong, for the message.
	var items []json.RawMessage
	if json.Unmarshal(v, &items) != nil {
		f.fail(name, "not a JSON list of strings")
		return []string{}
	}
	out := make([]string, len(items))
	for i, it := range items {
		if len(it) == 0 || it[0] != '"' || json.Unmarshal(it, &out[i]) != nil {
			f.fail(name, "not a JSON list of strings (item %d is %s)", i, kindOf(it))
			return []string{}
		}
	}
	return out
}

// parseStringList is a quick reader for the common case, a JSON list whose
// items are all strings; it reports false for anything else.
func parseStringList(b []byte) ([]string, bool) {
	i := skipSpace(b, 0)
	if i >= len(b) || b[i] != '[' {
		return nil, false
	}
	out := []string{}
	i = skipSpace(b, i+1)
	if i < len(b) && b[i] == ']' {
		return out, skipSpace(b, i+1) == len(b)
	}
	for {
		if i >= len(b) || b[i] != '"' {
			return nil, false
		}
		j, escaped := i+1, false
		for ; j < len(b) && b[j] != '"'; j++ {
			switch {
			case b[j] == '\\':
				escaped = true
				j++
			case b[j] < 0x20:
				return nil, false
			}
		}
		if j >= len(b) {
			return nil, false
		}
		lit := b[i : j+1]
		if escaped || !utf8.Valid(lit) {
			var s string
			if json.Unmarshal(lit, &s) != nil {
				return nil, false
			}
			out = append(out, s)
		} else {
			out = append(out, string(lit[1:len(lit)-1]))
		}
		i = skipSpace(b, j+1)
		switch {
		case i >= len(b):
			return nil, false
		case b[i] == ']':
			return out, skipSpace(b, i+1) == len(b)
		case b[i] != ',':
			return nil, false
		}
		i = skipSpace(b, i+1)
	}
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// isNull reports whether v is the JSON literal null.
func isNull(v json.RawMessage) bool {
	return bytes.Equal(bytes.TrimSpace(v), []byte("null"))
}

// kindOf names the JSON type of v for error messages.
func kindOf(v json.RawMessage) string {
	v = bytes.TrimSpace(v)
	if len(v) == 0 {
		return "nothing"
	}
	switch v[0] {
	case '"':
		return "a string"
	case '{':
		return "an object"
	case '[':
		return "a list"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	default:
		return "a number"
	}
}
