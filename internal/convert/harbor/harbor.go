// Package harbor turns swerve tasks into Harbor task directories, one per
// task, that Harbor (and swerve's own harbor grader) can run unchanged:
//
//	<name>/
//	  instruction.md          the issue text, as the dataset has it, then
//	                          sections naming the repository and the task
//	  task.toml               Harbor's task config: version, [metadata],
//	                          [verifier], [agent], [environment]
//	  environment/Dockerfile  the row's Dockerfile, or FROM <image>, or (with
//	                          a base image) a build of the row's host repository
//	  environment/repo/       that host repository, only in the last case
//	  tests/test.sh           Harbor's verifier: runs eval.sh and writes
//	                          /logs/verifier/reward.txt
//	  tests/eval.sh           the row's eval script, byte for byte
//	  tests/test.patch        the row's test patch, byte for byte (when it
//	                          has one; eval.sh applies its own copy)
//	  tests/expected_tests.json  the tests whose pytest results swerve's
//	                          grader requires (rows that run pytest and
//	                          whose test patch adds test functions)
//	  solution/solve.sh       applies the gold patch (left out without one,
//	                          or with Options.NoSolution)
//
// <name> is the instance id made safe as a file name (see DirName).
//
// # Which rows convert
//
// Harbor learns the outcome from a reward file written inside the box, so
// the verdict has to be computable there with nothing but a shell. That
// holds for rows graded by SWE-Factory's rule: the eval script prints
// OMNIGRIL_EXIT_CODE=<status of the test command>, and the task is solved
// when the last such echo says 0. test.sh takes the status from the echo
// command itself as bash runs it, never from printed output, as swerve's
// swefactory grader takes it from bash's own trace (see testScript).
//
// Rows graded any other way are refused, naming the row and the reason:
// SWE-bench and SWE-smith rows need the test log parsed with a
// per-repository parser and compared with FAIL_TO_PASS / PASS_TO_PASS, and
// R2E-Gym rows need it compared with expected_output_json; none of that
// exists in the box. Their eval scripts' exit status is no substitute: a
// SWE-bench script ends by checking the test files out again, so it exits 0
// whether the tests passed or not. Harbor rows are already Harbor tasks.
package harbor

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/swerve-dev/swerve/internal/reward/grader"
	"github.com/swerve-dev/swerve/internal/reward/harbor"
	"github.com/swerve-dev/swerve/internal/reward/swefactory"
	"github.com/swerve-dev/swerve/internal/task"
)

// RepoDir is where a row's host repository is copied inside environment/
// when the environment is built from it (Options.BaseImage).
const RepoDir = "repo"

// Config holds the task.toml values that do not come from the row.
type Config struct {
	// VerifierTimeout is [verifier] timeout_sec: how long tests/test.sh
	// (and so the eval script) may run.
	VerifierTimeout time.Duration
	// AgentTimeout is [agent] timeout_sec.
	AgentTimeout time.Duration
	// BuildTimeout is [environment] build_timeout_sec.
	BuildTimeout time.Duration
	// CPUs, MemoryMB and StorageMB are [environment] cpus, memory_mb and
	// storage_mb.
	CPUs      int
	MemoryMB  int
	StorageMB int
	// AuthorName and AuthorEmail are [metadata] author_name and
	// author_email.
	AuthorName  string
	AuthorEmail string
	// Category is [metadata] category.
	Category string
}

// DefaultConfig is the Config the command starts from.
func DefaultConfig() Config {
	return Config{
		VerifierTimeout: 300 * time.Second,
		AgentTimeout:    3600 * time.Second,
		BuildTimeout:    1800 * time.Second,
		CPUs:            1,
		MemoryMB:        4096,
		StorageMB:       10240,
		AuthorName:      "unknown",
		AuthorEmail:     "unknown",
		Category:        "software-engineering",
	}
}

// Options configure Render and Convert.
type Options struct {
	// OutDir receives one directory per task.
	OutDir string
	// Force replaces task directories that exist already; without it they
	// are refused before anything is written.
	Force bool
	// BaseImage, when set, is the image a row that carries a host
	// repository (source_dir) but no Dockerfile is built from: the
	// repository is copied to environment/repo and the Dockerfile puts it
	// at /testbed. The image needs bash and git.
	BaseImage string
	// SkipUnsupported leaves out rows that cannot become Harbor tasks
	// (listed in Result.Skipped) instead of failing.
	SkipUnsupported bool
	// NoSolution leaves solution/ out even for rows with a gold patch.
	NoSolution bool
	// Jobs is how many task directories are written at once (at least 1).
	Jobs   int
	Config Config
}

