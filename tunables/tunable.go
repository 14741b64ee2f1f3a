// Package tunables holds the parameters a benchmark tunes: Tunable (one
// parameter: its definition and current value), CovariantGroup (tunables
// that change together at a common cost) and Groups (an ordered collection
// of covariant groups), parsed from mlos_bench tunable-params documents and
// assigned from tunable-values documents. It also provides the canonical
// text and hash that identify a configuration, and the normalized search
// space (Space) that optimizers work in.
//
// Semantics follow mlos_bench's tunables package: the same validity rules,
// the same str() conversions of values and the same canonical string, so
// that config hashes are identical.
//
// Groups, CovariantGroup and Tunable are not safe for concurrent mutation;
// give each goroutine its own Groups.Copy(). A Space is immutable and safe
// for concurrent use.
package tunables

import (
	"encoding/json"
	"errors"
	"fmt"
	"github.com/benchtune/bench/internal/pyfmt"
	"maps"
	"math"
	"math/big"
	"slices"
	"strconv"
	"strings"
)

// Type is the type of a tunable.
type Type string

// Tunable types.
const (
	Int         Type = "int"
	Float       Type = "float"
	Categorical Type = "categorical"
)

// DistributionType names the prior distribution of a numeric tunable.
type DistributionType string

// Distribution types.
const (
	Uniform DistributionType = "uniform"
	Normal  DistributionType = "normal"
	Beta    DistributionType = "beta"
)

// Distribution is the prior used when sampling a numeric tunable's range.
type Distribution struct {
	Type DistributionType
	// Normal: mean and standard deviation, in the tunable's units (for log
	// tunables Sigma is the standard deviation of the natural log).
	Mu, Sigma float64
	// Beta: shape parameters of a beta distribution over the unit
	// coordinate of the range.
	Alpha, Beta float64
}

// Def is the definition of a tunable built in code; ParseParams builds the
// same from a config document. Numbers may be given as any Go integer or
// float type or as json.Number (an integral json.Number counts as a Python
// int, which only matters for how the range is printed in the canonical
// string).
type Def struct {
	Type        Type
	Description string
	// Default is required: an integer for Int, a number for Float, a string,
	// number or bool for Categorical (converted to text as Python's str()
	// does: true -> "True", 1.0 -> "1.0").
	Default any

	// Categorical only.
	Values        []any
	ValuesWeights []float64

	// Int and Float only.
	Range            []any // exactly two numbers, lo < hi
	Special          []any // numbers, may lie outside the range
	SpecialWeights   []float64
	RangeWeight      *float64
	QuantizationBins int // 0: not quantized; otherwise > 1
	Log              bool
	Distribution     *Distribution

	// Meta is free-form flat metadata: strings, numbers, bools, nil, or
	// arrays of those.
	Meta map[string]any
}

// number is a numeric literal from a definition: its value and the text
// Python prints for it (an int literal prints as an int even in a float
// tunable's range).
type number struct {
	f     float64
	i     int64 // f as an int64 when isInt (and fits)
	isInt bool  // a Python int
	fits  bool  // i is exact
	text  string
}

// definition is the immutable part of a tunable, shared between copies.
type definition struct {
	name        string
	typ         Type
	description string

	defInt   int64
	defFloat float64
	defStr   string

	values        []string
	valuesWeights []float64

	lo, hi         number
	loI, hiI       int64 // int tunables
	specialInt     []int64
	specialFloat   []float64
	specialWeights []float64
	rangeWeight    *float64
	bins           int
	log            bool
	dist           *Distribution

	meta map[string]any
}

// Tunable is one tunable parameter: its definition and current value.
type Tunable struct {
	def   *definition
	i     int64
	f     float64
	s     string
	group *CovariantGroup
}

// fieldError is a definition problem located at a field of the tunable
// (path of JSON keys / indexes below the tunable's object).
type fieldError struct {
	path []string
	msg  string
}

func (e *fieldError) Error() string {
	if len(e.path) == 0 {
		return e.msg
	}
	return strings.Join(e.path, ".") + ": " + e.msg
}

func ferr(path []string, format string, args ...any) *fieldError {
	return &fieldError{path: path, msg: fmt.Sprintf(format, args...)}
}

