package hyperband

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"
)

// # Dynamic continuation (DyHPO-style)
//
// SetDynamic replaces successive halving's fixed promotions by a race
// supervised by a model, as DyHPO does (Wistuba, Kadra and Grabocka,
// "Supervising the Multi-Fidelity Race of Hyperparameter Configurations",
// NeurIPS 2022): every configuration starts at the first rung (one
// bracket), and at each free runner the caller asks Next whether to
// continue one of the paused configurations by one rung (any of them,
// not only a rung's top 1/Eta) or to start a new configuration. The
// choice maximises the expected improvement (EI) of each candidate at the
// fidelity it would run at: a paused configuration at its *next* rung, a
// new configuration at the first rung, each over the incumbent at that
// fidelity (the best value there). The predictions (mean, standard
// deviation, incumbent, all lower-better and on one scale per fidelity)
// come from the caller's model through a Predictor; the planner stays
// pure. With PerCost the EI is divided by the fidelity the run costs (the
// difference for a continued run, the whole rung for a re-run or a start;
// measured in bench/optbench, not offered by the scheduler).
//
// Promotion and Promotable answer nothing in this mode: continuations are
// made by Next only, and, once no new configuration will come, by Finish
// (the model's favourite at max is continued until it is measured there).
// A planner rebuilt with Resume (bracket 0) and Report
// makes the same decisions as one that never stopped when its predictor
// gives the same predictions.

// Prediction is a model's posterior of a configuration's value at one
// fidelity (lower is better): Mean and SD, and Incumbent, the best value
// at that fidelity on the same scale (+Inf: none yet).
type Prediction struct {
	Mean, SD, Incumbent float64
}

// Predictor returns the predictions of the configurations keys, keys[i] at
// rung rungs[i]'s fidelity; ok false: no model yet (Next then starts new
// configurations).
type Predictor[K cmp.Ordered] func(keys []K, rungs []int) (pred []Prediction, ok bool)

// Dynamic is the setting of the dynamic mode.
type Dynamic[K cmp.Ordered] struct {
	// Predict is the model (required).
	Predict Predictor[K]
	// PerCost divides each candidate's EI by the fidelity its run costs.
	PerCost bool
	// Continued: a continued configuration pays only the difference
	// between its next rung and the last (promotion by continuation); else
	// it pays the whole next rung (re-run). Used with PerCost.
	Continued bool
}

// ErrDynamicBrackets is returned by SetDynamic on a planner with more than
// one bracket.
var ErrDynamicBrackets = errors.New("the dynamic planner uses one bracket (every configuration starts at min)")

// dynState is the dynamic mode's state.
type dynState[K cmp.Ordered] struct {
	Dynamic[K]
}

// SetDynamic turns the dynamic mode on (see above). The planner must have
// one bracket (Config.Brackets 1).
func (p *Planner[K]) SetDynamic(d Dynamic[K]) error {
	if len(p.count) != 1 {
		return fmt.Errorf("%w: brackets is %d", ErrDynamicBrackets, len(p.count))
	}
	if d.Predict == nil {
		return errors.New("the dynamic planner needs a predictor")
	}
	p.dyn = &dynState[K]{Dynamic: d}
	return nil
}

// IsDynamic reports whether the dynamic mode is on.
func (p *Planner[K]) IsDynamic() bool { return p.dyn != nil }

// Decision is what Next chose: a continuation (Continue set, Job the run
// to start) or a new configuration (Continue unset). Score is the chosen
// candidate's acquisition, Fresh the new configuration's.
type Decision[K cmp.Ordered] struct {
	Continue bool
	Job      Job[K]
	Score    float64
	Fresh    float64
}