// UnsupportedError says why a row cannot become a Harbor task.
type UnsupportedError struct {
	InstanceID string
	Reason     string
}

func (e *UnsupportedError) Error() string {
	return fmt.Sprintf("task %s: cannot convert to a Harbor task: %s", e.InstanceID, e.Reason)
}

func unsupported(t *task.Task, format string, args ...any) *UnsupportedError {
	return &UnsupportedError{InstanceID: t.InstanceID, Reason: fmt.Sprintf(format, args...)}
}

// Environment kinds: where a task's environment/Dockerfile came from.
const (
	EnvDockerfile = "dockerfile" // the row's own Dockerfile
	EnvImage      = "image"      // FROM the row's image
	EnvSource     = "source"     // the row's host repository on Options.BaseImage
)

// File is one file of a rendered task, its path relative to the task
// directory (slash-separated).
type File struct {
	Path string
	Data []byte
	Mode fs.FileMode
}

// Task is one rendered Harbor task, not yet on disk.
type Task struct {
	InstanceID string
	// Name is the task directory's name (DirName of the instance id).
	Name string
	// Env is how environment/Dockerfile was made (EnvDockerfile, ...).
	Env string
	// Solution reports whether solution/solve.sh is there (the row has a
	// gold patch).
	Solution bool
	Files    []File
	// SourceDir, when set, is the host repository copied to
	// environment/repo.
	SourceDir string
}