// NewTunable validates a definition and returns a tunable set to its
// default value.
func NewTunable(name string, d Def) (*Tunable, error) {
	def, fe := buildDefinition(name, d)
	if fe != nil {
		return nil, fmt.Errorf("tunable %q: %w", name, fe)
	}
	return newFromDef(def), nil
}

func newFromDef(def *definition) *Tunable {
	t := &Tunable{def: def}
	t.i, t.f, t.s = def.defInt, def.defFloat, def.defStr
	return t
}

func checkName(name string) error {
	if name == "" {
		return errors.New("tunable name must not be empty")
	}
	if strings.Contains(name, "!") {
		return fmt.Errorf("tunable name %q must not contain '!' (reserved for the special-value dimension %q)", name, name+"!special")
	}
	return nil
}

// toNumber converts a Go or JSON number.
func toNumber(v any) (number, bool) {
	switch x := v.(type) {
	case int:
		return intNumber(int64(x)), true
	case int8:
		return intNumber(int64(x)), true
	case int16:
		return intNumber(int64(x)), true
	case int32:
		return intNumber(int64(x)), true
	case int64:
		return intNumber(x), true
	case uint:
		return uintNumber(uint64(x)), true
	case uint8:
		return uintNumber(uint64(x)), true
	case uint16:
		return uintNumber(uint64(x)), true
	case uint32:
		return uintNumber(uint64(x)), true
	case uint64:
		return uintNumber(x), true
	case float32:
		return floatNumber(float64(x)), true
	case float64:
		return floatNumber(x), true
	case json.Number:
		s := strings.TrimSpace(string(x))
		if pyfmt.IsIntLiteral(s) {
			text, ok := pyfmt.IntLiteralText(s)
			if !ok {
				return number{}, false
			}
			bf, _, err := big.ParseFloat(text, 10, 64, big.ToNearestEven)
			if err != nil {
				return number{}, false
			}
			f, _ := bf.Float64()
			n := number{f: f, isInt: true, text: text}
			if i, err := strconv.ParseInt(text, 10, 64); err == nil {
				n.i, n.fits = i, true
			}
			return n, true
		}
		f, err := pyfmt.ParseFloat(s)
		if err != nil {
			return number{}, false
		}
		return floatNumber(f), true
	}
	return number{}, false
}

func intNumber(i int64) number {
	return number{f: float64(i), i: i, isInt: true, fits: true, text: strconv.FormatInt(i, 10)}
}

func uintNumber(u uint64) number {
	if u <= math.MaxInt64 {
		return intNumber(int64(u))
	}
	return number{f: float64(u), isInt: true, text: strconv.FormatUint(u, 10)}
}

func floatNumber(f float64) number {
	return number{f: f, text: pyfmt.FloatRepr(f)}
}

// asInt64 returns the number as an int64 if it is integral and fits.
func (n number) asInt64() (int64, bool) {
	if n.isInt {
		return n.i, n.fits
	}
	if math.IsNaN(n.f) || math.IsInf(n.f, 0) || n.f != math.Trunc(n.f) {
		return 0, false
	}
	if n.f < -(1<<63) || n.f >= 1<<63 {
		return 0, false
	}
	return int64(n.f), true
}

// pyStr converts a categorical value as Python's str() does.
func pyStr(v any) (string, bool) {
	switch x := v.(type) {
	case string:
		return x, true
	case bool:
		return pyfmt.Bool(x), true
	}
	if n, ok := toNumber(v); ok {
		return n.text, true
	}
	return "", false
}

func checkWeights(path string, ws []float64) *fieldError {
	for i, w := range ws {
		if math.IsNaN(w) || math.IsInf(w, 0) || w < 0 {
			return ferr([]string{path, strconv.Itoa(i)}, "weights must be finite and non-negative, got %s", pyfmt.FloatRepr(w))
		}
	}
	return nil
}

func sum(ws []float64) float64 {
	t := 0.0
	for _, w := range ws {
		t += w
	}
	return t
}

