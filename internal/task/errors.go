package task

import (
	"fmt"
	"strings"
)

// RowError describes one row that could not be read as a task. It is the
// error Load returns for bad input, and the entry LoadResult.Skipped lists
// when LoadOptions.SkipInvalid is set.
type RowError struct {
	// File is the dataset path as given to Load (or a Harbor task directory).
	File string `json:"file"`
	// Row is the 0-based index of the row among the file's rows (blank JSONL
	// lines do not count), the index --start_idx counts in.
	Row int `json:"row"`
	// Line is the 1-based line the row starts on in a JSON or JSONL file; 0
	// when unknown (parquet).
	Line int `json:"line,omitempty"`
	// InstanceID is the row's id when it could be read.
	InstanceID string `json:"instance_id,omitempty"`
	// Field is the offending field; empty when the row as a whole is bad.
	Field string `json:"field,omitempty"`
	// Reason says what is wrong.
	Reason string `json:"reason"`
}

// Error renders the error as
// "verified.jsonl: row 17 (django__django-1234): FAIL_TO_PASS: not a JSON list of strings".
func (e *RowError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: row %d", e.File, e.Row)
	switch {
	case e.InstanceID != "":
		fmt.Fprintf(&b, " (%s)", e.InstanceID)
	case e.Line > 0:
		fmt.Fprintf(&b, " (line %d)", e.Line)
	}
	if e.Field != "" {
		b.WriteString(": ")
		b.WriteString(e.Field)
	}
	b.WriteString(": ")
	b.WriteString(e.Reason)
	return b.String()
}

// InvalidError is what Load returns when rows are bad and SkipInvalid is off:
// the first bad row, and how many more there are.
type InvalidError struct {
	First RowError
	// More counts the other bad rows.
	More int
}

func (e *InvalidError) Error() string {
	if e.More == 0 {
		return e.First.Error()
	}
	s := "s"
	if e.More == 1 {
		s = ""
	}
	return fmt.Sprintf("%s (and %d more invalid row%s)", e.First.Error(), e.More, s)
}

// Unwrap gives errors.As access to the first row's error.
func (e *InvalidError) Unwrap() error { return &e.First }

// fieldError is a problem with one field, before the row's position is
// attached.
type fieldError struct {
	field  string
	reason string
}

func (e *fieldError) Error() string {
	if e.field == "" {
		return e.reason
	}
	return e.field + ": " + e.reason
}

func fieldErrorf(field, format string, args ...any) *fieldError {
	return &fieldError{field: field, reason: fmt.Sprintf(format, args...)}
}
