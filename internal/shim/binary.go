package shim

import (
	"debug/elf"
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// InBoxPath is where backends that can bind-mount put the helper.
const InBoxPath = "/.swerve/swerve"

// ErrDynamic is the error CheckStatic wraps when a binary is dynamically
// linked.
var ErrDynamic = errors.New("dynamically linked")

// StaticFix says how to get a static swerve, for messages.
const StaticFix = "rebuild it with make build in the repository (or CGO_ENABLED=0 go build -o bin/swerve ./cmd/swerve)"

// Binary resolves the helper binary to run in boxes: path if set, else the
// running executable. It must be a static executable, since it runs in
// images whose C library is unknown; a dynamically linked one is refused
// with a message saying how to build it.
func Binary(path string) (string, error) {
	path, err := HostBinary(path)
	if err != nil {
		return "", err
	}
	if err := CheckStatic(path); err != nil {
		return "", err
	}
	return path, nil
}

// HostBinary resolves the helper binary like Binary but accepts a
// dynamically linked one: for boxes that run on this machine, whose C
// library is the one it was built against.
func HostBinary(path string) (string, error) {
	if path == "" {
		exe, err := os.Executable()
		if err != nil {
			return "", fmt.Errorf("shim: cannot find the running executable: %w", err)
		}
		path = exe
	}
	path, err := filepath.EvalSymlinks(path)
	if err != nil {
		return "", fmt.Errorf("shim: helper binary: %w", err)
	}
	return path, nil
}

// CheckStatic returns an error unless path is a statically linked ELF
// executable; for a dynamically linked one it wraps ErrDynamic.
func CheckStatic(path string) error {
	f, err := elf.Open(path)
	if err != nil {
		return fmt.Errorf("shim: %s is not an ELF executable: %w", path, err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return fmt.Errorf("shim: %s is %w (built with cgo), but it must run inside sandboxes of any image: %s", path, ErrDynamic, StaticFix)
		}
	}
	return nil
}
