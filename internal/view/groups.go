package view

import (
	"cmp"
	"math"
	"slices"
	"strings"
)

// Group is one task's rollouts (swerve collect writes K per task for GRPO
// groups): their rewards' mean and spread, and how many resolved it.
// Errors (no reward) and ungraded rows are in Rollouts but in no figure.
type Group struct {
	InstanceID string
	Repo       string
	Rollouts   []*Summary
	// N counts the graded rollouts, Resolved those with reward 1, Errors
	// the ones that failed outside the model.
	N, Resolved, Errors int
	// Mean, Std (population), Min and Max of the graded rollouts' rewards.
	Mean, Std, Min, Max float64
}

// PassAt is the group's pass@k: the chance that k of its N rollouts,
// drawn without replacement, hold at least one resolved one (the unbiased
// estimator of Chen et al. 2021). It is NaN when k is not in 1..N.
func (g *Group) PassAt(k int) float64 { return passAtK(g.N, g.Resolved, k) }

// passAtK is 1 - C(n-c, k) / C(n, k), computed as a product so that no
// binomial coefficient is formed: C(n-c, k)/C(n, k) is the product over
// i = n-c+1..n of (1 - k/i).
func passAtK(n, c, k int) float64 {
	if k < 1 || k > n || c < 0 || c > n {
		return math.NaN()
	}
	if n-c < k {
		return 1 // every draw of k holds a resolved rollout
	}
	miss := 1.0
	for i := n - c + 1; i <= n; i++ {
		miss *= 1 - float64(k)/float64(i)
	}
	return 1 - miss
}

// groupsOf groups tasks by instance id, in first-seen order. The groups
// point into tasks.
func groupsOf(tasks []Summary) []Group {
	at := map[string]int{}
	var out []Group
	for i := range tasks {
		t := &tasks[i]
		j, ok := at[t.InstanceID]
		if !ok {
			j = len(out)
			at[t.InstanceID] = j
			out = append(out, Group{InstanceID: t.InstanceID, Repo: t.Repo})
		}
		out[j].Rollouts = append(out[j].Rollouts, t)
	}
	for i := range out {
		g := &out[i]
		var sum float64
		for _, t := range g.Rollouts {
			switch t.Outcome() {
			case "error":
				g.Errors++
				continue
			case "ungraded":
				continue
			}
			if g.N == 0 || t.Reward < g.Min {
				g.Min = t.Reward
			}
			if g.N == 0 || t.Reward > g.Max {
				g.Max = t.Reward
			}
			g.N++
			sum += t.Reward
			if t.Resolved() {
				g.Resolved++
			}
		}
		if g.N > 0 {
			g.Mean = sum / float64(g.N)
			var ss float64
			for _, t := range g.Rollouts {
				if o := t.Outcome(); o != "error" && o != "ungraded" {
					ss += (t.Reward - g.Mean) * (t.Reward - g.Mean)
				}
			}
			g.Std = math.Sqrt(ss / float64(g.N))
		}
	}
	return out
}

// GroupStats are a run's figures over its groups.
type GroupStats struct {
	// Groups counts the tasks; Repeated is set when some task has more
	// than one rollout (the page then shows the groups).
	Groups   int
	Repeated bool
	// K is the k of PassK: the fewest graded rollouts of a group that has
	// any; MaxN the most.
	K, MaxN int
	// Pass1 and PassK are the means over the groups with graded rollouts
	// of pass@1 and pass@K.
	Pass1, PassK float64
	// Graded counts the groups with graded rollouts.
	Graded int
}

// SummarizeGroups computes a run's pass@1 and pass@k over its groups.
func SummarizeGroups(groups []Group) GroupStats {
	st := GroupStats{Groups: len(groups)}
	for i := range groups {
		g := &groups[i]
		if len(g.Rollouts) > 1 {
			st.Repeated = true
		}
		if g.N == 0 {
			continue
		}
		if st.K == 0 || g.N < st.K {
			st.K = g.N
		}
		st.MaxN = max(st.MaxN, g.N)
		st.Graded++
	}
	if st.Graded == 0 {
		return st
	}
	for i := range groups {
		g := &groups[i]
		if g.N == 0 {
			continue
		}
		st.Pass1 += g.PassAt(1)
		st.PassK += g.PassAt(st.K)
	}
	st.Pass1 /= float64(st.Graded)
	st.PassK /= float64(st.Graded)
	return st
}

// GroupPage is one page of the groups table.
type GroupPage struct {
	Rows          []*Group
	Matched       int
	Offset, Limit int
}

// SelectGroups filters, sorts and pages groups: a group matches when one
// of its rollouts passes q's filters; "reward" sorts by mean reward, "key"
// by instance id, others keep first-seen order.
func SelectGroups(groups []Group, q Query) GroupPage {
	rows := make([]*Group, 0, len(groups))
	for i := range groups {
		g := &groups[i]
		if slices.ContainsFunc(g.Rollouts, q.match) {
			rows = append(rows, g)
		}
	}
	var less func(a, b *Group) int
	switch q.Sort {
	case "key":
		less = func(a, b *Group) int { return strings.Compare(a.InstanceID, b.InstanceID) }
	case "reward":
		less = func(a, b *Group) int { return cmp.Compare(a.Mean, b.Mean) }
	case "repo":
		less = func(a, b *Group) int { return strings.Compare(a.Repo, b.Repo) }
	}
	if less != nil {
		slices.SortStableFunc(rows, func(a, b *Group) int {
			if q.Desc {
				return -less(a, b)
			}
			return less(a, b)
		})
	}
	p := GroupPage{Matched: len(rows), Offset: q.Offset, Limit: q.Limit}
	if q.Offset < len(rows) {
		p.Rows = rows[q.Offset:min(len(rows), q.Offset+q.Limit)]
	}
	return p
}
