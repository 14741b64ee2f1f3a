package tunables

import (
	"math"
	"strconv"
)

// MaxIntLevels is the largest int range (hi-lo+1 values) that the
// normalized space represents as discrete levels; wider ranges (and
// log-scaled ints) are continuous dimensions whose decoded values are
// rounded to the nearest integer.
const MaxIntLevels = 1 << 20

// scale maps a numeric tunable's range onto the unit interval [0,1],
// linearly or on a log scale, and knows its discrete levels.
type scale struct {
	d      *definition
	isInt  bool
	lo, hi float64
	log    bool
	// Log scale: u = (ln(v+shift) - llo) / (lhi - llo). shift is 0 for a
	// positive range, and 1-lo otherwise so that lo maps to ln(1) (mlos_bench
	// accepts log ranges that start at or below zero).
	shift, llo, lhi float64
	// levels > 1: only the unit values k/(levels-1) are valid (Space);
	// 0: continuous.
	levels int
	// gridLevels is like levels but also counts the integers of ranges
	// wider than MaxIntLevels and of log-scaled ints (for GridValues and
	// Cardinality); 0 for unquantized floats.
	gridLevels int64
}

func newScale(d *definition) scale {
	s := scale{d: d, isInt: d.typ == Int, log: d.log}
	if s.isInt {
		s.lo, s.hi = float64(d.loI), float64(d.hiI)
	} else {
		s.lo, s.hi = d.lo.f, d.hi.f
	}
	if s.log {
		if s.lo <= 0 {
			s.shift = 1 - s.lo
			s.llo = 0
		} else {
			s.llo = math.Log(s.lo)
		}
		s.lhi = math.Log(s.hi + s.shift)
		if !(s.lhi > s.llo) || math.IsInf(s.lhi, 0) || math.IsNaN(s.lhi) {
			// Degenerate in floating point (say [1e308, 1.0000001e308]
			// shifted): fall back to the linear scale.
			s.log, s.shift, s.llo, s.lhi = false, 0, 0, 0
		}
	}
	if s.isInt {
		span := uint64(d.hiI - d.loI)
		switch {
		case d.bins > 0:
			n := uint64(d.bins)
			if span+1 != 0 && span+1 < n {
				n = span + 1
			}
			s.levels = int(n)
			s.gridLevels = int64(n)
		default:
			if span < MaxIntLevels && !s.log {
				s.levels = int(span) + 1
			}
			if span >= math.MaxInt64 {
				s.gridLevels = math.MaxInt64
			} else {
				s.gridLevels = int64(span) + 1
			}
		}
	} else if d.bins > 0 {
		s.levels = d.bins
		s.gridLevels = int64(d.bins)
	}
	return s
}

// toUnit maps a value of the range to its unit coordinate (not clamped).
func (s scale) toUnit(v float64) float64 {
	if s.log {
		return (math.Log(v+s.shift) - s.llo) / (s.lhi - s.llo)
	}
	span := s.hi - s.lo
	if math.IsInf(span, 0) {
		return (v/2 - s.lo/2) / (s.hi/2 - s.lo/2)
	}
	return (v - s.lo) / span
}

// fromUnit maps a unit coordinate (clamped to [0,1]) into the range, as a
// float (ints are rounded by the caller).
func (s scale) fromUnit(u float64) float64 {
	switch {
	case !(u > 0): // also NaN
		return s.lo
	case u >= 1:
		return s.hi
	}
	var v float64
	if s.log {
		v = math.Exp(s.llo+u*(s.lhi-s.llo)) - s.shift
	} else if span := s.hi - s.lo; math.IsInf(span, 0) {
		v = s.lo*(1-u) + s.hi*u
	} else {
		v = s.lo + u*span
	}
	return math.Min(math.Max(v, s.lo), s.hi)
}

// roundInt rounds a float into the int range.
func (s scale) roundInt(x float64) int64 {
	d := s.d
	if !(x > float64(d.loI)) { // also NaN
		return d.loI
	}
	if x >= float64(d.hiI) {
		return d.hiI
	}
	i := int64(math.Round(x))
	return min(max(i, d.loI), d.hiI)
}

// levelValue returns the value of level k of n equally spaced unit levels:
// for linear ints lo + round(k*span/(n-1)), for linear floats
// lo + k*(hi-lo)/(n-1) (numpy.linspace), on log scales the exponentially
// spaced values (rounded for ints). The last level is hi exactly.
func (s scale) levelValue(k, n int) (int64, float64) {
	d := s.d
	if k <= 0 {
		return d.loI, s.lo
	}
	if k >= n-1 {
		return d.hiI, s.hi
	}
	if s.isInt {
		if s.log {
			return s.roundInt(s.fromUnit(float64(k) / float64(n-1))), 0
		}
		span := uint64(d.hiI - d.loI)
		if uint64(n-1) == span {
			return d.loI + int64(k), 0
		}
		off := math.Round(float64(k) * float64(span) / float64(n-1))
		if off >= float64(span) {
			return d.hiI, 0
		}
		return d.loI + int64(off), 0
	}
	if s.log {
		return 0, s.tidy(s.fromUnit(float64(k) / float64(n-1)))
	}
	span := s.hi - s.lo
	if math.IsInf(span, 0) {
		return 0, s.fromUnit(float64(k) / float64(n-1))
	}
	return 0, math.Min(math.Max(s.lo+float64(k)*(span/float64(n-1)), s.lo), s.hi)
}

// tidy rounds a log-spaced level to 12 significant digits, so that the
// levels of [1, 100] are 1, 10, 100 rather than 10.000000000000002.
func (s scale) tidy(v float64) float64 {
	r, err := strconv.ParseFloat(strconv.FormatFloat(v, 'g', 12, 64), 64)
	if err != nil || math.IsInf(r, 0) {
		return v
	}
	return math.Min(math.Max(r, s.lo), s.hi)
}

// levelOf returns the index of the level of n whose value is exactly the
// given one.
func (s scale) levelOf(i int64, f float64, n int) (int, bool) {
	v := f
	if s.isInt {
		v = float64(i)
	}
	u := s.toUnit(v)
	if math.IsNaN(u) {
		return 0, false
	}
	k0 := int(math.Round(math.Min(math.Max(u, 0), 1) * float64(n-1)))
	for _, dk := range [...]int{0, -1, 1, -2, 2} {
		k := k0 + dk
		if k < 0 || k >= n {
			continue
		}
		li, lf := s.levelValue(k, n)
		if (s.isInt && li == i) || (!s.isInt && lf == f) {
			return k, true
		}
	}
	return 0, false
}

// inRange tells whether a numeric value lies in the range.
func (s scale) inRange(i int64, f float64) bool {
	if s.isInt {
		return i >= s.d.loI && i <= s.d.hiI
	}
	return f >= s.lo && f <= s.hi
}

// onGrid tells whether a value is one of the grid values of the range.
func (s scale) onGrid(i int64, f float64) bool {
	if !s.inRange(i, f) {
		return false
	}
	if s.isInt && s.d.bins == 0 {
		return true
	}
	_, ok := s.levelOf(i, f, int(s.gridLevels))
	return ok
}
