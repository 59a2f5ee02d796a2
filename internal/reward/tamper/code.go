package tamper

import (
	"path"
	"strconv"
	"strings"

	"github.com/swerve-dev/swerve/internal/lazyre"
)

// dataExts are the extensions of files a binary hunk may carry: images,
// fonts, media, documents, archives nothing imports and scientific data.
// A binary hunk on anything else (source, bytecode, extension modules,
// pickles, zips and eggs an import can read, files without an extension)
// is a finding: the check cannot read what it holds.
var dataExts = words(`png jpg jpeg gif bmp ico webp tif tiff svgz eps pdf ps
	ttf otf woff woff2 eot wav mp3 ogg flac mp4 webm avi mov fits fit fts h5 hdf5 nc npy npz mat
	dat bin gz bz2 xz zst tar db sqlite sqlite3 xls xlsx doc docx odt ods ppt pptx parquet
	feather arrow mo icns cur psd xcf`)

// binaryHunk says why f's binary hunk is a finding, or "".
func binaryHunk(f fileChange) string {
	if !f.Binary {
		return ""
	}
	ext := strings.ToLower(strings.TrimPrefix(path.Ext(f.Path), "."))
	if dataExts.has(ext) {
		return ""
	}
	if ext == "" {
		return "a binary hunk on a file without an extension, whose content the check cannot read"
	}
	return "a binary hunk on a ." + ext + " file, whose content the check cannot read and a program may load"
}

// unreadHunk says f holds hunks in a format the check does not read.
func unreadHunk(f fileChange) string {
	if len(f.Unread) == 0 {
		return ""
	}
	return "a hunk in a format the check does not read (`" + clip(f.Unread[0]) + "`), which patch(1) would apply"
}

// cliFile reports whether p is a command-line entry point a project ships
// (run as its own program, not imported by the code under test).
func cliFile(p string) bool {
	base := path.Base(p)
	return base == "__main__.py" || strings.Contains("/"+p, "/management/commands/") ||
		strings.HasPrefix(p, "bin/") || strings.HasPrefix(p, "scripts/") || strings.HasPrefix(p, "tools/")
}

// pyCode yields f's added Python lines without comments (a '#' inside a
// string cuts the line short, which only loses text after it).
func pyCode(f fileChange) []string {
	out := make([]string, 0, len(f.Plus))
	for _, l := range f.Plus {
		code, _, _ := strings.Cut(l, "#")
		out = append(out, code)
	}
	return out
}

// Ways of ending or replacing the process. Each matches whatever the
// argument: a test run that ends early, or becomes another program, did
// not run its tests, whatever status it leaves.
var (
	pyProcEnd = lazyre.New(`\bP_OVERLAY\b|\bsignal\s*\.\s*(raise_signal|pthread_kill|alarm|setitimer)\b`)
	// A module's function by attribute: os.kill, _os._exit, q.execv after
	// "import os as q".
	pyAttrCall = lazyre.New(`\b(\w+)\s*\.\s*(exec[lv]p?e?|_exit|abort|kill|killpg|spawn[lv]p?e?|raise_signal|pthread_kill)\b`)
	pyImportAs = lazyre.New(`\bimport\s+(os|posix|nt|signal)\s+as\s+(\w+)`)
	// Names of those functions used bare (imported from os) or spelled
	// as a string (getattr(os, "_exit")).
	pyProcEndBare  = lazyre.New(`(^|[^.\w])(_exit|_Exit|quick_exit|execv|execve|execvp|execvpe|execl|execle|execlp|execlpe|raise_signal|pthread_kill|killpg)\b|\bgetattr\s*\([^,]+,\s*['"](_exit|_Exit|quick_exit|exec[lv]p?e?|kill|killpg|abort|raise_signal|pthread_kill|Py_Exit|Py_FinalizeEx)['"]`)
	pyFromOsImport = lazyre.New(`^\s*from\s+(os|posix|nt|signal)\s+import\b.*\b(kill|abort|exec\w*|_exit|spawn\w*|raise_signal|pthread_kill|alarm|setitimer)\b|^\s*from\s+sys\s+import\b.*\bexit\s+as\b`)
	// Killing its own process group or pid (os.kill(os.getpid(), ...) by
	// whatever name kill has), a module's kill or _exit reached through
	// __import__, and shell commands that kill.
	pyKillSelf = lazyre.New(`\bkill\w*\s*\(\s*[\w.()]*\bget(pid|ppid|pgid|pgrp)\b|(__import__|import_module)\s*\([^)]*\)\s*\.\s*(kill|killpg|abort|_exit|exec[lv]p?e?|spawn\w*)\b|['"]\s*(kill|pkill|killall)\s+-`)
	// Loading C libraries: libc's exit, _exit, execve and kill are a call
	// away, and so is the C API's Py_Exit.
	pyLoadsC = lazyre.New(`\b(CDLL|PyDLL|cdll|pydll|pythonapi|dlopen|LoadLibrary|find_library|_ctypes)\b|\bctypes\s*\.\s*util\b`)
	pyCNames = lazyre.New(`\b(ctypes|cffi|FFI|ffi)\b`)
	// sys.exit, exit, quit and SystemExit with their argument.
	pyExit = lazyre.New(`(\bsys\s*\.\s*exit|(^|[^.\w])(exit|quit)|\bSystemExit)\s*\(([^()]*(\([^()]*\))?[^()]*)\)|\braise\s+SystemExit\s*$`)
)

