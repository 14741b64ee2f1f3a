// Multi-fidelity with the dynamic planner (fidelity planner "dyhpo", bench
// only): instead of Hyperband's fixed promotions (a rung's top 1/eta),
// each new suggestion of the optimizer competes with the paused
// configurations: the one with the highest expected improvement at the
// fidelity it would run at (a paused configuration at its next rung, the
// new one at min), over the best value the model predicts at that
// fidelity, runs (schedulers/hyperband dyn.go, DyHPO-style). A
// continuation is queued in place of the suggestion, which is withdrawn.
// The model is the optimizer's (optimizers.FidelityAtPredictor: the GP
// with the fidelity as an input).
//
// On resume the plan is rebuilt from the stored trials as Hyperband's is
// (every configuration in bracket 0), and the decisions that follow are
// made by the optimizer rebuilt from the stored results: the same data,
// but, as with promote_by "model", its hyperparameter fit may differ in
// the last digits from the model of the run that stopped, so the order
// of the next continuations is not guaranteed to be an uninterrupted
// run's.

package schedulers

import (
	"fmt"

	"github.com/benchtune/bench/configs"
	"github.com/benchtune/bench/configs/source"
	"github.com/benchtune/bench/optimizers"
	"github.com/benchtune/bench/schedulers/hyperband"
	"github.com/benchtune/bench/tunables"
)

// Planners (FidelityConfig.Planner).
const (
	// PlannerHyperband: Hyperband brackets with ASHA promotion (the
	// default).
	PlannerHyperband = "hyperband"
	// PlannerDyHPO: one bracket; a paused configuration is continued by
	// one rung, or a new one started, by the model's expected improvement
	// at the next fidelity.
	PlannerDyHPO = "dyhpo"
)

// decodePlanner reads fidelity.planner into f (decodeFidelity), and
// refuses the keys it does not combine with.
func decodePlanner(m map[string]any, ref source.Ref, f *FidelityConfig) []error {
	s, errs := decodeFidelityChoice(m, ref, "planner", true, fmt.Sprintf("%q (Hyperband brackets, promotions of a rung's top 1/eta) or %q (continue a paused configuration or start a new one by the model's expected improvement at its next fidelity)",
		PlannerHyperband, PlannerDyHPO), PlannerHyperband, PlannerDyHPO)
	if s != PlannerDyHPO {
		return errs
	}
	f.Planner = PlannerDyHPO
	if b, has := m["brackets"]; has {
		if n, isInt := toInt(b); !isInt || n != 1 {
			errs = append(errs, ref.Child("brackets").Errorf("fidelity.brackets must be 1 (or absent) with planner %q: every configuration starts at min, got %v", PlannerDyHPO, configs.PyStr(b)))
		}
	}
	for _, k := range []string{"promote_by", "start", "start_confidence"} {
		if _, has := m[k]; has {
			errs = append(errs, ref.Child(k).Errorf("fidelity.%s does not apply with planner %q, which decides continuations and starts by the model itself: remove it", k, PlannerDyHPO))
		}
	}
	f.Brackets = 1
	return errs
}

// DynSettingError is the error for planner "dyhpo" with an optimizer that
// does not predict at every fidelity.
func DynSettingError(optimizer string) string {
	return needsModelError("planner", PlannerDyHPO, " and predicts at any of them", optimizer, fmt.Sprintf("use planner %q", PlannerHyperband))
}

// DynPredictor returns opt's predictor at every fidelity, or false.
func DynPredictor(opt any) (optimizers.FidelityAtPredictor, bool) {
	fp, ok := opt.(optimizers.FidelityAtPredictor)
	if !ok || !fp.PredictsFull() {
		return nil, false
	}
	return fp, true
}

