package collect

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"sort"
	"strings"
)

// Profile is the reward profile NeMo Gym's mini-swe-agent README reports,
// over every row of an output file, plus the exit reasons.
type Profile struct {
	// Accuracy is the mean reward.
	Accuracy float64 `json:"accuracy"`
	// Resolved counts rollouts with resolved true (or, in rows without the
	// field, reward 1).
	Resolved int `json:"resolved"`
	// Total is the number of rollouts.
	Total int `json:"total_instances"`
	// AverageTurns is the mean number of model turns per rollout: runs of
	// model output items (assistant messages, function calls, reasoning)
	// in response.output.
	AverageTurns float64 `json:"average_turns"`
	// ExitReasons counts exit_reason (top level or in metadata), "unknown"
	// for rows without one.
	ExitReasons map[string]int `json:"exit_reasons"`
}

// ProfileOf sums up rows.
func ProfileOf(rows []map[string]any) Profile {
	p := Profile{ExitReasons: map[string]int{}}
	var reward, turns float64
	for _, row := range rows {
		p.Total++
		r, _ := number(row["reward"])
		reward += r
		if res, ok := row["resolved"].(bool); ok {
			if res {
				p.Resolved++
			}
		} else if r >= 1 {
			p.Resolved++
		}
		turns += float64(countTurns(row["response"]))
		p.ExitReasons[exitReason(row)]++
	}
	if p.Total > 0 {
		p.Accuracy = reward / float64(p.Total)
		p.AverageTurns = turns / float64(p.Total)
	}
	return p
}

// WriteTo prints the profile the way the README lays it out.
func (p Profile) WriteTo(w io.Writer) (int64, error) {
	var b strings.Builder
	fmt.Fprintf(&b, "Accuracy: %.2f\nResolved: %d\nTotal Instances: %d\nAverage Turns: %.1f\n", p.Accuracy, p.Resolved, p.Total, p.AverageTurns)
	if len(p.ExitReasons) > 0 {
		keys := slices.Sorted(maps.Keys(p.ExitReasons))
		sort.SliceStable(keys, func(i, j int) bool { return p.ExitReasons[keys[i]] > p.ExitReasons[keys[j]] })
		b.WriteString("Exit reasons:")
		for i, k := range keys {
			if i > 0 {
				b.WriteString(",")
			}
			fmt.Fprintf(&b, " %s %d", k, p.ExitReasons[k])
		}
		b.WriteString("\n")
	}
	n, err := io.WriteString(w, b.String())
	return int64(n), err
}

func exitReason(row map[string]any) string {
	for _, m := range []map[string]any{row, asMap(row["metadata"])} {
		for _, k := range []string{"exit_reason", "exit_status"} {
			if s, ok := m[k].(string); ok && s != "" {
				return s
			}
		}
	}
	return "unknown"
}

func asMap(v any) map[string]any {
	m, _ := v.(map[string]any)
	return m
}

// countTurns counts runs of model output items in a Responses object.
func countTurns(resp any) int {
	items, _ := asMap(resp)["output"].([]any)
	n, inTurn := 0, false
	for _, it := range items {
		m := asMap(it)
		model := false
		switch m["type"] {
		case "function_call", "reasoning":
			model = true
		case "message", nil:
			model = m["role"] == "assistant"
		}
		if model && !inTurn {
			n++
		}
		inTurn = model
	}
	return n
}

// number reads a JSON number or bool as a float.
func number(v any) (float64, bool) {
	switch x := v.(type) {
	case json.Number:
		f, err := x.Float64()
		return f, err == nil
	case float64:
		return x, true
	case bool:
		if x {
			return 1, true
		}
		return 0, true
	}
	return 0, false
}

