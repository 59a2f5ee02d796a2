package tamper

import "fmt"

// Mode says what a grader does with tamper findings.
type Mode string

// The modes of --tamper.
const (
	// ModeZero makes any finding reward 0 with reason "tampered: <what>"
	// (what swerve run uses, and the zero value).
	ModeZero Mode = "zero"
	// ModeFlag keeps the official verdict and reports the findings beside
	// it (the default of grade and validate).
	ModeFlag Mode = "flag"
	// ModeIgnore runs no check and no canaries.
	ModeIgnore Mode = "ignore"
)

// ParseMode reads a --tamper value.
func ParseMode(s string) (Mode, error) {
	switch m := Mode(s); m {
	case ModeZero, ModeFlag, ModeIgnore:
		return m, nil
	}
	return "", fmt.Errorf("--tamper: want zero, flag or ignore, got %q", s)
}

// Zeroes reports whether findings turn the reward to 0 in mode m.
func (m Mode) Zeroes() bool { return m == ModeZero || m == "" }
