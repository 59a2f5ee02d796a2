package task

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Format names the container a dataset was read from.
type Format string

// The formats Load reads.
const (
	FormatParquet    Format = "parquet"
	FormatJSON       Format = "json"   // a JSON list of rows
	FormatJSONObject Format = "object" // one JSON object, one row
	FormatJSONL      Format = "jsonl"
	FormatHarbor     Format = "harbor" // a task directory or a directory of them
)

// LoadOptions tune Load.
type LoadOptions struct {
	// SkipInvalid leaves bad rows out (listing them in LoadResult.Skipped)
	// instead of failing.
	SkipInvalid bool
	// InstanceIDs, when set, lets the reader skip rows that cannot be one of
	// these tasks without decoding them: a parquet file's instance_id column
	// is read first, then only the matching rows; a JSON or JSONL row whose
	// instance_id is not listed is not decoded. Rows skipped this way are not
	// checked, so an invalid row elsewhere in the file does not fail the
	// load. When no row matches (ids that come from other fields), every row
	// is read as without the option. The result still needs Select.
	InstanceIDs []string
}

// LoadResult is what Load read.
type LoadResult struct {
	// Path is the dataset path as given.
	Path   string
	Format Format
	// Dialect is the dialect the file was recognised as.
	Dialect Dialect
	// Tasks are the valid rows in file order.
	Tasks []Task
	// Skipped lists the rows left out under SkipInvalid, in file order.
	Skipped []RowError
}

// row is one undecoded dataset row.
type row struct {
	index int
	line  int
	raw   json.RawMessage            // the row as a JSON object
	m     map[string]json.RawMessage // its fields; nil when err is set
	// native holds the values as Go values when the reader has them.
	native map[string]any
	err    *RowError // the row could not even be decoded
}

// Load reads the dataset at path: a parquet, JSON, single-object JSON or JSONL
// file, a Harbor task directory, or a directory of Harbor tasks.
func Load(ctx context.Context, path string, opts LoadOptions) (*LoadResult, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("load dataset: %w", err)
	}
	if fi.IsDir() {
		return loadHarbor(ctx, path, opts)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("load dataset: %w", err)
	}
	res := &LoadResult{Path: path}
	var rows []row
	read := func(only map[string]bool) {
		switch {
		case bytes.HasPrefix(data, []byte("PAR1")):
			res.Format = FormatParquet
			rows, err = parquetRows(ctx, path, data, only)
		default:
			res.Format, rows, err = jsonRows(path, data, only)
		}
	}
	var only map[string]bool
	if len(opts.InstanceIDs) > 0 {
		only = make(map[string]bool, len(opts.InstanceIDs))
		for _, id := range opts.InstanceIDs {
			only[id] = true
		}
	}
	read(only)
	if err == nil && only != nil && len(rows) == 0 {
		read(nil)
	}
	if err != nil {
		return nil, err
	}
	if len(rows) == 0 {
		return nil, fmt.Errorf("%s: no rows", path)
	}
	if err := convertRows(ctx, res, rows, filepath.Dir(path), opts); err != nil {
		return nil, err
	}
	return res, nil
}

// jsonRows splits a JSON, single-object or JSONL document into rows.
func jsonRows(path string, data []byte, only map[string]bool) (Format, []row, error) {
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))
	body := bytes.TrimSpace(data)
	if len(body) == 0 {
		return "", nil, fmt.Errorf("%s: empty file", path)
	}
	switch body[0] {
	case '[':
		rows, err := listRows(path, data, only)
		return FormatJSON, rows, err
	case '{':
		if json.Valid(body) {
			// One object in the whole file: JSONL with one line, or a
			// single pretty-printed row. Either way, one row.
			format := FormatJSONObject
			if strings.HasSuffix(path, ".jsonl") || !bytes.Contains(body, []byte("\n")) {
				format = FormatJSONL
			}
			start := bytes.Index(data, body)
			return format, []row{objectRow(path, 0, lineAt(data, start), body)}, nil
		}
		first, _, _ := bytes.Cut(body, []byte("\n"))
		if json.Valid(first) || strings.HasSuffix(path, ".jsonl") {
			return FormatJSONL, lineRows(path, data, only), nil
		}
		return "", nil, syntaxError(path, data)
	default:
		return "", nil, fmt.Errorf("%s: not a dataset: expected parquet, a JSON list or object, or JSONL (the file starts with %q)", path, clip(body, 20))
	}
}