func buildDefinition(name string, d Def) (*definition, *fieldError) {
	if err := checkName(name); err != nil {
		return nil, ferr(nil, "%s", err.Error())
	}
	def := &definition{name: name, typ: d.Type, description: d.Description}
	if d.Default == nil {
		return nil, ferr([]string{"default"}, "a default value is required")
	}
	if fe := checkMeta(d.Meta); fe != nil {
		return nil, fe
	}
	def.meta = copyMeta(d.Meta)
	switch d.Type {
	case Categorical:
		if fe := buildCategorical(def, d); fe != nil {
			return nil, fe
		}
	case Int, Float:
		if fe := buildNumeric(def, d); fe != nil {
			return nil, fe
		}
	case "":
		return nil, ferr([]string{"type"}, "a type is required (one of int, float, categorical)")
	default:
		return nil, ferr([]string{"type"}, "unknown tunable type %q (want int, float or categorical)", string(d.Type))
	}
	return def, nil
}

func buildCategorical(def *definition, d Def) *fieldError {
	switch {
	case d.Range != nil:
		return ferr([]string{"range"}, "a categorical tunable cannot have a range")
	case d.Special != nil:
		return ferr([]string{"special"}, "a categorical tunable cannot have special values")
	case d.SpecialWeights != nil:
		return ferr([]string{"special_weights"}, "a categorical tunable cannot have special_weights")
	case d.RangeWeight != nil:
		return ferr([]string{"range_weight"}, "a categorical tunable cannot have range_weight")
	case d.QuantizationBins != 0:
		return ferr([]string{"quantization_bins"}, "a categorical tunable cannot be quantized")
	case d.Log:
		return ferr([]string{"log"}, "a categorical tunable cannot have a log scale")
	case d.Distribution != nil:
		return ferr([]string{"distribution"}, "a categorical tunable cannot have a distribution")
	}
	if len(d.Values) == 0 {
		return ferr([]string{"values"}, "a categorical tunable needs a non-empty list of values")
	}
	seen := map[string]int{}
	nums := map[float64]int{}
	for i, v := range d.Values {
		s, ok := pyStr(v)
		if !ok {
			return ferr([]string{"values", strconv.Itoa(i)}, "categorical values must be strings, numbers or booleans, got %T", v)
		}
		if j, dup := seen[s]; dup {
			return ferr([]string{"values", strconv.Itoa(i)}, "values must be unique: %s repeats value %d", pyfmt.StrRepr(s), j)
		}
		if n, isNum := toNumber(v); isNum {
			if j, dup := nums[n.f]; dup {
				return ferr([]string{"values", strconv.Itoa(i)}, "values must be unique: %s equals value %d", n.text, j)
			}
			nums[n.f] = i
		}
		seen[s] = i
		def.values = append(def.values, s)
	}
	if d.ValuesWeights != nil {
		if len(d.ValuesWeights) != len(d.Values) {
			return ferr([]string{"values_weights"}, "%d weights for %d values: give one weight per value", len(d.ValuesWeights), len(d.Values))
		}
		if fe := checkWeights("values_weights", d.ValuesWeights); fe != nil {
			return fe
		}
		if sum(d.ValuesWeights) <= 0 {
			return ferr([]string{"values_weights"}, "weights must not all be zero")
		}
		def.valuesWeights = slices.Clone(d.ValuesWeights)
	}
	s, ok := pyStr(d.Default)
	if !ok {
		return ferr([]string{"default"}, "the default of a categorical tunable must be a string, number or boolean, got %T", d.Default)
	}
	if !slices.Contains(def.values, s) {
		return ferr([]string{"default"}, "default %s is not one of the values %s", pyfmt.StrRepr(s), pyfmt.ListRepr(def.values))
	}
	def.defStr = s
	return nil
}

