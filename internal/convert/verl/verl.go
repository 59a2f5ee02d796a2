// Package verl writes task datasets as verl RLHF parquet rows for its tool
// agent loop (agent_name tool_agent): a chat prompt, and extra_info with
// tools_kwargs keyed by tool name, which is where verl's ToolAgentLoop looks
// up each call's create_kwargs.
package verl

import (
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"sort"

	"github.com/parquet-go/parquet-go"

	"github.com/swerve-dev/swerve/internal/fsutil"
	"github.com/swerve-dev/swerve/internal/task"
)

// Message is one chat message of a row's prompt.
type Message struct {
	Role    string `parquet:"role" json:"role"`
	Content string `parquet:"content" json:"content"`
}

// RewardModel names how the row is rewarded: by the sandbox tool.
type RewardModel struct {
	Style string `parquet:"style" json:"style"`
	Name  string `parquet:"name" json:"name"`
}

// CreateKwargs are what a tool's create() gets: the task to open a box for.
type CreateKwargs struct {
	InstanceID string `parquet:"instance_id" json:"instance_id"`
	Repo       string `parquet:"repo" json:"repo"`
	BaseCommit string `parquet:"base_commit" json:"base_commit"`
}

// ToolKwargs is one tool's entry in tools_kwargs.
type ToolKwargs struct {
	CreateKwargs CreateKwargs `parquet:"create_kwargs" json:"create_kwargs"`
}

// ToolsKwargs is extra_info.tools_kwargs, keyed by the tools' function
// names.
type ToolsKwargs struct {
	Bash           ToolKwargs `parquet:"bash" json:"bash"`
	SubmitSolution ToolKwargs `parquet:"submit_solution" json:"submit_solution"`
}

// ExtraInfo is a row's extra_info. GroundTruthPatch is written only with
// Options.GroundTruthPatch.
type ExtraInfo struct {
	Split            string      `parquet:"split" json:"split"`
	Index            int64       `parquet:"index" json:"index"`
	InstanceID       string      `parquet:"instance_id" json:"instance_id"`
	Repo             string      `parquet:"repo" json:"repo"`
	BaseCommit       string      `parquet:"base_commit" json:"base_commit"`
	FailToPass       []string    `parquet:"FAIL_TO_PASS,list" json:"FAIL_TO_PASS"`
	PassToPass       []string    `parquet:"PASS_TO_PASS,list" json:"PASS_TO_PASS"`
	NeedToolsKwargs  bool        `parquet:"need_tools_kwargs" json:"need_tools_kwargs"`
	ToolsKwargs      ToolsKwargs `parquet:"tools_kwargs" json:"tools_kwargs"`
	GroundTruthPatch string      `parquet:"-" json:"ground_truth_patch,omitempty"`
}

// Row is one verl training row.
type Row struct {
	DataSource  string      `parquet:"data_source" json:"data_source"`
	AgentName   string      `parquet:"agent_name" json:"agent_name"`
	Prompt      []Message   `parquet:"prompt,list" json:"prompt"`
	Ability     string      `parquet:"ability" json:"ability"`
	RewardModel RewardModel `parquet:"reward_model" json:"reward_model"`
	ExtraInfo   ExtraInfo   `parquet:"extra_info" json:"extra_info"`
}

// extraInfoGT is ExtraInfo with ground_truth_patch as a column.
type extraInfoGT struct {
	Split            string      `parquet:"split"`
	Index            int64       `parquet:"index"`
	InstanceID       string      `parquet:"instance_id"`
	Repo             string      `parquet:"repo"`
	BaseCommit       string      `parquet:"base_commit"`
	FailToPass       []string    `parquet:"FAIL_TO_PASS,list"`
	PassToPass       []string    `parquet:"PASS_TO_PASS,list"`
	NeedToolsKwargs  bool        `parquet:"need_tools_kwargs"`
	ToolsKwargs      ToolsKwargs `parquet:"tools_kwargs"`
	GroundTruthPatch string      `parquet:"ground_truth_patch"`
}

