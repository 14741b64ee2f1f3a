// The optimizer model's kernel along the fidelity (fidelity "kernel",
// bench only): "stationary" (default) keeps the GP's Matérn kernel with
// the fidelity as one more input; "decay" adds freeze-thaw's
// learning-curve kernel (optimizers/bayes ftk.go), for fidelities that
// are training lengths or run lengths whose results converge as they grow.

package schedulers

import (
	"fmt"

	"github.com/benchtune/bench/configs"
	"github.com/benchtune/bench/configs/source"
	"github.com/benchtune/bench/optimizers"
)

// Fidelity kernels (FidelityConfig.Kernel).
const (
	KernelStationary = "stationary"
	KernelDecay      = "decay"
)

// decodeFidelityKernel reads fidelity.kernel into f.Kernel.
func decodeFidelityKernel(m map[string]any, ref source.Ref, f *FidelityConfig) []error {
	v, ok := m["kernel"]
	if !ok {
		return nil
	}
	s, _ := v.(string)
	if s != KernelStationary && s != KernelDecay {
		return []error{ref.Child("kernel").Errorf("fidelity.kernel must be %q (the fidelity as one more input of the GP's kernel) or %q (freeze-thaw's learning-curve kernel), got %v",
			KernelStationary, KernelDecay, configs.PyStr(v))}
	}
	f.Kernel = s
	return nil
}

// setupKernel passes fidelity.kernel to the optimizer (setupFidelity).
// "decay" needs an optimizer whose model learns from every fidelity.
func (f *fidelityRun) setupKernel(s *Scheduler) error {
	if f.cfg.Kernel == "" || f.cfg.Kernel == KernelStationary {
		return nil
	}
	ks, ok := s.opt.(optimizers.FidelityKernelSetter)
	if !ok || f.aware == nil || !ks.HasFidelityKernel() {
		return f.cfg.Ref.Child("kernel").Errorf("%s", KernelSettingError(s.opt.Name()))
	}
	if err := ks.SetFidelityKernel(f.cfg.Kernel); err != nil {
		return f.cfg.Ref.Child("kernel").Errorf("fidelity.kernel: optimizer %s: %v", s.opt.Name(), err)
	}
	s.log.Info("multi-fidelity: the optimizer's kernel along the fidelity", "kernel", f.cfg.Kernel)
	return nil
}

// KernelSettingError is the error for fidelity kernel "decay" with an
// optimizer without a model along the fidelity.
func KernelSettingError(optimizer string) string {
	return fmt.Sprintf("fidelity.kernel %q needs an optimizer whose model learns from every fidelity (MlosCoreOptimizer with optimizer_type SMAC, bench's default); optimizer %s has none: remove kernel or use %q",
		KernelDecay, optimizer, KernelStationary)
}
