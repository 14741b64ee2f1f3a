// Variants of the GP-with-a-fidelity-input methods of -mf
// (hyperband_mf.go) that use the model for the schedule too, through the
// shipped code paths: the planner's Ranker and AddFull
// (schedulers/hyperband) and the GP's PredictFull (optimizers/bayes), as
// the scheduler's fidelity settings promote_by "model" and start "model"
// drive them.
//
// A method is hb-gp-fid or asha-gp-fid followed by any of these suffixes,
// in this order:
//
//   - -minN: the lowest fidelity is N instead of the problem's 1 (fewer,
//     more reliable rungs: fidelity.min);
//   - -model: promotions rank each rung by the GP's predicted mean at full
//     fidelity instead of the observed values (promote_by "model");
//   - -startP: a new configuration runs directly at full fidelity when the
//     GP gives it a probability of at least P% of beating the incumbent at
//     full fidelity (P(f(x) < μ*) = Φ((μ* − μ)/σ)), else in its bracket as
//     usual (start "model", start_confidence P/100).

package main

import (
	"math"

	"github.com/benchtune/bench/tunables"
)

const mfSuffixes = "-minN, -model, -startP (e.g. asha-gp-fid-min3-model-start50)"

// mfOptions are a gp-fid method's settings.
type mfOptions struct {
	asha  bool
	min   float64 // 0: the problem's
	model bool
	start float64 // 0: off; else the confidence in (0, 1)
	acq   float64 // 0: off; else κ of the cost-aware start (mf_acq.go)
}

// parseMFMethod reads "hb-gp-fid" / "asha-gp-fid" and its suffixes.
func parseMFMethod(m string) (mfOptions, bool) {
	var o mfOptions
	rest, asha, ok := mfCutBase(m, "gp-fid")
	if !ok {
		return o, false
	}
	o.asha = asha
	ok = parseMFSuffixes(rest, mfMin(&o.min), mfFlag("model", &o.model), mfPercent("start", 99, &o.start))
	return o, ok
}

// point is configuration x at full fidelity, as the GP sees it.
func (m *mfGPFid) point(x tunables.Point) tunables.Point {
	q := make(tunables.Point, len(x)+1)
	copy(q, x)
	q[len(x)] = 1
	return q
}

// ranker is the planner's Ranker: the GP's predicted mean at full
// fidelity of each configuration (cached until the next observation).
func (m *mfGPFid) ranker(configs map[int]tunables.Point) func([]int) ([]float64, bool) {
	return func(keys []int) ([]float64, bool) {
		if m.cache == nil || m.cacheV != m.version {
			m.cache, m.cacheV = map[int]float64{}, m.version
		}
		var miss []int
		var xs []tunables.Point
		for _, k := range keys {
			if _, ok := m.cache[k]; !ok {
				miss = append(miss, k)
				xs = append(xs, m.point(configs[k]))
			}
		}
		if len(xs) > 0 {
			pred, _, ok, err := m.gp.PredictFull(xs, false)
			if err != nil || !ok {
				return nil, false
			}
			for i, k := range miss {
				m.cache[k] = pred[i].Mean
			}
		}
		out := make([]float64, len(keys))
		for i, k := range keys {
			out[i] = m.cache[k]
		}
		return out, true
	}
}

// confident reports whether the GP gives x a probability of at least conf
// of beating the incumbent at full fidelity.
func (m *mfGPFid) confident(x tunables.Point, conf float64) (bool, error) {
	pred, inc, ok, err := m.gp.PredictFull([]tunables.Point{m.point(x)}, true)
	if err != nil || !ok {
		return false, err
	}
	return probBelow(pred[0].Mean, pred[0].SD, inc) >= conf, nil
}

// probBelow is P(N(mu, sd²) < v).
func probBelow(mu, sd, v float64) float64 {
	if !(sd > 0) {
		if mu < v {
			return 1
		}
		return 0
	}
	return 0.5 * math.Erfc(-(v-mu)/(sd*math.Sqrt2))
}
