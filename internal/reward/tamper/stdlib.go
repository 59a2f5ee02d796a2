package tamper

import (
	"strings"
	"sync"
)

// stdlibModules are the top-level modules of Python's standard library
// (3.12's sys.stdlib_module_names without the private ones and the stdlib's
// own "test" package, which nothing imports while running tests).
var stdlibModules = words(`
	abc aifc argparse array ast asynchat asyncio asyncore atexit audioop base64 bdb binascii 
	bisect builtins bz2 cProfile calendar cgi cgitb chunk cmath cmd code codecs codeop 
	collections colorsys compileall concurrent configparser contextlib contextvars copy 
	copyreg crypt csv ctypes curses dataclasses datetime dbm decimal difflib dis distutils 
	doctest email encodings ensurepip enum errno faulthandler fcntl filecmp fileinput fnmatch 
	fractions ftplib functools gc genericpath getopt getpass gettext glob graphlib grp gzip 
	hashlib heapq hmac html http imaplib imghdr imp importlib inspect io ipaddress itertools 
	json keyword lib2to3 linecache locale logging lzma mailbox mailcap marshal math mimetypes 
	mmap modulefinder msilib msvcrt multiprocessing netrc nis nntplib nt ntpath nturl2path 
	numbers opcode operator optparse os ossaudiodev pathlib pdb pickle pickletools pipes 
	pkgutil platform plistlib poplib posix posixpath pprint profile pstats pty pwd py_compile 
	pyclbr pydoc pydoc_data pyexpat queue quopri random re readline reprlib resource 
	rlcompleter runpy sched secrets select selectors shelve shlex shutil signal site smtpd 
	smtplib sndhdr socket socketserver spwd sqlite3 sre_compile sre_constants sre_parse ssl 
	stat statistics string stringprep struct subprocess sunau symtable sys sysconfig syslog 
	tabnanny tarfile telnetlib tempfile termios textwrap threading time timeit tkinter token 
	tokenize tomllib trace traceback tracemalloc tty turtle types typing unicodedata unittest 
	urllib uu uuid venv warnings wave weakref webbrowser winreg winsound wsgiref xdrlib xml 
	xmlrpc zipapp zipfile zipimport zlib zoneinfo
`)

// wordSet is a set of words written as one space-separated string. Its map
// is built on first use, not at start-up: the binary starts in every box,
// and most commands never look a word up.
type wordSet struct {
	src  string
	once sync.Once
	m    map[string]bool
}

// words returns the set of the whitespace-separated words of src.
func words(src string) *wordSet { return &wordSet{src: src} }

// set returns the set as a map, built once; callers must not change it.
func (s *wordSet) set() map[string]bool {
	s.once.Do(func() {
		f := strings.Fields(s.src)
		s.m = make(map[string]bool, len(f))
		for _, w := range f {
			s.m[w] = true
		}
	})
	return s.m
}

// has reports whether w is one of the set's words.
func (s *wordSet) has(w string) bool { return s.set()[w] }
