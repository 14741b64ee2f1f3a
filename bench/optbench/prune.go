// The early-stopping benchmark (-prune B,S): a learning-curve problem
// where a trial runs S steps, each step costs 1, and the value at step s
// is the final value plus an offset and noise that shrink to 0 at step S
// (noisy at low steps, correlated with the final value). GP-BO with every
// trial run to the end (B trials, cost B·S) is compared with GP-BO whose
// trials are judged by the ASHA pruner (schedulers/prune, as the
// scheduler does it: 4 trials at a time, pruned trials never observed):
// the cost (steps spent) at which the pruned run first reaches the best
// final value the full run reached with its whole budget.

package main

import (
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/benchtune/bench/optimizers/bayes"
	"github.com/benchtune/bench/schedulers/prune"
	"github.com/benchtune/bench/tunables"
)

// curveAt is the learning curve of final value f at step s of n: an
// offset of spread and noise of sd spread/2, both shrinking to 0 at step n
// (spread is the interquartile range of the problem's values).
func curveAt(f float64, s, n int, spread float64, rng *rand.Rand) float64 {
	left := float64(n-s) / float64(n)
	if left <= 0 {
		return f
	}
	return f + spread*left + spread/2*left*rng.NormFloat64()
}

// spreadOf is the interquartile range of p's values at 256 random points.
func spreadOf(p problem) float64 {
	rng := rand.New(rand.NewPCG(1, 2))
	var v []float64
	for range 256 {
		x := make(tunables.Point, len(p.dims))
		for i := range x {
			x[i] = rng.Float64()
		}
		v = append(v, p.f(x)[0])
	}
	q1, _, q3 := quartiles(v)
	return q3 - q1
}

const pruneParallel = 4

// pruneRun returns, for one seed, the full run's best final value and the
// pruned run's cost to reach it (+Inf when its budget of B·S steps ran
// out first) and how many trials it started.
func pruneRun(p problem, budget, steps int, spread float64, seed int64, observePruned bool) (target, cost float64, started int, err error) {
	if target, err = fullGPBest(p, budget, seed); err != nil {
		return 0, 0, 0, err
	}
	cap := budget * steps
	pr, err := bayes.New(p.dims, bayes.Options{Seed: seed, MaxTrials: cap})
	if err != nil {
		return 0, 0, 0, err
	}
	asha := &prune.ASHA{MinStep: 1, Eta: 3, MaxStep: int64(steps)}
	rng := rand.New(rand.NewPCG(uint64(seed), 7))
	spent, id := 0, 0
	best := math.Inf(1)
	var pending []tunables.Point
	for spent < cap {
		pts, err := pr.Suggest(pruneParallel, pending)
		if err != nil {
			return 0, 0, 0, err
		}
		type run struct {
			id    int
			x     tunables.Point
			final float64
			last  float64 // the last value reported
			alive bool
		}
		runs := make([]run, len(pts))
		for i, x := range pts {
			id++
			runs[i] = run{id: id, x: x, final: p.f(x)[0], alive: true}
		}
		started += len(runs)
		// The batch's trials advance in lockstep, one step each in turn.
		for s := 1; s <= steps && spent < cap; s++ {
			for i := range runs {
				if !runs[i].alive || spent >= cap {
					continue
				}
				spent++
				runs[i].last = curveAt(runs[i].final, s, steps, spread, rng)
				if stop, _ := asha.Report(runs[i].id, int64(s), runs[i].last); stop {
					runs[i].alive = false
					asha.Done(runs[i].id)
				}
			}
		}
		var obs []bayes.Observation
		for _, r := range runs {
			if !r.alive {
				if observePruned {
					// Variant: the optimizer learns the pruned trial's last
					// (low-fidelity, pessimistic) value.
					obs = append(obs, bayes.Observation{X: r.x, Y: []float64{r.last}})
					continue
				}
				// Pruned: never given to the optimizer (as the scheduler
				// does), but kept pending so it is not suggested again.
				pending = append(pending, r.x)
				continue
			}
			asha.Done(r.id)
			obs = append(obs, bayes.Observation{X: r.x, Y: []float64{r.final}})
			if r.final < best {
				best = r.final
			}
			if best <= target && cost == 0 {
				cost = float64(spent)
			}
		}
		if cost > 0 {
			return target, cost, started, nil
		}
		if len(obs) > 0 {
			if err := pr.Observe(obs...); err != nil {
				return 0, 0, 0, err
			}
		}
	}
	return target, math.Inf(1), started, nil
}

func benchPrune(w io.Writer, cfg config, p problem, budget, steps int) error {
	spread := spreadOf(p)
	fmt.Fprintf(w, "== early stopping on %s with a learning curve of %d steps (offset D·(1-s/S), noise sd D/2·(1-s/S), D = %s the values' IQR); %d trials at a time\n",
		p.name, steps, fmtV(spread), pruneParallel)
	fmt.Fprintf(w, "full GP: %d trials × %d steps = %d steps. GP+ASHA (eta 3, rungs 1,3,9,..): steps spent to reach the full run's best final value\n",
		budget, steps, budget*steps)
	for _, observePruned := range []bool{false, true} {
		if err := benchPruneVariant(w, cfg, p, budget, steps, spread, observePruned); err != nil {
			return err
		}
	}
	return nil
}

func benchPruneVariant(w io.Writer, cfg config, p problem, budget, steps int, spread float64, observePruned bool) error {
	name := "GP+ASHA, pruned trials not observed (as the scheduler)"
	if observePruned {
		name = "GP+ASHA, pruned trials observed at their last value"
	}
	fmt.Fprintln(w, name)
	type res struct {
		target, cost float64
		started      int
		err          error
	}
	out := make([]res, cfg.seeds)
	eachSeed(cfg.workers, cfg.seeds, func(s int) {
		t, c, n, err := pruneRun(p, budget, steps, spread, int64(s+1), observePruned)
		out[s] = res{t, c, n, err}
	})
	var ratios []float64
	for s, r := range out {
		if r.err != nil {
			return r.err
		}
		ratio := float64(budget*steps) / r.cost
		ratios = append(ratios, ratio)
		fmt.Fprintf(w, "seed %2d: full best %s; GP+ASHA reached it after %s steps (%d trials started): %.2f× less\n",
			s+1, fmtV(r.target), fmtV(r.cost), r.started, ratio)
	}
	slices.Sort(ratios)
	q1, med, q3 := quartiles(ratios)
	fmt.Fprintf(w, "median ratio (full cost / GP+ASHA cost): %.2f× [%.2f, %.2f] over %d seeds (a seed that never reached it counts 0)\n\n",
		med, q1, q3, cfg.seeds)
	return nil
}
