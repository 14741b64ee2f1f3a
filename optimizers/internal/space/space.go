// Package space wraps the normalized search space of package tunables
// (a list of tunables.Dim) with what the optimizer algorithms need: input
// validation, snapping points onto the grid, canonical keys for
// de-duplication, random and Latin-hypercube sampling, neighbourhoods,
// cardinality and enumeration of finite spaces.
//
// A point is canonical when every numeric coordinate lies in [0,1] on its
// level grid, every categorical coordinate is an integer choice index, and
// the numeric coordinate of a tunable whose special-value selector picks a
// special value (selector != 0) is 0: that coordinate is ignored by the
// tunable, so all such points denote the same configuration.
package space

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"

	"github.com/benchtune/bench/tunables"
)

// SpecialSuffix ends the name of a special-value selector dimension.
const SpecialSuffix = "!special"

// Space is a validated list of dimensions.
type Space struct {
	dims []tunables.Dim
	// selector[i] is, for a numeric dimension governed by a special-value
	// selector, the index of the selector; -1 otherwise.
	selector []int
	// governed[i] is, for a selector dimension, the index of the numeric
	// dimension it governs; -1 otherwise.
	governed []int
	// cdf[i] is the cumulative prior weight of a categorical dimension.
	cdf [][]float64
}

// New validates dims and returns the space. A special-value selector is a
// categorical dimension named "<tunable>!special" directly followed by a
// numeric dimension of the same tunable.
func New(dims []tunables.Dim) (*Space, error) {
	if len(dims) == 0 {
		return nil, errors.New("search space has no dimensions")
	}
	s := &Space{
		dims:     append([]tunables.Dim(nil), dims...),
		selector: make([]int, len(dims)),
		governed: make([]int, len(dims)),
		cdf:      make([][]float64, len(dims)),
	}
	for i := range dims {
		s.selector[i], s.governed[i] = -1, -1
	}
	for i, d := range dims {
		switch d.Kind {
		case tunables.DimNumeric:
			if d.Levels < 0 {
				return nil, fmt.Errorf("dimension %d (%q): negative number of levels %d", i, d.Name, d.Levels)
			}
		case tunables.DimCategorical:
			if d.Choices < 1 {
				return nil, fmt.Errorf("dimension %d (%q): categorical dimension needs at least one choice, got %d", i, d.Name, d.Choices)
			}
			cdf, err := weightsCDF(d)
			if err != nil {
				return nil, fmt.Errorf("dimension %d (%q): %w", i, d.Name, err)
			}
			s.cdf[i] = cdf
			if strings.HasSuffix(d.Name, SpecialSuffix) {
				if i+1 >= len(dims) || dims[i+1].Kind != tunables.DimNumeric || dims[i+1].Tunable != d.Tunable {
					return nil, fmt.Errorf("dimension %d (%q): special-value selector must be followed by the numeric dimension of tunable %q", i, d.Name, d.Tunable)
				}
				s.governed[i] = i + 1
				s.selector[i+1] = i
			}
		default:
			return nil, fmt.Errorf("dimension %d (%q): unknown kind %d", i, d.Name, d.Kind)
		}
	}
	return s, nil
}

func weightsCDF(d tunables.Dim) ([]float64, error) {
	cdf := make([]float64, d.Choices)
	if d.Weights == nil {
		for j := range cdf {
			cdf[j] = float64(j+1) / float64(d.Choices)
		}
		return cdf, nil
	}
	if len(d.Weights) != d.Choices {
		return nil, fmt.Errorf("%d weights for %d choices", len(d.Weights), d.Choices)
	}
	total := 0.0
	for j, w := range d.Weights {
		if w < 0 || math.IsNaN(w) || math.IsInf(w, 0) {
			return nil, fmt.Errorf("weight %d is %v; weights must be finite and non-negative", j, w)
		}
		total += w
		cdf[j] = total
	}
	if total <= 0 {
		return nil, errors.New("weights sum to zero")
	}
	for j := range cdf {
		cdf[j] /= total
	}
	cdf[len(cdf)-1] = 1
	return cdf, nil
}

// Dims returns the dimensions (do not modify).
func (s *Space) Dims() []tunables.Dim { return s.dims }

// Len is the number of dimensions.
func (s *Space) Len() int { return len(s.dims) }

// Selector returns the index of the special-value selector governing
// numeric dimension i, or -1.
func (s *Space) Selector(i int) int { return s.selector[i] }

// Governed returns the index of the numeric dimension governed by selector
// dimension i, or -1 when i is not a selector.
func (s *Space) Governed(i int) int { return s.governed[i] }

