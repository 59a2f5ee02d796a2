package view

import (
	"bytes"
	"encoding/json"
	"errors"
	"strconv"
)

// A task's row can be megabytes (its steps, the whole conversation, the
// test output), while its summary needs a few small fields. The index
// therefore walks the row's top-level object with a plain byte scanner,
// decodes only the fields it wants, and counts the steps without decoding
// them; encoding/json would check and scan every byte twice.

var errSyntax = errors.New("malformed JSON row")

func skipWS(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// skipValue returns the index just past the JSON value starting at b[i].
func skipValue(b []byte, i int) (int, error) {
	if i >= len(b) {
		return 0, errSyntax
	}
	switch b[i] {
	case '"':
		for j := i + 1; j < len(b); j++ {
			switch b[j] {
			case '\\':
				j++
			case '"':
				return j + 1, nil
			}
		}
		return 0, errSyntax
	case '{', '[':
		depth := 0
		for j := i; j < len(b); j++ {
			switch b[j] {
			case '"':
				end, err := skipValue(b, j)
				if err != nil {
					return 0, err
				}
				j = end - 1
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return j + 1, nil
				}
			}
		}
		return 0, errSyntax
	}
	j := i
	for j < len(b) && b[j] != ',' && b[j] != '}' && b[j] != ']' && b[j] != ' ' && b[j] != '\n' && b[j] != '\t' && b[j] != '\r' {
		j++
	}
	if j == i {
		return 0, errSyntax
	}
	return j, nil
}

// walkObject calls fn with each top-level key of the object in b and its
// value's bytes.
func walkObject(b []byte, fn func(key string, val []byte)) error {
	i := skipWS(b, 0)
	if i >= len(b) || b[i] != '{' {
		return errSyntax
	}
	i = skipWS(b, i+1)
	if i < len(b) && b[i] == '}' {
		return nil
	}
	for {
		i = skipWS(b, i)
		end, err := skipValue(b, i)
		if err != nil || b[i] != '"' {
			return errSyntax
		}
		raw := b[i:end]
		key := string(raw[1 : len(raw)-1])
		if bytes.IndexByte(raw, '\\') >= 0 {
			if key, err = strconv.Unquote(string(raw)); err != nil {
				return errSyntax
			}
		}
		i = skipWS(b, end)
		if i >= len(b) || b[i] != ':' {
			return errSyntax
		}
		start := skipWS(b, i+1)
		end, err = skipValue(b, start)
		if err != nil {
			return err
		}
		fn(key, b[start:end])
		i = skipWS(b, end)
		if i >= len(b) {
			return errSyntax
		}
		switch b[i] {
		case ',':
			i++
		case '}':
			return nil
		default:
			return errSyntax
		}
	}
}

// pick walks row and returns the wanted top-level fields as a small JSON
// object, and the step count of the field named steps (when not "").
func pick(row []byte, wanted map[string]bool, steps string, nested map[string]func(val []byte, out *[]byte)) ([]byte, int, error) {
	out := []byte{'{'}
	n := 0
	add := func(k string, v []byte) {
		if len(out) > 1 {
			out = append(out, ',')
		}
		out = strconv.AppendQuote(out, k)
		out = append(out, ':')
		out = append(out, v...)
	}
	err := walkObject(row, func(k string, v []byte) {
		switch {
		case k == steps && steps != "":
			var c countOnly
			_ = c.UnmarshalJSON(v)
			n = int(c)
		case wanted[k]:
			add(k, v)
		case nested[k] != nil:
			var inner []byte
			nested[k](v, &inner)
			add(k, inner)
		}
	})
	out = append(out, '}')
	return out, n, err
}

var swerveWanted = map[string]bool{"instance_id": true, "scaffold": true, "model": true, "reward": true, "exit_reason": true,
	"swerve_exit_reason": true, "reward_reason": true, "cost": true, "total_time": true, "ds": true, "token_usage": true, "agent_args": true, "signals": true, "offline": true}

var recordWanted = map[string]bool{"instance_id": true, "repo": true, "scaffold": true, "model": true, "status": true, "error_kind": true,
	"error": true, "reward": true, "reward_reason": true, "tampered": true, "exit_reason": true, "swerve_exit_reason": true,
	"started": true, "finished": true, "signals": true, "offline": true}

var trajWanted = map[string]bool{"token_usage": true, "cost": true, "total_time": true}

// fastSummary reads the summary of a swerve line or record by picking its
// small fields; ok is false for the other formats.
func fastSummary(format string, row []byte) (Summary, bool, error) {
	switch format {
	case FormatSwerve:
		small, n, err := pick(row, swerveWanted, "trajectory_steps", nil)
		if err != nil {
			return Summary{}, true, err
		}
		var r swerveRow
		if err := json.Unmarshal(small, &r); err != nil {
			return Summary{}, true, err
		}
		return r.summary(n), true, nil
	case FormatRecord:
		steps := -1
		small, _, err := pick(row, recordWanted, "", map[string]func([]byte, *[]byte){
			"trajectory": func(v []byte, out *[]byte) {
				if bytes.Equal(v, []byte("null")) {
					*out = v
					return
				}
				inner, n, err := pick(v, trajWanted, "trajectory_steps", nil)
				if err != nil {
					inner = []byte("null")
				}
				*out, steps = inner, n
			},
		})
		if err != nil {
			return Summary{}, true, err
		}
		var r struct {
			recordRow
			Trajectory *recordTraj `json:"trajectory"`
		}
		if err := json.Unmarshal(small, &r); err != nil {
			return Summary{}, true, err
		}
		s := r.summary()
		if t := r.Trajectory; t != nil {
			s.Turns, s.Tokens, s.Cost, s.Seconds = max(steps, 0), t.Usage.Total, t.Cost, t.Duration
		}
		return s, true, nil
	}
	return Summary{}, false, nil
}
