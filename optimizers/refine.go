package optimizers

import (
	"errors"

	"github.com/benchtune/bench/tunables"
)

// LocalRefiner is an optimizer that can refine its answer locally before
// the confirmation (the noise-aware Bayesian optimizer; bench only, the
// scheduler's confirm_refine): RefineDesign returns n configurations
// spread around the one its model ranks best (a space-filling local
// design), to be measured and observed; RefineBest then returns the
// configuration in that neighbourhood with the lowest posterior mean, the
// model acting as a local response surface that averages the noise of
// every nearby measurement. See optimizers/bayes/refine.go.
type LocalRefiner interface {
	RefineDesign(n int) ([]map[string]any, error)
	RefineBest() (map[string]any, error)
}

// RefineRadius is the local box's half-width in lengthscales (measured
// with bench/optbench -noise -refine; docs/optimizers-algorithms.md).
const RefineRadius = 0.5

type refineEngine interface {
	Ranked(k int) []tunables.Point
	LocalDesign(center tunables.Point, n int, radius float64) ([]tunables.Point, error)
	MeanMinimizer(center tunables.Point, radius, kappa float64, local bool) (tunables.Point, error)
}

var errNoRefine = errors.New("local refinement needs the Bayesian optimizer (SMAC) with observations")

func (m *MlosCore) refineCenter() (refineEngine, tunables.Point, error) {
	e, ok := m.eng.(refineEngine)
	if !ok || m.fid != nil {
		return nil, nil, errNoRefine
	}
	top := e.Ranked(1)
	if len(top) == 0 {
		return nil, nil, errNoRefine
	}
	return e, top[0], nil
}

// RefineDesign returns n configurations around the model's best.
func (m *MlosCore) RefineDesign(n int) ([]map[string]any, error) {
	e, c, err := m.refineCenter()
	if err != nil {
		return nil, err
	}
	pts, err := e.LocalDesign(c, n, RefineRadius)
	if err != nil {
		return nil, err
	}
	return m.decodeAll(pts), nil
}

// RefineBest returns the configuration near the model's best with the
// lowest posterior mean.
func (m *MlosCore) RefineBest() (map[string]any, error) {
	e, c, err := m.refineCenter()
	if err != nil {
		return nil, err
	}
	p, err := e.MeanMinimizer(c, RefineRadius, 0, false)
	if err != nil {
		return nil, err
	}
	return m.space.Decode(p)
}

// decodeAll decodes points of the search space into configurations,
// leaving out those that do not decode.
func (m *MlosCore) decodeAll(pts []tunables.Point) []map[string]any {
	var out []map[string]any
	for _, p := range pts {
		if v, err := m.space.Decode(p); err == nil {
			out = append(out, v)
		}
	}
	return out
}