func buildNumeric(def *definition, d Def) *fieldError {
	isInt := d.Type == Int
	switch {
	case d.Values != nil:
		return ferr([]string{"values"}, "a numeric tunable cannot have values (use range)")
	case d.ValuesWeights != nil:
		return ferr([]string{"values_weights"}, "a numeric tunable cannot have values_weights (use special_weights and range_weight)")
	}
	if d.Range == nil {
		return ferr([]string{"range"}, "a numeric tunable needs a range [lo, hi]")
	}
	if len(d.Range) != 2 {
		return ferr([]string{"range"}, "range must have exactly two elements [lo, hi], got %d", len(d.Range))
	}
	var bounds [2]number
	for i, v := range d.Range {
		n, ok := toNumber(v)
		if !ok {
			return ferr([]string{"range", strconv.Itoa(i)}, "range bounds must be numbers, got %T", v)
		}
		if math.IsNaN(n.f) || math.IsInf(n.f, 0) {
			return ferr([]string{"range", strconv.Itoa(i)}, "range bounds must be finite, got %s", n.text)
		}
		if isInt {
			if _, ok := n.asInt64(); !ok {
				return ferr([]string{"range", strconv.Itoa(i)}, "the range of an int tunable must hold 64-bit integers, got %s", n.text)
			}
		}
		bounds[i] = n
	}
	def.lo, def.hi = bounds[0], bounds[1]
	if isInt {
		def.loI, _ = def.lo.asInt64()
		def.hiI, _ = def.hi.asInt64()
		if def.loI >= def.hiI {
			return ferr([]string{"range"}, "range [%s, %s] is empty: lo must be less than hi", def.lo.text, def.hi.text)
		}
	} else if !(def.lo.f < def.hi.f) {
		return ferr([]string{"range"}, "range [%s, %s] is empty: lo must be less than hi", def.lo.text, def.hi.text)
	}

	if d.Special != nil {
		seenInt := map[int64]bool{}
		seenFloat := map[float64]bool{}
		if len(d.Special) == 0 {
			return ferr([]string{"special"}, "special must list at least one value when present")
		}
		for i, v := range d.Special {
			p := []string{"special", strconv.Itoa(i)}
			n, ok := toNumber(v)
			if !ok {
				return ferr(p, "special values of a numeric tunable must be numbers, got %T (such a value could never be assigned)", v)
			}
			if math.IsNaN(n.f) {
				return ferr(p, "a special value cannot be NaN")
			}
			if isInt {
				iv, ok := n.asInt64()
				if !ok {
					return ferr(p, "special values of an int tunable must be 64-bit integers, got %s", n.text)
				}
				if seenInt[iv] {
					return ferr(p, "special values must be unique: %d repeats", iv)
				}
				seenInt[iv] = true
				def.specialInt = append(def.specialInt, iv)
			} else {
				if seenFloat[n.f] {
					return ferr(p, "special values must be unique: %s repeats", pyfmt.FloatRepr(n.f))
				}
				seenFloat[n.f] = true
				def.specialFloat = append(def.specialFloat, n.f)
			}
		}
	}
	nSpecial := len(d.Special)
	switch {
	case d.SpecialWeights != nil && d.RangeWeight == nil:
		return ferr([]string{"special_weights"}, "special_weights also needs range_weight (give both or neither)")
	case d.SpecialWeights == nil && d.RangeWeight != nil:
		return ferr([]string{"range_weight"}, "range_weight also needs special_weights (give both or neither)")
	case d.SpecialWeights != nil:
		if nSpecial == 0 {
			return ferr([]string{"special_weights"}, "special_weights given without special values")
		}
		if len(d.SpecialWeights) != nSpecial {
			return ferr([]string{"special_weights"}, "%d weights for %d special values: give one weight per special value", len(d.SpecialWeights), nSpecial)
		}
		if fe := checkWeights("special_weights", d.SpecialWeights); fe != nil {
			return fe
		}
		rw := *d.RangeWeight
		if math.IsNaN(rw) || math.IsInf(rw, 0) || rw < 0 {
			return ferr([]string{"range_weight"}, "range_weight must be finite and non-negative, got %s", pyfmt.FloatRepr(rw))
		}
		if sum(d.SpecialWeights)+rw <= 0 {
			return ferr([]string{"special_weights"}, "special_weights and range_weight must not all be zero")
		}
		def.specialWeights = slices.Clone(d.SpecialWeights)
		def.rangeWeight = &rw
	}

	if d.QuantizationBins != 0 {
		if d.QuantizationBins < 2 {
			return ferr([]string{"quantization_bins"}, "quantization_bins must be greater than 1, got %d", d.QuantizationBins)
		}
		if d.QuantizationBins > math.MaxInt32 {
			return ferr([]string{"quantization_bins"}, "quantization_bins %d is too large (at most %d)", d.QuantizationBins, math.MaxInt32)
		}
		def.bins = d.QuantizationBins
	}
	def.log = d.Log

	if d.Distribution != nil {
		dist := *d.Distribution
		p := []string{"distribution", "params"}
		bad := func(x float64) bool { return math.IsNaN(x) || math.IsInf(x, 0) }
		switch dist.Type {
		case Uniform:
			dist = Distribution{Type: Uniform}
		case Normal:
			if bad(dist.Mu) {
				return ferr(append(p, "mu"), "mu must be a finite number")
			}
			if bad(dist.Sigma) || dist.Sigma <= 0 {
				return ferr(append(p, "sigma"), "sigma must be a finite number greater than 0, got %s", pyfmt.FloatRepr(dist.Sigma))
			}
			dist.Alpha, dist.Beta = 0, 0
		case Beta:
			if bad(dist.Alpha) || dist.Alpha <= 0 {
				return ferr(append(p, "alpha"), "alpha must be a finite number greater than 0, got %s", pyfmt.FloatRepr(dist.Alpha))
			}
			if bad(dist.Beta) || dist.Beta <= 0 {
				return ferr(append(p, "beta"), "beta must be a finite number greater than 0, got %s", pyfmt.FloatRepr(dist.Beta))
			}
			dist.Mu, dist.Sigma = 0, 0
		default:
			return ferr([]string{"distribution", "type"}, "unknown distribution %q (want uniform, normal or beta)", string(dist.Type))
		}
		def.dist = &dist
	}

	n, ok := toNumber(d.Default)
	if !ok {
		return ferr([]string{"default"}, "the default of a numeric tunable must be a number, got %T", d.Default)
	}
	if isInt {
		iv, ok := n.asInt64()
		if !ok {
			return ferr([]string{"default"}, "the default of an int tunable must be an integer, got %s", n.text)
		}
		def.defInt = iv
	} else {
		def.defFloat = n.f
	}
	if err := def.checkValid(def.defInt, def.defFloat); err != "" {
		return ferr([]string{"default"}, "invalid default: %s", err)
	}
	return nil
}

