package launcher

import "github.com/benchtune/bench/schedulers"

// checkFidelityPlanner checks fidelity.planner "dyhpo" against the
// optimizer (in provision, so bench validate says it too): it needs one
// that predicts at every fidelity (optimizers.FidelityAtPredictor).
func (r *Run) checkFidelityPlanner(cfg schedulers.Config) error {
	f := cfg.Fidelity
	if !f.On() || f.Planner != schedulers.PlannerDyHPO {
		return nil
	}
	if _, ok := schedulers.DynPredictor(r.Optimizer); ok {
		return nil
	}
	err := f.Ref.Child("planner").Errorf("%s", schedulers.DynSettingError(r.Optimizer.Name()))
	if f.Ref.Node() == nil {
		// Given as a global (a globals file or --fidelity).
		return locateGlobal(r.Launch, "fidelity", err)
	}
	return err
}