// processEnd says how added Python code outside the tests ends or
// replaces the process, or "".
func processEnd(f fileChange) string {
	code := pyCode(f)
	mods := map[string]bool{"os": true, "posix": true, "nt": true, "signal": true}
	for _, l := range code {
		for _, m := range pyImportAs.FindAllStringSubmatch(l, -1) {
			mods[m[2]] = true
		}
	}
	byAttr := func(l string) bool {
		for _, m := range pyAttrCall.FindAllStringSubmatch(l, -1) {
			recv, fn := m[1], m[2]
			distinct := fn != "abort" && fn != "kill"
			if mods[recv] || mods[strings.TrimLeft(recv, "_")] || (distinct && recv != "self" && recv != "cls") {
				return true
			}
		}
		return false
	}
	fromOs := false
	for i, l := range code {
		line := strings.TrimSpace(f.Plus[i])
		switch {
		case pyProcEnd.MatchString(l), byAttr(l), pyProcEndBare.MatchString(l), pyFromOsImport.MatchString(l), pyKillSelf.MatchString(l):
			return "ends or replaces the process (`" + clip(line) + "`)"
		case pyLoadsC.MatchString(l):
			return "loads a C library (`" + clip(line) + "`), through which it can end or replace the process"
		}
		// "from os import (\n    _exit,\n)"
		if t := strings.TrimSpace(l); strings.HasPrefix(t, "from ") && strings.HasSuffix(t, "(") {
			fromOs = strings.Contains(t, " os ") || strings.Contains(t, " posix ")
		} else if fromOs && regexpWord(t, "kill", "abort") {
			return "ends or replaces the process (`" + clip(line) + "`)"
		} else if strings.Contains(t, ")") {
			fromOs = false
		}
		if m := pyExit.FindStringSubmatch(l); m != nil && !cliFile(f.Path) && !pyDef.MatchString(l) {
			if arg := strings.TrimSpace(m[4]); shellSeesZero(arg) {
				return "exits with a status the shell reads as success (`" + clip(line) + "`)"
			}
		}
	}
	return ""
}

func regexpWord(s string, words ...string) bool {
	for _, w := range words {
		for _, f := range strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' || r == '(' || r == ')' }) {
			if f == w {
				return true
			}
		}
	}
	return false
}

// shellSeesZero reports whether a Python exit with argument arg can leave
// status 0: no argument, None, False, 0 or any multiple of 256, or an
// expression the check cannot evaluate. A string or a small non-zero
// number is a failure status.
func shellSeesZero(arg string) bool {
	if arg == "" || arg == "None" || arg == "False" {
		return true
	}
	if arg == "True" || strings.HasPrefix(arg, `"`) || strings.HasPrefix(arg, `'`) {
		return false
	}
	if n, err := strconv.ParseInt(strings.ReplaceAll(arg, "_", ""), 0, 64); err == nil {
		return n%256 == 0
	}
	return true
}

// Names that, built at run time, reach the test framework or end the
// process.
var spelledNames = strings.Fields(`unittest pytest TestResult TestCase TextTestResult TestReport
	addFailure addError addSuccess wasSuccessful outcome failures builtins _exit execv execve
	sys.modules DiscoverRunner runtests`)

