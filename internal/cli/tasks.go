package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/swerve-dev/swerve/internal/task"
)

func init() { register(newTasksCmd) }

func newTasksCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "tasks",
		Short: "List, show and count the tasks of a dataset",
		Long: `tasks reads a dataset the way every other command does and prints what it
found, so you can check a file before spending a run on it.

It reads SWE-bench (Verified, Lite, Multilingual), SWE-Factory, R2E-Gym,
SWE-smith, SWE-Gym and NeMo Gym rows from parquet, JSON or JSONL files, and
Harbor task directories. The format and dialect are recognised from the
content; a bad row stops the load with an error naming the file, row,
instance and field (--skip-invalid leaves such rows out instead).`,
		Example: `  swerve tasks ls --dataset verified-test.parquet
  swerve tasks show --dataset verified-test.parquet django__django-16901
  swerve tasks stats --dataset multilingual-test.parquet --json`,
	}
	cmd.AddCommand(newTasksLsCmd(), newTasksShowCmd(), newTasksStatsCmd())
	return cmd
}

func newTasksLsCmd() *cobra.Command {
	var (
		df     datasetFlags
		asJSON bool
		raw    bool
	)
	cmd := &cobra.Command{
		Use:   "ls --dataset D [flags]",
		Short: "List a dataset's tasks, one per line",
		Long: `ls prints one line per selected task: its id, repository, image, the sizes of
FAIL_TO_PASS and PASS_TO_PASS, and the grader that will judge it.

With --json it prints each task in swerve's normalised form instead, one JSON
object per line (JSONL). The normalised form uses the upstream field names
(instance_id, FAIL_TO_PASS as a real list, …), adds grader, dialect and
source_dir, and keeps the original row under "raw" (--raw=false leaves it
out). swerve reads this output back as a dataset.`,
		Example: `  swerve tasks ls --dataset verified-test.parquet
  swerve tasks ls --dataset verified-test.parquet --start_idx 10 --k 5
  swerve tasks ls --dataset tasks.jsonl --instance_ids a__b-1,a__b-2 --json
  swerve tasks ls --dataset verified-test.parquet --json --raw=false > verified.jsonl
  swerve tasks ls --dataset princeton-nlp/SWE-bench_Verified --k 5          # from the Hugging Face Hub
  swerve tasks ls --dataset R2E-Gym/R2E-Gym-Lite --split test --revision main`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			tasks, err := df.load(cmd)
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if asJSON {
				return writeTasksJSONL(out, tasks, raw)
			}
			tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "INSTANCE_ID\tREPO\tIMAGE\tF2P\tP2P\tGRADER")
			for _, t := range tasks {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%s\n", t.InstanceID, orDash(t.Repo), orDash(t.Image), len(t.FailToPass), len(t.PassToPass), t.Grader)
			}
			return tw.Flush()
		},
	}
	df.register(cmd.Flags())
	cmd.Flags().BoolVar(&asJSON, "json", false, "print normalised tasks as JSONL")
	cmd.Flags().BoolVar(&raw, "raw", true, "with --json, include the original row under \"raw\"")
	return cmd
}

func newTasksShowCmd() *cobra.Command {
	var (
		df     datasetFlags
		asJSON bool
		raw    bool
		field  string
	)
	cmd := &cobra.Command{
		Use:   "show --dataset D (--instance_id ID | ID) [flags]",
		Short: "Print every field of one task",
		Long: `show prints one task: its scalar fields first, then the test lists, the problem
statement, hints, gold patch, test patch, eval script and Dockerfile, each
under its own heading. Empty fields are left out.

Name the task with --instance_id or as the argument. --json prints the
normalised task as one JSON object instead; --field NAME prints one field of
it as it is (a text field such as patch verbatim, others as JSON).`,
		Example: `  swerve tasks show --dataset verified-test.parquet django__django-16901
  swerve tasks show --dataset examples/sample/tasks.jsonl --instance_id sample__calc-1
  swerve tasks show --dataset verified-test.parquet django__django-16901 --field patch > fix.diff
  swerve tasks show --dataset verified-test.parquet astropy__astropy-12907 --json | jq .FAIL_TO_PASS`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 {
				df.InstanceIDs = append(df.InstanceIDs, args[0])
			}
			if len(df.InstanceIDs) != 1 {
				return fmt.Errorf("show: name exactly one task, with --instance_id ID or as the argument (got %d)", len(df.InstanceIDs))
			}
			tasks, err := df.load(cmd)
			if err != nil {
				return err
			}
			if len(tasks) != 1 {
				return fmt.Errorf("show: %d tasks selected, want 1 (drop --start_idx / --k)", len(tasks))
			}
			out := cmd.OutOrStdout()
			if field != "" {
				return showField(out, tasks[0], field)
			}
			if asJSON {
				return writeTasksJSONL(out, tasks, raw)
			}
			return showTask(out, tasks[0])
		},
	}
	df.register(cmd.Flags())
	cmd.Flags().StringVar(&field, "field", "", "print only this field of the normalised task (e.g. patch, test_patch, FAIL_TO_PASS)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the normalised task as JSON")
	cmd.Flags().BoolVar(&raw, "raw", true, "with --json, include the original row under \"raw\"")
	return cmd
}

