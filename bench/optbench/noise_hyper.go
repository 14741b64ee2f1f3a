package main

import (
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/benchtune/bench/optimizers/bayes"
)

// -gp-hyper (an experiment): every GP of the noise benchmark (noisefree,
// naive, aware, confirm and -refine, as -ls-prior) maximises the EI integrated over
// samples of its hyperparameters' posterior instead of the EI of the MAP
// fit (Snoek, Larochelle & Adams 2012), through
// bayes.Optimizer.SetHyperSamples: "mcmc=N[,burn0=B0][,burn=B][,thin=T]",
// N samples by slice sampling, B0 sweeps of burn-in at the first fit, B
// at each later refit (the chain goes on), T sweeps between two samples.
// "" or "map" keeps the MAP fit alone (the default).
var gpHyperArg string

// gpHyper is a parsed -gp-hyper.
type gpHyper struct {
	n, burn0, burn, thin int
}

func parseGPHyper(s string) (gpHyper, bool, error) {
	h := gpHyper{burn0: 50, burn: 0, thin: 1}
	s = strings.TrimSpace(s)
	if s == "" || s == "map" {
		return h, false, nil
	}
	for _, kv := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(kv), "=")
		if !ok {
			return h, false, fmt.Errorf("-gp-hyper: want map or mcmc=N[,burn0=B0][,burn=B][,thin=T], got %q", kv)
		}
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return h, false, fmt.Errorf("-gp-hyper: %s: %q is not a non-negative integer", k, v)
		}
		switch k {
		case "mcmc":
			h.n = n
		case "burn0":
			h.burn0 = n
		case "burn":
			h.burn = n
		case "thin":
			h.thin = n
		default:
			return h, false, fmt.Errorf("-gp-hyper: unknown key %q (mcmc, burn0, burn, thin)", k)
		}
	}
	if h.n < 1 {
		return h, false, fmt.Errorf("-gp-hyper: mcmc=N needs N ≥ 1 samples")
	}
	if h.thin < 1 {
		return h, false, fmt.Errorf("-gp-hyper: thin must be at least 1")
	}
	return h, true, nil
}

// gpHyperCheck rejects a bad -gp-hyper and names it in the output.
func gpHyperCheck(w io.Writer) error {
	h, set, err := parseGPHyper(gpHyperArg)
	if err != nil || !set {
		return err
	}
	if noiseKernel != "matern" {
		return fmt.Errorf("-gp-hyper needs -noise-kernel matern")
	}
	fmt.Fprintf(w, "hyperparameters (every GP): EI integrated over %d slice samples (burn-in %d sweeps at the first fit, %d at each refit, thinning %d)\n", h.n, h.burn0, h.burn, h.thin)
	return nil
}

// gpHyperSet gives o the -gp-hyper sampling (nothing without the flag).
func gpHyperSet(o *bayes.Optimizer) error {
	h, set, err := parseGPHyper(gpHyperArg)
	if err != nil || !set {
		return err
	}
	return o.SetHyperSamples(h.n, h.burn0, h.burn, h.thin)
}

// gpHyperFlags adds the flag of this file to optbench's.
func gpHyperFlags(fs *flag.FlagSet) {
	fs.StringVar(&gpHyperArg, "gp-hyper", "", "with -noise: an experiment: every GP's EI integrated over hyperparameter samples, mcmc=N[,burn0=B0][,burn=B][,thin=T] (slice sampling; defaults burn0=50, burn=0, thin=1; '' or map: the MAP fit alone)")
}
