package sessions

import (
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"slices"
	"sort"
	"strconv"
)

// AggregateHandler answers NeMo Gym's POST /aggregate_metrics: the body is
// {"verify_responses": [row, ...]}; see Aggregate.
func AggregateHandler(w http.ResponseWriter, r *http.Request) {
	var req struct {
		VerifyResponses []map[string]any `json:"verify_responses"`
	}
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxBody))
	dec.UseNumber()
	if err := dec.Decode(&req); err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]any{"detail": fmt.Sprintf("verify_responses: %v", err)})
		return
	}
	writeJSON(w, http.StatusOK, Aggregate(req.VerifyResponses))
}

// Aggregate computes Gym's reward profile of verify responses: for every
// numeric or boolean top-level field and every number in response.usage,
// mean/max/min/median/std (std with n-1, 0 for one value), per
// _ng_task_index (group_level_metrics) and over all rows (agent_metrics);
// key_metrics are the overall means.
func Aggregate(rows []map[string]any) map[string]any {
	groups := map[int][]map[string]any{}
	for _, row := range rows {
		groups[intOf(row["_ng_task_index"])] = append(groups[intOf(row["_ng_task_index"])], row)
	}
	idx := make([]int, 0, len(groups))
	for k := range groups {
		idx = append(idx, k)
	}
	sort.Ints(idx)
	var glm []map[string]any
	for _, k := range idx {
		g := groups[k]
		m := stats(g)
		m["_ng_task_index"] = k
		m["num_rollouts"] = len(g)
		var infos []map[string]any
		for _, row := range g {
			info := map[string]any{"rollout_id": fmt.Sprintf("%d:%d", k, intOf(row["_ng_rollout_index"])), "_ng_task_index": k, "_ng_rollout_index": intOf(row["_ng_rollout_index"])}
			for f, v := range numbers(row) {
				info[f] = v
			}
			infos = append(infos, info)
		}
		m["rollout_infos"] = infos
		if ref, ok := g[0]["agent_ref"]; ok {
			m["sample"] = map[string]any{"agent_ref": ref}
		}
		glm = append(glm, m)
	}
	agent := stats(rows)
	key := map[string]any{}
	for k, v := range agent {
		if len(k) > 5 && k[:5] == "mean/" {
			key[k] = v
		}
	}
	if glm == nil {
		glm = []map[string]any{}
	}
	return map[string]any{"group_level_metrics": glm, "agent_metrics": agent, "key_metrics": key}
}

func intOf(v any) int {
	switch x := v.(type) {
	case json.Number:
		n, _ := strconv.Atoi(x.String())
		return n
	case float64:
		return int(x)
	case int:
		return x
	}
	return 0
}

// numbers returns a row's numeric and boolean top-level fields (bar Gym's
// own indexes) and response.usage's numbers.
func numbers(row map[string]any) map[string]float64 {
	out := map[string]float64{}
	add := func(k string, v any) {
		switch x := v.(type) {
		case json.Number:
			if f, err := x.Float64(); err == nil {
				out[k] = f
			}
		case float64:
			out[k] = x
		case bool:
			out[k] = 0
			if x {
				out[k] = 1
			}
		}
	}
	for k, v := range row {
		if k == "_ng_task_index" || k == "_ng_rollout_index" {
			continue
		}
		add(k, v)
	}
	if resp, ok := row["response"].(map[string]any); ok {
		if usage, ok := resp["usage"].(map[string]any); ok {
			for k, v := range usage {
				add(k, v)
			}
		}
	}
	return out
}

func stats(rows []map[string]any) map[string]any {
	vals := map[string][]float64{}
	for _, row := range rows {
		for k, v := range numbers(row) {
			vals[k] = append(vals[k], v)
		}
	}
	out := map[string]any{}
	for k, xs := range vals {
		slices.Sort(xs)
		n := float64(len(xs))
		sum := 0.0
		for _, x := range xs {
			sum += x
		}
		mean := sum / n
		std := 0.0
		if len(xs) > 1 {
			for _, x := range xs {
				std += (x - mean) * (x - mean)
			}
			std = math.Sqrt(std / (n - 1))
		}
		med := xs[len(xs)/2]
		if len(xs)%2 == 0 {
			med = (xs[len(xs)/2-1] + xs[len(xs)/2]) / 2
		}
		out["mean/"+k], out["max/"+k], out["min/"+k], out["median/"+k], out["std/"+k] = mean, xs[len(xs)-1], xs[0], med, std
	}
	return out
}
