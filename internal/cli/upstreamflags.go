package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/spf13/pflag"

	"github.com/swerve-dev/swerve/internal/sandbox"
	"github.com/swerve-dev/swerve/internal/task"
)

// upstreamFlags are the arguments of upstream's runners (SWE-Factory's and
// R2E-Gym's runagent_multiple) that swerve run takes under their names.
// Each works with upstream's meaning or is refused with one line; none is
// accepted and ignored.
type upstreamFlags struct {
	NumRestarts   int
	MaxIterations int
	UseExisting   pyBool
	SkipExisting  pyBool
	Prepull       pyBool
	RootMode      pyBool
}

func (f *upstreamFlags) register(fs *pflag.FlagSet, evalTimeout *time.Duration) {
	secondsVar(fs, evalTimeout, "max_reward_calc_time", 300*time.Second, "same as --eval_timeout (upstream's name)")
	fs.IntVar(&f.NumRestarts, "num_restarts", 1, "upstream's restarts of the agent in one box: only 1 is taken (use --max_iterations to retry)")
	fs.IntVar(&f.MaxIterations, "max_iterations", 1, "run a task's episode up to N times, each in a fresh box, until the model submits; from --temperature 0 the retries sample at 0.1, then 0.2; with no submission the one with the fewest steps is graded")
	fs.Var(&f.UseExisting, "use_existing", "True (the default): tasks finished in --traj_dir are not run again; False is refused, as swerve always resumes")
	fs.Var(&f.SkipExisting, "skip_existing", "True: leave out tasks whose docker_image has reward 1 in a <traj_dir>/<exp_name without its last character>*.jsonl file, as upstream does")
	fs.Var(&f.Prepull, "prepull_images", "True: pull the selected tasks' missing images, --max_workers at once, before the first task starts")
	fs.Var(&f.RootMode, "root_mode", "True (the default); False, upstream's tools preinstalled at /opt/tools, is refused: swerve brings its own in-box helper")
	setFlagGroup(fs, groupUpstream, "max_reward_calc_time", "num_restarts", "use_existing", "skip_existing", "prepull_images", "root_mode")
}

// check refuses the values swerve does not do, each with its reason.
func (f *upstreamFlags) check(runGolden bool) error {
	switch {
	case f.NumRestarts != 1:
		return fmt.Errorf("--num_restarts %d: upstream splits --max_steps over restarts of the agent in one box; swerve does not: use --max_iterations %d to run up to %d episodes, each in a fresh box", f.NumRestarts, max(f.NumRestarts, 2), max(f.NumRestarts, 2))
	case f.MaxIterations < 1:
		return fmt.Errorf("--max_iterations %d: want 1 or more", f.MaxIterations)
	case f.MaxIterations > 1 && runGolden:
		return fmt.Errorf("--max_iterations %d: --run_golden runs no episode to repeat", f.MaxIterations)
	}
	if p := f.UseExisting.ptr(); p != nil && !*p {
		return errors.New("--use_existing False: swerve always resumes (finished tasks in --traj_dir are kept); to run them again use another --traj_dir or --exp_name")
	}
	if p := f.RootMode.ptr(); p != nil && !*p {
		return errors.New("--root_mode False: upstream then expects its tools preinstalled at /opt/tools in the image; swerve brings its own in-box helper, so only True is taken")
	}
	return nil
}

// solvedImages is what upstream's --skip_existing reads: the docker_image
// of every row with reward 1 in the files <trajDir>/<expName minus its last
// character>*.jsonl. A row's image is ds.docker_image, or docker_image at
// the top; lines that are not such rows (other files of the directory)
// are passed over.
func solvedImages(trajDir, expName string) (map[string]bool, error) {
	prefix := expName
	if prefix != "" {
		prefix = prefix[:len(prefix)-1]
	}
	entries, err := os.ReadDir(trajDir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("--skip_existing: %w", err)
	}
	solved := map[string]bool{}
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || !strings.HasPrefix(name, prefix) || !strings.HasSuffix(name, ".jsonl") {
			continue
		}
		if err := readSolved(filepath.Join(trajDir, name), solved); err != nil {
			return nil, fmt.Errorf("--skip_existing: %w", err)
		}
	}
	return solved, nil
}

