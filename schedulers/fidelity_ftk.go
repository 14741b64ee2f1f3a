// The optimizer model's kernel along the fidelity (fidelity "kernel",
// bench only): "stationary" (default) keeps the GP's Matérn kernel with
// the fidelity as one more input; "decay" adds freeze-thaw's
// learning-curve kernel (optimizers/bayes ftk.go), for fidelities that
// are training lengths or run lengths whose results converge as they grow.

package schedulers

import (
	"fmt"
	"slices"
	"strings"

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
	s, errs := decodeFidelityChoice(m, ref, "kernel", false, fmt.Sprintf("%q (the fidelity as one more input of the GP's kernel) or %q (freeze-thaw's learning-curve kernel)",
		KernelStationary, KernelDecay), KernelStationary, KernelDecay)
	if s != "" {
		f.Kernel = s
	}
	return errs
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
	return needsModelError("kernel", KernelDecay, "", optimizer, fmt.Sprintf("remove kernel or use %q", KernelStationary))
}

// decodeFidelityChoice reads fidelity.<key>, one of allowed (none of them
// ""; explain lists them for the error), trimmed of surrounding white
// space where trim is set (decodePlanner, decodeFidelityKernel). It gives
// "" where the key is absent or its value refused, then with the error.
func decodeFidelityChoice(m map[string]any, ref source.Ref, key string, trim bool, explain string, allowed ...string) (string, []error) {
	v, ok := m[key]
	if !ok {
		return "", nil
	}
	s, _ := v.(string)
	if trim {
		s = strings.TrimSpace(s)
	}
	if !slices.Contains(allowed, s) {
		return "", []error{ref.Child(key).Errorf("fidelity.%s must be %s, got %v", key, explain, configs.PyStr(v))}
	}
	return s, nil
}

// needsModelError is the error for fidelity.<key> value with an optimizer
// (named optimizer) without the model the value needs: one that learns
// from every fidelity, and does what also says ("" or, e.g., " and
// predicts at any of them"); instead says what to do in its place
// (DynSettingError, KernelSettingError).
func needsModelError(key, value, also, optimizer, instead string) string {
	return fmt.Sprintf("fidelity.%s %q needs an optimizer whose model learns from every fidelity%s (MlosCoreOptimizer with optimizer_type SMAC, bench's default); optimizer %s has none: %s",
		key, value, also, optimizer, instead)
}
