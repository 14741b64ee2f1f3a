// The multi-fidelity benchmark (-hyperband B,S): the learning-curve
// problem of prune.go (curveAt) with the step count as a fidelity
// dimension. Evaluating a configuration at fidelity r (1 <= r <= S) costs
// r and returns its value after r steps: noisy and pessimistic at low r,
// correlated with the final value, exact at r = S. A promoted
// configuration is re-run from scratch at the higher fidelity (it costs
// the whole higher fidelity again), as the scheduler's promotion does.
//
// Hyperband (η = 3): brackets of successive halving that start at
// fidelities S/η^s, s = smax..0, each keeping the best 1/η of a rung for
// the next fidelity, 4 evaluations at a time (4 parallel runners, a rung
// waits for its last batch). Configurations are proposed by
//   - random: uniform random points (Hyperband);
//   - GP: BOHB-style. Before each bracket, a fresh GP from optimizers/bayes
//     is fit on the observations of the highest fidelity that has at least
//     D+2 of them (D dimensions) and suggests the bracket's configurations;
//     a third of them stay random, as in BOHB, and all are random until
//     some fidelity has D+2 observations. The fidelity is not a GP input.
// Measured: the fidelity spent (sum of r) until an evaluation at full
// fidelity S reaches the best final value that full-fidelity GP-BO (B
// trials, each run to S, 4 at a time) reached with its whole budget B·S.

package main

import (
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/benchtune/bench/optimizers/bayes"
	"github.com/benchtune/bench/tunables"
)

const hbEta = 3

// fullGPBest is the best final value of full-fidelity GP-BO with budget
// trials, pruneParallel at a time.
func fullGPBest(p problem, budget int, seed int64) (float64, error) {
	full, err := bayes.New(p.dims, bayes.Options{Seed: seed, MaxTrials: budget})
	if err != nil {
		return 0, err
	}
	best := math.Inf(1)
	for n := 0; n < budget; n += pruneParallel {
		pts, err := full.Suggest(min(pruneParallel, budget-n), nil)
		if err != nil {
			return 0, err
		}
		var obs []bayes.Observation
		for _, x := range pts {
			y := p.f(x)
			obs = append(obs, bayes.Observation{X: x, Y: y})
			best = min(best, y[0])
		}
		if err := full.Observe(obs...); err != nil {
			return 0, err
		}
	}
	return best, nil
}

// hbBrackets lists, for max fidelity S and η, the brackets as (n, r):
// n configurations started at fidelity r (integer fidelities, r >= 1).
func hbBrackets(steps int) (ns, rs []int) {
	smax := 0
	for r := steps; r >= hbEta; r /= hbEta {
		smax++
	}
	for s := smax; s >= 0; s-- {
		pow := int(math.Pow(hbEta, float64(s)))
		n := int(math.Ceil(float64(smax+1) / float64(s+1) * float64(pow)))
		r := max(1, steps/pow)
		ns, rs = append(ns, n), append(rs, r)
	}
	return ns, rs
}

type hbObs struct {
	x tunables.Point
	y float64
}

// hbPropose returns n configurations: random, or BOHB-style from a GP fit
// on the highest fidelity with enough observations.
func hbPropose(p problem, n int, useModel bool, byFid map[int][]hbObs, seed int64, random *randomSearch) ([]tunables.Point, error) {
	var out []tunables.Point
	if useModel {
		fid := -1
		for r, obs := range byFid {
			if len(obs) >= len(p.dims)+2 && r > fid {
				fid = r
			}
		}
		nModel := n - n/3 // a third stays random
		if fid > 0 && nModel > 0 {
			obs := byFid[fid]
			gp, err := bayes.New(p.dims, bayes.Options{Seed: seed, NRandomInit: 1})
			if err != nil {
				return nil, err
			}
			for _, o := range obs {
				if err := gp.Observe(bayes.Observation{X: o.x, Y: []float64{o.y}}); err != nil {
					return nil, err
				}
			}
			pts, err := gp.Suggest(nModel, nil)
			if err != nil {
				return nil, err
			}
			out = append(out, pts...)
		}
	}
	for len(out) < n {
		out = append(out, random.point())
	}
	return out, nil
}

