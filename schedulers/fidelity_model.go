// Multi-fidelity promotions decided by the optimizer's model (fidelity
// promote_by "model", bench only): the planner ranks each rung's results by
// the optimizer's predicted value at full fidelity
// (optimizers.FidelityPredictor) instead of the values observed at the
// rung. Early rungs rank good configurations poorly when learning curves
// cross (a fast learner that plateaus higher looks best after a few
// epochs); the model, fed with every result at every fidelity, predicts
// the full-fidelity value from all of them.
//
// On resume the optimizer is rebuilt from the stored results (newDispatch
// registers them before the first promotion), so promotions due then are
// decided by the rebuilt model: the same data, but its hyperparameter fit
// may differ in the last digits from the model of the run that stopped,
// so the order of promotions after a resume is not guaranteed to be the
// one an uninterrupted run would have made (the rungs, the results and
// the rule are).

package schedulers

import (
	"fmt"
	"math"

	"github.com/benchtune/bench/optimizers"
	"github.com/benchtune/bench/tunables"
)

// fidelityRanker ranks promotions by the optimizer's prediction, with the
// predictions cached until the optimizer learns something new.
type fidelityRanker struct {
	run   *fidelityRun
	opt   optimizers.FidelityPredictor
	warn  func(msg string, args ...any)
	cache map[string]float64
}

// setupRanker wires promote_by "model" and start "model" (setupFidelity):
// the optimizer must predict at full fidelity.
func (f *fidelityRun) setupRanker(s *Scheduler) error {
	key := ""
	switch {
	case f.cfg.PromoteBy == PromoteByModel:
		key = "promote_by"
	case f.cfg.Start == StartModel:
		key = "start"
	default:
		return nil
	}
	fp, ok := s.opt.(optimizers.FidelityPredictor)
	if !ok || f.aware == nil || !fp.PredictsFull() {
		return f.cfg.Ref.Child(key).Errorf("%s", ModelSettingError(key, s.opt.Name()))
	}
	f.pred = &fidelityRanker{run: f, opt: fp, warn: s.log.Warn}
	if f.cfg.PromoteBy == PromoteByModel {
		f.plan.SetRanker(f.pred.rank)
	}
	return nil
}

// ModelSettingError is the error for promote_by or start "model" (key)
// with an optimizer that does not predict at full fidelity.
func ModelSettingError(key, optimizer string) string {
	other := PromoteByObserved
	if key == "start" {
		other = StartBracket
	}
	return needsModelError(key, "model", " and predicts the full one", optimizer, fmt.Sprintf("use %s %q", key, other))
}

// startFull reports whether a new configuration starts directly at full
// fidelity (start "model"): the model gives it a probability of at least
// start_confidence of beating the incumbent there. False without the
// setting, before the model can predict, or when it fails.
func (f *fidelityRun) startFull(tun *tunables.Groups) bool {
	if f.cfg.Start != StartModel || f.pred == nil {
		return false
	}
	pred, inc, ok, err := f.pred.opt.PredictFull([]*tunables.Groups{tun}, true)
	if err != nil {
		f.pred.warn("fidelity: the optimizer could not predict at full fidelity; starting the configuration in a bracket", "err", err)
		return false
	}
	return ok && len(pred) == 1 && probBelow(pred[0].Mean, pred[0].SD, inc) >= f.cfg.StartConfidence
}

// probBelow is P(X < v) for X ~ N(mu, sd²).
func probBelow(mu, sd, v float64) float64 {
	if !(sd > 0) {
		if mu < v {
			return 1
		}
		return 0
	}
	return 0.5 * math.Erfc(-(v-mu)/(sd*math.Sqrt2))
}

// changed drops the cached predictions (the optimizer was given a result).
func (r *fidelityRanker) changed() {
	if r != nil {
		r.cache = nil
	}
}

// rank is the planner's Ranker: the predicted values at full fidelity of
// the configurations keys (chain keys); false, to rank by the observed
// values, while the model cannot predict.
func (r *fidelityRanker) rank(keys []string) ([]float64, bool) {
	if r.cache == nil {
		r.cache = map[string]float64{}
	}
	var miss []string
	var tuns []*tunables.Groups
	for _, k := range keys {
		if _, ok := r.cache[k]; ok {
			continue
		}
		c := r.run.chains[k]
		if c == nil {
			return nil, false
		}
		miss = append(miss, k)
		tuns = append(tuns, c.tun)
	}
	if len(tuns) > 0 {
		pred, _, ok, err := r.opt.PredictFull(tuns, false)
		if err != nil {
			r.warn("fidelity: the optimizer could not predict at full fidelity; promoting by the observed values", "err", err)
			return nil, false
		}
		if !ok {
			return nil, false
		}
		for i, k := range miss {
			r.cache[k] = pred[i].Mean
		}
	}
	out := make([]float64, len(keys))
	for i, k := range keys {
		out[i] = r.cache[k]
	}
	return out, true
}