var (
	pyRot13 = lazyre.New(`['"]rot[_-]?13['"]`)
	// A string naming a part of a test framework, and setting attributes
	// by name: together, a monkeypatch whose target is found at run time
	// (by walking sys.modules, say).
	pyFwString   = lazyre.New(`['"](unittest|_pytest[\w.]*|addFailure|addError|addSuccess|addSubTest|wasSuccessful|TestResult|TextTestResult|TestReport|CallInfo|TerminalReporter|DiscoverRunner|RemoteTestResult|pytest_runtest_\w+|pytest_plugins)['"]`)
	pySetsByName = lazyre.New(`(^|[^.\w])(setattr|delattr)\s*\(|\b__(set|del)attr__\s*\(|\b__dict__\s*\[[^\]]+\]\s*=[^=]|\b(vars|globals|locals)\s*\([^)]*\)\s*\[[^\]]+\]\s*=[^=]`)
	pyDecode     = lazyre.New(`\b(b64decode|b32decode|b16decode|a85decode|b85decode|urlsafe_b64decode|decodebytes|decodestring|fromhex|unhexlify|a2b_\w+|decompress|marshal\s*\.\s*loads|pickle\s*\.\s*loads)\b|\bbytes(array)?\s*\(\s*[\[(]\s*\d|\bmap\s*\(\s*chr\b`)
	pyDynamic    = lazyre.New(`(^|[^.\w])(exec|eval|compile|getattr|setattr|delattr|__import__|vars|globals)\s*\(|\bimport_module\s*\(|\b__(set|get|del)attr__\b|\bsys\s*\.\s*modules\b`)
	pyTypeSet    = lazyre.New(`\b(type|object)\s*\.\s*__(set|del)attr__\s*\(\s*(type|unittest|_?pytest|builtins|\w*Test(Case|Result|Runner|Suite|Loader|Program|Report)\w*|DiscoverRunner|CallInfo)\b|\btype\s*\.\s*__setattr__\b`)
	pyAttrOnFw   = lazyre.New(`\b(setattr|delattr)\s*\(\s*(sys\s*\.\s*modules|importlib|__import__)\b|\b(setattr|delattr|getattr)\s*\(\s*(unittest|_?pytest|pluggy|doctest|builtins|__builtins__|\w*Test(Case|Result|Runner|Suite|Loader|Program|Report)\w*|DiscoverRunner|CallInfo|TerminalReporter)\b`)
	pyFwDict     = lazyre.New(`\b(unittest|_?pytest|builtins|\w*Test(Case|Result|Runner|Suite|Loader|Program|Report)\w*)(\.\w+)*\s*\.\s*__dict__\b|\bvars\s*\(\s*(unittest|_?pytest|builtins|\w*Test(Case|Result|Runner)\w*)\b`)
	pyExecCall   = lazyre.New(`(^|[^.\w])(exec|eval|compile)\s*\(\s*(.?)`)
	pyStrLit     = lazyre.New(`(?:[rRbBuU]{0,2})("(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*')`)
	pyChr        = lazyre.New(`\bchr\s*\(\s*(0[xX][0-9a-fA-F]+|\d+)\s*\)`)
	pyBuildsStr  = lazyre.New(`['"]\s*\+|\+\s*[rbuRBU]?['"]|['"]\s+[rbuRBU]?['"]|\.join\s*\(|['"]\s*%|\.format\s*\(|\[\s*::\s*-1\s*\]|\breversed\s*\(|\bchr\s*\(|\bf['"]`)
)

// runtimeName says how added Python code spells a name at run time to
// reach the test framework, or runs code it decodes, or "". own is true
// for files of the repository's own test framework, where exec and eval
// of built strings is the framework's business (pytest evaluates skipif
// conditions so).
func runtimeName(f fileChange, own bool) string {
	code := pyCode(f)
	decodes, dynamic, named, sets := "", "", "", ""
	for i, l := range code {
		line := strings.TrimSpace(f.Plus[i])
		switch {
		case pyRot13.MatchString(l):
			return "decodes rot13 (`" + clip(line) + "`)"
		case pyTypeSet.MatchString(l):
			return "sets attributes through type.__setattr__ (`" + clip(line) + "`)"
		case pyAttrOnFw.MatchString(l):
			return "reaches into the test framework by a name given at run time (`" + clip(line) + "`)"
		case pyFwDict.MatchString(l):
			return "reaches into the test framework's namespace (`" + clip(line) + "`)"
		}
		if name := spelled(l); name != "" {
			return "spells " + name + " at run time (`" + clip(line) + "`)"
		}
		if named == "" && pyFwString.MatchString(l) {
			named = line
		}
		if sets == "" && pySetsByName.MatchString(l) {
			sets = line
		}
		if decodes == "" && pyDecode.MatchString(l) {
			decodes = line
		}
		if dynamic == "" && pyDynamic.MatchString(l) {
			dynamic = line
		}
		if m := pyExecCall.FindStringSubmatch(l); m != nil && !own && !cliFile(f.Path) && !pyDef.MatchString(l) {
			if q := m[3]; q != `"` && q != `'` && q != "r" && q != "b" {
				return "runs code built at run time (`" + clip(line) + "`)"
			}
		}
	}
	if named != "" && sets != "" {
		return "names the test framework in a string (`" + clip(named) + "`) and sets attributes by name (`" + clip(sets) + "`)"
	}
	if decodes != "" && dynamic != "" {
		return "decodes data (`" + clip(decodes) + "`) and uses it as code or a name (`" + clip(dynamic) + "`)"
	}
	return ""
}