// hbRun returns the fidelity Hyperband spent until a full-fidelity
// evaluation reached target (+Inf when limit ran out first) and the
// number of evaluations it made, and the best full-fidelity value it saw.
func hbRun(p problem, steps int, spread, target float64, limit int, useModel bool, seed int64) (cost float64, evals int, best float64, err error) {
	best = math.Inf(1)
	rng := rand.New(rand.NewPCG(uint64(seed), 11))
	random := newRandomSearch(p.dims, seed)
	ns, rs := hbBrackets(steps)
	byFid := map[int][]hbObs{}
	spent, round := 0, 0
	for spent < limit {
		for b := range ns {
			round++
			xs, err := hbPropose(p, ns[b], useModel, byFid, seed*1000+int64(round), random)
			if err != nil {
				return 0, 0, 0, err
			}
			r := rs[b]
			for {
				type ev struct {
					x tunables.Point
					y float64
				}
				var rung []ev
				for i := 0; i < len(xs); i += pruneParallel {
					reached := false
					for _, x := range xs[i:min(i+pruneParallel, len(xs))] {
						spent += r
						evals++
						y := curveAt(p.f(x)[0], r, steps, spread, rng)
						rung = append(rung, ev{x, y})
						byFid[r] = append(byFid[r], hbObs{x, y})
						if r == steps {
							best = min(best, y)
							reached = reached || y <= target
						}
					}
					if reached {
						return float64(spent), evals, best, nil
					}
					if spent >= limit {
						return math.Inf(1), evals, best, nil
					}
				}
				if r >= steps {
					break
				}
				slices.SortStableFunc(rung, func(a, b ev) int {
					switch {
					case a.y < b.y:
						return -1
					case a.y > b.y:
						return 1
					}
					return 0
				})
				keep := max(1, len(rung)/hbEta)
				xs = xs[:0]
				for _, e := range rung[:keep] {
					xs = append(xs, e.x)
				}
				r = min(steps, r*hbEta)
			}
		}
	}
	return math.Inf(1), evals, best, nil
}

// benchHyperband: scale multiplies the curve's D (offset and noise; 1 is
// the -prune curve), to see how much the result depends on how well the
// low fidelities rank configurations.
func benchHyperband(w io.Writer, cfg config, p problem, budget, steps int, scale float64) error {
	spread := scale * spreadOf(p)
	ns, rs := hbBrackets(steps)
	fmt.Fprintf(w, "== multi-fidelity on %s: fidelity r = steps of the learning curve (1..%d; offset D·(1-r/S), noise sd D/2·(1-r/S), D = %s = %s × the values' IQR); %d evaluations at a time\n",
		p.name, steps, fmtV(spread), fmtV(scale), pruneParallel)
	fmt.Fprintf(w, "full GP: %d trials × fidelity %d = %d. Hyperband η=%d, brackets (n@r):", budget, steps, budget*steps, hbEta)
	for i := range ns {
		fmt.Fprintf(w, " %d@%d", ns[i], rs[i])
	}
	fmt.Fprintln(w, "; fidelity spent to reach the full run's best final value")
	type res struct {
		target float64
		cost   [2]float64
		evals  [2]int
		best   [2]float64
		err    error
	}
	out := make([]res, cfg.seeds)
	eachSeed(cfg.workers, cfg.seeds, func(s int) {
		seed := int64(s + 1)
		t, err := fullGPBest(p, budget, seed)
		if err != nil {
			out[s].err = err
			return
		}
		out[s].target = t
		for v, useModel := range []bool{false, true} {
			c, n, b, err := hbRun(p, steps, spread, t, budget*steps, useModel, seed)
			if err != nil {
				out[s].err = err
				return
			}
			out[s].cost[v], out[s].evals[v], out[s].best[v] = c, n, b
		}
	})
	var ratios [2][]float64
	for s, r := range out {
		if r.err != nil {
			return r.err
		}
		fmt.Fprintf(w, "seed %2d: full best %s;", s+1, fmtV(r.target))
		for v, name := range []string{"Hyperband(random)", "BOHB(GP)"} {
			ratio := float64(budget*steps) / r.cost[v]
			ratios[v] = append(ratios[v], ratio)
			fmt.Fprintf(w, " %s %s spent (%d evals, best %s) %.2f×;", name, fmtV(r.cost[v]), r.evals[v], fmtV(r.best[v]), ratio)
		}
		fmt.Fprintln(w)
	}
	var targets []float64
	var bests [2][]float64
	for _, r := range out {
		targets = append(targets, r.target)
		bests[0], bests[1] = append(bests[0], r.best[0]), append(bests[1], r.best[1])
	}
	_, mt, _ := quartiles(targets)
	_, m0, _ := quartiles(bests[0])
	_, m1, _ := quartiles(bests[1])
	fmt.Fprintf(w, "median best final value: full GP %s; at the same limit Hyperband(random) %s, BOHB(GP) %s\n", fmtV(mt), fmtV(m0), fmtV(m1))
	for v, name := range []string{"Hyperband(random)", "BOHB(GP)"} {
		q1, med, q3 := quartiles(ratios[v])
		fmt.Fprintf(w, "median ratio (full cost / %s cost): %.2f× [%.2f, %.2f] over %d seeds (a seed that never reached it counts 0)\n",
			name, med, q1, q3, cfg.seeds)
	}
	fmt.Fprintln(w)
	return nil
}
