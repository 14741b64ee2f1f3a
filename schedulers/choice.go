package schedulers

import (
	"fmt"
	"slices"
	"strings"

	"github.com/benchtune/bench/configs"
)

// decodeChoice reads v, the value of a key that takes one of a few
// strings: v trimmed (and lower-cased when fold) when that is one of
// allowed. Anything else (not a string included) is reported with bad as
// "<name> must be <explain>, got <v>", and ok is false.
func decodeChoice(v any, name, explain string, fold bool, bad func(format string, args ...any), allowed ...string) (string, bool) {
	if s, isStr := v.(string); isStr {
		s = strings.TrimSpace(s)
		if fold {
			s = strings.ToLower(s)
		}
		if slices.Contains(allowed, s) {
			return s, true
		}
	}
	bad("%s must be %s, got %v", name, explain, configs.PyStr(v))
	return "", false
}

// decodeModeKey reads a bench-only mode key of the scheduler config,
// whose values are def (the default: also an absent key, null or "") and
// other, in any case. A bad value is reported and gives def.
func decodeModeKey(cfg map[string]any, key, def, other string, bad func(key, format string, args ...any)) string {
	v := cfg[key]
	if v == nil {
		return def
	}
	s, ok := decodeChoice(v, key, fmt.Sprintf("%q (default) or %q", def, other), true,
		func(format string, args ...any) { bad(key, format, args...) }, "", def, other)
	if !ok || s == "" {
		return def
	}
	return s
}
