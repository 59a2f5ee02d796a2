package view

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
)

// A task's page streams its steps: the row is read twice from its file,
// once for everything but the steps and the conversation (kept: small),
// once for the steps, each decoded, rendered and let go before the next.
// Memory per request is one step plus the small fields, whatever the
// trajectory's length. Both passes use a byte scanner over a buffered
// reader (encoding/json's token reader is many times slower). Gym rollouts
// and mini-swe-agent files hold their steps as messages to pair up; they
// are decoded whole.

// errStop ends a walk early.
var errStop = errors.New("stop")

// streamScanner reads JSON values from a stream, copying them into buf
// while capture is set.
type streamScanner struct {
	r       *bufio.Reader
	buf     []byte
	capture bool
}

func newStreamScanner(r io.Reader) *streamScanner {
	return &streamScanner{r: bufio.NewReaderSize(r, 64<<10)}
}

func (s *streamScanner) next() (byte, error) {
	c, err := s.r.ReadByte()
	if err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	if err == nil && s.capture {
		s.buf = append(s.buf, c)
	}
	return c, err
}

// ws reads past white space and returns the next byte.
func (s *streamScanner) ws() (byte, error) {
	for {
		c, err := s.r.ReadByte()
		if err != nil {
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return 0, err
		}
		if c != ' ' && c != '\t' && c != '\n' && c != '\r' {
			if s.capture {
				s.buf = append(s.buf, c)
			}
			return c, nil
		}
	}
}

// rest reads the remainder of the value whose first byte c was read.
func (s *streamScanner) rest(c byte) error {
	switch c {
	case '"':
		return s.restString()
	case '{', '[':
		depth := 1
		for depth > 0 {
			c, err := s.next()
			if err != nil {
				return err
			}
			switch c {
			case '"':
				if err := s.restString(); err != nil {
					return err
				}
			case '{', '[':
				depth++
			case '}', ']':
				depth--
			}
		}
		return nil
	}
	for {
		b, err := s.r.Peek(1)
		if err != nil || b[0] == ',' || b[0] == '}' || b[0] == ']' || b[0] == ' ' || b[0] == '\n' || b[0] == '\t' || b[0] == '\r' {
			return nil // a literal ends at its delimiter (or at the end)
		}
		if _, err := s.next(); err != nil {
			return err
		}
	}
}

func (s *streamScanner) restString() error {
	for {
		c, err := s.next()
		if err != nil {
			return err
		}
		switch c {
		case '\\':
			if _, err := s.next(); err != nil {
				return err
			}
		case '"':
			return nil
		}
	}
}

// value reads the value whose first byte c was read and returns its bytes
// (valid until the next call).
func (s *streamScanner) value(c byte) ([]byte, error) {
	s.buf = append(s.buf[:0], c)
	s.capture = true
	err := s.rest(c)
	s.capture = false
	return s.buf, err
}

// object walks the object whose first byte c was read ('{', or 'n' of
// null: no keys), calling fn with each key and the first byte of its
// value; fn must read the value (s.rest, s.value or a nested walk).
func (s *streamScanner) object(c byte, fn func(key string, c byte) error) error {
	if c == 'n' {
		return s.rest(c)
	}
	if c != '{' {
		return fmt.Errorf("want an object, found %q", c)
	}
	c, err := s.ws()
	if err != nil {
		return err
	}
	if c == '}' {
		return nil
	}
	for {
		if c != '"' {
			return fmt.Errorf("want a key, found %q", c)
		}
		raw, err := s.value(c)
		if err != nil {
			return err
		}
		var key string
		if err := json.Unmarshal(raw, &key); err != nil {
			return err
		}
		if c, err = s.ws(); err != nil || c != ':' {
			return fmt.Errorf("want ':' after %q: %v", key, err)
		}
		if c, err = s.ws(); err != nil {
			return err
		}
		if err := fn(key, c); err != nil {
			return err
		}
		if c, err = s.ws(); err != nil {
			return err
		}
		switch c {
		case '}':
			return nil
		case ',':
			if c, err = s.ws(); err != nil {
				return err
			}
		default:
			return fmt.Errorf("want ',' or '}' after %q, found %q", key, c)
		}
	}
}

// array walks the array whose first byte c was read ('[', or 'n' of null),
// calling fn with each element's bytes.
func (s *streamScanner) array(c byte, fn func(elem []byte) error) error {
	return s.elements(c, func(c byte) error {
		elem, err := s.value(c)
		if err != nil {
			return err
		}
		return fn(elem)
	})
}

