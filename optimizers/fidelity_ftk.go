package optimizers

import "fmt"

// FidelityKernelSetter is implemented by FidelityAware optimizers whose
// model has a choice of kernel along the fidelity (bench only; the
// scheduler's fidelity "kernel"): "stationary" (the default) or "decay"
// (freeze-thaw's learning-curve kernel, optimizers/bayes
// SetFidelityKernel).
type FidelityKernelSetter interface {
	FidelityAware
	// HasFidelityKernel reports whether SetFidelityKernel can be used.
	HasFidelityKernel() bool
	// SetFidelityKernel chooses the kernel; call it after SetFidelity.
	SetFidelityKernel(name string) error
}

var _ FidelityKernelSetter = (*MlosCore)(nil)

// HasFidelityKernel: with the GP (optimizer_type SMAC).
func (m *MlosCore) HasFidelityKernel() bool { return m.kind == "SMAC" }

// SetFidelityKernel passes the kernel to the GP with the fidelity input.
func (m *MlosCore) SetFidelityKernel(name string) error {
	if m.fid == nil || m.fid.gp == nil {
		return fmt.Errorf("%s: the fidelity kernel needs SetFidelity first, with optimizer_type SMAC", m.name)
	}
	if err := m.fid.gp.SetFidelityKernel(name); err != nil {
		return fmt.Errorf("%s: %w", m.name, err)
	}
	return nil
}

// FidelityKernel returns the GP's kernel along the fidelity ("" without
// the GP's fidelity mode).
func (m *MlosCore) FidelityKernel() string {
	if m.fid == nil || m.fid.gp == nil {
		return ""
	}
	return m.fid.gp.FidelityKernel()
}
