package cli

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path"
	"strings"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/swerve-dev/swerve/internal/agent"
)

// agentArgsFile is R2E-Gym's AgentArgs file, the one its runner's
// --args_path names. Upstream builds the dataclass from the file's keys, so
// the first four are required and any other key is an error.
type agentArgsFile struct {
	SystemPrompt   *string        `json:"system_prompt"`
	InstancePrompt *string        `json:"instance_prompt"`
	CommandFiles   *[]string      `json:"command_files"`
	LLMName        *string        `json:"llm_name"`
	LLMBaseURL     *string        `json:"llm_base_url"`
	DemoFile       *string        `json:"demo_file"`
	OtherArgs      map[string]any `json:"other_args"`
}

// loadArgsPath reads --args_path and changes s the way upstream's runner
// changes its agent: the prompts and the tools (a command file's base name
// without its extension names one of the scaffold's tools). llm_name is
// replaced by --llm_name, as upstream does; llm_base_url and demo_file are
// read by no part of upstream's run either, and are accepted.
func (f *agentFlags) loadArgsPath(s *agent.Scaffold) error {
	data, err := os.ReadFile(f.ArgsPath)
	if err != nil {
		return fmt.Errorf("--args_path: %w", err)
	}
	var a agentArgsFile
	if err := yaml.UnmarshalStrict(data, &a); err != nil {
		return fmt.Errorf("--args_path %s: %w", f.ArgsPath, err)
	}
	for key, missing := range map[string]bool{
		"system_prompt": a.SystemPrompt == nil, "instance_prompt": a.InstancePrompt == nil,
		"command_files": a.CommandFiles == nil, "llm_name": a.LLMName == nil,
	} {
		if missing {
			return fmt.Errorf("--args_path %s: %s is missing (upstream's AgentArgs requires system_prompt, instance_prompt, command_files and llm_name)", f.ArgsPath, key)
		}
	}
	o := &agent.Override{System: a.SystemPrompt, Instance: a.InstancePrompt, Tools: []string{}}
	for _, file := range *a.CommandFiles {
		o.Tools = append(o.Tools, strings.TrimSuffix(path.Base(file), path.Ext(file)))
	}
	if err := o.Apply(s); err != nil {
		return fmt.Errorf("--args_path %s: %w", f.ArgsPath, err)
	}
	if v, ok := a.OtherArgs["max_retries"]; ok {
		n, ok := v.(float64)
		if !ok || n < 0 || n != float64(int(n)) {
			return fmt.Errorf("--args_path %s: other_args.max_retries: want a whole number, got %v", f.ArgsPath, v)
		}
		f.llmRetries = int(n)
		if f.llmRetries == 0 {
			f.llmRetries = -1 // none, not the client's default
		}
	}
	if v, ok := a.OtherArgs["timeout"]; ok {
		n, ok := v.(float64)
		if !ok || n <= 0 {
			return fmt.Errorf("--args_path %s: other_args.timeout: want seconds above 0, got %v", f.ArgsPath, v)
		}
		f.llmTimeout = time.Duration(n * float64(time.Second))
	}
	sum := sha256.Sum256(data)
	f.override, f.overrideHash = o, hex.EncodeToString(sum[:8])
	return nil
}