func newTasksStatsCmd() *cobra.Command {
	var (
		df     datasetFlags
		asJSON bool
	)
	cmd := &cobra.Command{
		Use:   "stats --dataset D [flags]",
		Short: "Count a dataset's tasks by repository, dialect, grader, version and language",
		Long: `stats counts the selected tasks by repository, dialect, grader, version and
language, and summarises the sizes of FAIL_TO_PASS and PASS_TO_PASS (min,
median, mean, max, and how many tasks have an empty list). Counts are sorted
from the largest. --json prints the same as one JSON object.`,
		Example: `  swerve tasks stats --dataset verified-test.parquet
  swerve tasks stats --dataset multilingual-test.parquet --json | jq .by_language
  HF_HUB_OFFLINE=1 swerve tasks stats --dataset SWE-bench/SWE-bench_Lite --split dev`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			res, tasks, err := df.loadResult(cmd)
			if err != nil {
				return err
			}
			s := computeStats(df.Dataset, res, tasks)
			out := cmd.OutOrStdout()
			if asJSON {
				enc := json.NewEncoder(out)
				enc.SetIndent("", "  ")
				return enc.Encode(s)
			}
			return s.write(out)
		},
	}
	df.register(cmd.Flags())
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the counts as JSON")
	return cmd
}

