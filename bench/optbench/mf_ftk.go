// The learning-curve kernel in -mf (hyperband_mf.go): any gp-fid or
// gp-mfacq method followed by "-decay" runs the same GP with the
// freeze-thaw curve term along the fidelity (optimizers/bayes
// SetFidelityKernel("decay"), ftk.go), e.g. asha-gp-fid-min3-decay. This
// is what the scheduler does with fidelity kernel "decay".

package main

import (
	"strings"

	"github.com/benchtune/bench/optimizers/bayes"
)

// mfSplitDecay strips a trailing "-decay" from method m.
func mfSplitDecay(m string) (string, bool) {
	if base, ok := strings.CutSuffix(m, "-decay"); ok && base != "" {
		return base, true
	}
	return m, false
}

// mfSetDecay turns the curve term on in m's GP when decay is set.
func mfSetDecay(m *mfGPFid, decay bool) error {
	if !decay {
		return nil
	}
	return m.gp.SetFidelityKernel(bayes.FidelityKernelDecay)
}
