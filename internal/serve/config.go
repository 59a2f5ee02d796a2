package serve

import (
	"fmt"
	"os"
	"sort"

	"sigs.k8s.io/yaml"
)

// gymInfraKeys are keys of a Gym server config that describe how Gym itself
// starts and wires its servers; swerve serve has no use for them and skips
// them.
var gymInfraKeys = map[string]bool{
	"entrypoint": true, "host": true, "port": true, "domain": true, "description": true,
	"model_server": true, "resources_server": true, "datasets": true, "verified": true,
	"num_workers": true, "value": true, "license": true,
}

// LoadConfig reads a YAML (or JSON) config of swerve serve: Gym's agent keys
// (concurrency, env, cache_dir_template, run_golden, step_timeout,
// eval_timeout, skip_if_exists, step_limit, collapse_limit) and swerve's own
// flag names, flat, or nested the way Gym writes an agent's config
// (<name>: {responses_api_agents: {<impl>: {...}}}). Gym's wiring keys
// (entrypoint, host, port, model_server, datasets, ...) are skipped. The
// result maps each key to its value.
func LoadConfig(path string) (map[string]any, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("--config: %w", err)
	}
	var m map[string]any
	if err := yaml.Unmarshal(data, &m); err != nil {
		return nil, fmt.Errorf("--config %s: %w", path, err)
	}
	m, err = unwrapGym(m)
	if err != nil {
		return nil, fmt.Errorf("--config %s: %w", path, err)
	}
	for k := range m {
		if gymInfraKeys[k] {
			delete(m, k)
		}
	}
	return m, nil
}

// unwrapGym descends through <name>: {responses_api_agents: {<impl>: body}}.
func unwrapGym(m map[string]any) (map[string]any, error) {
	if len(m) != 1 {
		return m, nil
	}
	for name, v := range m {
		inner, ok := v.(map[string]any)
		if !ok {
			return m, nil
		}
		agents, ok := inner["responses_api_agents"].(map[string]any)
		if !ok {
			return m, nil
		}
		if len(agents) != 1 {
			impls := make([]string, 0, len(agents))
			for k := range agents {
				impls = append(impls, k)
			}
			sort.Strings(impls)
			return nil, fmt.Errorf("%s.responses_api_agents: want one agent, got %v", name, impls)
		}
		for _, body := range agents {
			b, ok := body.(map[string]any)
			if !ok {
				return nil, fmt.Errorf("%s.responses_api_agents: not a mapping", name)
			}
			return b, nil
		}
	}
	return m, nil
}
