// Package lazyre holds regular expressions that are compiled on first use,
// not when the program starts.
//
// The same swerve binary starts in every sandbox, so package initialisation
// must stay cheap: a package-level regexp.MustCompile runs for every command,
// including `swerve --version`, whether or not the expression is ever used.
// Declare such expressions with New (or Func) instead; the first call to a
// method compiles them once, safely from any goroutine.
package lazyre

import (
	"regexp"
	"sync"
	"sync/atomic"
)

// Regexp is a regular expression compiled the first time it is used. Its
// methods are those of regexp.Regexp.
type Regexp struct {
	build func() *regexp.Regexp
	re    func() *regexp.Regexp
}

var (
	registryMu sync.Mutex
	registry   []*Regexp
	compiled   atomic.Int64
)

// New returns the expression pat, compiled on first use. An invalid pattern
// panics there, as regexp.MustCompile would; CompileAll lets a test find it
// first.
func New(pat string) *Regexp {
	return Func(func() *regexp.Regexp { return regexp.MustCompile(pat) })
}

// Func returns an expression that build makes on first use; use it when the
// pattern itself takes work to assemble.
func Func(build func() *regexp.Regexp) *Regexp {
	r := &Regexp{build: build}
	r.re = sync.OnceValue(func() *regexp.Regexp {
		compiled.Add(1)
		return r.build()
	})
	registryMu.Lock()
	registry = append(registry, r)
	registryMu.Unlock()
	return r
}

// Compiled reports how many expressions declared with New or Func have been
// compiled so far in this process. Right after start-up it should be zero.
func Compiled() int { return int(compiled.Load()) }

// Declared reports how many expressions have been declared with New or Func.
func Declared() int {
	registryMu.Lock()
	defer registryMu.Unlock()
	return len(registry)
}

// CompileAll compiles every declared expression and returns the first
// panic's message, if any, so a test can check every pattern is valid.
func CompileAll() (err any) {
	registryMu.Lock()
	all := append([]*Regexp(nil), registry...)
	registryMu.Unlock()
	for _, r := range all {
		func() {
			defer func() {
				if p := recover(); p != nil && err == nil {
					err = p
				}
			}()
			r.re()
		}()
	}
	return err
}

// Regexp returns the compiled expression.
func (r *Regexp) Regexp() *regexp.Regexp { return r.re() }

// String returns the source text of the expression.
func (r *Regexp) String() string { return r.re().String() }

// MatchString reports whether s contains a match.
func (r *Regexp) MatchString(s string) bool { return r.re().MatchString(s) }

// FindString is regexp.Regexp.FindString.
func (r *Regexp) FindString(s string) string { return r.re().FindString(s) }

// FindStringIndex is regexp.Regexp.FindStringIndex.
func (r *Regexp) FindStringIndex(s string) []int { return r.re().FindStringIndex(s) }

// FindStringSubmatch is regexp.Regexp.FindStringSubmatch.
func (r *Regexp) FindStringSubmatch(s string) []string { return r.re().FindStringSubmatch(s) }

// FindStringSubmatchIndex is regexp.Regexp.FindStringSubmatchIndex.
func (r *Regexp) FindStringSubmatchIndex(s string) []int { return r.re().FindStringSubmatchIndex(s) }

// FindAllString is regexp.Regexp.FindAllString.
func (r *Regexp) FindAllString(s string, n int) []string { return r.re().FindAllString(s, n) }

// FindAllStringIndex is regexp.Regexp.FindAllStringIndex.
func (r *Regexp) FindAllStringIndex(s string, n int) [][]int {
	return r.re().FindAllStringIndex(s, n)
}

// FindAllStringSubmatch is regexp.Regexp.FindAllStringSubmatch.
func (r *Regexp) FindAllStringSubmatch(s string, n int) [][]string {
	return r.re().FindAllStringSubmatch(s, n)
}

// FindAllStringSubmatchIndex is regexp.Regexp.FindAllStringSubmatchIndex.
func (r *Regexp) FindAllStringSubmatchIndex(s string, n int) [][]int {
	return r.re().FindAllStringSubmatchIndex(s, n)
}

// ReplaceAllString is regexp.Regexp.ReplaceAllString.
func (r *Regexp) ReplaceAllString(src, repl string) string {
	return r.re().ReplaceAllString(src, repl)
}

// ReplaceAllLiteralString is regexp.Regexp.ReplaceAllLiteralString.
func (r *Regexp) ReplaceAllLiteralString(src, repl string) string {
	return r.re().ReplaceAllLiteralString(src, repl)
}

// ReplaceAllStringFunc is regexp.Regexp.ReplaceAllStringFunc.
func (r *Regexp) ReplaceAllStringFunc(src string, repl func(string) string) string {
	return r.re().ReplaceAllStringFunc(src, repl)
}

// Split is regexp.Regexp.Split.
func (r *Regexp) Split(s string, n int) []string { return r.re().Split(s, n) }

// SubexpIndex is regexp.Regexp.SubexpIndex.
func (r *Regexp) SubexpIndex(name string) int { return r.re().SubexpIndex(name) }
