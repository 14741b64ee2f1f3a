package configs

import (
	"fmt"
	"sort"
	"strings"

	"github.com/benchtune/bench/internal/decode"
)

// MissingParamError reports a required parameter that nothing provides.
type MissingParamError struct {
	Param string
	Who   string // e.g. `environment "Local env"`
}

func (e *MissingParamError) Error() string {
	if e.Who == "" {
		return fmt.Sprintf("missing required parameter %q", e.Param)
	}
	return fmt.Sprintf("%s: missing required parameter %q (set it in const_args, a globals file or as --%s on the command line)", e.Who, e.Param, e.Param)
}

// MergeParameters copies into dest the values of source for the keys dest
// already has (mlos_bench's merge_parameters: globals override only keys
// already present in a class's config), converted to the key's type where
// the value is text spelling it (CoerceLike: the typed configs of
// services, optimizers, storage and schedulers), then makes sure every required key
// is present, taking it from source when dest lacks it. Keys are processed
// in sorted order so that the first missing one reported is deterministic.
func MergeParameters(dest, source map[string]any, required []string, who string) error {
	for k, cur := range dest {
		if v, ok := source[k]; ok {
			dest[k] = CoerceLike(cur, v)
		}
	}
	req := append([]string(nil), required...)
	sort.Strings(req)
	for _, k := range req {
		if _, ok := dest[k]; ok {
			continue
		}
		if v, ok := source[k]; ok {
			dest[k] = v
			continue
		}
		return &MissingParamError{Param: k, Who: who}
	}
	return nil
}

// CoerceLike returns v, the value of a global overriding a config key
// whose value is cur, converted to cur's type where v is text that spells
// a value of that type: "true" and "false" (any case) for a boolean key,
// a number for a numeric key (an integer key keeps integers only). A
// command-line global is text or a number (ParseScalar), and a "$name"
// template expands to text, so without this `--ssh_insecure_ignore_host_key
// true` or "port": "$pg_port" would reach a typed key as a string. Any
// other value is returned unchanged (and is checked by the key's decoder).
func CoerceLike(cur, v any) any {
	s, isStr := v.(string)
	if !isStr {
		// An integral float (e.g. from a JSON number 8.0) overriding an
		// integer key stays as it is: decoders accept it.
		return v
	}
	t := strings.TrimSpace(s)
	switch cur.(type) {
	case bool:
		// The one rule for booleans in configs (decode.Bool): "true",
		// "yes", "on", "1" ... in any case.
		if b, ok := decode.Bool(t); ok {
			return b
		}
	case int64, int:
		if i, ok := pyParseInt(t); ok {
			return i
		}
	case float64:
		if f, ok := pyParseFloat(t); ok {
			if i, ok := pyParseInt(t); ok && float64(i) == f {
				return i
			}
			return f
		}
	}
	return v
}

// MergeVerbatim copies into dest the values of source for the keys dest
// already has, unchanged (no CoerceLike): an environment's parameters,
// which reach scripts as text exactly as mlos_bench passes them.
func MergeVerbatim(dest, source map[string]any) {
	for k := range dest {
		if v, ok := source[k]; ok {
			dest[k] = v
		}
	}
}

// MergeOrdered is MergeParameters for an ordered destination (const_args,
// whose order matters for templating). Values are copied unchanged (no
// CoerceLike): const_args reach scripts as text, and a command-line
// "--flag true" reaches them as "true", as in mlos_bench.
func MergeOrdered(dest *Ordered, source map[string]any, required []string, who string) error {
	for _, k := range dest.Keys() {
		if v, ok := source[k]; ok {
			dest.Set(k, v)
		}
	}
	req := append([]string(nil), required...)
	sort.Strings(req)
	for _, k := range req {
		if dest.Has(k) {
			continue
		}
		if v, ok := source[k]; ok {
			dest.Set(k, v)
			continue
		}
		return &MissingParamError{Param: k, Who: who}
	}
	return nil
}