// listRows decodes a JSON list, keeping each element's bytes and line.
func listRows(path string, data []byte, only map[string]bool) ([]row, error) {
	if only != nil {
		if spans, ok := splitList(data); ok {
			// Only the rows that may be wanted are decoded (and checked).
			var rows []row
			for i, sp := range spans {
				raw := data[sp[0]:sp[1]]
				if !mayBeOneOf(raw, only) {
					continue
				}
				if !json.Valid(raw) {
					return nil, syntaxError(path, data)
				}
				r := objectRow(path, i, lineAt(data, sp[0]), raw)
				if isOneOf(r, only) {
					rows = append(rows, r)
				}
			}
			return rows, nil
		}
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	if _, err := dec.Token(); err != nil {
		return nil, syntaxError(path, data)
	}
	var rows []row
	index := 0
	for dec.More() {
		var raw json.RawMessage
		start := int(dec.InputOffset())
		if err := dec.Decode(&raw); err != nil {
			return nil, syntaxError(path, data)
		}
		index++
		if !mayBeOneOf(raw, only) {
			continue
		}
		// InputOffset sits before the separating comma and spaces.
		for start < len(data) && strings.IndexByte(", \t\r\n", data[start]) >= 0 {
			start++
		}
		r := objectRow(path, index-1, lineAt(data, start), raw)
		if !isOneOf(r, only) {
			continue
		}
		rows = append(rows, r)
	}
	if _, err := dec.Token(); err != nil {
		return nil, syntaxError(path, data)
	}
	if rest := bytes.TrimSpace(data[dec.InputOffset():]); len(rest) > 0 {
		return nil, fmt.Errorf("%s: unexpected data after the JSON list at line %d", path, lineAt(data, len(data)-len(rest)))
	}
	return rows, nil
}

// splitList finds where each element of a JSON list starts and ends without
// decoding it (strings and nesting are followed, nothing is validated). ok
// is false when the text is not shaped like a list: the caller then decodes
// it properly, which reports where it goes wrong.
func splitList(data []byte) (spans [][2]int, ok bool) {
	i := 0
	ws := func() {
		for i < len(data) && (data[i] == ' ' || data[i] == '\t' || data[i] == '\r' || data[i] == '\n') {
			i++
		}
	}
	if bytes.HasPrefix(data, []byte("\xef\xbb\xbf")) {
		i = 3
	}
	ws()
	if i >= len(data) || data[i] != '[' {
		return nil, false
	}
	i++
	ws()
	if i < len(data) && data[i] == ']' {
		i++
		ws()
		return nil, i == len(data)
	}
	for {
		start, depth, inStr := i, 0, false
	value:
		for ; i < len(data); i++ {
			c := data[i]
			switch {
			case inStr:
				if c == '\\' {
					i++
				} else if c == '"' {
					inStr = false
				}
			case c == '"':
				inStr = true
			case c == '{' || c == '[':
				depth++
			case c == '}' || c == ']':
				if depth == 0 {
					break value // the list's own ]
				}
				depth--
			case c == ',' && depth == 0:
				break value
			}
		}
		if i >= len(data) || inStr || depth != 0 {
			return nil, false
		}
		end := i
		for end > start && (data[end-1] == ' ' || data[end-1] == '\t' || data[end-1] == '\r' || data[end-1] == '\n') {
			end--
		}
		if end == start {
			return nil, false
		}
		spans = append(spans, [2]int{start, end})
		if data[i] == ']' {
			i++
			ws()
			return spans, i == len(data)
		}
		i++ // the comma
		ws()
	}
}

// lineRows splits JSONL into rows; a line that does not decode becomes a bad
// row rather than failing the file.
func lineRows(path string, data []byte, only map[string]bool) []row {
	var rows []row
	line, index := 0, 0
	for len(data) > 0 {
		var text []byte
		text, data, _ = bytes.Cut(data, []byte("\n"))
		line++
		text = bytes.TrimSpace(text)
		if len(text) == 0 {
			continue
		}
		index++
		if !mayBeOneOf(text, only) {
			continue
		}
		if !json.Valid(text) {
			var v any
			err := json.Unmarshal(text, &v)
			rows = append(rows, row{index: index - 1, line: line, err: &RowError{
				File: path, Row: index - 1, Line: line, Reason: "invalid JSON: " + strings.TrimPrefix(err.Error(), "json: "),
			}})
			continue
		}
		r := objectRow(path, index-1, line, text)
		if !isOneOf(r, only) {
			continue
		}
		rows = append(rows, r)
	}
	return rows
}

// mayBeOneOf is a cheap test on a row's raw bytes: false only when the row
// has an instance_id key and none of the ids appears in it (ids are plain
// text; a JSON writer may escape "/" as "\/"). Without only it is true.
func mayBeOneOf(raw []byte, only map[string]bool) bool {
	if only == nil || !bytes.Contains(raw, []byte(`"instance_id"`)) {
		return true
	}
	for id := range only {
		if bytes.Contains(raw, []byte(id)) || bytes.Contains(raw, []byte(strings.ReplaceAll(id, "/", `\/`))) {
			return true
		}
	}
	return false
}

// isOneOf reports whether a decoded row may be one of only's tasks: its
// instance_id string is listed, or it has none (the id then comes from other
// fields). Rows that did not decode are kept, to be reported.
func isOneOf(r row, only map[string]bool) bool {
	if only == nil || r.m == nil {
		return true
	}
	raw, ok := r.m["instance_id"]
	if !ok {
		return true
	}
	var id string
	if json.Unmarshal(raw, &id) != nil {
		return true
	}
	return only[id]
}

// objectRow decodes one row that must be a JSON object.
func objectRow(path string, index, line int, raw json.RawMessage) row {
	r := row{index: index, line: line, raw: raw}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil || m == nil {
		r.err = &RowError{File: path, Row: index, Line: line, Reason: "not a JSON object (got " + kindOf(raw) + ")"}
		return r
	}
	r.m = m
	return r
}

// syntaxError reports where a JSON document stops being valid.
func syntaxError(path string, data []byte) error {
	var v any
	err := json.Unmarshal(data, &v)
	if se, ok := errors.AsType[*json.SyntaxError](err); ok {
		off := int(se.Offset)
		return fmt.Errorf("%s: invalid JSON at line %d: %s", path, lineAt(data, off), se.Error())
	}
	if err == nil {
		return fmt.Errorf("%s: invalid JSON", path)
	}
	return fmt.Errorf("%s: invalid JSON: %w", path, err)
}

// lineAt returns the 1-based line of byte offset off.
func lineAt(data []byte, off int) int {
	off = min(max(off, 0), len(data))
	return bytes.Count(data[:off], []byte("\n")) + 1
}

func clip(b []byte, n int) string {
	if len(b) > n {
		return string(b[:n]) + "…"
	}
	return string(b)
}
