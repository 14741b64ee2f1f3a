package bayes

import (
	"errors"
	"fmt"
	"slices"
	"sort"

	"github.com/benchtune/bench/optimizers/internal/space"
	"github.com/benchtune/bench/tunables"
)

// AcqNear is a diagnostic of the acquisition's optimiser (bench/optbench
// -acq-diag): under the model of the observations so far, it returns the
// log expected improvement Suggest maximises (augmented in noise-aware
// mode) at p, and the highest value its local ascent (the gradient and
// neighbour steps Suggest refines its best candidates with) reaches from
// from, with the point it reaches. Call it right after Suggest, before
// observing the suggestion: the model is then the one Suggest used, and
// asking neither refits it nor draws from the optimizer's random
// generator. Single objective, no trust region, no fidelity input.
func (o *Optimizer) AcqNear(p, from tunables.Point) (atP, best float64, reached tunables.Point, err error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.m != 1 || o.trActive() || o.fid != nil || o.theta == nil {
		return 0, 0, nil, errors.New("AcqNear: needs a fitted single-objective model without a trust region or fidelity input")
	}
	if err := o.sp.Check(p); err != nil {
		return 0, 0, nil, err
	}
	if err := o.sp.Check(from); err != nil {
		return 0, 0, nil, err
	}
	if err := o.prepareModel(o.targets(nil)); err != nil {
		return 0, 0, nil, err
	}
	g := o.g
	d := o.sp.Len()
	a := &acq{o: o, g: g, best: o.incumbentAt(g),
		dmu: make([]float64, d), dv: make([]float64, d), grad: make([]float64, d)}
	if o.aware {
		a.best, a.noise = aeiThreshold(g), g.noise
	}
	avoid := func(key string) bool {
		_, seen := o.hist.Lookup(key)
		return seen
	}
	start := o.sp.Snap(slices.Clone(from))
	reached, best = o.refine(a, start, a.value(start), avoid)
	return a.value(o.sp.Snap(slices.Clone(p))), best, reached, nil
}

// SetAcqEffort sets how hard Suggest maximises the acquisition outside a
// trust region: random candidates (default 256), how many of the best
// candidates are refined by local ascent (default 3; they are mostly
// perturbations of the best observed points), and how many of the best
// random candidates are refined as well (global starts, default 0); 0
// keeps a default. An experiment of bench/optbench (-acq-effort): nothing
// in bench calls it.
func (o *Optimizer) SetAcqEffort(random, starts, global int) error {
	if random < 0 || starts < 0 || global < 0 {
		return fmt.Errorf("acquisition effort: %d random candidates, %d refined, %d global starts: must not be negative", random, starts, global)
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	o.acqRandom, o.acqStarts, o.acqGlobal = random, starts, global
	return nil
}

// globalCands returns a copy of the random candidates (the first ones of
// cands) when global starts are set, else nil.
func (o *Optimizer) globalCands(cands []cand) []cand {
	if o.acqGlobal == 0 {
		return nil
	}
	return slices.Clone(cands)
}

// refineGlobal refines the acqGlobal best of the random candidates not
// refined yet, and returns the best of them and best.
func (o *Optimizer) refineGlobal(a *acq, global []cand, best cand, started map[string]bool, avoid func(string) bool) cand {
	if len(global) == 0 {
		return best
	}
	sort.SliceStable(global, func(i, j int) bool { return global[i].f > global[j].f })
	n := 0
	for _, c := range global {
		if n >= o.acqGlobal {
			break
		}
		key := space.Key(c.p)
		if started[key] {
			continue
		}
		started[key] = true
		n++
		if p, f := o.refine(a, c.p, c.f, avoid); f > best.f {
			best = cand{p, f}
		}
	}
	return best
}

// acqEffort returns the random candidates and refined starts of
// maximizeAcq.
func (o *Optimizer) acqEffort() (random, starts int) {
	random, starts = nRandomCandidates, nRefineStarts
	if o.acqRandom > 0 {
		random = o.acqRandom
	}
	if o.acqStarts > 0 {
		starts = o.acqStarts
	}
	return random, starts
}
