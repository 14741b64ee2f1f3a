package main

import (
	"fmt"
	"io"

	"github.com/benchtune/bench/optimizers/bayes"
)

// -noise-kernel: the noise-aware methods' kernel, "matern" (the default:
// the Matérn-5/2 ARD kernel) or "additive" (bayes.Optimizer.SetAdditive:
// the Matérn kernel mixed with its first-order additive part, the share
// fitted; optimizers/bayes/additive.go), or "additive10" (the additive
// kernel from 10 dimensions up, the Matérn kernel below). naive and
// noisefree are today's GP either way. "additive-bic": at each fit the
// additive kernel only where it beats the plain one by a BIC penalty
// (SetAdditiveSelect).
var noiseKernel = "matern"

// noiseKernelCheck rejects an unknown -noise-kernel, and the additive
// kernel with a local search (SetAdditive does not combine with it); it
// names a kernel other than the default in the output.
func noiseKernelCheck(w io.Writer) error {
	if err := noiseNCheck(w); err != nil { // noise_n.go
		return err
	}
	switch noiseKernel {
	case "matern":
		return nil
	case "additive", "additive10", "additive-bic", noiseKernelLOO:
		if noiseSearch != "global" {
			return fmt.Errorf("-noise-kernel %s needs -noise-search global", noiseKernel)
		}
		fmt.Fprintf(w, "noise-aware kernel: %s\n", noiseKernel)
		return nil
	}
	return fmt.Errorf("-noise-kernel: want matern, additive, additive10, additive-bic or loo, got %q", noiseKernel)
}

// noiseKernelSet sets the noise-aware optimizer's kernel as -noise-kernel
// says (after SetNoise and the local search, which noiseKernelCheck
// keeps off with the additive kernel).
func noiseKernelSet(o *bayes.Optimizer, dims int) error {
	if noiseKernel == "additive-bic" {
		o.SetAdditiveSelect(true)
	}
	if noiseKernel == "additive" || noiseKernel == "additive-bic" || (noiseKernel == "additive10" && dims >= 10) {
		return o.SetAdditive(true)
	}
	return nil
}
