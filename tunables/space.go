package tunables

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
)

// The normalized search space: the view of a set of tunables that
// optimizers work in. Each tunable becomes one or two dimensions:
//
//   - categorical: one DimCategorical with one choice per value;
//   - int or float without special values: one DimNumeric whose unit
//     coordinate u in [0,1] maps onto the range (log scale when Log is set);
//   - int or float with special values: a DimCategorical named
//     "<name>!special" with 1+len(special) choices (choice 0 = "use the
//     range", choice i = special[i-1]) followed by the DimNumeric; the numeric
//     coordinate is ignored while a special value is chosen.
//
// A Point holds one float64 per dimension: the unit coordinate for numeric
// dimensions and the choice index (0, 1, 2, ...) for categorical ones.

// DimKind is the kind of a dimension.
type DimKind int

const (
	// DimNumeric is a unit interval [0,1], continuous or with Levels
	// equally spaced levels (ints and quantized tunables).
	DimNumeric DimKind = iota
	// DimCategorical is an unordered set of Choices choices.
	DimCategorical
)

// Dim is one dimension of the normalized space.
type Dim struct {
	Name    string // tunable name, or "<name>!special" for the special-value selector
	Tunable string // the tunable this dimension belongs to
	Kind    DimKind

	// Numeric dimensions. Levels > 1 means only Levels equally spaced unit
	// values 0, 1/(Levels-1), ..., 1 are valid (ints: range size, quantized:
	// bins); Levels == 0 means continuous. Log tells that the unit
	// coordinate is already on a log scale of the tunable's range.
	Levels int
	Log    bool

	// Categorical dimensions: number of choices and their prior weights
	// (nil = uniform), taken from values_weights or special_weights +
	// range_weight.
	Choices int
	Weights []float64
}

// Point is a position in the normalized space, one coordinate per Dim.
type Point []float64

// Space is the normalized search space of a set of tunables (see the
// layout above). Build it with Groups.Space; it keeps the tunables'
// definitions (not their values) and is immutable, so it is safe for
// concurrent use. Dims must not be modified.
//
// Numeric dimensions:
//   - int tunables get Levels = hi-lo+1 when that is at most MaxIntLevels
//     (2^20) and the scale is linear; wider or log-scaled int ranges are
//     continuous (Levels 0) and decode to the nearest integer;
//   - quantized tunables get Levels = quantization_bins (at most hi-lo+1
//     for ints): level k has unit coordinate k/(Levels-1), i.e. levels are
//     equally spaced on the tunable's (linear or log) scale;
//   - unquantized floats are continuous.
//
// On a log scale the unit coordinate is (ln(v+c) - ln(lo+c)) / (ln(hi+c) -
// ln(lo+c)) with c = 0 for a positive range and c = 1-lo otherwise.
type Space struct {
	Dims []Dim

	entries []spaceEntry
	index   map[string]int
}

type spaceEntry struct {
	def *definition
	sc  scale
	sel int // index of the special-value selector dimension, -1 if none
	dim int // index of the tunable's own dimension
	// placeholder is the numeric coordinate while a special value is
	// chosen: always 0, so that every representation of a special value is
	// one canonical point (optimizers dedup points by their coordinates).
	placeholder float64
}

func normalize(ws []float64) []float64 {
	t := sum(ws)
	out := make([]float64, len(ws))
	for i, w := range ws {
		out[i] = w / t
	}
	return out
}