// showField prints one field of t's normalised JSON form: a string as it
// is, anything else as JSON; an unknown name lists the known ones.
func showField(w io.Writer, t task.Task, name string) error {
	line, err := t.MarshalJSONL(false)
	if err != nil {
		return err
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(line, &m); err != nil {
		return err
	}
	v, ok := m[name]
	if !ok {
		names := make([]string, 0, len(m))
		for k := range m {
			names = append(names, k)
		}
		sort.Strings(names)
		return fmt.Errorf("show: %s: no field %q (fields: %s)", t.InstanceID, name, strings.Join(names, ", "))
	}
	var s string
	if json.Unmarshal(v, &s) == nil {
		_, err = io.WriteString(w, s)
		return err
	}
	_, err = fmt.Fprintf(w, "%s\n", v)
	return err
}

func writeTasksJSONL(w io.Writer, tasks []task.Task, raw bool) error {
	for _, t := range tasks {
		line, err := t.MarshalJSONL(raw)
		if err != nil {
			return err
		}
		if _, err := w.Write(line); err != nil {
			return err
		}
	}
	return nil
}

// showTask prints one task for a person to read.
func showTask(w io.Writer, t task.Task) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	for _, kv := range [][2]string{
		{"instance_id", t.InstanceID},
		{"repo", t.Repo},
		{"base_commit", t.BaseCommit},
		{"image", t.Image},
		{"grader", string(t.Grader)},
		{"dialect", string(t.Dialect)},
		{"version", t.Version},
		{"language", t.Language},
		{"log_parser", t.LogParser},
		{"split", t.Split},
		{"source_dir", t.SourceDir},
		{"task_dir", t.TaskDir},
	} {
		if kv[1] != "" {
			fmt.Fprintf(tw, "%s\t%s\n", kv[0], kv[1])
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	var b strings.Builder
	list := func(name string, items []string) {
		fmt.Fprintf(&b, "\n=== %s (%d) ===\n", name, len(items))
		for _, it := range items {
			b.WriteString(it)
			b.WriteByte('\n')
		}
	}
	list("FAIL_TO_PASS", t.FailToPass)
	list("PASS_TO_PASS", t.PassToPass)
	if len(t.ExpectedOutput) > 0 {
		names := make([]string, 0, len(t.ExpectedOutput))
		for k := range t.ExpectedOutput {
			names = append(names, k)
		}
		sort.Strings(names)
		fmt.Fprintf(&b, "\n=== expected_output (%d) ===\n", len(names))
		for _, k := range names {
			fmt.Fprintf(&b, "%s\t%s\n", t.ExpectedOutput[k], k)
		}
	}
	for _, sec := range [][2]string{
		{"problem_statement", t.ProblemStatement},
		{"hints_text", t.Hints},
		{"patch", t.Patch},
		{"bug_patch", t.BugPatch},
		{"test_patch", t.TestPatch},
		{"eval_script", t.EvalScript},
		{"dockerfile", t.Dockerfile},
	} {
		if strings.TrimSpace(sec[1]) == "" {
			continue
		}
		fmt.Fprintf(&b, "\n=== %s ===\n", sec[0])
		b.WriteString(strings.ReplaceAll(sec[1], "\r\n", "\n"))
		if !strings.HasSuffix(sec[1], "\n") {
			b.WriteByte('\n')
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// taskStats is what `tasks stats` reports.
type taskStats struct {
	Dataset    string    `json:"dataset"`
	Format     string    `json:"format"`
	Tasks      int       `json:"tasks"`
	Skipped    int       `json:"skipped"`
	ByRepo     []count   `json:"by_repo"`
	ByDialect  []count   `json:"by_dialect"`
	ByGrader   []count   `json:"by_grader"`
	ByVersion  []count   `json:"by_version"`
	ByLanguage []count   `json:"by_language"`
	FailToPass sizeStats `json:"FAIL_TO_PASS"`
	PassToPass sizeStats `json:"PASS_TO_PASS"`
}

type count struct {
	Value string `json:"value"`
	Count int    `json:"count"`
}

type sizeStats struct {
	Min    int     `json:"min"`
	Median float64 `json:"median"`
	Mean   float64 `json:"mean"`
	Max    int     `json:"max"`
	Total  int     `json:"total"`
	Empty  int     `json:"empty"`
}

func computeStats(path string, res *task.LoadResult, tasks []task.Task) taskStats {
	s := taskStats{Dataset: path, Format: string(res.Format), Tasks: len(tasks), Skipped: len(res.Skipped)}
	tally := func(key func(task.Task) string) []count {
		m := make(map[string]int)
		for _, t := range tasks {
			m[key(t)]++
		}
		out := make([]count, 0, len(m))
		for v, n := range m {
			out = append(out, count{v, n})
		}
		sort.Slice(out, func(i, j int) bool {
			if out[i].Count != out[j].Count {
				return out[i].Count > out[j].Count
			}
			return out[i].Value < out[j].Value
		})
		return out
	}
	s.ByRepo = tally(func(t task.Task) string { return t.Repo })
	s.ByDialect = tally(func(t task.Task) string { return string(t.Dialect) })
	s.ByGrader = tally(func(t task.Task) string { return string(t.Grader) })
	s.ByVersion = tally(func(t task.Task) string { return t.Version })
	s.ByLanguage = tally(func(t task.Task) string { return t.Language })
	s.FailToPass = sizesOf(tasks, func(t task.Task) int { return len(t.FailToPass) })
	s.PassToPass = sizesOf(tasks, func(t task.Task) int { return len(t.PassToPass) })
	return s
}

func sizesOf(tasks []task.Task, size func(task.Task) int) sizeStats {
	var s sizeStats
	if len(tasks) == 0 {
		return s
	}
	sizes := make([]int, len(tasks))
	for i, t := range tasks {
		sizes[i] = size(t)
		s.Total += sizes[i]
		if sizes[i] == 0 {
			s.Empty++
		}
	}
	sort.Ints(sizes)
	s.Min, s.Max = sizes[0], sizes[len(sizes)-1]
	if n := len(sizes); n%2 == 1 {
		s.Median = float64(sizes[n/2])
	} else {
		s.Median = float64(sizes[n/2-1]+sizes[n/2]) / 2
	}
	s.Mean = float64(s.Total) / float64(len(sizes))
	return s
}

func (s taskStats) write(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "dataset\t%s\n", s.Dataset)
	fmt.Fprintf(tw, "format\t%s\n", s.Format)
	fmt.Fprintf(tw, "tasks\t%d\n", s.Tasks)
	if s.Skipped > 0 {
		fmt.Fprintf(tw, "skipped\t%d\n", s.Skipped)
	}
	for _, sz := range []struct {
		name string
		s    sizeStats
	}{{"FAIL_TO_PASS", s.FailToPass}, {"PASS_TO_PASS", s.PassToPass}} {
		fmt.Fprintf(tw, "%s\tmin %d  median %s  mean %s  max %d  total %d  empty %d\n", sz.name,
			sz.s.Min, formatNum(sz.s.Median), formatNum(sz.s.Mean), sz.s.Max, sz.s.Total, sz.s.Empty)
	}
	for _, group := range []struct {
		name   string
		counts []count
	}{
		{"dialect", s.ByDialect},
		{"grader", s.ByGrader},
		{"language", s.ByLanguage},
		{"repo", s.ByRepo},
		{"version", s.ByVersion},
	} {
		fmt.Fprintf(tw, "\n%s (%d)\n", group.name, len(group.counts))
		for _, c := range group.counts {
			fmt.Fprintf(tw, "  %s\t%d\n", orDash(c.Value), c.Count)
		}
	}
	return tw.Flush()
}

// formatNum prints f with at most two decimals and no trailing zeros.
func formatNum(f float64) string {
	s := strconv.FormatFloat(f, 'f', 2, 64)
	s = strings.TrimRight(s, "0")
	return strings.TrimSuffix(s, ".")
}

// orDash stands in for an empty table cell.
func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
