// DyHPO-style methods of -mf (hyperband_mf.go): the planner's dynamic
// mode (schedulers/hyperband dyn.go, the scheduler's fidelity planner
// "dyhpo") with the GP with a fidelity input (optimizers/bayes
// SetFidelity, PredictAt). Every configuration starts at the lowest
// fidelity; at each free runner the planner continues the paused
// configuration whose expected improvement at its next rung (over the
// incumbent at that rung) is the highest, unless a new configuration,
// proposed by the GP (EI at full fidelity, the running configurations
// pending), has a higher EI at the first rung: then that one starts.
// Quality, cost and target are those of the other -mf methods (the same
// simulation loop, the same accounting).
//
// A method is dyn-gp-fid followed by any of these suffixes, in this order:
//
//   - -minN: the lowest fidelity is N instead of the problem's 1;
//   - -etaN: the rungs are min·N^k (default 3), the steps a continuation
//     takes;
//   - -full: every candidate's EI is at full fidelity (over the incumbent
//     there) instead of at the fidelity it would run at next;
//   - -cost: the EI is divided by the fidelity the run costs (the
//     difference with -mf-continue).

package main

import (
	"fmt"
	"slices"
	"strings"

	"github.com/benchtune/bench/schedulers/hyperband"
	"github.com/benchtune/bench/tunables"
)

const mfDynSuffixes = "-minN, -etaN, -full, -cost (e.g. dyn-gp-fid-min3-eta2-full-cost)"

// mfDynOptions are a dyn method's settings.
type mfDynOptions struct {
	min  float64 // 0: the problem's
	eta  int
	full bool
	cost bool
}

// parseMFDyn reads "dyn-gp-fid" and its suffixes.
func parseMFDyn(m string) (mfDynOptions, bool) {
	o := mfDynOptions{eta: 3}
	rest, ok := strings.CutPrefix(m, "dyn-gp-fid")
	if !ok {
		return o, false
	}
	ok = parseMFSuffixes(rest, mfMin(&o.min), mfInt("eta", 2, mfNoMax, func(n int) { o.eta = n }),
		mfFlag("full", &o.full), mfFlag("cost", &o.cost))
	return o, ok
}

// mfDynRun is mfRun for a dyn method: the same runners, cost and quality,
// with the planner in dynamic mode.
func mfDynRun(p mfProblem, method string, cont bool, seed int64, limit float64) (mfTrace, error) {
	opt, ok := parseMFDyn(method)
	if !ok {
		return mfTrace{}, fmt.Errorf("unknown -mf method %q (dyn-gp-fid takes the suffixes %s)", method, mfDynSuffixes)
	}
	cfg := hyperband.Config{Min: p.min, Max: p.max, Eta: opt.eta, Integer: true, Brackets: 1}
	if opt.min > 0 {
		cfg.Min = opt.min
	}
	gf, err := newGPFid(p, seed, cfg.Min)
	if err != nil {
		return mfTrace{}, err
	}
	pl, err := hyperband.New[int](cfg)
	if err != nil {
		return mfTrace{}, err
	}
	configs := map[int]tunables.Point{}
	at := func(x tunables.Point, r float64) tunables.Point {
		return append(slices.Clone(x), gf.coord(r))
	}
	predict := func(xs []tunables.Point) ([]hyperband.Prediction, bool) {
		pred, inc, ok, err := gf.gp.PredictAt(xs)
		if err != nil || !ok {
			return nil, false
		}
		out := make([]hyperband.Prediction, len(pred))
		for i := range pred {
			out[i] = hyperband.Prediction{Mean: pred[i].Mean, SD: pred[i].SD, Incumbent: inc[i]}
		}
		return out, true
	}
	err = pl.SetDynamic(hyperband.Dynamic[int]{PerCost: opt.cost, Continued: cont,
		Predict: func(keys []int, rungs []int) ([]hyperband.Prediction, bool) {
			xs := make([]tunables.Point, len(keys))
			for i, k := range keys {
				r := rungs[i]
				if opt.full {
					r = len(pl.Rungs()) - 1
				}
				xs[i] = at(configs[k], pl.Fidelity(r))
			}
			return predict(xs)
		}})
	if err != nil {
		return mfTrace{}, err
	}
	// At a free runner: the planner's decision between continuing the
	// best paused configuration and starting the proposer's new one.
	next := func(running []tunables.Point) (hyperband.Job[int], error) {
		x, err := gf.propose(running)
		if err != nil {
			return hyperband.Job[int]{}, err
		}
		fresh, hasFresh := hyperband.Prediction{}, false
		r0 := 0
		if opt.full {
			r0 = len(pl.Rungs()) - 1
		}
		if pr, ok := predict([]tunables.Point{at(x, pl.Fidelity(r0))}); ok {
			fresh, hasFresh = pr[0], true
		}
		d, err := pl.Next(fresh, hasFresh)
		if err != nil {
			return hyperband.Job[int]{}, err
		}
		if d.Continue {
			return d.Job, nil
		}
		k := len(configs)
		configs[k] = x
		return pl.Add(k, 0)
	}
	return mfSimulate(p, pl, gf, configs, next, mfHooks{}, cont, seed, limit) // hyperband_mf.go
}
