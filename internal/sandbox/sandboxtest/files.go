package sandboxtest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"sync"
	"testing"

	"github.com/swerve-dev/swerve/internal/sandbox"
)

func (s *suite) fileTests() []subtest {
	return []subtest{
		{"AllBytes", s.testFileAllBytes},
		{"Large", s.testFileLarge},
		{"LargeFromExec", s.testFileLargeFromExec},
		{"Mode", s.testFileMode},
		{"ParentDirs", s.testFileParentDirs},
		{"OverwriteTruncates", s.testFileOverwrite},
		{"Missing", s.testFileMissing},
		{"Directory", s.testFileDirectory},
		{"ExecInterop", s.testFileExecInterop},
		{"Empty", s.testFileEmpty},
		{"AbsolutePath", s.testFileAbsolute},
		{"OddNames", s.testFileOddNames},
		{"Concurrent", s.testFileConcurrent},
	}
}

func writeFile(t testing.TB, box sandbox.Sandbox, path string, data []byte, mode fs.FileMode) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	if err := box.WriteFile(ctx, path, data, mode); err != nil {
		t.Fatalf("WriteFile(%q, %d bytes, %v): got error %v, want nil", path, len(data), mode, err)
	}
}

func readFileErr(box sandbox.Sandbox, path string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	return box.ReadFile(ctx, path)
}

func readFile(t testing.TB, box sandbox.Sandbox, path string) []byte {
	t.Helper()
	data, err := readFileErr(box, path)
	if err != nil {
		t.Fatalf("ReadFile(%q): got error %v, want its content", path, err)
	}
	return data
}

// wantFile checks that ReadFile(path) returns want.
func wantFile(t testing.TB, box sandbox.Sandbox, path string, want []byte) {
	t.Helper()
	if got := readFile(t, box, path); !bytes.Equal(got, want) {
		t.Errorf("ReadFile(%q) = %s (%d bytes), want %s (%d bytes)", path, clip(got), len(got), clip(want), len(want))
	}
}

// fileDigestScript prints the length and SHA-256 of the file argv[1].
const fileDigestScript = `import sys, hashlib
d = open(sys.argv[1], "rb").read()
print(len(d), hashlib.sha256(d).hexdigest())`

// wantDigestInBox checks the file as the box sees it.
func wantDigestInBox(t testing.TB, box sandbox.Sandbox, path string, want []byte) {
	t.Helper()
	req := sandbox.ExecRequest{Cmd: []string{"python3", "-c", fileDigestScript, path}}
	wantOutput(t, req, run(t, box, req), digest(want))
}

func (s *suite) testFileAllBytes(t *testing.T) {
	box := s.open(t, nil)
	data := allBytes()
	writeFile(t, box, "bin/all.bytes", data, 0o644)
	wantFile(t, box, "bin/all.bytes", data)
	wantDigestInBox(t, box, "bin/all.bytes", data)
}

func (s *suite) testFileLarge(t *testing.T) {
	box := s.open(t, nil)
	data := randomBytes(5<<20, 2)
	writeFile(t, box, "large.bin", data, 0o644)
	wantDigestInBox(t, box, "large.bin", data)
	wantFile(t, box, "large.bin", data)
}

func (s *suite) testFileLargeFromExec(t *testing.T) {
	box := s.open(t, nil)
	bashOK(t, box, "head -c 3000000 /dev/urandom > urandom.bin")
	got := readFile(t, box, "urandom.bin")
	if len(got) != 3000000 {
		t.Fatalf("ReadFile(urandom.bin) returned %d bytes, want 3000000", len(got))
	}
	wantDigestInBox(t, box, "urandom.bin", got)
}

func (s *suite) testFileMode(t *testing.T) {
	box := s.open(t, nil)
	for _, tc := range []struct {
		path string
		mode fs.FileMode
		want string
	}{
		{"tools/run.sh", 0o755, "755\n"},
		{"tools/secret.txt", 0o600, "600\n"},
		{"tools/plain.txt", 0o644, "644\n"},
	} {
		writeFile(t, box, tc.path, []byte("#!/bin/sh\necho ran\n"), tc.mode)
		req := sandbox.ExecRequest{Cmd: []string{"stat", "-c", "%a", tc.path}}
		res := run(t, box, req)
		if res.ExitCode != 0 || string(res.Output) != tc.want {
			t.Errorf("after WriteFile(%q, mode %v): %s gave %s, want %q", tc.path, tc.mode, showCmd(req.Cmd), showRes(res), tc.want)
		}
	}
	req := sandbox.ExecRequest{Cmd: []string{"./tools/run.sh"}}
	wantOutput(t, req, run(t, box, req), "ran\n")
}

