package swebench

import (
	"bytes"
	"encoding/json"
)

// reportEntry is one instance's object in report.json, fields in the
// harness's order.
type reportEntry struct {
	PatchIsNone        bool         `json:"patch_is_None"`
	PatchExists        bool         `json:"patch_exists"`
	PatchApplied       bool         `json:"patch_successfully_applied"`
	Resolved           bool         `json:"resolved"`
	InfraFailure       bool         `json:"infra_failure"`
	InfraFailureReason string       `json:"infra_failure_reason,omitempty"`
	TestsStatus        *TestsStatus `json:"tests_status,omitempty"`
}

// Report renders r as the harness's report.json: {"<instance_id>": {...}},
// indented by four spaces as run_evaluation writes it. tests_status is
// present only for a valid test run.
func (r *Result) Report() []byte {
	e := reportEntry{
		PatchIsNone:        r.PatchIsNone,
		PatchExists:        r.PatchExists,
		PatchApplied:       r.Found,
		Resolved:           r.Resolved,
		InfraFailure:       r.InfraFailure,
		InfraFailureReason: r.InfraFailureReason,
	}
	if r.Found {
		ts := r.Tests
		e.TestsStatus = &ts
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "    ")
	// A one-key object keeps the id as the key, whatever it contains.
	_ = enc.Encode(map[string]reportEntry{r.InstanceID: e})
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
}