// Paused returns the configurations that may be continued, in key order:
// not running, below the last rung, whose last run succeeded.
func (p *Planner[K]) Paused() []K {
	var out []K
	top := len(p.rungs) - 1
	for k, e := range p.entries {
		if e.running || e.rung >= top {
			continue
		}
		s, ok := e.scores[e.rung]
		if !ok || math.IsInf(s, 1) {
			continue
		}
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// Acquisition is a candidate's score: EI of pred over its incumbent,
// divided by cost with PerCost.
func (p *Planner[K]) Acquisition(pred Prediction, cost float64) float64 {
	ei := expectedImprovement(pred.Mean, pred.SD, pred.Incumbent)
	if p.dyn != nil && p.dyn.PerCost && cost > 0 {
		return ei / cost
	}
	return ei
}

// cost is the fidelity a run of configuration e at rung r costs.
func (p *Planner[K]) cost(e *entry, r int) float64 {
	if e != nil && p.dyn.Continued && r > 0 {
		return p.rungs[r] - p.rungs[e.rung]
	}
	return p.rungs[r]
}

// Next decides what a free runner runs (dynamic mode): the paused
// configuration whose acquisition at its next rung is the highest (ties:
// the lower key), when it is above fresh's, the acquisition of a new
// configuration at the first rung (hasFresh false: no new configuration
// is available, any paused one is better; without a model either, the
// one with the best observed value at its rung); then it is recorded as
// started at that rung. Otherwise (no model, nothing paused, or the new
// configuration is at least as promising) Continue is false and the caller
// starts its new configuration with Add(k, 0).
func (p *Planner[K]) Next(fresh Prediction, hasFresh bool) (Decision[K], error) {
	if p.dyn == nil {
		return Decision[K]{}, errors.New("Next: the planner is not in dynamic mode (SetDynamic)")
	}
	freshScore := math.Inf(-1)
	if hasFresh {
		freshScore = p.Acquisition(fresh, p.cost(nil, 0))
	}
	d := Decision[K]{Fresh: freshScore, Score: freshScore}
	keys := p.Paused()
	if len(keys) == 0 {
		return d, nil
	}
	rungs := make([]int, len(keys))
	for i, k := range keys {
		rungs[i] = p.entries[k].rung + 1
	}
	pred, ok := p.dyn.Predict(keys, rungs)
	best, bestV := -1, freshScore
	switch {
	case ok && len(pred) == len(keys):
		for i, k := range keys {
			v := p.Acquisition(pred[i], p.cost(p.entries[k], rungs[i]))
			if math.IsNaN(v) {
				continue
			}
			if v > bestV {
				best, bestV = i, v
			}
		}
	case !hasFresh:
		// No model and no new configuration: the best observed value at
		// its rung goes on (the caller's run must still end at max).
		bestS := math.Inf(1)
		for i, k := range keys {
			e := p.entries[k]
			if s := e.scores[e.rung]; best < 0 || s < bestS {
				best, bestS = i, s
			}
		}
		bestV = math.NaN()
	default:
		return d, nil
	}
	if best < 0 {
		return d, nil
	}
	k := keys[best]
	e := p.entries[k]
	e.rung, e.running = rungs[best], true
	d.Continue, d.Score = true, bestV
	d.Job = Job[K]{Key: k, Bracket: e.bracket, Rung: e.rung, Fidelity: p.rungs[e.rung], Promoted: true}
	return d, nil
}

// expectedImprovement is E[max(inc − f, 0)] for f ~ N(mu, sd²) (0 for an
// infinite incumbent or a NaN mean: nothing to improve on yet counts as
// no evidence; the new configuration competes with the same rule).
func expectedImprovement(mu, sd, inc float64) float64 {
	if math.IsInf(inc, 1) || math.IsNaN(mu) || math.IsNaN(inc) {
		return 0
	}
	d := inc - mu
	if !(sd > 0) || math.IsInf(sd, 0) {
		return max(d, 0)
	}
	z := d / sd
	cdf := 0.5 * math.Erfc(-z/math.Sqrt2)
	pdf := math.Exp(-0.5*z*z) / math.Sqrt(2*math.Pi)
	return max(d*cdf+sd*pdf, 0)
}

// Finish continues the model's favourite to max once no new configuration
// will come (dynamic mode; the caller's optimizer has nothing more to
// suggest): among the configurations that are not running and whose last
// run succeeded, the one with the lowest predicted value at max (ties:
// the lower key) is continued by one rung when it is below max; false
// when it is already at max (the answer is measured), when nothing is
// left, or without a model. Called until false, it runs the favourite up
// the rungs, a rung at a time, as its predictions change.
func (p *Planner[K]) Finish() (Job[K], bool) {
	k, ok := p.favourite()
	if !ok {
		return Job[K]{}, false
	}
	e := p.entries[k]
	e.rung, e.running = e.rung+1, true
	return Job[K]{Key: k, Bracket: e.bracket, Rung: e.rung, Fidelity: p.rungs[e.rung], Promoted: true}, true
}

// Finishing reports whether Finish would continue a configuration.
func (p *Planner[K]) Finishing() bool {
	_, ok := p.favourite()
	return ok
}

// favourite is Finish's choice, without recording it.
func (p *Planner[K]) favourite() (K, bool) {
	var zero K
	if p.dyn == nil {
		return zero, false
	}
	top := len(p.rungs) - 1
	var keys []K
	for k, e := range p.entries {
		if s, ok := e.scores[e.rung]; !e.running && ok && !math.IsInf(s, 1) {
			keys = append(keys, k)
		}
	}
	if len(keys) == 0 {
		return zero, false
	}
	slices.Sort(keys)
	rungs := make([]int, len(keys))
	for i := range rungs {
		rungs[i] = top
	}
	pred, ok := p.dyn.Predict(keys, rungs)
	if !ok || len(pred) != len(keys) {
		return zero, false
	}
	best := -1
	for i := range keys {
		if !math.IsNaN(pred[i].Mean) && (best < 0 || pred[i].Mean < pred[best].Mean) {
			best = i
		}
	}
	if best < 0 || p.entries[keys[best]].rung >= top {
		return zero, false
	}
	return keys[best], true
}
