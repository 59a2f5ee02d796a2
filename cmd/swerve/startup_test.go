package main

import (
	"bufio"
	"bytes"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
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

// TestNoPackageLevelRegexpCompile reads every non-test Go file of the module
// and fails on a package-level variable initialised by regexp.MustCompile
// or regexp.Compile outside a function literal: that runs at every start.
// Declare it with lazyre.New instead.
func TestNoPackageLevelRegexpCompile(t *testing.T) {
	root := testutil.RepoRoot(t)
	fset := token.NewFileSet()
	checked := 0
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); path != root && (strings.HasPrefix(name, ".") || name == "testdata" || name == "bin") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		checked++
		for _, decl := range f.Decls {
			gd, ok := decl.(*ast.GenDecl)
			if !ok || gd.Tok != token.VAR {
				continue
			}
			ast.Inspect(gd, func(n ast.Node) bool {
				switch n := n.(type) {
				case *ast.FuncLit:
					return false // runs when called, not at init
				case *ast.CallExpr:
					if sel, ok := n.Fun.(*ast.SelectorExpr); ok {
						if pkg, ok := sel.X.(*ast.Ident); ok && pkg.Name == "regexp" && (sel.Sel.Name == "MustCompile" || sel.Sel.Name == "Compile") {
							t.Errorf("%s: package-level regexp.%s runs at every start; use lazyre.New", fset.Position(n.Pos()), sel.Sel.Name)
						}
					}
				}
				return true
			})
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if checked < 50 {
		t.Fatalf("only %d Go files checked under %s", checked, root)
	}
}
