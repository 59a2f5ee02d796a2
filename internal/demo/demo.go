// Package demo ships swerve's demo tasks inside the binary: three tiny
// repositories (two Python, one Bash), each with an issue, a gold patch,
// hidden tests and an eval script, graded by two different graders. The
// demo command extracts them, builds their images when a container engine
// answers (from a base image made locally, no registry involved), and runs
// the whole loop on them.
package demo

import (
	"bytes"
	"context"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/swerve-dev/swerve/internal/sandbox/docker"
)

//go:embed all:tasks
var embedded embed.FS

// DatasetName is the dataset file Extract writes.
const DatasetName = "tasks.jsonl"

// BaseImage is the image the demo images and the Docker tests start from:
// minimal Debian with python3, pytest, git and patch, built locally by
// EnsureBase (base.go).
const BaseImage = "swerve-test-base:bookworm"

// Extract writes the tasks under dir: one git repository per task (a
// single commit with fixed author and date, so its hash is the same on
// every machine) and the dataset. It returns the dataset's path.
func Extract(ctx context.Context, dir string) (string, error) {
	err := fs.WalkDir(embedded, "tasks", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel := strings.TrimPrefix(strings.TrimPrefix(p, "tasks"), "/")
		dst := filepath.Join(dir, rel)
		if d.IsDir() {
			return os.MkdirAll(dst, 0o755)
		}
		data, err := embedded.ReadFile(p)
		if err != nil {
			return err
		}
		mode := fs.FileMode(0o644)
		if strings.HasSuffix(p, ".sh") {
			mode = 0o755
		}
		return os.WriteFile(dst, data, mode)
	})
	if err != nil {
		return "", fmt.Errorf("demo: extract tasks: %w", err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return "", err
	}
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		repo := filepath.Join(dir, e.Name())
		if _, err := os.Stat(filepath.Join(repo, ".git")); err == nil {
			continue
		}
		if err := gitInit(ctx, repo); err != nil {
			return "", fmt.Errorf("demo: %s: %w", e.Name(), err)
		}
	}
	path := filepath.Join(dir, DatasetName)
	if err := fillBaseCommits(ctx, path); err != nil {
		return "", err
	}
	return path, nil
}

// fillBaseCommits writes each repository's commit into its row.
func fillBaseCommits(ctx context.Context, path string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var out bytes.Buffer
	for _, line := range bytes.Split(bytes.TrimSpace(data), []byte("\n")) {
		var row map[string]any
		if err := json.Unmarshal(line, &row); err != nil {
			return fmt.Errorf("demo: dataset: %w", err)
		}
		src, _ := row["source_dir"].(string)
		cmd := exec.CommandContext(ctx, "git", "rev-parse", "HEAD")
		cmd.Dir = filepath.Join(filepath.Dir(path), src)
		head, err := cmd.Output()
		if err != nil {
			return fmt.Errorf("demo: %s: git rev-parse HEAD: %w", src, err)
		}
		row["base_commit"] = strings.TrimSpace(string(head))
		b, _ := json.Marshal(row)
		out.Write(b)
		out.WriteByte('\n')
	}
	return os.WriteFile(path, out.Bytes(), 0o644)
}

func gitInit(ctx context.Context, dir string) error {
	env := append(os.Environ(),
		"GIT_AUTHOR_NAME=swerve", "GIT_AUTHOR_EMAIL=demo@swerve.invalid", "GIT_AUTHOR_DATE=2026-01-01T00:00:00Z",
		"GIT_COMMITTER_NAME=swerve", "GIT_COMMITTER_EMAIL=demo@swerve.invalid", "GIT_COMMITTER_DATE=2026-01-01T00:00:00Z")
	for _, args := range [][]string{
		{"init", "-q", "-b", "main"},
		{"add", "-A"},
		{"-c", "commit.gpgsign=false", "commit", "-q", "-m", "demo task"},
	} {
		cmd := exec.CommandContext(ctx, "git", args...)
		cmd.Dir, cmd.Env = dir, env
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("git %s: %v: %s", strings.Join(args, " "), err, bytes.TrimSpace(out))
		}
	}
	return nil
}

// Images builds one image per task (reused when it exists: the tag names
// a hash of the task's files and the base image) and writes a copy of the
// dataset whose rows name them. It returns the new dataset's path.
func Images(ctx context.Context, b *docker.Backend, dir, base string, progress io.Writer) (string, error) {
	data, err := os.ReadFile(filepath.Join(dir, DatasetName))
	if err != nil {
		return "", err
	}
	var out bytes.Buffer
	for _, line := range bytes.Split(bytes.TrimSpace(data), []byte("\n")) {
		var row map[string]any
		if err := json.Unmarshal(line, &row); err != nil {
			return "", fmt.Errorf("demo: dataset: %w", err)
		}
		src, _ := row["source_dir"].(string)
		name := filepath.Base(src)
		tag, err := imageTag(name, base)
		if err != nil {
			return "", err
		}
		ok, err := b.ImageExists(ctx, tag)
		if err != nil {
			return "", err
		}
		if !ok {
			fmt.Fprintf(progress, "swerve demo: building image %s\n", tag)
			df := fmt.Sprintf("FROM %s\nCOPY . /testbed\nWORKDIR /testbed\n", base)
			if err := b.Build(ctx, docker.BuildOptions{ContextDir: filepath.Join(dir, src), Dockerfile: df, Tags: []string{tag}, Labels: map[string]string{"swerve.demo": "1"}}); err != nil {
				return "", err
			}
		}
		row["image"] = tag
		delete(row, "source_dir")
		b, _ := json.Marshal(row)
		out.Write(b)
		out.WriteByte('\n')
	}
	path := filepath.Join(dir, "tasks.docker.jsonl")
	return path, os.WriteFile(path, out.Bytes(), 0o644)
}

// imageTag names a task's image after a hash of its embedded files.
func imageTag(name, base string) (string, error) {
	h := sha256.New()
	io.WriteString(h, base+" "+BaseRecipe()+"\n")
	err := fs.WalkDir(embedded, "tasks/"+name, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := embedded.ReadFile(p)
		if err != nil {
			return err
		}
		fmt.Fprintf(h, "%s %d\n", p, len(data))
		h.Write(data)
		return nil
	})
	if err != nil {
		return "", err
	}
	return "swerve-demo-" + name + ":" + hex.EncodeToString(h.Sum(nil))[:12], nil
}
