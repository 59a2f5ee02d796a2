package main

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/swerve-dev/swerve/internal/lazyre"
	"github.com/swerve-dev/swerve/internal/testutil"
)

// The same binary starts in every sandbox, so its start-up must stay cheap.
// These tests fail when a swerve package goes back to doing real work at
// init (compiling regular expressions, building big tables).

// TestNoRegexpCompiledAtInit checks that linking every package this command
// links compiles none of the lazily declared expressions, and that each of
// them is a valid pattern.
func TestNoRegexpCompiledAtInit(t *testing.T) {
	if n := lazyre.Compiled(); n != 0 {
		t.Fatalf("%d lazy regular expressions were compiled during package init; compile them on first use", n)
	}
	if lazyre.Declared() == 0 {
		t.Fatal("no lazy regular expressions declared: the parsers' expressions are expected to use lazyre")
	}
	if err := lazyre.CompileAll(); err != nil {
		t.Fatalf("a declared regular expression does not compile: %v", err)
	}
}

// initBudget is the most a swerve package may allocate in its init. The
// parsers used to compile ~200 regular expressions there (1.4 MB); a
// registry of names and a few tables stay far below this.
const initBudget = 64 << 10

// TestInitAllocationBudget runs the real binary with the Go runtime's init
// trace and checks that no swerve package allocates more than initBudget
// bytes during init (allocation counts are exact, unlike times).
func TestInitAllocationBudget(t *testing.T) {
	bin := testutil.SwerveBinary(t)
	cmd := exec.Command(bin, "--version")
	cmd.Env = append(os.Environ(), "GODEBUG=inittrace=1")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("swerve --version: %v\n%s", err, stderr.String())
	}
	seen := 0
	sc := bufio.NewScanner(&stderr)
	for sc.Scan() {
		// init PKG @T ms, C ms clock, B bytes, A allocs
		f := strings.Fields(sc.Text())
		if len(f) < 9 || f[0] != "init" || f[8] != "bytes," {
			continue
		}
		if !strings.HasPrefix(f[1], "github.com/swerve-dev/swerve/") {
			continue
		}
		seen++
		b, err := strconv.Atoi(f[7])
		if err != nil {
			t.Fatalf("init trace line %q: %v", sc.Text(), err)
		}
		if b > initBudget {
			t.Errorf("package %s allocates %d bytes at init (budget %d): move the work to first use", f[1], b, initBudget)
		}
	}
	if seen == 0 {
		t.Fatalf("no swerve package in the init trace; the trace format changed?\n%s", stderr.String())
	}
}