// Active reports whether coordinate i of p matters: false for the numeric
// coordinate of a tunable whose selector picks a special value.
func (s *Space) Active(p tunables.Point, i int) bool {
	sel := s.selector[i]
	return sel < 0 || p[sel] == 0
}

// Continuous reports whether dimension i is a continuous numeric one.
func (s *Space) Continuous(i int) bool {
	return s.dims[i].Kind == tunables.DimNumeric && s.dims[i].Levels == 0
}

// Check reports whether p has the right length and finite coordinates.
func (s *Space) Check(p tunables.Point) error {
	if len(p) != len(s.dims) {
		return fmt.Errorf("point has %d coordinates, the space has %d dimensions", len(p), len(s.dims))
	}
	for i, v := range p {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return fmt.Errorf("coordinate %d (%q) is %v", i, s.dims[i].Name, v)
		}
	}
	return nil
}

// Snap returns the canonical point nearest to p (a new slice). p must
// have the right length.
func (s *Space) Snap(p tunables.Point) tunables.Point {
	q := make(tunables.Point, len(p))
	copy(q, p)
	s.SnapInPlace(q)
	return q
}

// SnapInPlace canonicalizes p in place.
func (s *Space) SnapInPlace(p tunables.Point) {
	for i, d := range s.dims {
		switch d.Kind {
		case tunables.DimNumeric:
			p[i] = SnapUnit(p[i], d.Levels)
		case tunables.DimCategorical:
			v := math.Round(p[i])
			if !(v >= 0) { // also NaN
				v = 0
			}
			if v > float64(d.Choices-1) {
				v = float64(d.Choices - 1)
			}
			p[i] = v
		}
	}
	for i, g := range s.governed {
		if g >= 0 && p[i] != 0 {
			p[g] = 0
		}
	}
}

// SnapUnit clamps u to [0,1] and rounds it to the nearest of levels equally
// spaced values (levels 0 = continuous, 1 = the single value 0).
func SnapUnit(u float64, levels int) float64 {
	if !(u > 0) { // also NaN
		u = 0
	}
	if u > 1 {
		u = 1
	}
	switch {
	case levels == 1:
		return 0
	case levels > 1:
		m := float64(levels - 1)
		return math.Round(u*m) / m
	}
	return u
}

// Key returns a string identifying the canonical point p (p must already be
// canonical: pass it through Snap first).
func Key(p tunables.Point) string {
	b := make([]byte, 8*len(p))
	for i, v := range p {
		if v == 0 { // fold -0 into +0
			v = 0
		}
		binary.LittleEndian.PutUint64(b[8*i:], math.Float64bits(v))
	}
	return string(b)
}

// FromKey returns the point that Key made key from.
func FromKey(key string) tunables.Point {
	p := make(tunables.Point, len(key)/8)
	for i := range p {
		p[i] = math.Float64frombits(binary.LittleEndian.Uint64([]byte(key[8*i : 8*i+8])))
	}
	return p
}

// Random draws a canonical point: numeric coordinates uniformly (uniform
// over the levels of a discrete one), categorical ones by their prior
// weights.
func (s *Space) Random(rng *rand.Rand) tunables.Point {
	p := make(tunables.Point, len(s.dims))
	for i, d := range s.dims {
		switch d.Kind {
		case tunables.DimNumeric:
			switch {
			case d.Levels > 1:
				p[i] = float64(rng.IntN(d.Levels)) / float64(d.Levels-1)
			case d.Levels == 1:
				p[i] = 0
			default:
				p[i] = rng.Float64()
			}
		case tunables.DimCategorical:
			p[i] = float64(s.choice(i, rng.Float64()))
		}
	}
	s.SnapInPlace(p)
	return p
}

// choice maps u in [0,1) to a choice of categorical dimension i by its
// prior weights.
func (s *Space) choice(i int, u float64) int {
	cdf := s.cdf[i]
	for j, c := range cdf {
		if u < c {
			return j
		}
	}
	return len(cdf) - 1
}

// RandomChoice draws a choice of categorical dimension i by its weights.
func (s *Space) RandomChoice(i int, rng *rand.Rand) int {
	return s.choice(i, rng.Float64())
}