// checkValid tells why a (coerced) numeric value is not valid, or "".
func (d *definition) checkValid(i int64, f float64) string {
	switch d.typ {
	case Int:
		if (i >= d.loI && i <= d.hiI) || slices.Contains(d.specialInt, i) {
			return ""
		}
		return fmt.Sprintf("%d is outside the range [%s, %s]%s", i, d.lo.text, d.hi.text, d.specialsText())
	case Float:
		if (f >= d.lo.f && f <= d.hi.f) || slices.Contains(d.specialFloat, f) {
			return ""
		}
		return fmt.Sprintf("%s is outside the range [%s, %s]%s", pyfmt.FloatRepr(f), d.lo.text, d.hi.text, d.specialsText())
	}
	return ""
}

func (d *definition) specialsText() string {
	var parts []string
	for _, v := range d.specialInt {
		parts = append(parts, strconv.FormatInt(v, 10))
	}
	for _, v := range d.specialFloat {
		parts = append(parts, pyfmt.FloatRepr(v))
	}
	if len(parts) == 0 {
		return ""
	}
	return " and not a special value [" + strings.Join(parts, ", ") + "]"
}

func checkMeta(meta map[string]any) *fieldError {
	for _, k := range slices.Sorted(maps.Keys(meta)) {
		v := meta[k]
		if arr, ok := v.([]any); ok {
			for i, e := range arr {
				if !isMetaScalar(e) {
					return ferr([]string{"meta", k, strconv.Itoa(i)}, "meta array items must be strings, numbers, booleans or null, got %T", e)
				}
			}
			continue
		}
		if !isMetaScalar(v) {
			return ferr([]string{"meta", k}, "meta values must be strings, numbers, booleans, null or arrays of those, got %T", v)
		}
	}
	return nil
}

func isMetaScalar(v any) bool {
	if v == nil {
		return true
	}
	switch v.(type) {
	case string, bool:
		return true
	}
	_, ok := toNumber(v)
	return ok
}

func copyMeta(m map[string]any) map[string]any {
	if m == nil {
		return nil
	}
	out := make(map[string]any, len(m))
	for k, v := range m {
		if arr, ok := v.([]any); ok {
			v = slices.Clone(arr)
		}
		out[k] = v
	}
	return out
}

// Name returns the tunable's name.
func (t *Tunable) Name() string { return t.def.name }

// Type returns the tunable's type.
func (t *Tunable) Type() Type { return t.def.typ }

// Description returns the tunable's description ("" when none).
func (t *Tunable) Description() string { return t.def.description }

// Group returns the covariant group the tunable belongs to (nil if none).
func (t *Tunable) Group() *CovariantGroup { return t.group }