// forMetrics strips a row the way Gym's collector does before it posts to
// /aggregate_metrics: no responses_create_params or captures, and of
// response only a non-empty usage.
func forMetrics(row map[string]any) map[string]any {
	out := make(map[string]any, len(row))
	for k, v := range row {
		switch k {
		case "responses_create_params", "ng_agent_observations", "ng_model_call_capture", "ng_trajectory":
		case "response":
			if u := asMap(asMap(v)["usage"]); len(u) > 0 {
				out["response"] = map[string]any{"usage": u}
			}
		default:
			out[k] = v
		}
	}
	return out
}

func agentName(row map[string]any) string {
	if s, ok := asMap(row["agent_ref"])["name"].(string); ok {
		return s
	}
	return ""
}

// aggregate asks the server for each agent's metrics, or computes them here
// when the server has no /aggregate_metrics (or it fails). The answer is the
// list Gym saves: [{agent_ref, agent_metrics, key_metrics,
// group_level_metrics}].
func (c *collector) aggregate(ctx context.Context, rows []map[string]any) (json.RawMessage, bool, error) {
	byAgent := map[string][]map[string]any{}
	var order []string
	for _, row := range rows {
		name := agentName(row)
		if _, ok := byAgent[name]; !ok {
			order = append(order, name)
		}
		byAgent[name] = append(byAgent[name], forMetrics(row))
	}
	remote := len(order) > 0
	var out []map[string]any
	for _, name := range order {
		group := byAgent[name]
		entry := map[string]any{"agent_ref": map[string]any{"name": name}}
		metrics, err := c.remoteMetrics(ctx, group)
		if err != nil {
			if ctx.Err() != nil {
				return nil, false, ctx.Err()
			}
			remote = false
			if c.opts.Progress != nil {
				fmt.Fprintf(c.opts.Progress, "aggregate_metrics: %v; computing them here\n", err)
			}
			metrics = Aggregate(group)
		}
		for k, v := range metrics {
			entry[k] = v
		}
		out = append(out, entry)
	}
	if out == nil {
		out = []map[string]any{}
	}
	b, err := json.MarshalIndent(out, "", "  ")
	return b, remote, err
}

