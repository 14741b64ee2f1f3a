// Package algo holds the small API shared by the optimizer algorithms
// (optimizers/bayes, optimizers/localsearch): the observation type and the
// interface the optimizer classes wrap.
//
// All algorithms minimize. Every objective of an Observation is minimized;
// callers flip the sign of maximization targets. A failed trial is reported
// with +Inf objectives.
package algo

import (
	"errors"

	"github.com/benchtune/bench/tunables"
)

// Observation is one measured point: X in the normalized space of
// tunables.Space and one value per objective (+Inf = failed trial).
type Observation struct {
	X tunables.Point
	Y []float64
}

// Algorithm is what an optimizer algorithm offers.
//
// Observe may be called with observations in any order and in bulk (resume
// from storage). Repeated observations of the same point (after snapping to
// the space's grid) are merged into one point.
//
// Suggest returns k distinct points, none equal to a pending point (points
// suggested earlier and not yet observed). It may return fewer than k points
// only when the space has fewer than k points that are neither pending nor
// already chosen; it returns ErrExhausted when it can return none.
type Algorithm interface {
	Observe(obs ...Observation) error
	Suggest(k int, pending []tunables.Point) ([]tunables.Point, error)
	Best() (Observation, bool)
	ParetoFront() []Observation
}

// ErrExhausted is returned by Suggest when every point of a finite space is
// pending.
var ErrExhausted = errors.New("search space exhausted: every point is pending")