type rowGT struct {
	DataSource  string      `parquet:"data_source"`
	AgentName   string      `parquet:"agent_name"`
	Prompt      []Message   `parquet:"prompt,list"`
	Ability     string      `parquet:"ability"`
	RewardModel RewardModel `parquet:"reward_model"`
	ExtraInfo   extraInfoGT `parquet:"extra_info"`
}

// The fixed values of every row.
const (
	AgentName   = "tool_agent"
	Ability     = "software_engineering"
	RewardStyle = "tool"
	RewardName  = "swebench_sandbox"
	// The extra_info.split labels.
	SplitTrain = "train"
	SplitVal   = "test"
)

// Options say how to convert.
type Options struct {
	// DataSource is every row's data_source.
	DataSource string
	// ValSize is the number of tasks put in the validation split; a value
	// in (0, 1) is a fraction of the tasks (rounded, at least 1).
	ValSize float64
	// GroundTruthPatch adds extra_info.ground_truth_patch (the gold patch).
	GroundTruthPatch bool
}

// Result holds the rows of each split, in dataset order.
type Result struct {
	Train, Val []Row
}

// ValCount is how many of n tasks go to the validation split for size
// (a count, or a fraction when in (0, 1)).
func ValCount(size float64, n int) (int, error) {
	switch {
	case size < 0 || math.IsNaN(size) || math.IsInf(size, 0):
		return 0, fmt.Errorf("--val_size: want a count or a fraction in (0, 1), got %v", size)
	case size == 0:
		return 0, nil
	case size < 1:
		k := int(math.Round(size * float64(n)))
		return max(1, k), nil
	case size != math.Trunc(size):
		return 0, fmt.Errorf("--val_size: %v is neither a whole count nor a fraction below 1", size)
	case int(size) > n:
		return 0, fmt.Errorf("--val_size: %d tasks asked for validation, the dataset has %d", int(size), n)
	}
	return int(size), nil
}

// splitKey orders tasks for the split: by a hash of the instance id, so a
// task lands in the same split whatever the dataset's order or size
// around it (for the same count).
func splitKey(id string) uint64 {
	h := sha256.Sum256([]byte(id))
	return binary.BigEndian.Uint64(h[:8])
}

// Convert turns tasks into rows. A row's index is its task's position in
// tasks; the validation split is the ValSize tasks of lowest
// sha256(instance_id).
func Convert(tasks []task.Task, opts Options) (*Result, error) {
	if opts.DataSource == "" {
		return nil, errors.New("verl: data_source: empty")
	}
	nVal, err := ValCount(opts.ValSize, len(tasks))
	if err != nil {
		return nil, err
	}
	order := make([]int, len(tasks))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool {
		ka, kb := splitKey(tasks[order[a]].InstanceID), splitKey(tasks[order[b]].InstanceID)
		if ka != kb {
			return ka < kb
		}
		return tasks[order[a]].InstanceID < tasks[order[b]].InstanceID
	})
	val := make(map[int]bool, nVal)
	for _, i := range order[:nVal] {
		val[i] = true
	}
	res := &Result{}
	seen := make(map[string]bool, len(tasks))
	for i := range tasks {
		t := &tasks[i]
		if t.InstanceID == "" {
			return nil, fmt.Errorf("task %d: instance_id: empty", i)
		}
		if seen[t.InstanceID] {
			return nil, fmt.Errorf("task %d (%s): instance_id: given twice", i, t.InstanceID)
		}
		seen[t.InstanceID] = true
		if t.ProblemStatement == "" {
			return nil, fmt.Errorf("task %s: problem_statement: empty, nothing to prompt with", t.InstanceID)
		}
		if opts.GroundTruthPatch && t.Patch == "" {
			return nil, fmt.Errorf("task %s: patch: empty, no ground_truth_patch to write", t.InstanceID)
		}
		split := SplitTrain
		if val[i] {
			split = SplitVal
		}
		r := RowOf(t, i, split, opts.DataSource)
		if opts.GroundTruthPatch {
			r.ExtraInfo.GroundTruthPatch = t.Patch
		}
		if val[i] {
			res.Val = append(res.Val, r)
		} else {
			res.Train = append(res.Train, r)
		}
	}
	return res, nil
}