// Default returns the default value: int64, float64 or string.
func (t *Tunable) Default() any {
	switch t.def.typ {
	case Int:
		return t.def.defInt
	case Float:
		return t.def.defFloat
	}
	return t.def.defStr
}

// Values returns the categories of a categorical tunable (nil otherwise),
// as text.
func (t *Tunable) Values() []string { return slices.Clone(t.def.values) }

// ValuesWeights returns the sampling weights of the categories (nil when
// not given).
func (t *Tunable) ValuesWeights() []float64 { return slices.Clone(t.def.valuesWeights) }

// Range returns the bounds of a numeric tunable (zeros for categorical).
func (t *Tunable) Range() (lo, hi float64) { return t.def.lo.f, t.def.hi.f }

// IntRange returns the exact bounds of an int tunable.
func (t *Tunable) IntRange() (lo, hi int64) { return t.def.loI, t.def.hiI }

// Special returns the special values (int64 or float64).
func (t *Tunable) Special() []any {
	var out []any
	for _, v := range t.def.specialInt {
		out = append(out, v)
	}
	for _, v := range t.def.specialFloat {
		out = append(out, v)
	}
	return out
}

// SpecialWeights returns the sampling weights of the special values and of
// the range; ok is false when they were not given.
func (t *Tunable) SpecialWeights() (special []float64, rangeWeight float64, ok bool) {
	if t.def.rangeWeight == nil {
		return nil, 0, false
	}
	return slices.Clone(t.def.specialWeights), *t.def.rangeWeight, true
}

// QuantizationBins returns the number of quantization bins (0 = none).
func (t *Tunable) QuantizationBins() int { return t.def.bins }

// IsLog tells whether the range is searched on a log scale.
func (t *Tunable) IsLog() bool { return t.def.log }

// Distribution returns the sampling prior, if one was given.
func (t *Tunable) Distribution() (Distribution, bool) {
	if t.def.dist == nil {
		return Distribution{}, false
	}
	return *t.def.dist, true
}

// Meta returns a copy of the tunable's metadata.
func (t *Tunable) Meta() map[string]any { return copyMeta(t.def.meta) }

// Def returns the tunable's definition; NewTunable(t.Name(), t.Def())
// builds an equal tunable.
func (t *Tunable) Def() Def {
	d := t.def
	out := Def{Type: d.typ, Description: d.description, Default: t.Default(), Meta: copyMeta(d.meta)}
	if d.typ == Categorical {
		for _, v := range d.values {
			out.Values = append(out.Values, v)
		}
		out.ValuesWeights = slices.Clone(d.valuesWeights)
		return out
	}
	out.Range = []any{json.Number(d.lo.text), json.Number(d.hi.text)}
	out.Special = t.Special()
	out.SpecialWeights = slices.Clone(d.specialWeights)
	if d.rangeWeight != nil {
		rw := *d.rangeWeight
		out.RangeWeight = &rw
	}
	out.QuantizationBins = d.bins
	out.Log = d.log
	if d.dist != nil {
		dist := *d.dist
		out.Distribution = &dist
	}
	return out
}

// Value returns the current value: int64, float64 or string.
func (t *Tunable) Value() any {
	switch t.def.typ {
	case Int:
		return t.i
	case Float:
		return t.f
	}
	return t.s
}

// Int returns the current value of an int tunable (a float tunable's value
// truncated toward zero; 0 for categorical ones).
func (t *Tunable) Int() int64 {
	switch t.def.typ {
	case Int:
		return t.i
	case Float:
		if n, ok := floatNumber(math.Trunc(t.f)).asInt64(); ok {
			return n
		}
	}
	return 0
}

// Float returns the current value of a numeric tunable as a float64 (0 for
// categorical ones).
func (t *Tunable) Float() float64 {
	switch t.def.typ {
	case Int:
		return float64(t.i)
	case Float:
		return t.f
	}
	return 0
}

// String returns the canonical text of the current value, as Python's
// str() prints it ("5", "0.5", "1e-05", "True"): the form storage keeps.
func (t *Tunable) String() string { return t.def.text(t.i, t.f, t.s) }

func (d *definition) text(i int64, f float64, s string) string {
	switch d.typ {
	case Int:
		return strconv.FormatInt(i, 10)
	case Float:
		return pyfmt.FloatRepr(f)
	}
	return s
}

