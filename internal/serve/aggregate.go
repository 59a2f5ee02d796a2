package serve

import (
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"slices"
	"sort"
	"strings"
)

// AggregateRequest is the body of POST /aggregate_metrics: the finished rows
// (Gym's collector strips responses_create_params and keeps only
// response.usage).
type AggregateRequest struct {
	VerifyResponses []Row `json:"verify_responses"`
}

// AggregateResult is Gym's answer: statistics per task (group) and over all
// rollouts (agent), and the means as key_metrics.
type AggregateResult struct {
	GroupLevelMetrics []map[string]any `json:"group_level_metrics"`
	AgentMetrics      map[string]any   `json:"agent_metrics"`
	KeyMetrics        map[string]any   `json:"key_metrics"`
}

func (s *Server) aggregate(w http.ResponseWriter, r *http.Request) {
	var req AggregateRequest
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<30)).Decode(&req); err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "aggregate_metrics: " + err.Error()})
		return
	}
	writeJSON(w, http.StatusOK, Aggregate(req.VerifyResponses))
}

// Aggregate computes Gym's aggregate metrics over finished rows. Every
// numeric or boolean top-level field (Gym's _ng_ bookkeeping aside) and
// every number in response.usage gets mean/max/min/median/std (sample
// standard deviation, 0 for one value), per _ng_task_index and overall;
// key_metrics holds the overall means. The overall metrics also carry the
// SWE numbers of Gym's mini-swe agent: pass@k/accuracy and
// pass@1[avg-of-k]/accuracy (percent), task_count, resolved_task_count,
// resolved_task_rate and eval_error_rate (share of rows with an
// infrastructure error).
func Aggregate(rows []Row) *AggregateResult {
	type group struct {
		index int
		rows  []Row
	}
	groups := map[int]*group{}
	var order []int
	for _, r := range rows {
		t, _ := r.Number("_ng_task_index")
		g, ok := groups[int(t)]
		if !ok {
			g = &group{index: int(t)}
			groups[int(t)] = g
			order = append(order, int(t))
		}
		g.rows = append(g.rows, r)
	}
	sort.Ints(order)
	expected := 0
	for _, g := range groups {
		expected = max(expected, len(g.rows))
		for _, r := range g.rows {
			if k, ok := r.Number("_ng_rollout_index"); ok {
				expected = max(expected, int(k)+1)
			}
		}
	}

	res := &AggregateResult{GroupLevelMetrics: []map[string]any{}, AgentMetrics: stats(rows), KeyMetrics: map[string]any{}}
	var tasks, resolvedTasks int
	var avgOfK float64
	for _, t := range order {
		g := groups[t]
		m := stats(g.rows)
		m["_ng_task_index"] = t
		m["sample"] = sample(g.rows[0])
		m["num_rollouts"] = len(g.rows)
		m["expected_num_rollouts"] = expected
		m["missing_num_rollouts"] = expected - len(g.rows)
		m["reward_profile_completion_pct"] = 100 * float64(len(g.rows)) / float64(max(expected, 1))
		infos := make([]map[string]any, 0, len(g.rows))
		solved, sum := false, 0.0
		for _, r := range g.rows {
			k, _ := r.Number("_ng_rollout_index")
			rew, _ := r.Number("reward")
			info := map[string]any{"rollout_id": fmt.Sprintf("%d:%d", t, int(k)),
				"_ng_task_index": t, "_ng_rollout_index": int(k), "reward": rew}
			if tt, ok := usage(r)["total_tokens"]; ok {
				info["total_tokens"] = tt
			}
			infos = append(infos, info)
			sum += rew
			if rew >= 1 {
				solved = true
			}
		}
		m["rollout_infos"] = infos
		res.GroupLevelMetrics = append(res.GroupLevelMetrics, m)
		tasks++
		if solved {
			resolvedTasks++
		}
		avgOfK += sum / float64(len(g.rows))
	}
	for k, v := range res.AgentMetrics {
		if strings.HasPrefix(k, "mean/") {
			res.KeyMetrics[k] = v
		}
	}
	if tasks > 0 {
		errs := 0
		for _, r := range rows {
			if _, ok := r["infra_error"]; ok {
				errs++
			}
		}
		a := res.AgentMetrics
		a["pass@k/accuracy"] = 100 * float64(resolvedTasks) / float64(tasks)
		a["pass@1[avg-of-k]/accuracy"] = 100 * avgOfK / float64(tasks)
		a["task_count"] = tasks
		a["resolved_task_count"] = resolvedTasks
		a["resolved_task_rate"] = float64(resolvedTasks) / float64(tasks)
		a["eval_error_rate"] = float64(errs) / float64(len(rows))
	}
	return res
}

// usage returns the numbers of a row's response.usage.
func usage(r Row) map[string]float64 {
	out := map[string]float64{}
	var resp struct {
		Usage map[string]json.RawMessage `json:"usage"`
	}
	if json.Unmarshal(r["response"], &resp) != nil {
		return out
	}
	for k, v := range resp.Usage {
		if f, ok := number(v); ok {
			out[k] = f
		}
	}
	return out
}

// values gathers each numeric field of the rows (and their usage numbers).
func values(rows []Row) map[string][]float64 {
	vals := map[string][]float64{}
	for _, r := range rows {
		for k, raw := range r {
			if strings.HasPrefix(k, "_ng_") || k == "_rowidx" {
				continue
			}
			if f, ok := number(raw); ok {
				vals[k] = append(vals[k], f)
			}
		}
		for k, f := range usage(r) {
			if _, top := r[k]; !top {
				vals[k] = append(vals[k], f)
			}
		}
	}
	return vals
}

// stats is mean/max/min/median/std of every numeric field.
func stats(rows []Row) map[string]any {
	m := map[string]any{}
	for k, v := range values(rows) {
		m["mean/"+k] = mean(v)
		m["max/"+k] = slices.Max(v)
		m["min/"+k] = slices.Min(v)
		m["median/"+k] = median(v)
		m["std/"+k] = stddev(v)
	}
	return m
}

// sample is a group's first row without its bulky and numeric fields.
func sample(r Row) Row {
	out := Row{}
	for k, v := range r {
		if k == "responses_create_params" || k == "response" || strings.HasPrefix(k, "_ng_") {
			continue
		}
		if _, ok := number(v); ok {
			continue
		}
		out[k] = v
	}
	return out
}

func mean(v []float64) float64 {
	s := 0.0
	for _, x := range v {
		s += x
	}
	return s / float64(len(v))
}

func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

func stddev(v []float64) float64 {
	if len(v) < 2 {
		return 0
	}
	m := mean(v)
	s := 0.0
	for _, x := range v {
		s += (x - m) * (x - m)
	}
	return math.Sqrt(s / float64(len(v)-1))
}