// DirName makes an instance id safe as a directory name: every character
// other than ASCII letters, digits, '.', '_' and '-' becomes '_', and a
// leading '.' becomes '_' (no hidden directories). It returns "" for ids
// that leave nothing usable.
func DirName(id string) string {
	var b strings.Builder
	for _, r := range id {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '.', r == '_', r == '-':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	s := b.String()
	if strings.HasPrefix(s, ".") {
		s = "_" + s[1:]
	}
	if strings.Trim(s, "_") == "" {
		return ""
	}
	return s
}

// Check reports whether t can become a Harbor task; the error is an
// *UnsupportedError.
func Check(t *task.Task) error {
	if t.Dialect == task.DialectHarbor || t.TaskDir != "" {
		return unsupported(t, "it is a Harbor task already (%s)", t.TaskDir)
	}
	g, err := grader.Choose(t, "")
	if err != nil {
		return unsupported(t, "%v", err)
	}
	switch g {
	case task.GraderSWEFactory:
	case task.GraderSWEBench, task.GraderSWESmith:
		return unsupported(t, "graded by %s, which parses the test log and checks FAIL_TO_PASS / PASS_TO_PASS; "+
			"that cannot run inside a Harbor verifier, and the eval script's exit status does not tell whether the tests passed "+
			"(only rows graded by the %s line, swefactory, convert)", g, swefactory.Marker)
	case task.GraderR2E:
		return unsupported(t, "graded by r2e, which compares the parsed test log with expected_output_json; "+
			"that cannot run inside a Harbor verifier (only rows graded by the %s line, swefactory, convert)", swefactory.Marker)
	default:
		return unsupported(t, "graded by %s (only rows graded by the %s line, swefactory, convert)", g, swefactory.Marker)
	}
	if strings.TrimSpace(t.EvalScript) == "" {
		return unsupported(t, "eval_script: empty; tests/test.sh runs it")
	}
	if !strings.Contains(t.EvalScript, swefactory.Marker) {
		return unsupported(t, "eval_script never prints %s=<n>, the line the reward is read from", swefactory.Marker)
	}
	if strings.TrimSpace(t.ProblemStatement) == "" {
		return unsupported(t, "problem_statement: empty; it is the task's whole instruction.md")
	}
	if DirName(t.InstanceID) == "" {
		return unsupported(t, "instance_id %q leaves nothing to name a directory with", t.InstanceID)
	}
	return nil
}

// Render lays out t as a Harbor task without writing anything. A row that
// cannot be converted gives an *UnsupportedError.
func Render(t *task.Task, opts Options) (*Task, error) {
	if err := Check(t); err != nil {
		return nil, err
	}
	out := &Task{InstanceID: t.InstanceID, Name: DirName(t.InstanceID)}
	dockerfile, err := environment(t, opts, out)
	if err != nil {
		return nil, err
	}
	conf, err := taskTOML(t, opts.Config)
	if err != nil {
		return nil, fmt.Errorf("task %s: task.toml: %w", t.InstanceID, err)
	}
	out.Files = []File{
		{Path: "instruction.md", Data: []byte(instruction(t)), Mode: 0o644},
		{Path: "task.toml", Data: conf, Mode: 0o644},
		{Path: "environment/Dockerfile", Data: []byte(dockerfile), Mode: 0o644},
		{Path: "tests/eval.sh", Data: []byte(t.EvalScript), Mode: 0o755},
	}
	expected := expectedTests(t)
	out.Files = append(out.Files, File{Path: "tests/test.sh", Data: []byte(testScript(t.InstanceID, expected != nil)), Mode: 0o755})
	if expected != nil {
		out.Files = append(out.Files, File{Path: "tests/" + harbor.ExpectedTests, Data: expected, Mode: 0o644})
	}
	if t.TestPatch != "" {
		out.Files = append(out.Files, File{Path: "tests/test.patch", Data: []byte(t.TestPatch), Mode: 0o644})
	}
	if t.Patch != "" && !opts.NoSolution {
		out.Solution = true
		out.Files = append(out.Files, File{Path: "solution/solve.sh", Data: []byte(solveScript(t.InstanceID, t.Patch)), Mode: 0o755})
	}
	return out, nil
}

// environment picks the Dockerfile: the row's own; else, with a base image,
// one that builds the row's host repository; else FROM the row's image.
func environment(t *task.Task, opts Options, out *Task) (string, error) {
	switch {
	case strings.TrimSpace(t.Dockerfile) != "":
		out.Env = EnvDockerfile
		return t.Dockerfile, nil
	case opts.BaseImage != "" && t.SourceDir != "":
		fi, err := os.Stat(t.SourceDir)
		if err != nil || !fi.IsDir() {
			return "", unsupported(t, "source_dir %s is not a directory", t.SourceDir)
		}
		out.Env, out.SourceDir = EnvSource, t.SourceDir
		return sourceDockerfile(opts.BaseImage), nil
	}
	image := t.Image
	if t.SourceDir != "" && !namesImage(t) {
		// The loader's guess (SWE-bench's image name for an id), not an
		// image the row names: a row with a host repository has none.
		image = ""
	}
	if image == "" {
		if t.SourceDir != "" {
			return "", unsupported(t, "no Dockerfile and no image, only a host repository (source_dir %s); pass a base image (--base-image) to build one from it", t.SourceDir)
		}
		return "", unsupported(t, "no Dockerfile and no image to build environment/Dockerfile from")
	}
	out.Env = EnvImage
	return "FROM " + image + "\n", nil
}

// namesImage reports whether the original row names an image itself.
func namesImage(t *task.Task) bool {
	for _, k := range []string{"image", "image_name", "docker_image", "docker_name"} {
		raw, ok := t.RawField(k)
		if !ok {
			continue
		}
		var s string
		if json.Unmarshal(raw, &s) == nil && s != "" {
			return true
		}
	}
	return false
}

// sourceDockerfile builds a host repository (copied to environment/repo)
// on base, at /testbed, committed as found when it is not a git repository
// already, so agents can diff their work against it.
func sourceDockerfile(base string) string {
	var b bytes.Buffer
	fmt.Fprintf(&b, "FROM %s\n", base)
	fmt.Fprintf(&b, "COPY %s /testbed\n", RepoDir)
	b.WriteString("WORKDIR /testbed\n")
	b.WriteString("RUN if [ ! -e .git ]; then git init -q && git add -A && " +
		"git -c user.name=swerve -c user.email=swerve@localhost -c commit.gpgsign=false commit -q -m 'task repository'; fi\n")
	return b.String()
}

// Written is one task Convert wrote.
type Written struct {
	InstanceID string `json:"instance_id"`
	Name       string `json:"name"`
	Dir        string `json:"dir"`
	Env        string `json:"environment"`
	Solution   bool   `json:"solution"`
	Replaced   bool   `json:"replaced,omitempty"`
}

// Result is what Convert did.
type Result struct {
	Written []Written
	Skipped []*UnsupportedError
}

// dirOf is the target directory of a rendered task.
func dirOf(opts Options, r *Task) string { return filepath.Join(opts.OutDir, r.Name) }