// Space returns the normalized search space of the tunables, one or two
// dimensions per tunable in the order of Tunables().
//
// Categorical weights come from values_weights (normalized; nil when not
// given). A special-value selector's weights are [range_weight,
// special_weights...] normalized, or, when no weights are given, 1/2 for
// the range and 1/2 shared equally by the special values (as mlos_bench
// does).
func (g *Groups) Space() *Space {
	s := &Space{index: map[string]int{}}
	for _, t := range g.Tunables() {
		d := t.def
		e := spaceEntry{def: d, sel: -1}
		if d.typ == Categorical {
			dim := Dim{Name: d.name, Tunable: d.name, Kind: DimCategorical, Choices: len(d.values)}
			if d.valuesWeights != nil {
				dim.Weights = normalize(d.valuesWeights)
			}
			e.dim = len(s.Dims)
			s.Dims = append(s.Dims, dim)
			s.entries = append(s.entries, e)
			continue
		}
		e.sc = newScale(d)
		nSpecial := len(d.specialInt) + len(d.specialFloat)
		if nSpecial > 0 {
			var ws []float64
			if d.rangeWeight != nil {
				ws = normalize(append([]float64{*d.rangeWeight}, d.specialWeights...))
			} else {
				ws = make([]float64, nSpecial+1)
				ws[0] = 0.5
				for i := 1; i <= nSpecial; i++ {
					ws[i] = 0.5 / float64(nSpecial)
				}
			}
			e.sel = len(s.Dims)
			s.Dims = append(s.Dims, Dim{Name: d.name + "!special", Tunable: d.name, Kind: DimCategorical, Choices: nSpecial + 1, Weights: ws})
		}
		e.dim = len(s.Dims)
		s.Dims = append(s.Dims, Dim{Name: d.name, Tunable: d.name, Kind: DimNumeric, Levels: e.sc.levels, Log: e.sc.log})
		e.placeholder = 0 // as optimizers/internal/space canonicalizes it
		s.entries = append(s.entries, e)
	}
	for i, d := range s.Dims {
		s.index[d.Name] = i
	}
	return s
}

// Dim returns the index of the named dimension ("<tunable>" or
// "<tunable>!special").
func (s *Space) Dim(name string) (int, bool) {
	i, ok := s.index[name]
	return i, ok
}

// encodeNumeric returns the unit coordinate of an in-range value: exactly
// k/(Levels-1) when the value is level k, else its position on the scale.
func (e *spaceEntry) encodeNumeric(i int64, f float64) float64 {
	if n := e.sc.levels; n > 1 {
		if k, ok := e.sc.levelOf(i, f, n); ok {
			return float64(k) / float64(n-1)
		}
	}
	v := f
	if e.sc.isInt {
		v = float64(i)
	}
	return clampUnit(e.sc.toUnit(v))
}

// clampUnit clamps to [0,1]; NaN becomes 0.
func clampUnit(u float64) float64 {
	if !(u > 0) {
		return 0
	}
	return math.Min(u, 1)
}

// choiceIndex rounds a categorical coordinate to a valid choice; NaN is 0.
func choiceIndex(x float64, n int) int {
	if !(x > 0) {
		return 0
	}
	r := math.Round(x)
	if r >= float64(n-1) {
		return n - 1
	}
	return int(r)
}

// decodeNumeric maps a unit coordinate to a valid in-range value.
func (e *spaceEntry) decodeNumeric(u float64) (int64, float64) {
	sc := e.sc
	u = clampUnit(u)
	if n := sc.levels; n > 1 {
		return sc.levelValue(int(math.Round(u*float64(n-1))), n)
	}
	if sc.isInt {
		return sc.roundInt(sc.fromUnit(u)), 0
	}
	// Settle on a value that survives Encode then Decode unchanged, so
	// that Snap is idempotent despite floating-point rounding.
	v := sc.fromUnit(u)
	for range 8 {
		w := sc.fromUnit(clampUnit(sc.toUnit(v)))
		if w == v {
			break
		}
		v = w
	}
	return 0, v
}