// setupDyn turns the planner's dynamic mode on for planner "dyhpo"
// (setupFidelity).
func (f *fidelityRun) setupDyn(s *Scheduler) error {
	if f.cfg.Planner != PlannerDyHPO {
		return nil
	}
	fp, ok := DynPredictor(s.opt)
	if !ok || f.aware == nil {
		return f.cfg.Ref.Child("planner").Errorf("%s", DynSettingError(s.opt.Name()))
	}
	f.dynOpt = fp
	warn := s.log.Warn
	s.log.Info("fidelity: planner=dyhpo: a paused configuration is continued, or a new one started, by the model's expected improvement at its next fidelity", "continued", f.cfg.Promotion == PromotionContinue)
	return f.plan.SetDynamic(hyperband.Dynamic[string]{
		Continued: f.cfg.Promotion == PromotionContinue,
		Predict: func(keys []string, rungs []int) ([]hyperband.Prediction, bool) {
			tuns := make([]*tunables.Groups, len(keys))
			fids := make([]float64, len(keys))
			for i, k := range keys {
				c := f.chains[k]
				if c == nil {
					return nil, false
				}
				tuns[i], fids[i] = c.tun, f.plan.Fidelity(rungs[i])
			}
			return f.dynPredict(tuns, fids, warn)
		},
	})
}

// dynPredict asks the optimizer for predictions at fidelities.
func (f *fidelityRun) dynPredict(tuns []*tunables.Groups, fids []float64, warn func(string, ...any)) ([]hyperband.Prediction, bool) {
	pred, inc, ok, err := f.dynOpt.PredictAt(tuns, fids)
	if err != nil {
		warn("fidelity: the optimizer could not predict; starting new configurations", "err", err)
		return nil, false
	}
	if !ok || len(pred) != len(tuns) || len(inc) != len(tuns) {
		return nil, false
	}
	out := make([]hyperband.Prediction, len(pred))
	for i := range pred {
		out[i] = hyperband.Prediction{Mean: pred[i].Mean, SD: pred[i].SD, Incumbent: inc[i]}
	}
	return out, true
}

// fidelityDynFirst decides, for a new suggestion of configuration key
// (fidelityFirst), between starting it and continuing a paused
// configuration (planner "dyhpo"). When a continuation wins it is queued
// in the suggestion's place, the suggestion withdrawn, and handled set.
func (d *dispatch) fidelityDynFirst(id int, tun *tunables.Groups) (handled bool, err error) {
	f := d.s.fid
	if f == nil || !f.plan.IsDynamic() {
		return false, nil
	}
	fresh, hasFresh := hyperband.Prediction{}, false
	if p, ok := f.dynPredict([]*tunables.Groups{tun}, []float64{f.plan.Fidelity(0)}, d.s.log.Warn); ok {
		fresh, hasFresh = p[0], true
	}
	dec, err := f.plan.Next(fresh, hasFresh)
	if err != nil || !dec.Continue {
		return false, err
	}
	spec, err := d.fidelitySpec(dec.Job)
	if err != nil {
		return true, err
	}
	d.s.log.Info("fidelity: continuing a configuration instead of starting the suggested one (its expected improvement at its next fidelity is higher)",
		"rung", dec.Job.Rung, "fidelity", fidelityText(dec.Job.Fidelity), "acquisition", dec.Score, "new_configuration", dec.Fresh)
	d.withdraw(id)
	d.queue = append(d.queue, item{spec: &spec})
	return true, nil
}

// fidelityDynRefill is fidelityRefill for planner "dyhpo": while the
// optimizer suggests, the decisions are made with each suggestion
// (fidelityDynFirst); once it has nothing more to suggest, the model's
// favourite (the best predicted value at max among the configurations
// not running) is continued a rung at a time until it is at max
// (hyperband Finish), so that the run ends with the configuration the
// model expects to be best measured at full fidelity.
func (d *dispatch) fidelityDynRefill(want int) (handled, progressed bool, err error) {
	f := d.s.fid
	if d.notDone() {
		return false, false, nil
	}
	n := 0
	for n < want && !f.capped() {
		j, ok := f.plan.Finish()
		if !ok {
			break
		}
		spec, err := d.fidelitySpec(j)
		if err != nil {
			return true, n > 0, err
		}
		d.s.log.Info("fidelity: continuing the configuration the model expects to be best towards max (the optimizer has nothing more to suggest)", "rung", j.Rung, "fidelity", fidelityText(j.Fidelity))
		d.queue = append(d.queue, item{spec: &spec})
		n++
	}
	return n > 0 || f.capped(), n > 0, nil
}

// fidelityDynMore is fidelityMore for planner "dyhpo": the model's
// favourite is still to be continued once the optimizer has nothing more
// to suggest (fidelityDynRefill).
func (d *dispatch) fidelityDynMore() bool {
	f := d.s.fid
	return !d.s.o.Worker && d.stopErr == nil && !f.capped() && !d.stopFired() && !d.notDone() && f.plan.Finishing()
}