func readSolved(path string, solved map[string]bool) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<30)
	for sc.Scan() {
		var row struct {
			Reward      *float64 `json:"reward"`
			DockerImage string   `json:"docker_image"`
			DS          struct {
				DockerImage string `json:"docker_image"`
			} `json:"ds"`
		}
		if json.Unmarshal(sc.Bytes(), &row) != nil || row.Reward == nil || *row.Reward != 1 {
			continue
		}
		img := row.DS.DockerImage
		if img == "" {
			img = row.DockerImage
		}
		if img != "" {
			solved[img] = true
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

// dropSolved leaves out the tasks whose image is in solved.
func dropSolved(tasks []task.Task, solved map[string]bool) (kept []task.Task, dropped int) {
	for _, t := range tasks {
		if t.Image != "" && solved[t.Image] {
			dropped++
			continue
		}
		kept = append(kept, t)
	}
	return kept, dropped
}

// prepull fetches the tasks' images before any task starts, workers at a
// time, as upstream's --prepull_images does. Images that fail are listed;
// their tasks then fail at opening their box, as without the flag.
func prepull(ctx context.Context, bf *boxFlags, tasks []task.Task, workers int, stderr io.Writer) error {
	opts := bf.options()
	name, _, err := sandbox.Resolve(ctx, bf.Backend, opts)
	if err != nil {
		return err
	}
	b, err := sandbox.New(ctx, name, opts)
	if err != nil {
		return err
	}
	p, ok := b.(sandbox.ImagePreparer)
	if !ok {
		fmt.Fprintf(stderr, "swerve: --prepull_images: backend %s has no images to pull\n", name)
		return nil
	}
	seen := map[string]bool{}
	var images []string
	for _, t := range tasks {
		img := t.Image
		if bf.Image != "" {
			img = bf.Image
		}
		if img != "" && !seen[img] {
			seen[img] = true
			images = append(images, img)
		}
	}
	sort.Strings(images)
	fmt.Fprintf(stderr, "swerve: prepulling %d images\n", len(images))
	var (
		mu     sync.Mutex
		failed []string
		wg     sync.WaitGroup
		sem    = make(chan struct{}, max(workers, 1))
	)
	for _, img := range images {
		wg.Add(1)
		sem <- struct{}{}
		go func(img string) {
			defer wg.Done()
			defer func() { <-sem }()
			if err := p.PrepareImage(ctx, img, bf.Pull, io.Discard); err != nil {
				mu.Lock()
				failed = append(failed, fmt.Sprintf("%s: %v", img, err))
				mu.Unlock()
			}
		}(img)
	}
	wg.Wait()
	sort.Strings(failed)
	for _, f := range failed {
		fmt.Fprintf(stderr, "swerve: prepull failed: %s\n", f)
	}
	return ctx.Err()
}

// boxSettings are the box flags that change a result, for the resume
// fingerprint.
func (f *boxFlags) boxSettings() map[string]string {
	backend := f.Backend
	if backend == "" {
		backend = "auto"
	}
	return map[string]string{
		"backend":    backend,
		"network":    f.Network,
		"image":      f.Image,
		"workdir":    f.Workdir,
		"source":     f.Source,
		"cpus":       strconv.FormatFloat(f.CPUs, 'g', -1, 64),
		"memory_mb":  strconv.FormatInt(f.Memory, 10),
		"pids":       strconv.FormatInt(f.PIDs, 10),
		"cap_add":    strings.Join(f.CapAdd, ","),
		"unhardened": strconv.FormatBool(f.Unhardened),
	}
}
