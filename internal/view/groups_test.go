package view

import (
	"math"
	"math/big"
	"testing"
)

// binomRatio is 1 - C(n-c, k)/C(n, k) with exact binomials (math/big):
// the definition, an oracle independent of passAtK's product form.
func binomRatio(n, c, k int) float64 {
	num := new(big.Int).Binomial(int64(n-c), int64(k))
	if n-c < k {
		num = big.NewInt(0)
	}
	den := new(big.Int).Binomial(int64(n), int64(k))
	r, _ := new(big.Rat).SetFrac(num, den).Float64()
	return 1 - r
}

func TestPassAtK(t *testing.T) {
	tests := []struct {
		n, c, k int
		want    float64 // NaN: undefined
	}{
		{5, 0, 1, 0},
		{5, 5, 1, 1},
		{10, 3, 1, 0.3},           // pass@1 is c/n
		{4, 2, 2, 5.0 / 6},        // 1 - C(2,2)/C(4,2) = 1 - 1/6
		{10, 1, 5, 0.5},           // 1 - C(9,5)/C(10,5) = 1 - 126/252
		{8, 6, 3, 1},              // fewer than k failures: every draw passes
		{16, 1, 16, 1},            // all drawn
		{3, 1, 2, 2.0 / 3},        // 1 - C(2,2)/C(3,2)
		{1, 0, 1, 0},              // one rollout, failed
		{4, 0, 5, math.NaN()},     // k past n
		{4, 1, 0, math.NaN()},     // k below 1
		{0, 0, 1, math.NaN()},     // no rollout
		{100, 7, 10, math.NaN()},  // checked against the oracle below
		{200, 13, 50, math.NaN()}, // likewise
	}
	for _, tc := range tests {
		got := passAtK(tc.n, tc.c, tc.k)
		want := tc.want
		if tc.k >= 1 && tc.k <= tc.n {
			oracle := binomRatio(tc.n, tc.c, tc.k)
			if !math.IsNaN(want) && math.Abs(oracle-want) > 1e-12 {
				t.Fatalf("table wrong for n=%d c=%d k=%d: oracle %v", tc.n, tc.c, tc.k, oracle)
			}
			want = oracle
		}
		if math.IsNaN(want) != math.IsNaN(got) || (!math.IsNaN(want) && math.Abs(got-want) > 1e-9) {
			t.Errorf("passAtK(n=%d, c=%d, k=%d) = %v, want %v", tc.n, tc.c, tc.k, got, want)
		}
	}
}

func TestGroups(t *testing.T) {
	g := func(id string, r float64) Summary {
		return Summary{Key: id, InstanceID: id, Status: "graded", Reward: r}
	}
	tasks := []Summary{g("a", 1), g("b", 0), g("a", 0), g("a", 1), g("b", 0), {InstanceID: "b", Status: "error"}, g("a", 0), g("c", 0.5)}
	groups := groupsOf(tasks)
	if len(groups) != 3 || groups[0].InstanceID != "a" || groups[1].InstanceID != "b" || groups[2].InstanceID != "c" {
		t.Fatalf("groups %+v", groups)
	}
	a, b, c := groups[0], groups[1], groups[2]
	if a.N != 4 || a.Resolved != 2 || a.Mean != 0.5 || a.Std != 0.5 || a.Min != 0 || a.Max != 1 || len(a.Rollouts) != 4 {
		t.Errorf("group a %+v", a)
	}
	if b.N != 2 || b.Errors != 1 || b.Resolved != 0 || b.Mean != 0 || b.Std != 0 || len(b.Rollouts) != 3 {
		t.Errorf("group b %+v", b)
	}
	if c.N != 1 || c.Resolved != 0 || c.Mean != 0.5 {
		t.Errorf("group c %+v", c)
	}
	st := SummarizeGroups(groups)
	// k is the smallest group (c: one rollout); pass@1 is the mean of c/n.
	if !st.Repeated || st.K != 1 || st.Graded != 3 || math.Abs(st.Pass1-(0.5+0+0)/3) > 1e-12 || st.PassK != st.Pass1 {
		t.Errorf("stats %+v", st)
	}
	st = SummarizeGroups(groups[:2])
	want := (passAtK(4, 2, 2) + passAtK(2, 0, 2)) / 2
	if st.K != 2 || math.Abs(st.PassK-want) > 1e-12 || math.Abs(st.Pass1-0.25) > 1e-12 {
		t.Errorf("stats of a, b %+v, want pass@2 %v", st, want)
	}
	if st := SummarizeGroups(groupsOf([]Summary{g("x", 1), g("y", 0)})); st.Repeated {
		t.Errorf("one rollout per task is not repeated: %+v", st)
	}
	p := SelectGroups(groups, Query{Sort: "reward", Desc: true, Limit: 2})
	if p.Matched != 3 || len(p.Rows) != 2 || p.Rows[0].InstanceID != "a" || p.Rows[1].InstanceID != "c" {
		t.Errorf("page %+v", p)
	}
	if p := SelectGroups(groups, Query{Outcome: "error", Limit: 50}); p.Matched != 1 || p.Rows[0].InstanceID != "b" {
		t.Errorf("groups with an error: %+v", p)
	}
}
