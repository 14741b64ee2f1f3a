// Multi-fidelity starts chosen by a cost-aware acquisition (fidelity start
// "acquisition", bench only): the optimizer's model, which learns from
// every fidelity, chooses the fidelity a new configuration starts at
// (optimizers.FidelityChooser; for MlosCoreOptimizer with SMAC,
// optimizers/bayes ChooseFidelity, BOCA's rule): the cheapest start whose
// posterior uncertainty about the configuration is still above a
// threshold that grows with the start's cost, else full fidelity. The
// starts it chooses among are the first rungs of the brackets in use and
// full fidelity (with brackets 1, ASHA: the lowest fidelity or the full
// one). From there the configuration goes on by the planner's promotions
// like any other. While the model does not exist yet (fewer than two
// results), a new configuration starts in the bracket Hyperband's shares
// pick, as with start "bracket".
//
// The choice is recorded in the trial's bracket (fidelity metadata), so a
// resumed run rebuilds the plan as it was; the choices for configurations
// suggested after a resume are made by the model rebuilt from the stored
// results.

package schedulers

import (
	"fmt"

	"github.com/benchtune/bench/optimizers"
	"github.com/benchtune/bench/tunables"
)

// StartAcquisition (FidelityConfig.Start) lets the optimizer's cost-aware
// acquisition choose where a new configuration starts: the first rung of
// a bracket in use, or full fidelity.
const StartAcquisition = "acquisition"

// fidelityAcq is start "acquisition"'s state.
type fidelityAcq struct {
	opt  optimizers.FidelityChooser
	warn func(msg string, args ...any)
}

// setupAcq wires start "acquisition" (setupFidelity): the optimizer must
// choose fidelities.
func (f *fidelityRun) setupAcq(s *Scheduler) error {
	if f.cfg.Start != StartAcquisition {
		return nil
	}
	fc, ok := s.opt.(optimizers.FidelityChooser)
	if !ok || f.aware == nil || !fc.ChoosesFidelity() {
		return f.cfg.Ref.Child("start").Errorf("%s", AcquisitionSettingError(s.opt.Name()))
	}
	f.acq = &fidelityAcq{opt: fc, warn: s.log.Warn}
	return nil
}

// ChoosesFidelity reports whether opt can serve fidelity start
// "acquisition".
func ChoosesFidelity(opt optimizers.Optimizer) bool {
	fc, ok := opt.(optimizers.FidelityChooser)
	return ok && fc.ChoosesFidelity()
}

// AcquisitionSettingError is the error for start "acquisition" with an
// optimizer that cannot choose the fidelity.
func AcquisitionSettingError(optimizer string) string {
	return needsModelError("start", StartAcquisition, " and chooses the fidelity by cost", optimizer, fmt.Sprintf("use start %q", StartBracket))
}

// startAcq returns the bracket a new configuration starts in when the
// acquisition chooses it (start "acquisition"), with full set for a start
// at full fidelity outside the brackets in use (the planner's AddFull);
// ok is false without the setting, before the model can choose, or when
// it fails (the caller's usual start applies).
func (f *fidelityRun) startAcq(tun *tunables.Groups) (bracket int, full, ok bool) {
	if f.acq == nil {
		return 0, false, false
	}
	nb := f.plan.Brackets()
	rungs := f.plan.Rungs()
	fids := make([]float64, 0, nb+1)
	for b := range nb {
		fids = append(fids, rungs[b])
	}
	if nb < len(rungs) {
		fids = append(fids, rungs[len(rungs)-1])
	}
	level, ok, err := f.acq.opt.ChooseStart(tun, fids, 0)
	if err != nil {
		f.acq.warn("fidelity: the optimizer could not choose a fidelity; starting the configuration in a bracket", "err", err)
		return 0, false, false
	}
	if !ok || level < 0 || level >= len(fids) {
		return 0, false, false
	}
	if level >= nb {
		return len(rungs) - 1, true, true
	}
	return level, false, true
}
