package configs

import (
	"fmt"
	"github.com/benchtune/bench/internal/pyfmt"
	"os"
	"strconv"
	"strings"
)

// Lookup finds the value of a template variable.
type Lookup func(name string) (any, bool)

// MapLookup looks names up in a map.
func MapLookup(m map[string]any) Lookup {
	return func(name string) (any, bool) {
		v, ok := m[name]
		return v, ok
	}
}

// EnvLookup looks names up in the process environment.
func EnvLookup(name string) (any, bool) { return os.LookupEnv(name) }

// Substitute expands $name and ${name} in s the way Python's
// string.Template.safe_substitute does (mlos_bench's templating): names are
// [_A-Za-z][_A-Za-z0-9]*, "$$" is a literal "$", unknown names and malformed
// placeholders are left as they are. Each lookup is tried in turn as a
// separate pass, as mlos_bench applies one safe_substitute per source.
func Substitute(s string, lookups ...Lookup) string {
	for _, lk := range lookups {
		if !strings.Contains(s, "$") {
			return s
		}
		s = substituteOnce(s, lk)
	}
	return s
}

func isIdentStart(c byte) bool {
	return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
}

func isIdentChar(c byte) bool { return isIdentStart(c) || (c >= '0' && c <= '9') }

func substituteOnce(s string, lookup Lookup) string {
	var b strings.Builder
	for i := 0; i < len(s); {
		c := s[i]
		if c != '$' || i+1 >= len(s) {
			b.WriteByte(c)
			i++
			continue
		}
		next := s[i+1]
		switch {
		case next == '$':
			// "$$" is an escaped "$": Python emits a single "$".
			b.WriteByte('$')
			i += 2
		case next == '{':
			end := i + 2
			for end < len(s) && isIdentChar(s[end]) {
				end++
			}
			if end > i+2 && isIdentStart(s[i+2]) && end < len(s) && s[end] == '}' {
				name := s[i+2 : end]
				if v, ok := lookup(name); ok {
					b.WriteString(PyStr(v))
				} else {
					b.WriteString(s[i : end+1])
				}
				i = end + 1
			} else {
				b.WriteByte('$')
				i++
			}
		case isIdentStart(next):
			end := i + 2
			for end < len(s) && isIdentChar(s[end]) {
				end++
			}
			name := s[i+1 : end]
			if v, ok := lookup(name); ok {
				b.WriteString(PyStr(v))
			} else {
				b.WriteString(s[i:end])
			}
			i = end
		default:
			b.WriteByte('$')
			i++
		}
	}
	return b.String()
}

// PyStr renders a config value as Python's str() would, so that templated
// strings read the same as under mlos_bench (True/False, None, 1.0, 1e-05).
func PyStr(v any) string {
	switch x := v.(type) {
	case nil:
		return "None"
	case string:
		return x
	case bool:
		if x {
			return "True"
		}
		return "False"
	case int:
		return strconv.Itoa(x)
	case int64:
		return strconv.FormatInt(x, 10)
	case float64:
		return PyFloat(x)
	case []any:
		parts := make([]string, len(x))
		for i, e := range x {
			parts[i] = pyRepr(e)
		}
		return "[" + strings.Join(parts, ", ") + "]"
	case []string:
		parts := make([]string, len(x))
		for i, e := range x {
			parts[i] = pyRepr(e)
		}
		return "[" + strings.Join(parts, ", ") + "]"
	}
	return fmt.Sprint(v)
}

func pyRepr(v any) string {
	if s, ok := v.(string); ok {
		return pyfmt.StrRepr(s)
	}
	return PyStr(v)
}

// PyFloat formats a float like Python's repr: the shortest text that reads
// back the same, always with a decimal point or exponent.
func PyFloat(f float64) string { return pyfmt.FloatRepr(f) }

// ExpandValue templates every string inside v (strings, and strings in
// arrays) with the lookups; other values are returned unchanged.
func ExpandValue(v any, lookups ...Lookup) any {
	switch x := v.(type) {
	case string:
		return Substitute(x, lookups...)
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = ExpandValue(e, lookups...)
		}
		return out
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = ExpandValue(e, lookups...)
		}
		return out
	}
	return v
}

// ExpandOrdered templates the values of an ordered map in place, in key
// order, with the map itself as the first source: a value may use keys
// expanded before it (chains like "b": "$a-vm" work), as mlos_bench's
// DictTemplater does. The extra lookups are tried after the map.
func ExpandOrdered(m *Ordered, extra ...Lookup) {
	self := func(name string) (any, bool) { return m.Get(name) }
	lookups := append([]Lookup{self}, extra...)
	for _, k := range m.Keys() {
		v, _ := m.Get(k)
		m.Set(k, ExpandValue(v, lookups...))
	}
}
