// Package decode turns the generic maps that configs become into typed
// structs, with errors that name the offending key.
package decode

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// Into decodes m into out (a pointer to a struct with json tags). Keys that
// out does not know are an error.
func Into(m map[string]any, out any) error {
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
