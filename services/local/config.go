package local

import (
	"fmt"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/benchtune/bench/configs"
	"github.com/benchtune/bench/configs/source"
	"github.com/benchtune/bench/internal/decode"
	"github.com/benchtune/bench/services"
)

// DefaultMaxOutputBytes is how much of each stream of each line is kept
// when max_output_bytes is not set.
const DefaultMaxOutputBytes = 1 << 20

// TempDirConfig configures TempDirContextService (and the temp dirs of
// LocalExecService).
type TempDirConfig struct {
	// TempDir is the working directory to use instead of a fresh one per
	// call (config key temp_dir, templated with the globals). It is
	// created when missing and never removed. "" means none.
	TempDir string
	// KeepTempDir leaves fresh temp dirs in place after use (config key
	// keep_temp_dir, bench's own).
	KeepTempDir bool
}

// Config configures LocalExecService.
type Config struct {
	TempDirConfig
	// AbortOnError stops at the first line that exits non-zero (config key
	// abort_on_error, default true).
	AbortOnError bool
	// MaxOutputBytes bounds the output kept per stream per line (config key
	// max_output_bytes, bench's own; default DefaultMaxOutputBytes).
	MaxOutputBytes int
}

// DefaultConfig returns LocalExecService's settings for an empty config.
func DefaultConfig() Config {
	return Config{AbortOnError: true, MaxOutputBytes: DefaultMaxOutputBytes}
}

// FileShareConfig configures LocalDirFileShareService.
type FileShareConfig struct {
	// Root is the folder that plays the remote side (config key root,
	// required, templated with the globals; relative to the working
	// folder).
	Root string
	// CreateRoot creates Root when it is missing (config key create_root).
	CreateRoot bool
}

type rawTempDir struct {
	TempDir     *string `json:"temp_dir"`
	KeepTempDir *bool   `json:"keep_temp_dir"`
}

type rawExec struct {
	TempDir        *string `json:"temp_dir"`
	KeepTempDir    *bool   `json:"keep_temp_dir"`
	AbortOnError   *bool   `json:"abort_on_error"`
	MaxOutputBytes *int    `json:"max_output_bytes"`
}

type rawFileShare struct {
	Root       *string `json:"root"`
	CreateRoot *bool   `json:"create_root"`
}

// decodeKeys decodes m into raw one key at a time, so that an error points
// at the offending key. ref points at the service's "config" object.
func decodeKeys(m map[string]any, ref source.Ref, raw any, known ...string) error {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if !slices.Contains(known, k) {
			return ref.Child(k).Errorf("unknown config key %q; known keys: %s", k, strings.Join(known, ", "))
		}
		if err := decode.Into(map[string]any{k: m[k]}, raw); err != nil {
			return ref.Child(k).Errorf("%v", err)
		}
	}
	return nil
}

// template expands $name and ${name} with the globals, as mlos_bench's
// string.Template.safe_substitute does (unknown names are left as they
// are).
func template(s string, globals services.Params) string {
	return configs.Substitute(s, configs.MapLookup(globals))
}

// ParseTempDirConfig decodes TempDirContextService's "config" object; ref
// points at that object.
func ParseTempDirConfig(m map[string]any, globals services.Params, ref source.Ref) (TempDirConfig, error) {
	var raw rawTempDir
	if err := decodeKeys(m, ref, &raw, "keep_temp_dir", "temp_dir"); err != nil {
		return TempDirConfig{}, err
	}
	var cfg TempDirConfig
	if raw.TempDir != nil {
		cfg.TempDir = template(*raw.TempDir, globals)
	}
	if raw.KeepTempDir != nil {
		cfg.KeepTempDir = *raw.KeepTempDir
	}
	return cfg, nil
}

// ParseConfig decodes LocalExecService's "config" object; ref points at
// that object.
func ParseConfig(m map[string]any, globals services.Params, ref source.Ref) (Config, error) {
	var raw rawExec
	if err := decodeKeys(m, ref, &raw, "abort_on_error", "keep_temp_dir", "max_output_bytes", "temp_dir"); err != nil {
		return Config{}, err
	}
	cfg := DefaultConfig()
	if raw.TempDir != nil {
		cfg.TempDir = template(*raw.TempDir, globals)
	}
	if raw.KeepTempDir != nil {
		cfg.KeepTempDir = *raw.KeepTempDir
	}
	if raw.AbortOnError != nil {
		cfg.AbortOnError = *raw.AbortOnError
	}
	if raw.MaxOutputBytes != nil {
		if *raw.MaxOutputBytes < 1 {
			return Config{}, ref.Child("max_output_bytes").Errorf("must be a positive number of bytes, got %d", *raw.MaxOutputBytes)
		}
		cfg.MaxOutputBytes = *raw.MaxOutputBytes
	}
	return cfg, nil
}

// ParseFileShareConfig decodes LocalDirFileShareService's "config" object;
// ref points at that object.
func ParseFileShareConfig(m map[string]any, globals services.Params, ref source.Ref) (FileShareConfig, error) {
	var raw rawFileShare
	if err := decodeKeys(m, ref, &raw, "create_root", "root"); err != nil {
		return FileShareConfig{}, err
	}
	if raw.Root == nil || strings.TrimSpace(*raw.Root) == "" {
		return FileShareConfig{}, ref.Errorf("config key \"root\" (the shared folder) is required")
	}
	cfg := FileShareConfig{Root: template(*raw.Root, globals)}
	if raw.CreateRoot != nil {
		cfg.CreateRoot = *raw.CreateRoot
	}
	return cfg, nil
}

func absAll(dirs []string) ([]string, error) {
	out := make([]string, 0, len(dirs))
	for _, d := range dirs {
		if d == "" {
			continue
		}
		a, err := filepath.Abs(d)
		if err != nil {
			return nil, fmt.Errorf("search path folder %q: %w", d, err)
		}
		out = append(out, a)
	}
	return out, nil
}
