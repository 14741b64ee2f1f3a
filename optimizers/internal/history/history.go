// Package history keeps the observations an optimizer has received,
// merging repeated measurements of the same (snapped) point into one entry.
package history

import (
	"fmt"
	"math"

	"github.com/benchtune/bench/optimizers/internal/algo"
	"github.com/benchtune/bench/optimizers/internal/space"
	"github.com/benchtune/bench/trial"
	"github.com/benchtune/bench/tunables"
)

// Entry is one distinct point and its merged measurements.
type Entry struct {
	X   tunables.Point // canonical
	Key string
	// Sum holds, per objective, the sum over the successful measurements.
	Sum []float64
	// N counts successful measurements, Failed failed ones (+Inf).
	N, Failed int
	// Vals holds, per objective, every successful measurement.
	Vals [][]float64
	h    *History
}

// Aggregator turns the successful measurements of objective j of a point
// into one value (to minimize). nil: the mean.
type Aggregator func(j int, scores []float64) float64

// Count is the total number of measurements of the point.
func (e *Entry) Count() int { return e.N + e.Failed }

// Mean returns the aggregate of the successful measurements per
// objective (the mean unless the history has an Aggregator), or +Inf
// everywhere when every measurement failed.
func (e *Entry) Mean() []float64 {
	m := make([]float64, len(e.Sum))
	for i, s := range e.Sum {
		switch {
		case e.N == 0:
			m[i] = math.Inf(1)
		case e.h != nil && e.h.agg != nil:
			m[i] = e.h.agg(i, e.Vals[i])
		default:
			m[i] = s / float64(e.N)
		}
	}
	return m
}

// Var returns the sample variance of objective j's successful
// measurements (0 for fewer than two).
func (e *Entry) Var(j int) float64 {
	if e.N < 2 {
		return 0
	}
	mean := e.Sum[j] / float64(e.N)
	s := 0.0
	for _, v := range e.Vals[j] {
		s += (v - mean) * (v - mean)
	}
	return s / float64(e.N-1)
}

// History is the merged record of observations.
type History struct {
	sp      *space.Space
	m       int
	entries []*Entry
	byKey   map[string]int
	// Order lists the entry index of every observation, in arrival order.
	order []int
	agg   Aggregator
}

// SetAggregator sets how repeated measurements of a point are aggregated
// (nil: the mean).
func (h *History) SetAggregator(a Aggregator) { h.agg = a }

// New returns an empty history for numObjectives objectives.
func New(sp *space.Space, numObjectives int) *History {
	return &History{sp: sp, m: numObjectives, byKey: map[string]int{}}
}

// Validate checks an observation without recording it.
func (h *History) Validate(o algo.Observation) error {
	if err := h.sp.Check(o.X); err != nil {
		return err
	}
	if len(o.Y) != h.m {
		return fmt.Errorf("observation has %d objective values, want %d", len(o.Y), h.m)
	}
	for i, v := range o.Y {
		if math.IsNaN(v) || math.IsInf(v, -1) {
			return fmt.Errorf("objective %d is %v (use +Inf for a failed trial)", i, v)
		}
	}
	return nil
}

// AddAll validates every observation, then records them all (nothing is
// recorded when one is invalid). It returns the entry index of each.
func (h *History) AddAll(obs []algo.Observation) ([]int, error) {
	for i, o := range obs {
		if err := h.Validate(o); err != nil {
			return nil, fmt.Errorf("observation %d: %w", i, err)
		}
	}
	idx := make([]int, len(obs))
	for i, o := range obs {
		idx[i] = h.add(o)
	}
	return idx, nil
}

func (h *History) add(o algo.Observation) int {
	x := h.sp.Snap(o.X)
	key := space.Key(x)
	i, ok := h.byKey[key]
	if !ok {
		i = len(h.entries)
		h.entries = append(h.entries, &Entry{X: x, Key: key, Sum: make([]float64, h.m), Vals: make([][]float64, h.m), h: h})
		h.byKey[key] = i
	}
	e := h.entries[i]
	failed := false
	for _, v := range o.Y {
		if math.IsInf(v, 1) {
			failed = true
		}
	}
	if failed {
		e.Failed++
	} else {
		for j, v := range o.Y {
			e.Sum[j] += v
			e.Vals[j] = append(e.Vals[j], v)
		}
		e.N++
	}
	h.order = append(h.order, i)
	return i
}

// Entries returns the distinct points in order of first observation (do
// not modify).
func (h *History) Entries() []*Entry { return h.entries }

// Order returns the entry index of every observation in arrival order.
func (h *History) Order() []int { return h.order }

// Len is the number of distinct points.
func (h *History) Len() int { return len(h.entries) }

// Lookup returns the entry index of a canonical key.
func (h *History) Lookup(key string) (int, bool) {
	i, ok := h.byKey[key]
	return i, ok
}

// NumObjectives is the number of objectives.
func (h *History) NumObjectives() int { return h.m }

// Best returns the point with the lowest mean, comparing objectives
// lexicographically in order; false when no point has a successful
// measurement.
func (h *History) Best() (algo.Observation, bool) {
	var best []float64
	bi := -1
	for i, e := range h.entries {
		if e.N == 0 {
			continue
		}
		m := e.Mean()
		if bi < 0 || trial.Less(m, best) {
			best, bi = m, i
		}
	}
	if bi < 0 {
		return algo.Observation{}, false
	}
	return algo.Observation{X: append(tunables.Point(nil), h.entries[bi].X...), Y: best}, true
}

// ParetoFront returns the non-dominated points (by their means) in order
// of first observation.
func (h *History) ParetoFront() []algo.Observation {
	ys := make([][]float64, len(h.entries))
	for i, e := range h.entries {
		ys[i] = e.Mean()
	}
	var out []algo.Observation
	for _, i := range trial.ParetoFront(ys) {
		out = append(out, algo.Observation{X: append(tunables.Point(nil), h.entries[i].X...), Y: ys[i]})
	}
	return out
}
