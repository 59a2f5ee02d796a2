package shim

import (
	"debug/elf"
	"fmt"
	"os"
	"path/filepath"
)

// InBoxPath is where backends that can bind-mount put the helper.
const InBoxPath = "/.swerve/swerve"

// Binary resolves the helper binary to run in boxes: path if set, else the
// running executable. It must be a static executable, since it runs in
// images whose C library is unknown; a dynamically linked one is refused
// with a message saying how to build it.
func Binary(path string) (string, error) {
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
	if err := CheckStatic(path); err != nil {
		return "", err
	}
	return path, nil
}

// CheckStatic returns an error unless path is a statically linked ELF
// executable.
func CheckStatic(path string) error {
	f, err := elf.Open(path)
	if err != nil {
		return fmt.Errorf("shim: %s is not an ELF executable: %w", path, err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return fmt.Errorf("shim: %s is dynamically linked, but it must run inside sandboxes of any image: build swerve static with CGO_ENABLED=0 (make build)", path)
		}
	}
	return nil
}
