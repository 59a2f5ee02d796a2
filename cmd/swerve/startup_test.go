package main

import (
	"bufio"
	"bytes"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

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

// initRecord is one line of the Go runtime's init trace: a package and what
// its init allocated.
type initRecord struct {
	pkg   string
	bytes int
}

// initTrace runs the real binary's `--version` with the runtime's init
// trace and returns one record per package that has an init.
func initTrace(t *testing.T) []initRecord {
	t.Helper()
	bin := testutil.SwerveBinary(t)
	cmd := exec.Command(bin, "--version")
	cmd.Env = append(os.Environ(), "GODEBUG=inittrace=1")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("swerve --version: %v\n%s", err, stderr.String())
	}
	var out []initRecord
	sc := bufio.NewScanner(&stderr)
	for sc.Scan() {
		// init PKG @T ms, C ms clock, B bytes, A allocs
		f := strings.Fields(sc.Text())
		if len(f) < 9 || f[0] != "init" || f[8] != "bytes," {
			continue
		}
		b, err := strconv.Atoi(f[7])
		if err != nil {
			t.Fatalf("init trace line %q: %v", sc.Text(), err)
		}
		out = append(out, initRecord{pkg: f[1], bytes: b})
	}
	if len(out) == 0 {
		t.Fatalf("no package in the init trace; the trace format changed?\n%s", stderr.String())
	}
	return out
}

// TestInitAllocationBudget checks that no swerve package allocates more
// than initBudget bytes during init (allocation counts are exact, unlike
// times).
func TestInitAllocationBudget(t *testing.T) {
	seen := 0
	for _, r := range initTrace(t) {
		if !strings.HasPrefix(r.pkg, "github.com/swerve-dev/swerve/") {
			continue
		}
		seen++
		if r.bytes > initBudget {
			t.Errorf("package %s allocates %d bytes at init (budget %d): move the work to first use", r.pkg, r.bytes, initBudget)
		}
	}
	if seen == 0 {
		t.Fatal("no swerve package in the init trace")
	}
}

// totalInitBudget is the most every package linked into the binary may
// allocate at init, all together: about 1.3 MiB today, nearly all of it the
// Docker and Kubernetes clients' dependencies (distribution/reference alone
// compiles 0.4 MB of regular expressions). A dependency that registers
// much more at init (client-go's clientset registers every API group, and
// made start-up 3 ms slower) fails this; keep such a package out of the
// binary, or behind a lighter path, rather than raising the budget.
const totalInitBudget = 1536 << 10

// TestTotalInitAllocationBudget holds the whole binary's init, third-party
// packages included, to totalInitBudget, and names the largest on failure.
func TestTotalInitAllocationBudget(t *testing.T) {
	recs := initTrace(t)
	total := 0
	for _, r := range recs {
		total += r.bytes
	}
	if total <= totalInitBudget {
		t.Logf("%d packages allocate %d bytes at init (budget %d)", len(recs), total, totalInitBudget)
		return
	}
	slices.SortFunc(recs, func(a, b initRecord) int { return b.bytes - a.bytes })
	var top strings.Builder
	for _, r := range recs[:min(10, len(recs))] {
		fmt.Fprintf(&top, "\n  %8d %s", r.bytes, r.pkg)
	}
	t.Errorf("the packages linked into swerve allocate %d bytes at init, over the budget of %d; the largest:%s", total, totalInitBudget, top.String())
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

// BenchmarkStartup runs the whole binary's `swerve --version` per iteration,
// from fork to exit, as every box pays it for each helper start. Besides
// the mean (ns/op), it reports the median of the runs (median-ms), less
// swayed by a shared machine's spikes.
//
//	make build && SWERVE_TEST_BINARY=$PWD/bin/swerve go test -run '^$' -bench Startup -benchtime 200x ./cmd/swerve
func BenchmarkStartup(b *testing.B) {
	bin := testutil.SwerveBinary(b)
	var ms []float64
	for b.Loop() {
		start := time.Now()
		if out, err := exec.Command(bin, "--version").CombinedOutput(); err != nil {
			b.Fatalf("swerve --version: %v\n%s", err, out)
		}
		ms = append(ms, float64(time.Since(start))/float64(time.Millisecond))
	}
	slices.Sort(ms)
	b.ReportMetric(ms[len(ms)/2], "median-ms")
}