func (c *collector) remoteMetrics(ctx context.Context, rows []map[string]any) (map[string]any, error) {
	body, err := json.Marshal(map[string]any{"verify_responses": rows})
	if err != nil {
		return nil, err
	}
	ans, err := c.post(ctx, "/aggregate_metrics", body, 1)
	if err != nil {
		return nil, err
	}
	out := map[string]any{}
	for _, k := range []string{"agent_metrics", "key_metrics", "group_level_metrics"} {
		if raw, ok := ans[k]; ok {
			out[k] = raw
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("POST /aggregate_metrics: answer has none of agent_metrics, key_metrics, group_level_metrics")
	}
	return out, nil
}

// Aggregate computes what Gym's compute_aggregate_metrics answers, from
// rows already stripped for metrics: for every numeric or boolean top-level
// field (bar the two indices) and every number of response.usage, the
// mean, max, min, median and std (n-1; 0 for one value), over all rows
// (agent_metrics, with the mean/ ones again as key_metrics) and per
// _ng_task_index (group_level_metrics, each with its rollouts' numbers in
// rollout_infos). agent_metrics also gets the pass@k figures Gym's
// mini_swe_agent_2 adds.
func Aggregate(rows []map[string]any) map[string]any {
	agent := stats(rows)
	key := map[string]any{}
	for k, v := range agent {
		if strings.HasPrefix(k, "mean/") {
			key[k] = v
		}
	}
	byTask := map[int][]map[string]any{}
	for _, row := range rows {
		t, _ := number(row["_ng_task_index"])
		byTask[int(t)] = append(byTask[int(t)], row)
	}
	var groups []any
	tasks, resolvedTasks := 0, 0
	var pass1 float64
	for _, t := range slices.Sorted(maps.Keys(byTask)) {
		g := byTask[t]
		tasks++
		m := map[string]any{"_ng_task_index": t}
		for k, v := range stats(g) {
			m[k] = v
		}
		// Gym profiles the rows it was sent against themselves: the sample
		// is its placeholder row and every expected rollout is there.
		m["sample"] = map[string]any{"agent_ref": map[string]any{"name": "agent"}}
		m["num_rollouts"] = len(g)
		m["expected_num_rollouts"] = len(g)
		m["missing_num_rollouts"] = 0
		m["reward_profile_completion_pct"] = 100.0
		var infos []any
		any1, sum := false, 0.0
		for _, row := range g {
			r, _ := number(row["reward"])
			sum += r
			if r >= 1 {
				any1 = true
			}
			ti, _ := number(row["_ng_task_index"])
			ri, _ := number(row["_ng_rollout_index"])
			info := map[string]any{"rollout_id": fmt.Sprintf("%d:%d", int(ti), int(ri)), "_ng_task_index": int(ti), "_ng_rollout_index": int(ri)}
			if _, ok := row["reward"]; ok {
				info["reward"] = r
			}
			for k, v := range usage(row) {
				info[k] = v
			}
			for k, v := range row {
				if k == "_ng_task_index" || k == "_ng_rollout_index" || k == "reward" || k == "response" {
					continue
				}
				if f, ok := number(v); ok {
					info[k] = f
				}
			}
			infos = append(infos, info)
		}
		sort.SliceStable(infos, func(i, j int) bool {
			return infos[i].(map[string]any)["_ng_rollout_index"].(int) < infos[j].(map[string]any)["_ng_rollout_index"].(int)
		})
		m["rollout_infos"] = infos
		if any1 {
			resolvedTasks++
		}
		pass1 += sum / float64(len(g))
		groups = append(groups, m)
	}
	if tasks > 0 {
		agent["pass@k/accuracy"] = 100 * float64(resolvedTasks) / float64(tasks)
		agent["pass@1[avg-of-k]/accuracy"] = 100 * pass1 / float64(tasks)
		agent["task_count"] = tasks
		agent["resolved_task_count"] = resolvedTasks
		agent["resolved_task_rate"] = float64(resolvedTasks) / float64(tasks)
	}
	if groups == nil {
		groups = []any{}
	}
	return map[string]any{"agent_metrics": agent, "key_metrics": key, "group_level_metrics": groups}
}

// usage is the numbers of a row's response.usage.
func usage(row map[string]any) map[string]float64 {
	out := map[string]float64{}
	for k, v := range asMap(asMap(row["response"])["usage"]) {
		if f, ok := number(v); ok {
			out[k] = f
		}
	}
	return out
}

// stats computes the five statistics of every metric field of rows.
func stats(rows []map[string]any) map[string]any {
	vals := map[string][]float64{}
	for _, row := range rows {
		for k, v := range row {
			if k == "_ng_task_index" || k == "_ng_rollout_index" {
				continue
			}
			if f, ok := number(v); ok {
				vals[k] = append(vals[k], f)
			}
		}
		for k, f := range usage(row) {
			vals[k] = append(vals[k], f)
		}
	}
	out := map[string]any{}
	for k, xs := range vals {
		sorted := slices.Sorted(slices.Values(xs))
		n := float64(len(xs))
		var sum float64
		for _, x := range xs {
			sum += x
		}
		mean := sum / n
		var ss float64
		for _, x := range xs {
			ss += (x - mean) * (x - mean)
		}
		std := 0.0
		if len(xs) > 1 {
			std = math.Sqrt(ss / (n - 1))
		}
		med := sorted[len(sorted)/2]
		if len(sorted)%2 == 0 {
			med = (sorted[len(sorted)/2-1] + sorted[len(sorted)/2]) / 2
		}
		out["mean/"+k], out["max/"+k], out["min/"+k], out["median/"+k], out["std/"+k] = mean, sorted[len(sorted)-1], sorted[0], med, std
	}
	return out
}