// IsDefault tells whether the current value is the default.
func (t *Tunable) IsDefault() bool {
	return t.i == t.def.defInt && t.f == t.def.defFloat && t.s == t.def.defStr
}

// IsSpecial tells whether the current value is one of the special values.
func (t *Tunable) IsSpecial() bool {
	switch t.def.typ {
	case Int:
		return slices.Contains(t.def.specialInt, t.i)
	case Float:
		return slices.Contains(t.def.specialFloat, t.f)
	}
	return false
}

// InRange tells whether the current value lies in the range (special
// values outside it do not).
func (t *Tunable) InRange() bool {
	switch t.def.typ {
	case Int:
		return t.i >= t.def.loI && t.i <= t.def.hiI
	case Float:
		return t.f >= t.def.lo.f && t.f <= t.def.hi.f
	}
	return false
}

// Coerce converts v to the tunable's type the way mlos_bench does (Python
// int()/float()/str() conversions) and checks that the result is a valid
// value, without assigning it. It returns int64, float64 or string.
func (t *Tunable) Coerce(v any) (any, error) {
	i, f, s, err := t.def.coerce(v)
	if err != nil {
		return nil, err
	}
	switch t.def.typ {
	case Int:
		return i, nil
	case Float:
		return f, nil
	}
	return s, nil
}

// Set assigns a value: int, int64 and the other integer types, float64,
// string, bool or json.Number, converted as mlos_bench does (a string "5"
// sets an int tunable to 5, true sets a categorical one to "True"). A
// non-integral number for an int tunable, a value outside the range that is
// not special, or an unknown category is an error and leaves the value
// unchanged. Changing the value marks the tunable's group as updated.
func (t *Tunable) Set(v any) error {
	i, f, s, err := t.def.coerce(v)
	if err != nil {
		return err
	}
	t.assign(i, f, s)
	return nil
}

func (t *Tunable) assign(i int64, f float64, s string) bool {
	changed := t.i != i || t.f != f || t.s != s
	t.i, t.f, t.s = i, f, s
	if changed && t.group != nil {
		t.group.updated = true
	}
	return changed
}

func (d *definition) coerce(v any) (int64, float64, string, error) {
	fail := func(format string, args ...any) (int64, float64, string, error) {
		return 0, 0, "", fmt.Errorf("tunable %q: %s", d.name, fmt.Sprintf(format, args...))
	}
	if v == nil {
		return fail("a value is required, got null")
	}
	switch d.typ {
	case Categorical:
		s, ok := pyStr(v)
		if !ok {
			return fail("cannot use %T as a categorical value", v)
		}
		if !slices.Contains(d.values, s) {
			return fail("%s is not one of the values %s", pyfmt.StrRepr(s), pyfmt.ListRepr(d.values))
		}
		return 0, 0, s, nil
	case Int:
		var n number
		switch x := v.(type) {
		case bool:
			n = intNumber(0)
			if x {
				n = intNumber(1)
			}
		case string:
			i, err := pyfmt.ParseInt(x)
			if err != nil {
				return fail("cannot convert %s to an int: %v", pyfmt.StrRepr(x), err)
			}
			n = intNumber(i)
		default:
			var ok bool
			if n, ok = toNumber(v); !ok {
				return fail("cannot use %T as an int value", v)
			}
		}
		if !n.isInt && (math.IsNaN(n.f) || math.IsInf(n.f, 0)) {
			return fail("cannot convert %s to an int", n.text)
		}
		if !n.isInt && n.f != math.Trunc(n.f) {
			return fail("loss of precision: %s is not an integer", n.text)
		}
		i, ok := n.asInt64()
		if !ok {
			return fail("%s is outside the range [%s, %s]%s", n.text, d.lo.text, d.hi.text, d.specialsText())
		}
		if why := d.checkValid(i, 0); why != "" {
			return fail("%s", why)
		}
		return i, 0, "", nil
	case Float:
		var f float64
		switch x := v.(type) {
		case bool:
			if x {
				f = 1
			}
		case string:
			var err error
			if f, err = pyfmt.ParseFloat(x); err != nil {
				return fail("cannot convert %s to a float", pyfmt.StrRepr(x))
			}
		default:
			n, ok := toNumber(v)
			if !ok {
				return fail("cannot use %T as a float value", v)
			}
			f = n.f
		}
		if why := d.checkValid(0, f); why != "" {
			return fail("%s", why)
		}
		return 0, f, "", nil
	}
	return fail("unknown type %q", string(d.typ))
}