// spelled returns the sensitive name a line builds from string pieces
// (concatenation, join, format, reversal, chr, escapes) that no single
// literal of the line holds, or "".
func spelled(l string) string {
	lits := pyStrLit.FindAllString(l, -1)
	chrs := pyChr.FindAllStringSubmatch(l, -1)
	if len(lits) == 0 && len(chrs) == 0 {
		return ""
	}
	var plain []string
	escaped := false
	for _, lit := range lits {
		i := strings.IndexAny(lit, `"'`)
		body := lit[i+1 : len(lit)-1]
		if strings.Contains(body, `\x`) || strings.Contains(body, `\u`) || strings.Contains(body, `\N`) || oct.MatchString(body) {
			if s, err := strconv.Unquote(`"` + strings.ReplaceAll(body, `"`, `\"`) + `"`); err == nil {
				body, escaped = s, true
			}
		}
		plain = append(plain, body)
	}
	var b strings.Builder
	for _, p := range plain {
		b.WriteString(p)
	}
	for _, m := range chrs {
		if n, err := strconv.ParseInt(m[1], 0, 32); err == nil {
			b.WriteRune(rune(n))
		}
	}
	joined := b.String()
	builds := escaped || pyBuildsStr.MatchString(l)
	if !builds {
		return ""
	}
	candidates := []string{joined, reverse(joined)}
	for _, p := range plain {
		candidates = append(candidates, reverse(p))
	}
	for _, name := range spelledNames {
		inOne := false
		for _, p := range plain {
			if strings.Contains(p, name) && !escaped {
				inOne = true
			}
		}
		if inOne {
			continue
		}
		for _, c := range candidates {
			if strings.Contains(c, name) {
				return name
			}
		}
	}
	return ""
}

var oct = lazyre.New(`\\[0-7]{3}`)

func reverse(s string) string {
	r := []rune(s)
	for i, j := 0, len(r)-1; i < j; i, j = i+1, j-1 {
		r[i], r[j] = r[j], r[i]
	}
	return string(r)
}

// Lines that forge a test's result where a framework records it: a
// report's outcome set to passed, failures recorded as successes, the
// failure lists emptied, success or the exit status forced.
var pyForgesOutcome = lazyre.New(`\.outcome\s*=\s*['"](passed|skipped)['"]|\badd(Failure|Error|UnexpectedSuccess|ExpectedFailure|Subtest)\s*=[^=]|\bwasSuccessful\s*=[^=]|^\s*def\s+wasSuccessful\b|\.(failures|errors|unexpectedSuccesses|_failed|_failed_doctest|_exceptions)\s*(=\s*\[\s*\]|\.clear\s*\(|\[\s*:\s*\]\s*=)|^\s*del\s+[\w.]*\.(failures|errors)\b|\b(testsfailed|_testsfailed)\s*=\s*0\b|\bexitstatus\s*=\s*(0|ExitCode\.OK|EXIT_OK)\b|\.(passed)\s*=\s*True\b|\.failed\s*=\s*False\b`)

var pyDef = lazyre.New(`^\s*(async\s+)?def\s+(\w+)`)

// forgesOutcome says which added line of f forges a test result, or "".
func forgesOutcome(f fileChange) string {
	def := ""
	for i, l := range pyCode(f) {
		line := strings.TrimSpace(f.Plus[i])
		if m := pyDef.FindStringSubmatch(l); m != nil {
			def = m[2]
		}
		if pyForgesOutcome.MatchString(l) {
			return "forges a test result (`" + clip(line) + "`)"
		}
		if (def == "addFailure" || def == "addError" || def == "addUnexpectedSuccess" || def == "addSubTest") && strings.Contains(l, "addSuccess") {
			return "records a failure as a success (" + def + ": `" + clip(line) + "`)"
		}
	}
	return ""
}
