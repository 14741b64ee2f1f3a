package main

import (
	"flag"
	"fmt"
	"io"

	"github.com/benchtune/bench/optimizers/bayes"
)

// -noise-kernel loo (optimizers/bayes/noise_n_kernel.go): the noise-aware
// methods start with the Matérn kernel; at every looEvery-th evaluation of
// the search from looFrom on, both kernels are fitted on the observations
// so far and the one with the higher leave-one-out log predictive density
// (the additive one only when it is higher by looMargin nats) is used from
// then on (bayes.Optimizer.AdditiveLOO). A run in which the plain kernel
// always wins is the Matérn run.
const (
	noiseKernelLOO = "loo"
	looFrom        = 20
	looEvery       = 10
)

var (
	looMargin = 0.0
	// noiseSeedOffset: the noise benchmark runs seeds offset+1 ..
	// offset+seeds (-noise-seed-offset, held-out seed sets).
	noiseSeedOffset int
)

// noiseNFlags adds the flags of this file to optbench's.
func noiseNFlags(fs *flag.FlagSet) {
	fs.IntVar(&noiseSeedOffset, "noise-seed-offset", 0, "with -noise: run seeds offset+1..offset+seeds (held-out seed sets)")
	fs.StringVar(&stagedWarp, "staged-warp", "on", "with -refine staged: off turns the output warping off for the staged rounds")
	fs.StringVar(&stagedKernel, "staged-kernel", "same", "with -refine staged: matern fits the plain Matérn kernel for the staged rounds, whatever -noise-kernel chose for the search")
	fs.Float64Var(&looMargin, "loo-margin", 0, "with -noise-kernel loo: the additive kernel only when its leave-one-out log density is higher by this many nats")
	noiseBFlags(fs) // noise_b.go
}

// noiseKernelStep is called after the search's n-th evaluation (n of
// search) of a noise-aware method: with -noise-kernel loo it chooses the
// kernel at n = looFrom, looFrom + looEvery, ... below search.
func noiseKernelStep(o *bayes.Optimizer, n, search int) error {
	if noiseKernel != noiseKernelLOO || n < looFrom || n >= search || (n-looFrom)%looEvery != 0 {
		return nil
	}
	plain, add, ok := o.AdditiveLOO()
	if !ok {
		return nil
	}
	if err := o.SetAdditive(add > plain+looMargin); err != nil {
		return fmt.Errorf("-noise-kernel loo: %w", err)
	}
	return nil
}

// noiseSeedNote says which seeds run when -noise-seed-offset is set (the
// tables' "seeds 1-N" then count from offset+1).
func noiseSeedNote(w io.Writer, cfg config) {
	if noiseSeedOffset != 0 {
		fmt.Fprintf(w, "seeds %d-%d (-noise-seed-offset %d: seed i below is seed offset+i)\n", noiseSeedOffset+1, noiseSeedOffset+cfg.seeds, noiseSeedOffset)
	}
}

// stagedWarp is -staged-warp: "on" (the default: the staged refinement
// models the targets as the search did) or "off" (the power transform of
// the targets off from the first staged round on, so that the local
// surface is fitted to the standardized values themselves).
var stagedWarp = "on"

// stagedKernel is -staged-kernel: "same" (the default: the staged
// refinement keeps the search's kernel) or "matern" (the plain Matérn
// kernel from the first staged round on, whatever -noise-kernel chose for
// the search).
var stagedKernel = "same"

// stagedNSet applies -staged-warp and -staged-kernel once the search has
// settled.
func stagedNSet(o *bayes.Optimizer) error {
	if stagedWarp == "off" {
		o.SetOutputWarping(false)
	}
	if stagedKernel == "matern" {
		return o.SetAdditive(false)
	}
	return nil
}

// noiseNCheck rejects unknown -staged-kernel and -staged-warp values and
// names those other than the defaults in the output.
func noiseNCheck(w io.Writer) error {
	if stagedKernel != "same" && stagedKernel != "matern" {
		return fmt.Errorf("-staged-kernel: want same or matern, got %q", stagedKernel)
	}
	if stagedWarp != "on" && stagedWarp != "off" {
		return fmt.Errorf("-staged-warp: want on or off, got %q", stagedWarp)
	}
	if stagedKernel != "same" || stagedWarp != "on" {
		fmt.Fprintf(w, "staged rounds: kernel %s, output warping %s\n", stagedKernel, stagedWarp)
	}
	return lsPriorCheck(w) // noise_ls.go
}