// elements walks the array whose first byte c was read ('[', or 'n' of
// null), calling fn with each element's first byte; fn must read the
// element (s.rest or s.value).
func (s *streamScanner) elements(c byte, fn func(c byte) error) error {
	if c == 'n' {
		return s.rest(c)
	}
	if c != '[' {
		return fmt.Errorf("want an array, found %q", c)
	}
	c, err := s.ws()
	if err != nil || c == ']' {
		return err
	}
	for {
		if err := fn(c); err != nil {
			return err
		}
		if c, err = s.ws(); err != nil {
			return err
		}
		switch c {
		case ']':
			return nil
		case ',':
			if c, err = s.ws(); err != nil {
				return err
			}
		default:
			return fmt.Errorf("want ',' or ']' in an array, found %q", c)
		}
	}
}

// prompts reads a conversation array and keeps, as a JSON array, only
// its opening messages: those up to the first user message (the system
// prompt and the task's prompt). The rest is read past without keeping.
func (s *streamScanner) prompts(c byte) ([]byte, error) {
	out := []byte{'['}
	done := false
	err := s.elements(c, func(c byte) error {
		if done {
			return s.rest(c)
		}
		elem, err := s.value(c)
		if err != nil {
			return err
		}
		var m struct {
			Role string `json:"role"`
		}
		_ = json.Unmarshal(elem, &m)
		if len(out) > 1 {
			out = append(out, ',')
		}
		out = append(out, elem...)
		done = m.Role == "user" || len(out) > 1<<20
		return nil
	})
	return append(out, ']'), err
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
// the conversation (only its opening prompts are kept, see prompts).
var bulky = map[string]bool{"trajectory_steps": true, "history": true, "messages": true}

// withoutSteps reads the row's fields but the bulky ones, as a JSON object
// (a record's trajectory object likewise).
func withoutSteps(rd io.Reader) ([]byte, error) {
	s := newStreamScanner(rd)
	var obj func(c byte) ([]byte, error)
	obj = func(c byte) ([]byte, error) {
		out := []byte{'{'}
		add := func(k string, v []byte) {
			if len(out) > 1 {
				out = append(out, ',')
			}
			kb, _ := json.Marshal(k)
			out = append(append(append(out, kb...), ':'), v...)
		}
		err := s.object(c, func(key string, c byte) error {
			switch {
			case (key == "messages" || key == "history") && c == '[':
				v, err := s.prompts(c)
				add(key, v)
				return err
			case bulky[key]:
				return s.rest(c)
			case key == "trajectory" && c == '{':
				inner, err := obj(c)
				add(key, inner)
				return err
			}
			v, err := s.value(c)
			add(key, v)
			return err
		})
		return append(out, '}'), err
	}
	c, err := s.ws()
	if err != nil {
		return nil, err
	}
	return obj(c)
}

// eachStep decodes the row's steps one at a time.
func eachStep(rd io.Reader, format string, fn func(Step) error) error {
	s := newStreamScanner(rd)
	path := []string{"trajectory_steps"}
	if format == FormatRecord {
		path = []string{"trajectory", "trajectory_steps"}
	}
	var walk func(c byte, path []string) error
	walk = func(c byte, path []string) error {
		return s.object(c, func(key string, c byte) error {
			switch {
			case key != path[0]:
				return s.rest(c)
			case len(path) > 1:
				return walk(c, path[1:])
			}
			err := s.array(c, func(elem []byte) error {
				var rs rawStep
				if err := json.Unmarshal(elem, &rs); err != nil {
					return err
				}
				return fn(rs.step())
			})
			if err != nil {
				return err
			}
			return errStop // the rest of the row is not needed
		})
	}
	c, err := s.ws()
	if err != nil {
		return err
	}
	if err := walk(c, path); err != nil && !errors.Is(err, errStop) {
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
	if s.Signals > 0 {
		// The flags sit in the steps: one more pass, for flagged rows only.
		rd, err := r.open(&s)
		if err != nil {
			return nil, nil, err
		}
		err = eachStep(rd, s.format, func(st Step) error {
			d.Flags = append(d.Flags, st.Signals...)
			return nil
		})
		rd.Close()
		if err != nil {
			return nil, nil, fmt.Errorf("task %s: %w", key, err)
		}
	}
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
