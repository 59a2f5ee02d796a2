package view

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
)

// A task's page streams its steps: the row is read twice from its file,
// once for everything but the steps and the conversation (decoded, kept),
// once for the steps, each decoded, rendered and let go before the next.
// Memory per request is one step plus the small fields, whatever the
// trajectory's length. Gym rollouts and mini-swe-agent files hold their
// steps as messages to pair up; they are decoded whole.

// errStop ends a walk early.
var errStop = errors.New("stop")

// skipStream reads and drops the next value, token by token.
func skipStream(dec *json.Decoder) error {
	depth := 0
	for {
		t, err := dec.Token()
		if err != nil {
			return err
		}
		switch t {
		case json.Delim('{'), json.Delim('['):
			depth++
		case json.Delim('}'), json.Delim(']'):
			depth--
		}
		if depth == 0 {
			return nil
		}
	}
}

// walkStream reads an object, calling fn with each key; fn reads the value
// or returns false to have it skipped. null reads as an object without
// keys.
func walkStream(dec *json.Decoder, fn func(key string) (bool, error)) error {
	t, err := dec.Token()
	if err != nil {
		return err
	}
	if t == nil {
		return nil
	}
	if t != json.Delim('{') {
		return fmt.Errorf("want an object, found %v", t)
	}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return err
		}
		key, _ := t.(string)
		done, err := fn(key)
		if err != nil {
			return err
		}
		if !done {
			if err := skipStream(dec); err != nil {
				return err
			}
		}
	}
	_, err = dec.Token()
	return err
}

// streamed reports whether a format's steps are streamed.
func streamed(format string) bool { return format == FormatSwerve || format == FormatRecord }

// open returns a reader of the task's row.
func (r *Run) open(s *Summary) (io.ReadCloser, error) {
	f, err := os.Open(s.file)
	if err != nil {
		return nil, err
	}
	if s.length < 0 {
		return f, nil
	}
	return struct {
		io.Reader
		io.Closer
	}{io.NewSectionReader(f, s.offset, s.length), f}, nil
}

// bulky are the fields the first pass leaves out: the steps (streamed) and
// the conversation (not shown).
var bulky = map[string]bool{"trajectory_steps": true, "history": true, "messages": true}

// withoutSteps reads the row's fields but the bulky ones, as a JSON object.
func withoutSteps(rd io.Reader) ([]byte, error) {
	dec := json.NewDecoder(rd)
	var obj func() (map[string]json.RawMessage, error)
	obj = func() (map[string]json.RawMessage, error) {
		out := map[string]json.RawMessage{}
		err := walkStream(dec, func(key string) (bool, error) {
			switch {
			case bulky[key]:
				return false, nil
			case key == "trajectory":
				// A record's trajectory: an object (its bulky fields
				// left out), or null.
				inner, err := obj()
				if err != nil || len(inner) == 0 {
					out[key] = json.RawMessage("null")
					return true, err
				}
				out[key], err = json.Marshal(inner)
				return true, err
			}
			var v json.RawMessage
			if err := dec.Decode(&v); err != nil {
				return false, err
			}
			out[key] = v
			return true, nil
		})
		return out, err
	}
	top, err := obj()
	if err != nil {
		return nil, err
	}
	return json.Marshal(top)
}

// eachStep decodes the row's steps one at a time.
func eachStep(rd io.Reader, format string, fn func(Step) error) error {
	dec := json.NewDecoder(rd)
	steps := func() error {
		if t, err := dec.Token(); err != nil || t != json.Delim('[') {
			if t == nil && err == nil {
				return errStop // null: no steps
			}
			return fmt.Errorf("trajectory_steps: want an array: %v", err)
		}
		for dec.More() {
			var rs rawStep
			if err := dec.Decode(&rs); err != nil {
				return err
			}
			if err := fn(rs.step()); err != nil {
				return err
			}
		}
		if _, err := dec.Token(); err != nil {
			return err
		}
		return errStop
	}
	var walk func(path []string) error
	walk = func(path []string) error {
		return walkStream(dec, func(key string) (bool, error) {
			if key != path[0] {
				return false, nil
			}
			if len(path) == 1 {
				return true, steps()
			}
			return true, walk(path[1:])
		})
	}
	path := []string{"trajectory_steps"}
	if format == FormatRecord {
		path = []string{"trajectory", "trajectory_steps"}
	}
	if err := walk(path); err != nil && !errors.Is(err, errStop) {
		return err
	}
	return nil
}

// TaskStream reads a task for its page without its steps, and returns a
// function that passes the steps to fn one at a time, read again from the
// file (or from memory for the formats that are not streamed).
func (r *Run) TaskStream(key string) (*Detail, func(fn func(Step) error) error, error) {
	idx, err := r.index()
	if err != nil {
		return nil, nil, err
	}
	i, ok := idx.byKey[key]
	if !ok {
		return nil, nil, fmt.Errorf("%w: %q", ErrNoTask, key)
	}
	s := idx.tasks[i]
	if !streamed(s.format) {
		d, err := r.Task(key)
		if err != nil {
			return nil, nil, err
		}
		return d, func(fn func(Step) error) error {
			for _, st := range d.Steps {
				if err := fn(st); err != nil {
					return err
				}
			}
			return nil
		}, nil
	}
	rd, err := r.open(&s)
	if err != nil {
		return nil, nil, err
	}
	small, err := withoutSteps(rd)
	rd.Close()
	if err != nil {
		return nil, nil, fmt.Errorf("task %s: %w", key, err)
	}
	d, err := detail(s.format, small)
	if err != nil {
		return nil, nil, fmt.Errorf("task %s: %w", key, err)
	}
	d.Turns = s.Turns
	r.finish(d, &s)
	return d, func(fn func(Step) error) error {
		rd, err := r.open(&s)
		if err != nil {
			return err
		}
		defer rd.Close()
		return eachStep(rd, s.format, fn)
	}, nil
}
