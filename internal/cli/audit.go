package cli

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/swerve-dev/swerve/internal/reward/history"
	"github.com/swerve-dev/swerve/internal/task"
)

func init() { register(newAuditCmd) }

func newAuditCmd() *cobra.Command {
	var (
		df      datasetFlags
		bf      boxFlags
		jsonOut bool
	)
	cmd := &cobra.Command{
		Use:   "audit --dataset D [flags]",
		Short: "Report what each task image holds past its base commit (git history, copies of the project)",
		Long: `audit opens one box per image of the dataset, as the image is (nothing is
stripped), and reports what an agent could take the fix from: refs other than
HEAD's branch and the tags in its history, commits reachable from them past
HEAD, remotes, reflogs, the stash, pseudo-refs (FETCH_HEAD, ORIG_HEAD, ...),
objects no ref reaches, the hidden test files or their content, and copies of
the project outside the repository (pip and conda caches, wheels and source
archives, installed packages that are not the repository's own install).

Every agent box is stripped and proved before an agent starts whatever this
says; audit tells which images needed it, and what of it lies outside git.
Exit status 0 either way; --json prints one JSON object per image.`,
		Example: `  swerve audit --dataset verified-test.parquet --instance_id django__django-16901
  swerve audit --dataset tasks.jsonl --json > audit.jsonl`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := bf.check(cmd.Context(), false); err != nil {
				return err
			}
			tasks, err := df.load(cmd)
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			var audits []*history.Audit
			byImage := map[string]*history.Audit{}
			for i := range tasks {
				t := &tasks[i]
				key := t.Image + "\x00" + t.SourceDir
				if a := byImage[key]; a != nil {
					a.Instances = append(a.Instances, t.InstanceID)
					continue
				}
				a := auditOne(ctx, &bf, t)
				byImage[key] = a
				audits = append(audits, a)
				if !jsonOut {
					fmt.Fprintf(cmd.ErrOrStderr(), "swerve audit: %s: %d found\n", cmp.Or(a.Image, t.SourceDir), a.Leaks())
				}
			}
			if jsonOut {
				enc := json.NewEncoder(cmd.OutOrStdout())
				for _, a := range audits {
					if err := enc.Encode(a); err != nil {
						return err
					}
				}
				return nil
			}
			return auditTable(cmd.OutOrStdout(), audits)
		},
	}
	df.register(cmd.Flags())
	bf.register(cmd.Flags())
	cmd.Flags().BoolVar(&jsonOut, "json", false, "one JSON object per image instead of the table")
	return cmd
}

// auditOne audits t's image in a box of its own.
func auditOne(ctx context.Context, bf *boxFlags, t *task.Task) *history.Audit {
	fail := func(err error) *history.Audit {
		return &history.Audit{Image: cmp.Or(t.Image, t.SourceDir), Instances: []string{t.InstanceID}, BaseCommit: t.BaseCommit, Error: err.Error()}
	}
	box, wd, err := bf.openRepo(ctx, t)
	if err != nil {
		return fail(err)
	}
	defer box.Close(context.WithoutCancel(ctx))
	a, err := history.AuditBox(ctx, box, t, wd)
	if err != nil {
		return fail(err)
	}
	a.Image = cmp.Or(t.Image, t.SourceDir)
	return a
}

// auditTable prints one row per image and a summary line.
func auditTable(w io.Writer, audits []*history.Audit) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "IMAGE\tTASKS\tHEAD=BASE\tGIT\tCOPIES\tFOUND\n")
	leaky := 0
	for _, a := range audits {
		var found []string
		git := 0
		if a.Proof != nil {
			git = len(a.Proof.Findings)
			found = append(found, a.Proof.Findings...)
		}
		for _, c := range a.WithFix {
			found = append(found, "FIX in copy: "+c)
		}
		for _, c := range a.NewerCopies {
			found = append(found, "newer copy: "+c)
		}
		found = append(found, a.Copies...)
		what := strings.Join(found, "; ")
		if a.Error != "" {
			what = "error: " + a.Error
		}
		if len(what) > 120 {
			what = what[:117] + "..."
		}
		if a.Leaks() > 0 {
			leaky++
		}
		fmt.Fprintf(tw, "%s\t%d\t%v\t%d\t%d\t%s\n", a.Image, len(a.Instances), a.HeadIsBase, git, len(a.Copies), what)
	}
	fmt.Fprintf(tw, "\n%d images, %d hold something past their base commit\n", len(audits), leaky)
	if err := tw.Flush(); err != nil {
		return err
	}
	// What was looked at beyond git (the same for every image but for the
	// caches each has).
	var checked []string
	seen := map[string]bool{}
	for _, a := range audits {
		for _, c := range a.Checked {
			if !seen[c] {
				seen[c] = true
				checked = append(checked, c)
			}
		}
	}
	for _, c := range checked {
		fmt.Fprintf(w, "beyond git, checked: %s\n", c)
	}
	return nil
}
