package launcher

import (
	"github.com/benchtune/bench/optimizers"
	"github.com/benchtune/bench/schedulers"
)

// checkFidelityKernel checks fidelity.kernel "decay" against the
// optimizer (in provision, so bench validate says it too): it needs one
// whose model has a kernel along the fidelity
// (optimizers.FidelityKernelSetter).
func (r *Run) checkFidelityKernel(cfg schedulers.Config) error {
	f := cfg.Fidelity
	if !f.On() || f.Kernel == "" || f.Kernel == schedulers.KernelStationary {
		return nil
	}
	if ks, ok := r.Optimizer.(optimizers.FidelityKernelSetter); ok && ks.HasFidelityKernel() {
		return nil
	}
	err := f.Ref.Child("kernel").Errorf("%s", schedulers.KernelSettingError(r.Optimizer.Name()))
	if f.Ref.Node() == nil {
		// Given as a global (a globals file or --fidelity).
		return locateGlobal(r.Launch, "fidelity", err)
	}
	return err
}
