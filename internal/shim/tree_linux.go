package shim

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
)

// TreeSubcommand is the swerve subcommand that lists a filesystem tree
// for a grader's before/after check: `swerve shim-tree ROOT...`.
const TreeSubcommand = "shim-tree"

// WalkTree writes one line per file, directory and link under each root
// (the root included, symbolic links not followed, missing roots skipped):
//
//	"<path>" <type><perm octal> <uid>:<gid> <size> <mtime ns> <ctime ns> <inode> "<link target>"
//
// paths and targets quoted as Go strings. The ctime and inode tell a file
// put back with its old size and mtime from the original. A directory that
// cannot be read gives a line "! "<path>" <error>".
//
// The roots are walked at once (the listing keeps their order): on a cold
// cache the time goes to waiting for the disk.
func WalkTree(w io.Writer, roots []string) error {
	bufs := make([]bytes.Buffer, len(roots))
	errs := make([]error, len(roots))
	var wg sync.WaitGroup
	for i, root := range roots {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = walkOne(&bufs[i], root)
		}()
	}
	wg.Wait()
	for i := range roots {
		if errs[i] != nil {
			return errs[i]
		}
		if _, err := w.Write(bufs[i].Bytes()); err != nil {
			return err
		}
	}
	return nil
}

func walkOne(w io.Writer, root string) error {
	bw := bufio.NewWriterSize(w, 1<<16)
	{
		if _, err := os.Lstat(root); errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				fmt.Fprintf(bw, "! %s %s\n", strconv.Quote(p), strconv.Quote(err.Error()))
				if d != nil && d.IsDir() {
					return fs.SkipDir
				}
				return nil
			}
			var st syscall.Stat_t
			if err := syscall.Lstat(p, &st); err != nil {
				fmt.Fprintf(bw, "! %s %s\n", strconv.Quote(p), strconv.Quote(err.Error()))
				return nil
			}
			link := ""
			if st.Mode&syscall.S_IFMT == syscall.S_IFLNK {
				link, _ = os.Readlink(p)
			}
			fmt.Fprintf(bw, "%s %c%o %d:%d %d %d %d %d %s\n", strconv.Quote(p), typeChar(st.Mode), st.Mode&0o7777,
				st.Uid, st.Gid, st.Size, st.Mtim.Nano(), st.Ctim.Nano(), st.Ino, strconv.Quote(link))
			return nil
		})
		if err != nil {
			return err
		}
	}
	return bw.Flush()
}

func typeChar(mode uint32) byte {
	switch mode & syscall.S_IFMT {
	case syscall.S_IFDIR:
		return 'd'
	case syscall.S_IFLNK:
		return 'l'
	case syscall.S_IFREG:
		return 'f'
	case syscall.S_IFIFO:
		return 'p'
	case syscall.S_IFSOCK:
		return 's'
	case syscall.S_IFCHR:
		return 'c'
	case syscall.S_IFBLK:
		return 'b'
	}
	return '?'
}
