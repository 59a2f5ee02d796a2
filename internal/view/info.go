package view

import (
	"cmp"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"time"
)

// Info is what a run was: its model(s), dataset, scaffold(s), when it
// started and the settings it ran with, as its rows record them. A field
// the rows do not record (older runs, other tools' files) stays empty and
// the page says "unknown".
type Info struct {
	// Models are the distinct models of the run's rows, in first-seen
	// order; Offline the ones among them that are no real model.
	Models  []string
	Offline map[string]bool
	Dataset string
	// Scaffolds are the distinct scaffolds, first-seen order.
	Scaffolds []string
	// Started is the earliest start of a task (swerve's records only).
	Started time.Time
	// Settings are the run's recorded settings (the record's settings, or
	// its config, flag by flag), sorted by name; empty values left out.
	Settings []Setting
	// Format is the rows' format (FormatSwerve, ...).
	Format string
}

// Setting is one recorded setting.
type Setting struct{ Name, Value string }

// infoOf gathers a run's Info from its summaries and one row's recorded
// settings (row may be nil).
func infoOf(tasks []Summary, format string, row []byte) Info {
	in := Info{Format: format, Offline: map[string]bool{}}
	seenM, seenS := map[string]bool{}, map[string]bool{}
	for i := range tasks {
		t := &tasks[i]
		if t.Model != "" && !seenM[t.Model] {
			seenM[t.Model] = true
			in.Models = append(in.Models, t.Model)
		}
		if t.Model != "" && t.Offline {
			in.Offline[t.Model] = true
		}
		if t.Scaffold != "" && !seenS[t.Scaffold] {
			seenS[t.Scaffold] = true
			in.Scaffolds = append(in.Scaffolds, t.Scaffold)
		}
		if !t.Started.IsZero() && (in.Started.IsZero() || t.Started.Before(in.Started)) {
			in.Started = t.Started
		}
	}
	if len(row) == 0 {
		return in
	}
	var rec struct {
		Config   map[string]any    `json:"config"`
		Settings map[string]string `json:"settings"`
		Metadata struct {
			Dataset string `json:"dataset"`
		} `json:"metadata"` // rows swerve serve answers with
	}
	small, _, err := pick(row, map[string]bool{"config": true, "settings": true, "metadata": true}, "", nil)
	if err != nil || json.Unmarshal(small, &rec) != nil {
		return in
	}
	set := map[string]string{}
	for k, v := range rec.Config {
		if s := settingText(v); s != "" {
			set[k] = s
		}
	}
	for k, v := range rec.Settings {
		if v != "" {
			set[k] = v
		}
	}
	in.Dataset = cmp.Or(set["dataset"], rec.Metadata.Dataset)
	if sp := set["split"]; in.Dataset != "" && sp != "" {
		in.Dataset += " (split " + sp + ")"
	}
	for k, v := range set {
		switch k {
		case "help", "help_backend", "traj_dir", "log_level", "dataset", "split":
			continue // not a setting of the experiment, or shown apart
		}
		in.Settings = append(in.Settings, Setting{k, v})
	}
	sort.Slice(in.Settings, func(i, j int) bool { return in.Settings[i].Name < in.Settings[j].Name })
	return in
}

// settingText writes a config value as text; empty for nothing worth
// showing.
func settingText(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		return x
	case bool, float64:
		return fmt.Sprint(x)
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// Key settings are shown in the header; the others are folded.
var keySettings = []string{"max_steps", "max_token_limit", "temperature", "top_p", "use_fn_calling", "backend", "max_workers", "eval_timeout", "reward"}

// KeySettings are the settings the header shows inline.
func (in Info) KeySettings() []Setting {
	var out []Setting
	for _, k := range keySettings {
		for _, s := range in.Settings {
			if s.Name == k {
				out = append(out, s)
			}
		}
	}
	return out
}

// ModelText names the run's model(s), or "unknown".
func (in Info) ModelText() string {
	if len(in.Models) == 0 {
		return "unknown"
	}
	return strings.Join(in.Models, ", ")
}

// AnyOffline reports whether some model of the run is an offline one.
func (in Info) AnyOffline() bool { return len(in.Offline) > 0 }

// AllOffline reports whether every model of the run is an offline one.
func (in Info) AllOffline() bool { return len(in.Models) > 0 && len(in.Offline) == len(in.Models) }