// PreprocessDynamic replaces every value of dest that is exactly "$name"
// with parent[name] when the parent has it, keeping the parent value's type
// (mlos_bench's preprocess_dynamic_configs, used for a CompositeEnv's
// const_args reaching its children).
func PreprocessDynamic(dest *Ordered, parent map[string]any) {
	for _, k := range dest.Keys() {
		v, _ := dest.Get(k)
		s, ok := v.(string)
		if !ok || !strings.HasPrefix(s, "$") {
			continue
		}
		if pv, ok := parent[s[1:]]; ok {
			dest.Set(k, pv)
		}
	}
}

// ExpandGroups expands "$name" entries of an environment's tunable_params
// through the globals' tunable_params_map ({name: group | [groups]}).
func ExpandGroups(groups []string, paramsMap any) ([]string, error) {
	var m map[string]any
	if paramsMap != nil {
		mm, ok := paramsMap.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("tunable_params_map must be an object mapping names to lists of tunable groups, got %T", paramsMap)
		}
		m = mm
	}
	var out []string
	for _, g := range groups {
		name, isRef := strings.CutPrefix(g, "$")
		if !isRef {
			out = append(out, g)
			continue
		}
		v, ok := m[name]
		if !ok {
			known := make([]string, 0, len(m))
			for k := range m {
				known = append(known, "$"+k)
			}
			sort.Strings(known)
			if len(known) == 0 {
				return nil, fmt.Errorf("tunable group reference %q: no tunable_params_map is defined in the globals", g)
			}
			return nil, fmt.Errorf("tunable group reference %q is not defined in tunable_params_map (defined: %s)", g, strings.Join(known, ", "))
		}
		switch x := v.(type) {
		case string:
			out = append(out, x)
		case []any:
			for _, e := range x {
				s, ok := e.(string)
				if !ok {
					return nil, fmt.Errorf("tunable_params_map %q: entries must be group names, got %v", name, e)
				}
				out = append(out, s)
			}
		case []string:
			out = append(out, x...)
		default:
			return nil, fmt.Errorf("tunable_params_map %q must be a group name or a list of group names, got %T", name, v)
		}
	}
	return out, nil
}

// ParseScalar converts a command-line value as mlos_bench's try_parse_val:
// an int when it reads as an integer, else a float when it reads as one,
// else the string.
func ParseScalar(s string) any {
	if f, ok := pyParseFloat(s); ok {
		if i, ok := pyParseInt(s); ok && float64(i) == f {
			return i
		}
		return f
	}
	return s
}

// SecretKeys are config keys whose values are never shown (mlos_bench's
// sanitize_config list, plus a few more).
var SecretKeys = []string{"password", "secret", "token", "api_key", "key", "storageAccountKey", "sas_token", "access_key", "secret_key", "private_key", "passphrase"}

// IsSecretKey reports whether a config key holds a secret: it is one of
// SecretKeys or contains "password", "secret", "token" or ends in "_key".
func IsSecretKey(k string) bool {
	lk := strings.ToLower(k)
	for _, s := range SecretKeys {
		if lk == strings.ToLower(s) {
			return true
		}
	}
	return strings.Contains(lk, "password") || strings.Contains(lk, "secret") ||
		strings.Contains(lk, "token") || strings.HasSuffix(lk, "_key") || strings.HasSuffix(lk, "accountkey") ||
		strings.Contains(lk, "credential")
}

// Sanitize returns a copy of m with secret values replaced by "[REDACTED]",
// recursively.
func Sanitize(m map[string]any) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		switch {
		case IsSecretKey(k) && v != nil:
			out[k] = "[REDACTED]"
		default:
			if sub, ok := v.(map[string]any); ok {
				out[k] = Sanitize(sub)
			} else {
				out[k] = v
			}
		}
	}
	return out
}