// repr is the tunable's part of the canonical string, as mlos_bench's
// Tunable.__repr__ prints it: name[type](range:default)=value for numeric
// tunables, name[type](values:default)=value for categorical ones.
func (t *Tunable) repr() string {
	d := t.def
	var b strings.Builder
	b.WriteString(d.name)
	b.WriteString("[" + string(d.typ) + "](")
	if d.typ == Categorical {
		b.WriteString(pyfmt.ListRepr(d.values))
	} else {
		b.WriteString("(" + d.lo.text + ", " + d.hi.text + ")")
	}
	b.WriteString(":" + d.text(d.defInt, d.defFloat, d.defStr) + ")=" + t.String())
	return b.String()
}

// maxGrid bounds GridValues so that an absurd range cannot exhaust memory.
const maxGrid = 1 << 24

// maxExactLogLevels bounds the levels Cardinality enumerates to count the
// distinct values of a log-scaled quantized int.
const maxExactLogLevels = 1 << 16

// Cardinality returns the number of distinct values GridValues enumerates
// (categories; all integers of the range or the quantization levels, plus
// the special values outside them). finite is false for unquantized
// floats. The count saturates at math.MaxInt64; for log-scaled quantized
// ints with more than 2^16 levels it is the number of levels, an upper
// bound (rounding merges some low levels, which GridValues lists once).
func (t *Tunable) Cardinality() (n int64, finite bool) {
	d := t.def
	if d.typ == Categorical {
		return int64(len(d.values)), true
	}
	s := newScale(d)
	if s.gridLevels == 0 {
		return 0, false
	}
	n = s.gridLevels
	if s.isInt && s.log && d.bins > 0 && n <= maxExactLogLevels {
		n = int64(len(t.gridLevels(s)))
	}
	for i := range max(len(d.specialInt), len(d.specialFloat)) {
		var iv int64
		var fv float64
		if s.isInt {
			iv = d.specialInt[i]
		} else {
			fv = d.specialFloat[i]
		}
		if !s.onGrid(iv, fv) && n < math.MaxInt64 {
			n++
		}
	}
	return n, true
}

// gridLevels enumerates the distinct grid values of the range (call only
// when s.gridLevels <= maxGrid).
func (t *Tunable) gridLevels(s scale) []any {
	d := t.def
	var out []any
	if s.isInt && d.bins == 0 {
		for v := d.loI; ; v++ {
			out = append(out, v)
			if v == d.hiI {
				break
			}
		}
		return out
	}
	n := int(s.gridLevels)
	var last any
	for k := range n {
		i, f := s.levelValue(k, n)
		var v any = f
		if s.isInt {
			v = i
		}
		if k > 0 && v == last { // rounding of log-spaced int levels
			continue
		}
		out = append(out, v)
		last = v
	}
	return out
}

// GridValues returns every value of a finite tunable, for grid search:
// the categories; for ints every integer of the range (or, when quantized,
// the distinct quantization levels); for quantized floats the levels; each
// followed by the special values not already listed. The levels are those
// of the normalized space (see Space), so log-scaled tunables get
// log-spaced levels. Unquantized floats, and grids of more than 2^24
// values, are an error.
func (t *Tunable) GridValues() ([]any, error) {
	d := t.def
	if d.typ == Categorical {
		out := make([]any, len(d.values))
		for i, v := range d.values {
			out[i] = v
		}
		return out, nil
	}
	s := newScale(d)
	if s.gridLevels == 0 {
		return nil, fmt.Errorf("tunable %q: an unquantized float has infinitely many values; set quantization_bins to enumerate it", d.name)
	}
	if s.gridLevels > maxGrid {
		return nil, fmt.Errorf("tunable %q: %d values are too many to enumerate (at most %d); set quantization_bins", d.name, s.gridLevels, maxGrid)
	}
	out := t.gridLevels(s)
	for _, v := range d.specialInt {
		if !s.onGrid(v, 0) {
			out = append(out, v)
		}
	}
	for _, v := range d.specialFloat {
		if !s.onGrid(0, v) {
			out = append(out, v)
		}
	}
	return out, nil
}