// RowOf is the row of one task.
func RowOf(t *task.Task, index int, split, dataSource string) Row {
	ck := CreateKwargs{InstanceID: t.InstanceID, Repo: t.Repo, BaseCommit: t.BaseCommit}
	return Row{
		DataSource: dataSource,
		AgentName:  AgentName,
		Prompt: []Message{
			{Role: "system", Content: SystemPrompt(t)},
			{Role: "user", Content: UserPrompt(t)},
		},
		Ability:     Ability,
		RewardModel: RewardModel{Style: RewardStyle, Name: RewardName},
		ExtraInfo: ExtraInfo{
			Split: split, Index: int64(index), InstanceID: t.InstanceID, Repo: t.Repo, BaseCommit: t.BaseCommit,
			FailToPass: nonNil(t.FailToPass), PassToPass: nonNil(t.PassToPass),
			NeedToolsKwargs: true,
			ToolsKwargs:     ToolsKwargs{Bash: ToolKwargs{ck}, SubmitSolution: ToolKwargs{ck}},
		},
	}
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// Write writes rows as a parquet file at path (through a temporary file
// renamed into place). With groundTruth the rows' extra_info carries
// ground_truth_patch.
func Write(path string, rows []Row, groundTruth bool) error {
	tmp, err := fsutil.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if err := WriteTo(tmp, rows, groundTruth); err != nil {
		tmp.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// WriteTo writes rows as parquet to w.
func WriteTo(w io.Writer, rows []Row, groundTruth bool) error {
	if !groundTruth {
		pw := parquet.NewGenericWriter[Row](w)
		if _, err := pw.Write(rows); err != nil {
			return err
		}
		return pw.Close()
	}
	gt := make([]rowGT, len(rows))
	for i, r := range rows {
		e := r.ExtraInfo
		gt[i] = rowGT{
			DataSource: r.DataSource, AgentName: r.AgentName, Prompt: r.Prompt, Ability: r.Ability, RewardModel: r.RewardModel,
			ExtraInfo: extraInfoGT{
				Split: e.Split, Index: e.Index, InstanceID: e.InstanceID, Repo: e.Repo, BaseCommit: e.BaseCommit,
				FailToPass: e.FailToPass, PassToPass: e.PassToPass, NeedToolsKwargs: e.NeedToolsKwargs,
				ToolsKwargs: e.ToolsKwargs, GroundTruthPatch: e.GroundTruthPatch,
			},
		}
	}
	pw := parquet.NewGenericWriter[rowGT](w)
	if _, err := pw.Write(gt); err != nil {
		return err
	}
	return pw.Close()
}

// Read reads a parquet file of rows (with or without ground_truth_patch).
func Read(path string) ([]Row, error) {
	gt, err := parquet.ReadFile[rowGT](path)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	rows := make([]Row, len(gt))
	for i, r := range gt {
		e := r.ExtraInfo
		rows[i] = Row{
			DataSource: r.DataSource, AgentName: r.AgentName, Prompt: r.Prompt, Ability: r.Ability, RewardModel: r.RewardModel,
			ExtraInfo: ExtraInfo{
				Split: e.Split, Index: e.Index, InstanceID: e.InstanceID, Repo: e.Repo, BaseCommit: e.BaseCommit,
				FailToPass: e.FailToPass, PassToPass: e.PassToPass, NeedToolsKwargs: e.NeedToolsKwargs,
				ToolsKwargs: e.ToolsKwargs, GroundTruthPatch: e.GroundTruthPatch,
			},
		}
	}
	return rows, nil
}
