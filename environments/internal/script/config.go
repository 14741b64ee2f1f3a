// Package script holds what the script-running environments (LocalEnv,
// LocalFileShareEnv, RemoteEnv) share: their config keys, the shell
// variables they export, result parsing, timeouts and output recording.
// It plays the part of mlos_bench's ScriptEnv base class.
package script

import (
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/benchtune/bench/configs/source"
	"github.com/benchtune/bench/internal/decode"
)

// CommonKeys are the config keys every environment accepts (handled by
// environments.NewBase).
var CommonKeys = []string{"tunable_params", "required_args", "const_args"}

// ScriptKeys are the config keys of a script environment.
var ScriptKeys = []string{"setup", "run", "teardown", "results_stdout_pattern",
	"shell_env_params", "shell_env_params_rename", "timeouts", "max_output_bytes", "progress_pattern"}

// Timeouts bound the phases of an environment (bench's "timeouts" config
// key). Zero means no limit.
type Timeouts struct {
	Setup    decode.Duration `json:"setup"`
	Run      decode.Duration `json:"run"`
	Teardown decode.Duration `json:"teardown"`
	Status   decode.Duration `json:"status"`
	Line     decode.Duration `json:"line"`
}

// Phase returns the limit of a phase ("setup", "run", "teardown",
// "status"); 0 means none.
func (t Timeouts) Phase(phase string) time.Duration {
	switch phase {
	case "setup":
		return t.Setup.Std()
	case "run":
		return t.Run.Std()
	case "teardown":
		return t.Teardown.Std()
	case "status":
		return t.Status.Std()
	}
	return 0
}

// Config is the decoded script part of an environment's config.
type Config struct {
	Setup, Run, Teardown []string
	// ShellEnvParams are the parameters exported to the scripts.
	ShellEnvParams []string
	// ShellEnvRename maps environment variable names to parameter names.
	ShellEnvRename map[string]string
	// Pattern parses the run output (nil: not parsed); its first two
	// groups are the metric name and value.
	Pattern  *regexp.Regexp
	Timeouts Timeouts
	// MaxOutputBytes bounds what is recorded of each stream of each
	// command (0: what the service kept).
	MaxOutputBytes int
	// ProgressPattern marks the run's output lines that report progress
	// (bench's progress_pattern; nil: none). See CompileProgressPattern.
	ProgressPattern *regexp.Regexp
}

// Lines returns the script of a phase.
func (c *Config) Lines(phase string) []string {
	switch phase {
	case "setup":
		return c.Setup
	case "run":
		return c.Run
	case "teardown":
		return c.Teardown
	}
	return nil
}

type rawScript struct {
	TunableParams        any               `json:"tunable_params"`
	RequiredArgs         any               `json:"required_args"`
	ConstArgs            any               `json:"const_args"`
	Setup                []string          `json:"setup"`
	Run                  []string          `json:"run"`
	Teardown             []string          `json:"teardown"`
	ResultsStdoutPattern *string           `json:"results_stdout_pattern"`
	ShellEnvParams       []string          `json:"shell_env_params"`
	ShellEnvParamsRename map[string]string `json:"shell_env_params_rename"`
	Timeouts             *Timeouts         `json:"timeouts"`
	MaxOutputBytes       *int              `json:"max_output_bytes"`
	ProgressPattern      *string           `json:"progress_pattern"`
}

// DecodeKeys decodes cfg into out one key at a time, so that an error
// points at the offending key; keys outside known are an error. ref points
// at the environment's "config" object.
func DecodeKeys(cfg map[string]any, ref source.Ref, out any, known ...string) error {
	keys := make([]string, 0, len(cfg))
	for k := range cfg {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if !slices.Contains(known, k) {
			sorted := slices.Clone(known)
			sort.Strings(sorted)
			return ref.Child(k).Errorf("unknown config key %q; known keys: %s", k, strings.Join(sorted, ", "))
		}
		if err := decode.Into(map[string]any{k: cfg[k]}, out); err != nil {
			return ref.Child(k).Errorf("%v", err)
		}
	}
	return nil
}

// Parse decodes the script keys of cfg (other keys must be in extra).
// ref points at the "config" object.
func Parse(cfg map[string]any, ref source.Ref, extra ...string) (*Config, error) {
	known := append(append(append([]string(nil), CommonKeys...), ScriptKeys...), extra...)
	// Decode only the script keys here; the caller decodes its own.
	sub := map[string]any{}
	for k, v := range cfg {
		if !slices.Contains(extra, k) {
			sub[k] = v
		}
	}
	var raw rawScript
	if err := DecodeKeys(sub, ref, &raw, known...); err != nil {
		return nil, err
	}
	c := &Config{
		Setup:          raw.Setup,
		Run:            raw.Run,
		Teardown:       raw.Teardown,
		ShellEnvParams: raw.ShellEnvParams,
		ShellEnvRename: raw.ShellEnvParamsRename,
	}
	for i, name := range raw.ShellEnvParams {
		if name == "" {
			return nil, ref.Child("shell_env_params").Index(i).Errorf("empty parameter name")
		}
	}
	for envName := range raw.ShellEnvParamsRename {
		if !IsShellName(envName) {
			return nil, ref.Child("shell_env_params_rename").Child(envName).Errorf(
				"%q is not a shell variable name (letters, digits and '_', not starting with a digit)", envName)
		}
	}
	if raw.ResultsStdoutPattern != nil && *raw.ResultsStdoutPattern != "" {
		re, err := CompilePattern(*raw.ResultsStdoutPattern)
		if err != nil {
			return nil, ref.Child("results_stdout_pattern").Errorf("%v", err)
		}
		c.Pattern = re
	}
	if raw.ProgressPattern != nil {
		re, err := CompileProgressPattern(*raw.ProgressPattern)
		if err != nil {
			return nil, ref.Child("progress_pattern").Errorf("%v", err)
		}
		c.ProgressPattern = re
	}
	if raw.Timeouts != nil {
		c.Timeouts = *raw.Timeouts
	}
	if raw.MaxOutputBytes != nil {
		if *raw.MaxOutputBytes < 1 {
			return nil, ref.Child("max_output_bytes").Errorf("must be a positive number of bytes, got %d", *raw.MaxOutputBytes)
		}
		c.MaxOutputBytes = *raw.MaxOutputBytes
	}
	return c, nil
}

// CompilePattern compiles a results_stdout_pattern: a regular expression
// (Go RE2 syntax, which covers the Python syntax configs use apart from
// look-arounds and back-references) applied in multi-line mode, whose first
// two groups are the metric name and value.
func CompilePattern(p string) (*regexp.Regexp, error) {
	re, err := regexp.Compile("(?m)" + p)
	if err != nil {
		return nil, fmt.Errorf("invalid regular expression %q: %v", p, err)
	}
	if re.NumSubexp() < 2 {
		return nil, fmt.Errorf("regular expression %q has %d group(s); it needs two: (name)(value)", p, re.NumSubexp())
	}
	return re, nil
}

// IsShellName reports whether s is a valid shell variable name.
func IsShellName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '_', c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z':
		case c >= '0' && c <= '9' && i > 0:
		default:
			return false
		}
	}
	return true
}
