package decode

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/benchtune/bench/trial"
)

// The config value converters: the one rule by which every package that
// decodes configs reads a bool, an int, a float or a duration from a
// decoded JSON value (int64 for integers, float64, string, bool, nil) or
// from a string (globals given on the command line or in an env file are
// strings):
//
//   - strings are trimmed first; "3" reads as the number 3 wherever a
//     number is wanted, and "3.5" wherever a float is;
//   - booleans are mlos_bench's strtobool words, in any case: y, yes, t,
//     true, on, 1 and n, no, f, false, off, 0; a number is true when it
//     is not 0 (Python's bool());
//   - an integer is an integral number (7, 7.0) or a string of one ("7");
//     "7.5" and 7.5 are not integers;
//   - a duration is a number of seconds (90, 1.5, "90") or a Go duration
//     string ("90s", "1h30m"); nil and "" are 0; negative is an error.
//
// Each returns ok false (or an error) for a value of another kind; the
// caller words the error with the config key and its location.

// Bool reads a boolean config value.
func Bool(v any) (b, ok bool) {
	switch x := v.(type) {
	case bool:
		return x, true
	case int64:
		return x != 0, true
	case int:
		return x != 0, true
	case float64:
		if math.IsNaN(x) {
			return false, false
		}
		return x != 0, true
	case string:
		switch strings.ToLower(strings.TrimSpace(x)) {
		case "y", "yes", "t", "true", "on", "1":
			return true, true
		case "n", "no", "f", "false", "off", "0":
			return false, true
		}
	}
	return false, false
}

// Int reads an integer config value.
func Int(v any) (int64, bool) {
	switch x := v.(type) {
	case int64:
		return x, true
	case int:
		return int64(x), true
	case float64:
		if x == math.Trunc(x) && math.Abs(x) < 1<<53 {
			return int64(x), true
		}
	case string:
		t := strings.TrimSpace(x)
		if n, err := strconv.ParseInt(t, 10, 64); err == nil {
			return n, true
		}
		if f, err := strconv.ParseFloat(t, 64); err == nil && f == math.Trunc(f) && math.Abs(f) < 1<<53 {
			return int64(f), true
		}
	}
	return 0, false
}

// Float reads a number config value (NaN is not a number here): the
// same rule as a result value's (trial.Numeric).
func Float(v any) (float64, bool) { return trial.Numeric(v) }

// DurationOf reads a duration config value: seconds or a duration string.
func DurationOf(v any) (time.Duration, error) {
	switch x := v.(type) {
	case nil:
		return 0, nil
	case int64:
		return Seconds(float64(x))
	case int:
		return Seconds(float64(x))
	case float64:
		return Seconds(x)
	case string:
		t := strings.TrimSpace(x)
		if t == "" {
			return 0, nil
		}
		return ParseDuration(t)
	}
	return 0, fmt.Errorf("want seconds or a duration like \"90s\", got %v", v)
}