// LatinHypercube draws n canonical points stratified in every dimension:
// each dimension's [0,1) is cut into n strata, each used once (categorical
// dimensions map the stratified value through their weights).
func (s *Space) LatinHypercube(n int, rng *rand.Rand) []tunables.Point {
	if n <= 0 {
		return nil
	}
	pts := make([]tunables.Point, n)
	for j := range pts {
		pts[j] = make(tunables.Point, len(s.dims))
	}
	for i, d := range s.dims {
		perm := rng.Perm(n)
		for j := range pts {
			u := (float64(perm[j]) + rng.Float64()) / float64(n)
			switch d.Kind {
			case tunables.DimNumeric:
				switch {
				case d.Levels > 1:
					lvl := int(u * float64(d.Levels))
					if lvl >= d.Levels {
						lvl = d.Levels - 1
					}
					pts[j][i] = float64(lvl) / float64(d.Levels-1)
				case d.Levels == 1:
					pts[j][i] = 0
				default:
					pts[j][i] = u
				}
			case tunables.DimCategorical:
				pts[j][i] = float64(s.choice(i, u))
			}
		}
	}
	for _, p := range pts {
		s.SnapInPlace(p)
	}
	return pts
}

// Cardinality is the number of distinct canonical points (+Inf when a
// continuous dimension is active somewhere).
func (s *Space) Cardinality() float64 {
	total := 1.0
	for i, d := range s.dims {
		if s.selector[i] >= 0 {
			continue // counted with its selector
		}
		switch d.Kind {
		case tunables.DimNumeric:
			total *= numericCount(d)
		case tunables.DimCategorical:
			if g := s.governed[i]; g >= 0 {
				total *= float64(d.Choices-1) + numericCount(s.dims[g])
			} else {
				total *= float64(d.Choices)
			}
		}
	}
	return total
}

func numericCount(d tunables.Dim) float64 {
	switch {
	case d.Levels > 1:
		return float64(d.Levels)
	case d.Levels == 1:
		return 1
	}
	return math.Inf(1)
}

// Enumerate returns every canonical point when there are at most limit of
// them, else nil.
func (s *Space) Enumerate(limit int) []tunables.Point {
	c := s.Cardinality()
	if c > float64(limit) {
		return nil
	}
	out := []tunables.Point{make(tunables.Point, len(s.dims))}
	for i, d := range s.dims {
		if s.selector[i] >= 0 {
			continue
		}
		var next []tunables.Point
		for _, p := range out {
			switch d.Kind {
			case tunables.DimNumeric:
				for _, v := range levelValues(d) {
					q := append(tunables.Point(nil), p...)
					q[i] = v
					next = append(next, q)
				}
			case tunables.DimCategorical:
				g := s.governed[i]
				for c := 0; c < d.Choices; c++ {
					if g >= 0 && c == 0 {
						for _, v := range levelValues(s.dims[g]) {
							q := append(tunables.Point(nil), p...)
							q[i], q[g] = 0, v
							next = append(next, q)
						}
						continue
					}
					q := append(tunables.Point(nil), p...)
					q[i] = float64(c)
					next = append(next, q)
				}
			}
		}
		out = next
	}
	return out
}

func levelValues(d tunables.Dim) []float64 {
	if d.Levels <= 1 {
		return []float64{0}
	}
	v := make([]float64, d.Levels)
	for j := range v {
		v[j] = float64(j) / float64(d.Levels-1)
	}
	return v
}

// Neighbors returns the canonical points one discrete move away from the
// canonical point p: one level up or down on a discrete numeric dimension,
// any other choice on a categorical one. Continuous dimensions are left
// alone. A selector switching back to "use the range" keeps the numeric
// coordinate at its canonical value (0) and also tries the middle level.
func (s *Space) Neighbors(p tunables.Point) []tunables.Point {
	var out []tunables.Point
	for i, d := range s.dims {
		if !s.Active(p, i) {
			continue
		}
		switch d.Kind {
		case tunables.DimNumeric:
			if d.Levels <= 1 {
				continue
			}
			step := 1 / float64(d.Levels-1)
			for _, v := range []float64{p[i] - step, p[i] + step} {
				if v < -1e-9 || v > 1+1e-9 {
					continue
				}
				q := append(tunables.Point(nil), p...)
				q[i] = v
				s.SnapInPlace(q)
				out = append(out, q)
			}
		case tunables.DimCategorical:
			for c := 0; c < d.Choices; c++ {
				if float64(c) == p[i] {
					continue
				}
				q := append(tunables.Point(nil), p...)
				q[i] = float64(c)
				s.SnapInPlace(q)
				out = append(out, q)
				if g := s.governed[i]; g >= 0 && c == 0 {
					q2 := append(tunables.Point(nil), q...)
					q2[g] = SnapUnit(0.5, s.dims[g].Levels)
					out = append(out, q2)
				}
			}
		}
	}
	return out
}