// Encode maps tunable values (one per tunable, as Values returns them or
// in any form Tunable.Set accepts) to a point. A special value selects its
// choice of the "<name>!special" dimension and puts the numeric coordinate
// at the default's coordinate (0.5 when the default is not in the range).
func (s *Space) Encode(values map[string]any) (Point, error) {
	var errs []error
	for _, name := range slices.Sorted(maps.Keys(values)) {
		if _, ok := s.index[name]; !ok || strings.Contains(name, "!") {
			errs = append(errs, fmt.Errorf("unknown tunable %q", name))
		}
	}
	p := make(Point, len(s.Dims))
	for idx := range s.entries {
		e := &s.entries[idx]
		v, ok := values[e.def.name]
		if !ok {
			errs = append(errs, fmt.Errorf("missing value for tunable %q", e.def.name))
			continue
		}
		i, f, str, err := e.def.coerce(v)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		e.encode(p, i, f, str)
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return p, nil
}

func (e *spaceEntry) encode(p Point, i int64, f float64, str string) {
	d := e.def
	if d.typ == Categorical {
		p[e.dim] = float64(slices.Index(d.values, str))
		return
	}
	if e.sel >= 0 {
		k := -1
		if d.typ == Int {
			k = slices.Index(d.specialInt, i)
		} else {
			k = slices.Index(d.specialFloat, f)
		}
		if k >= 0 {
			p[e.sel] = float64(k + 1)
			p[e.dim] = e.placeholder
			return
		}
		p[e.sel] = 0
	}
	p[e.dim] = e.encodeNumeric(i, f)
}

// decode maps the entry's coordinates of p to a value.
func (e *spaceEntry) decode(p Point) (int64, float64, string) {
	d := e.def
	if d.typ == Categorical {
		return 0, 0, d.values[choiceIndex(p[e.dim], len(d.values))]
	}
	if e.sel >= 0 {
		if c := choiceIndex(p[e.sel], len(d.specialInt)+len(d.specialFloat)+1); c > 0 {
			if d.typ == Int {
				return d.specialInt[c-1], 0, ""
			}
			return 0, d.specialFloat[c-1], ""
		}
	}
	i, f := e.decodeNumeric(p[e.dim])
	return i, f, ""
}

// Decode maps any point to valid tunable values (int64, float64 or
// string): coordinates are clamped to [0,1] (NaN counts as 0), snapped to
// the nearest level, rounded for ints, mapped back through the log scale;
// categorical coordinates are rounded to the nearest choice index.
func (s *Space) Decode(p Point) (map[string]any, error) {
	if len(p) != len(s.Dims) {
		return nil, fmt.Errorf("point has %d coordinates, the space has %d dimensions", len(p), len(s.Dims))
	}
	out := make(map[string]any, len(s.entries))
	for idx := range s.entries {
		e := &s.entries[idx]
		i, f, str := e.decode(p)
		switch e.def.typ {
		case Int:
			out[e.def.name] = i
		case Float:
			out[e.def.name] = f
		default:
			out[e.def.name] = str
		}
	}
	return out, nil
}

// Snap returns Encode(Decode(p)): the canonical point of the configuration
// p decodes to. Snap is idempotent. It returns nil when p has the wrong
// number of coordinates.
func (s *Space) Snap(p Point) Point {
	if len(p) != len(s.Dims) {
		return nil
	}
	out := make(Point, len(p))
	for idx := range s.entries {
		e := &s.entries[idx]
		i, f, str := e.decode(p)
		e.encode(out, i, f, str)
	}
	return out
}

// Sample draws a random canonical point: categories and special values by
// their weights, numeric coordinates from the tunable's distribution
// (uniform by default; normal and beta as documented on Distribution)
// over the unit coordinate, so log-scaled tunables are sampled
// log-uniformly. Discrete levels are drawn so that a uniform prior gives
// every level the same probability. The same rng state gives the same
// point.
func (s *Space) Sample(rng *rand.Rand) Point {
	p := make(Point, len(s.Dims))
	for idx := range s.entries {
		e := &s.entries[idx]
		if e.def.typ == Categorical {
			dim := s.Dims[e.dim]
			p[e.dim] = float64(weightedIndex(rng, dim.Weights, dim.Choices))
			continue
		}
		if e.sel >= 0 {
			dim := s.Dims[e.sel]
			c := weightedIndex(rng, dim.Weights, dim.Choices)
			p[e.sel] = float64(c)
			if c > 0 {
				p[e.dim] = e.placeholder
				continue
			}
		}
		t := e.drawUnit(rng)
		if n := e.sc.levels; n > 1 {
			k := min(int(t*float64(n)), n-1)
			t = float64(k) / float64(n-1)
		}
		p[e.dim] = t
	}
	return s.Snap(p)
}
