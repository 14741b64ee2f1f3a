package main

import (
	"flag"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	"github.com/benchtune/bench/optimizers/bayes"
)

// -ls-prior (an experiment): the lengthscale prior of every GP of the
// noise benchmark (noisefree, naive, aware, confirm and -refine), through
// bayes.Optimizer.SetLengthscalePrior. "" keeps the default (log-normal,
// median 0.3·√D on [0,1] inputs, sd 1, bounds [0.01, 10]); "hvarfner" is
// the prior of Hvarfner, Hellsten & Nardi (ICML 2024, "Vanilla Bayesian
// optimization performs great in high dimensions"): log ℓ ~ N(√2 + ½·log D,
// √3²), median e^√2·√D ≈ 4.1·√D, bounded to [0.01, 1000]; otherwise
// key=value pairs: median=F (F times the default median), sd=S, hi=H.
var lsPriorArg string

// gpWarp is -gp-warp (an experiment): "off" turns the output warping
// (Yeo-Johnson) off in every GP of the noise benchmark from the start.
var gpWarp = "on"

// lsPrior is a parsed -ls-prior: the median as a multiple of √D.
type lsPrior struct {
	perRootD, sd, hi float64
}

// defaultLSPrior is newPriors' prior (optimizers/bayes/fit.go).
var defaultLSPrior = lsPrior{perRootD: 0.3, sd: 1, hi: 10}

func parseLSPrior(s string) (lsPrior, bool, error) {
	s = strings.TrimSpace(s)
	if s == "" || s == "default" {
		return defaultLSPrior, false, nil
	}
	if s == "hvarfner" {
		return lsPrior{perRootD: math.Exp(math.Sqrt2), sd: math.Sqrt(3), hi: 1000}, true, nil
	}
	p := defaultLSPrior
	for _, kv := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(kv), "=")
		if !ok {
			return p, false, fmt.Errorf("-ls-prior: want hvarfner or key=value (median, sd, hi), got %q", kv)
		}
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || !(f > 0) || math.IsInf(f, 0) {
			return p, false, fmt.Errorf("-ls-prior: %s: %q is not a positive number", k, v)
		}
		switch k {
		case "median":
			p.perRootD *= f
		case "sd":
			p.sd = f
		case "hi":
			p.hi = f
		default:
			return p, false, fmt.Errorf("-ls-prior: unknown key %q (median, sd, hi)", k)
		}
	}
	if p.hi <= 0.01 {
		return p, false, fmt.Errorf("-ls-prior: hi must be above the lower bound 0.01, got %v", p.hi)
	}
	return p, true, nil
}

func (p lsPrior) String() string {
	return fmt.Sprintf("log-normal, median %.3g·√D, sd %.3g, bounds [0.01, %g]", p.perRootD, p.sd, p.hi)
}

// lsPriorCheck rejects a bad -ls-prior and names a prior other than the
// default in the output.
func lsPriorCheck(w io.Writer) error {
	if err := acqEffortCheck(w); err != nil { // noise_acq.go
		return err
	}
	if err := gpHyperCheck(w); err != nil { // noise_hyper.go
		return err
	}
	switch gpWarp {
	case "on":
	case "off":
		fmt.Fprintln(w, "output warping (every GP): off")
	default:
		return fmt.Errorf("-gp-warp: want on or off, got %q", gpWarp)
	}
	p, set, err := parseLSPrior(lsPriorArg)
	if err != nil || !set {
		return err
	}
	if noiseKernel != "matern" {
		return fmt.Errorf("-ls-prior needs -noise-kernel matern")
	}
	if basinRestart > 0 || basinTwin > 0 {
		return fmt.Errorf("-ls-prior does not combine with -basin-restart or -basin-twin")
	}
	fmt.Fprintf(w, "lengthscale prior (every GP): %v\n", p)
	return nil
}

// lsPriorSet gives o the -ls-prior prior and the -acq-effort effort
// (nothing without the flags).
func lsPriorSet(o *bayes.Optimizer, dims int) error {
	if err := acqEffortSet(o); err != nil { // noise_acq.go
		return err
	}
	if err := gpHyperSet(o); err != nil { // noise_hyper.go
		return err
	}
	if gpWarp == "off" {
		o.SetOutputWarping(false)
	}
	p, set, err := parseLSPrior(lsPriorArg)
	if err != nil || !set {
		return err
	}
	return o.SetLengthscalePrior(p.perRootD*math.Sqrt(float64(dims)), p.sd, p.hi)
}

// noiseLSFlags adds the flag of this file to optbench's.
func noiseLSFlags(fs *flag.FlagSet) {
	gpHyperFlags(fs) // noise_hyper.go
	fs.StringVar(&acqEffortArg, "acq-effort", "", "with -noise: an experiment: every GP's acquisition optimiser, R,S[,G]: R random candidates (default 256), the S best refined (default 3) and the G best random ones (default 0) ('': the defaults)")
	fs.StringVar(&gpWarp, "gp-warp", "on", "with -noise: an experiment: off turns every GP's output warping off")
	fs.BoolVar(&acqDiag, "acq-diag", false, "with -noise and -funcs hartmann6: instead, a diagnostic of the acquisition's optimiser on the noise-free GP (noise_acq.go)")
	fs.StringVar(&lsPriorArg, "ls-prior", "", "with -noise: an experiment: every GP's lengthscale prior, hvarfner (log-normal, median e^√2·√D, sd √3, Hvarfner et al. 2024) or median=F (F × the default 0.3·√D),sd=S,hi=H ('': the default)")
}
