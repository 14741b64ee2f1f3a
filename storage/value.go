package storage

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"github.com/benchtune/bench/trial"
	"math"
	"slices"
	"strconv"
	"strings"
)

// FormatValue renders a result or telemetry value as the text stored in the
// database, the way mlos_bench stores them: numbers in decimal ("42", "0.5",
// "1e-07", "nan", "inf", "-inf"), booleans as "true"/"false", strings as
// they are. nil is stored as SQL NULL (null is true). Other types are an
// error.
func FormatValue(v any) (text string, null bool, err error) {
	switch x := v.(type) {
	case nil:
		return "", true, nil
	case string:
		return x, false, nil
	case bool:
		return strconv.FormatBool(x), false, nil
	case int:
		return strconv.FormatInt(int64(x), 10), false, nil
	case int8:
		return strconv.FormatInt(int64(x), 10), false, nil
	case int16:
		return strconv.FormatInt(int64(x), 10), false, nil
	case int32:
		return strconv.FormatInt(int64(x), 10), false, nil
	case int64:
		return strconv.FormatInt(x, 10), false, nil
	case uint:
		return strconv.FormatUint(uint64(x), 10), false, nil
	case uint8:
		return strconv.FormatUint(uint64(x), 10), false, nil
	case uint16:
		return strconv.FormatUint(uint64(x), 10), false, nil
	case uint32:
		return strconv.FormatUint(uint64(x), 10), false, nil
	case uint64:
		return strconv.FormatUint(x, 10), false, nil
	case float32:
		return formatFloat(float64(x), 32), false, nil
	case float64:
		return formatFloat(x, 64), false, nil
	case json.Number:
		if _, err := strconv.ParseFloat(string(x), 64); err != nil {
			return "", false, fmt.Errorf("%w: invalid number %q", ErrInvalid, string(x))
		}
		return string(x), false, nil
	}
	return "", false, fmt.Errorf("%w: unsupported value type %T (want a number, string, boolean or nil)", ErrInvalid, v)
}

func formatFloat(f float64, bits int) string {
	switch {
	case math.IsNaN(f):
		return "nan"
	case math.IsInf(f, 1):
		return "inf"
	case math.IsInf(f, -1):
		return "-inf"
	}
	if a := math.Abs(f); a == 0 || (a >= 1e-4 && a < 1e21) {
		return strconv.FormatFloat(f, 'f', -1, bits) // 8358467, not 8.358467e+06
	}
	return strconv.FormatFloat(f, 'g', -1, bits)
}

// ParseValue turns stored text back into a value: float64 when the text is
// a number (including "nan" and "inf"), the text itself otherwise, and nil
// for SQL NULL.
func ParseValue(text string, null bool) any {
	if null {
		return nil
	}
	if f, ok := parseNumber(text); ok {
		return f
	}
	return text
}

func parseNumber(text string) (float64, bool) {
	t := strings.TrimSpace(text)
	if t == "" {
		return 0, false
	}
	// ParseFloat also takes hexadecimal and underscore forms; results are
	// decimal, so only accept what starts like a decimal number or a
	// spelled-out nan/inf.
	c := t[0]
	if c == '+' || c == '-' {
		if len(t) == 1 {
			return 0, false
		}
		c = t[1]
	}
	if !(c >= '0' && c <= '9' || c == '.' || c == 'i' || c == 'I' || c == 'n' || c == 'N') {
		return 0, false
	}
	if strings.ContainsAny(t, "_xX") {
		return 0, false
	}
	f, err := strconv.ParseFloat(t, 64)
	if err != nil {
		return 0, false
	}
	return f, true
}

// Metrics are a trial's results: float64 for numeric values, string for
// the others, nil for values stored as NULL.
type Metrics map[string]any

// Float returns the metric as a number, and whether it is one.
func (m Metrics) Float(name string) (float64, bool) {
	switch v := m[name].(type) {
	case float64:
		return v, true
	case string:
		return parseNumber(v)
	}
	return 0, false
}

// Text returns the metric as text ("" for a missing or NULL metric).
func (m Metrics) Text(name string) string {
	switch v := m[name].(type) {
	case nil:
		return ""
	case float64:
		return formatFloat(v, 64)
	case string:
		return v
	default:
		s, _, err := FormatValue(v)
		if err != nil {
			return fmt.Sprint(v)
		}
		return s
	}
}

// Names returns the metric names, sorted.
func (m Metrics) Names() []string {
	names := make([]string, 0, len(m))
	for k := range m {
		names = append(names, k)
	}
	slices.Sort(names)
	return names
}

// MarshalJSON writes numbers as JSON numbers, and NaN and infinities (which
// JSON cannot hold) as the strings "nan", "inf" and "-inf".
func (m Metrics) MarshalJSON() ([]byte, error) {
	if m == nil {
		return []byte("null"), nil
	}
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = jsonSafe(v)
	}
	return json.Marshal(out)
}

func jsonSafe(v any) any {
	switch x := v.(type) {
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return formatFloat(x, 64)
		}
	case float32:
		f := float64(x)
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return formatFloat(f, 64)
		}
	}
	return v
}

// HashParams is the configuration hash NewTrial uses when TrialSpec has
// none: the SHA-256 (hex) of the parameters sorted by name.
func HashParams(params map[string]string) string {
	names := make([]string, 0, len(params))
	for k := range params {
		names = append(names, k)
	}
	slices.Sort(names)
	h := sha256.New()
	h.Write([]byte("bench-params-v1\n"))
	for _, k := range names {
		fmt.Fprintf(h, "%q=%q\n", k, params[k])
	}
	return hex.EncodeToString(h.Sum(nil))
}

// Best returns the best finished trial of trials by the objectives: the
// one rule for "which trial is best" (trial.Objectives.Scores, then
// trial.BetterTrial: on a tie, the lowest trial id), used by the scheduler's progress, the run summary and
// `bench results`. Trials that did not succeed, or whose results lack a
// numeric target, are skipped; ok is false when none is left. scores are
// to minimize (max targets negated).
func Best(trials []Trial, objectives trial.Objectives) (best Trial, scores []float64, ok bool) {
	for _, t := range trials {
		if !t.Finished() || t.Status != trial.SUCCEEDED || trial.LowFidelity(t.Metadata) {
			continue // a lower-fidelity result (multi-fidelity) is never the answer
		}
		sc, err := objectives.Scores(t.Status, t.Results)
		if err != nil {
			continue
		}
		if !ok || trial.BetterTrial(sc, t.ID, scores, best.ID) {
			best, scores, ok = t, sc, true
		}
	}
	return best, scores, ok
}