func (s *suite) testFileParentDirs(t *testing.T) {
	box := s.open(t, nil)
	writeFile(t, box, "a/b/c/d.txt", []byte("deep\n"), 0o644)
	req := sandbox.ExecRequest{Cmd: sandbox.Bash("test -d a/b/c && cat a/b/c/d.txt")}
	wantOutput(t, req, run(t, box, req), "deep\n")
	wantFile(t, box, "a/b/c/d.txt", []byte("deep\n"))
}

func (s *suite) testFileOverwrite(t *testing.T) {
	box := s.open(t, nil)
	writeFile(t, box, "over.txt", []byte("a much longer first version\n"), 0o644)
	writeFile(t, box, "over.txt", []byte("short\n"), 0o644)
	wantFile(t, box, "over.txt", []byte("short\n"))
	req := sandbox.ExecRequest{Cmd: []string{"stat", "-c", "%s", "over.txt"}}
	wantOutput(t, req, run(t, box, req), "6\n")
}

func (s *suite) testFileMissing(t *testing.T) {
	box := s.open(t, nil)
	for _, path := range []string{"sbt-missing.txt", "sbt-missing-dir/file.txt"} {
		data, err := readFileErr(box, path)
		if !errors.Is(err, sandbox.ErrNotFound) {
			t.Errorf("ReadFile(%q) of a missing file: got %q, error %v; want an error wrapping ErrNotFound", path, data, err)
		}
	}
}

func (s *suite) testFileDirectory(t *testing.T) {
	box := s.open(t, nil)
	bashOK(t, box, "mkdir -p adir/inner")
	if data, err := readFileErr(box, "adir"); err == nil {
		t.Errorf("ReadFile(%q) of a directory: got %q and no error, want an error", "adir", data)
	}
}

func (s *suite) testFileExecInterop(t *testing.T) {
	box := s.open(t, nil)
	bashOK(t, box, "printf 'from exec\\n' > from-exec.txt")
	wantFile(t, box, "from-exec.txt", []byte("from exec\n"))

	writeFile(t, box, "from-write.txt", []byte("from WriteFile\n"), 0o644)
	req := sandbox.ExecRequest{Cmd: []string{"cat", "from-write.txt"}}
	wantOutput(t, req, run(t, box, req), "from WriteFile\n")
}

func (s *suite) testFileEmpty(t *testing.T) {
	box := s.open(t, nil)
	for _, tc := range []struct {
		path string
		data []byte
	}{{"empty-nil.txt", nil}, {"empty.txt", []byte{}}} {
		writeFile(t, box, tc.path, tc.data, 0o644)
		req := sandbox.ExecRequest{Cmd: []string{"stat", "-c", "%s", tc.path}}
		wantOutput(t, req, run(t, box, req), "0\n")
		wantFile(t, box, tc.path, nil)
	}
	bashOK(t, box, ": > empty-exec.txt")
	wantFile(t, box, "empty-exec.txt", nil)
}

func (s *suite) testFileAbsolute(t *testing.T) {
	box := s.open(t, nil)
	base := workdir(t, box)
	abs := path.Join(base, "abs/x.txt") // base may be "/"
	writeFile(t, box, abs, []byte("absolute\n"), 0o644)
	req := sandbox.ExecRequest{Cmd: []string{"cat", "abs/x.txt"}}
	wantOutput(t, req, run(t, box, req), "absolute\n")
	wantFile(t, box, abs, []byte("absolute\n"))
}

func (s *suite) testFileOddNames(t *testing.T) {
	box := s.open(t, nil)
	for _, path := range []string{
		"dir with space/ünïcødé file.txt",
		"quotes/it's \"quoted\" $HOME *.txt",
		".hidden/-leading-dash",
	} {
		data := []byte("name: " + path + "\n")
		writeFile(t, box, path, data, 0o644)
		wantFile(t, box, path, data)
		req := sandbox.ExecRequest{Cmd: []string{"cat", "--", path}}
		wantOutput(t, req, run(t, box, req), string(data))
	}
}

func (s *suite) testFileConcurrent(t *testing.T) {
	box := s.open(t, nil)
	const n = 20
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			path := fmt.Sprintf("conc/file-%02d", i)
			data := randomBytes(100<<10, uint64(100+i))
			ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
			defer cancel()
			if err := box.WriteFile(ctx, path, data, 0o644); err != nil {
				t.Errorf("WriteFile(%q) #%d: got error %v, want nil", path, i, err)
				return
			}
			got, err := box.ReadFile(ctx, path)
			if err != nil || !bytes.Equal(got, data) {
				t.Errorf("ReadFile(%q) #%d: got %d bytes, error %v; want the %d bytes written", path, i, len(got), err, len(data))
			}
		})
	}
	wg.Wait()
	req := sandbox.ExecRequest{Cmd: sandbox.Bash("ls conc | wc -l")}
	wantOutput(t, req, run(t, box, req), fmt.Sprintf("%d\n", n))
}
