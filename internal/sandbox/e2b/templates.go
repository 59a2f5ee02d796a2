package e2b

import (
	"fmt"
	"os"
	"strings"

	"sigs.k8s.io/yaml"
)

// Templates finds the E2B template a task's box starts from. E2B (and
// Tencent AGS) start sandboxes from templates built from images the user
// pushed; swerve's tasks name images, so each image name maps to a
// template id, through a map file or a naming rule.
type Templates struct {
	// Map holds image name → template id, from --e2b_template_map.
	Map map[string]string
	// Rule makes a template id from the task when Map has no entry, from
	// --e2b_template: {instance_id} is the task's instance id and {image}
	// the image name ("swebench/sweb.eval.x86_64.django_1776_django-11099:latest").
	Rule string
	// Source names where Map came from, for errors.
	Source string
}

// LoadTemplateMap reads a template map file: one object whose keys are
// image names and values template ids, in YAML or JSON (JSON is YAML).
//
//	swebench/sweb.eval.x86_64.django_1776_django-11099:latest: django-11099
func LoadTemplateMap(path string) (map[string]string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("e2b: template map: %w", err)
	}
	return ParseTemplateMap(path, data)
}

// ParseTemplateMap parses a template map's content; name is for errors.
func ParseTemplateMap(name string, data []byte) (map[string]string, error) {
	var raw map[string]any
	if err := yaml.Unmarshal(data, &raw); err != nil {
		return nil, fmt.Errorf("e2b: template map %s: not a YAML or JSON object of image → template id: %w", name, err)
	}
	out := make(map[string]string, len(raw))
	for k, v := range raw {
		s, ok := v.(string)
		if !ok || strings.TrimSpace(s) == "" {
			return nil, fmt.Errorf("e2b: template map %s: image %q: template id must be a non-empty string, got %v", name, k, v)
		}
		out[k] = s
	}
	return out, nil
}

// Resolve returns the template id for a box of image for task.
func (t Templates) Resolve(image, task string) (string, error) {
	for _, key := range imageKeys(image) {
		if id, ok := t.Map[key]; ok {
			return id, nil
		}
	}
	if task != "" {
		if id, ok := t.Map[task]; ok {
			return id, nil
		}
	}
	if t.Rule != "" {
		if strings.Contains(t.Rule, "{instance_id}") && task == "" {
			return "", fmt.Errorf("e2b: image %s: --e2b_template %q needs the task's instance_id, and this box has no task", image, t.Rule)
		}
		id := strings.NewReplacer("{instance_id}", task, "{image}", image).Replace(t.Rule)
		return id, nil
	}
	where := "give --e2b_template_map FILE or --e2b_template RULE"
	if t.Source != "" {
		where = "add it to " + t.Source
	}
	if task != "" {
		return "", fmt.Errorf("e2b: task %s: no template for image %s: %s", task, image, where)
	}
	return "", fmt.Errorf("e2b: no template for image %s: %s", image, where)
}

// imageKeys are the spellings an image is looked up under: as given, and
// with or without the default :latest tag.
func imageKeys(image string) []string {
	keys := []string{image}
	if base, ok := strings.CutSuffix(image, ":latest"); ok {
		keys = append(keys, base)
	} else if !strings.Contains(image[strings.LastIndexByte(image, '/')+1:], ":") {
		keys = append(keys, image+":latest")
	}
	return keys
}
