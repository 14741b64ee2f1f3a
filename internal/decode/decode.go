// Package decode turns the generic maps that configs become into typed
// structs, with errors that name the offending key.
package decode

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"
	"time"
)

// Into decodes m into out (a pointer to a struct with json tags). Keys that
// out does not know are an error. A value for a bool, integer or float
// field (at any depth: nested structs, maps, slices, pointers) is read by
// the converters' rule (Bool, Int, Float): "3" fills an int field, 3.0 too,
// "yes" a bool field, "2.5" a float field; fields with a decoder of their
// own (json.Unmarshaler, e.g. Duration) or the ",string" option get the
// value as it is.
func Into(m map[string]any, out any) error {
	if t := reflect.TypeOf(out); t != nil && t.Kind() == reflect.Pointer {
		if c, ok := coerce(m, t.Elem()).(map[string]any); ok {
			m = c
		}
	}
	data, err := json.Marshal(m)
	if err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(out); err != nil {
		var te *json.UnmarshalTypeError
		if ok := asType(err, &te); ok {
			return fmt.Errorf("config key %q: expected %s, got a JSON %s", te.Field, te.Type, te.Value)
		}
		msg := err.Error()
		if rest, ok := strings.CutPrefix(msg, "json: unknown field "); ok {
			return fmt.Errorf("unknown config key %s", rest)
		}
		return fmt.Errorf("config: %s", strings.TrimPrefix(msg, "json: "))
	}
	return nil
}

func asType(err error, target **json.UnmarshalTypeError) bool {
	te, ok := err.(*json.UnmarshalTypeError)
	if ok {
		*target = te
	}
	return ok
}

// Duration is a time span given in a config either as a number of seconds
// or as a Go duration string ("90s", "1h30m").
type Duration time.Duration

// UnmarshalJSON accepts a number of seconds or a duration string.
func (d *Duration) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		*d = 0
		return nil
	}
	if len(b) > 0 && b[0] == '"' {
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		v, err := DurationOf(s) // the shared rule: trimmed, "" is 0
		if err != nil {
			return err
		}
		*d = Duration(v)
		return nil
	}
	f, err := strconv.ParseFloat(string(b), 64)
	if err != nil {
		return fmt.Errorf("invalid duration %s: want seconds or a string like \"90s\"", b)
	}
	v, err := Seconds(f)
	if err != nil {
		return err
	}
	*d = Duration(v)
	return nil
}

// MarshalJSON writes the duration as a string.
func (d Duration) MarshalJSON() ([]byte, error) {
	return json.Marshal(time.Duration(d).String())
}

// Std returns the value as a time.Duration.
func (d Duration) Std() time.Duration { return time.Duration(d) }

// Seconds converts a non-negative number of seconds to a duration.
func Seconds(f float64) (time.Duration, error) {
	if f < 0 || math.IsNaN(f) || f > float64(math.MaxInt64)/float64(time.Second) {
		return 0, fmt.Errorf("invalid duration %v seconds", f)
	}
	return time.Duration(f * float64(time.Second)), nil
}

// ParseDuration accepts "90s", "1h30m" or a plain number of seconds.
func ParseDuration(s string) (time.Duration, error) {
	if f, err := strconv.ParseFloat(s, 64); err == nil {
		return Seconds(f)
	}
	v, err := time.ParseDuration(s)
	if err != nil || v < 0 {
		return 0, fmt.Errorf("invalid duration %q: want seconds or a string like \"90s\" or \"1h30m\"", s)
	}
	return v, nil
}

var unmarshalerType = reflect.TypeFor[json.Unmarshaler]()

// coerce returns v, to be decoded into a value of type t, with its
// scalars converted by the converters' rule where t wants a bool, an
// integer or a float; a value the rule does not read is left for the JSON
// decoder to refuse.
func coerce(v any, t reflect.Type) any {
	for {
		if v == nil || t.Implements(unmarshalerType) || reflect.PointerTo(t).Implements(unmarshalerType) {
			return v
		}
		if t.Kind() != reflect.Pointer {
			break
		}
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Bool:
		if b, ok := Bool(v); ok {
			return b
		}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		if n, ok := Int(v); ok {
			return n
		}
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		if n, ok := Int(v); ok && n >= 0 {
			return n
		}
	case reflect.Float32, reflect.Float64:
		if f, ok := Float(v); ok {
			return f
		}
	case reflect.Struct:
		if m, ok := v.(map[string]any); ok {
			return coerceFields(m, t)
		}
	case reflect.Map:
		if m, ok := v.(map[string]any); ok && t.Key().Kind() == reflect.String {
			out := make(map[string]any, len(m))
			for k, x := range m {
				out[k] = coerce(x, t.Elem())
			}
			return out
		}
	case reflect.Slice, reflect.Array:
		if s, ok := v.([]any); ok {
			out := make([]any, len(s))
			for i, x := range s {
				out[i] = coerce(x, t.Elem())
			}
			return out
		}
	}
	return v
}

// coerceFields is coerce for the keys of a struct: each value by its
// field's type, found as encoding/json finds it (the json tag's name or
// the field's, an exact match first, then any case; embedded structs'
// fields promoted).
func coerceFields(m map[string]any, t reflect.Type) map[string]any {
	fields := map[string]reflect.StructField{}
	jsonFields(t, fields)
	out := make(map[string]any, len(m))
	for k, v := range m {
		f, ok := fields[k]
		if !ok {
			for name, g := range fields {
				if strings.EqualFold(name, k) {
					f, ok = g, true
					break
				}
			}
		}
		if ok && !hasStringOption(f) {
			v = coerce(v, f.Type)
		}
		out[k] = v
	}
	return out
}

func jsonFields(t reflect.Type, into map[string]reflect.StructField) {
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		ft := f.Type
		if ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}
		if f.Anonymous && name == "" && ft.Kind() == reflect.Struct {
			jsonFields(ft, into)
			continue
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		if _, dup := into[name]; !dup {
			into[name] = f
		}
	}
}

func hasStringOption(f reflect.StructField) bool {
	_, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
	for _, o := range strings.Split(opts, ",") {
		if o == "string" {
			return true
		}
	}
	return false
}
