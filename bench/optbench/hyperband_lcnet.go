// lcnet: a simulated neural-network training run with 10 knobs, whose
// fidelity is the number of epochs (1..81), for the multi-fidelity
// benchmark (-mf, hyperband_mf.go). It is shaped on what tuning a real
// training run looks like (the knobs of LCBench, Zimmer et al. 2021, plus
// three weaker ones), not fitted to any data set:
//
//   - the knobs interact: what matters for the learning rate is the
//     effective step lr/(1-momentum), scaled with the batch size (the
//     linear-scaling rule in square-root form); the useful amount of
//     regularisation (weight decay, dropout) grows with the capacity
//     (layers × units); too large an effective step diverges;
//   - learning curves cross: a large step learns fast and plateaus higher
//     (SGD noise), a small one learns slowly but would go lower, so the
//     ranking at few epochs is biased towards fast learners; a poor
//     initialisation scale and a long warm-up slow the start without
//     changing the end;
//   - low fidelities are noisy: the validation error after t epochs has
//     noise of sd 0.004 + 0.03/(1+t/2) (0.024 after 1 epoch, 0.005 after
//     81), on top of the bias above.
//
// The value is the validation error (lower is better, 0.9 = chance with
// 10 classes). Quality is the *true* error after 81 epochs (no noise) of
// the configuration a method would deploy.

package main

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
	"strings"

	"github.com/benchtune/bench/tunables"
)

const (
	lcMaxEpochs = 81
	lcChance    = 0.9
)

// lcKnobs are the knobs, in unit coordinates (see lcDecode for scales).
var lcKnobs = []string{"log2_batch", "log10_lr", "momentum", "log10_wd", "layers", "log2_units", "dropout", "warmup", "label_smoothing", "log10_init"}

func lcDims() []tunables.Dim {
	dims := continuous(lcKnobs...)
	dims[4].Levels = 5 // layers 1..5
	return dims
}

// lcNet holds the decoded knobs.
type lcNet struct {
	log2bs, log10lr, mom, log10wd float64
	layers                        float64
	log2units, dropout, warmup    float64
	smoothing, log10init          float64
}

func lcDecode(u tunables.Point) lcNet {
	return lcNet{
		log2bs:    scale(u[0], 4, 9),     // batch 16..512
		log10lr:   scale(u[1], -4, -0.5), // 1e-4..0.3
		mom:       scale(u[2], 0, 0.98),  // momentum
		log10wd:   scale(u[3], -6, -1),   // weight decay 1e-6..0.1
		layers:    math.Round(scale(u[4], 1, 5)),
		log2units: scale(u[5], 5, 10),     // 32..1024 units
		dropout:   scale(u[6], 0, 0.8),    // max dropout
		warmup:    scale(u[7], 0, 0.3),    // warm-up, fraction of 81 epochs
		smoothing: scale(u[8], 0, 0.3),    // label smoothing
		log10init: scale(u[9], -1.5, 0.5), // init scale relative to He
	}
}

// lcShape returns the converged error eInf and the time constant tau (in
// epochs) of configuration u: err(t) = eInf + (0.9 - eInf)/(1 + t/tau)^0.8.
func lcShape(u tunables.Point) (eInf, tau float64) {
	n := lcDecode(u)
	// Effective step, scaled to batch 128: the optimum sits at -1.3.
	s := n.log10lr - math.Log10(1-n.mom) - 0.5*(n.log2bs-7)*math.Log10(2)
	ds := s + 1.3
	cap := n.layers * (n.log2units - 4) / 6 // 0.17..5
	// Regularisation: weight decay around its optimum, which moves up with
	// capacity, and dropout that helps big networks and hurts small ones.
	wdOpt := -4.5 + 0.4*cap
	reg := 0.012*(n.log10wd-wdOpt)*(n.log10wd-wdOpt) +
		0.05*(n.dropout-0.1*cap)*(n.dropout-0.1*cap)
	under := 0.18 * math.Exp(-1.6*cap) // too small a network
	over := 0.06 * cap / (1 + math.Exp(3*(n.log10wd+3.5))) * (1 - n.dropout)
	sgd := 0.03*math.Max(0, ds)*math.Max(0, ds) + 0.015*math.Max(0, -ds)
	smooth := 0.01 * (n.smoothing - 0.1) * (n.smoothing - 0.1) / 0.01
	eInf = 0.05 + under + over + reg + sgd + smooth
	// Divergence: a step far above the optimum ends at chance.
	div := 1 / (1 + math.Exp(-(ds-1.1)/0.08))
	eInf = eInf*(1-div) + lcChance*div
	// Speed: faster with a larger step (up to the optimum and a bit
	// beyond), slower with a poor initialisation and a long warm-up,
	// slower for large networks.
	tau = 3 * math.Pow(10, -0.9*math.Min(ds, 0.5)) *
		(1 + 2*math.Abs(n.log10init+0.2)) * (1 + 2*n.warmup) * (1 + 0.15*cap)
	return min(eInf, lcChance), tau
}

// lcError is the expected validation error after t epochs.
func lcError(u tunables.Point, t float64) float64 {
	eInf, tau := lcShape(u)
	return eInf + (lcChance-eInf)*math.Pow(1+t/tau, -0.8)
}

// lcObserve is one run of t epochs: the error after t epochs plus noise.
func lcObserve(u tunables.Point, t float64, rng *rand.Rand) float64 {
	return lcError(u, t) + (0.004+0.03/(1+t/2))*rng.NormFloat64()
}

// lcStats describes lcnet: the best final error of 200,000 random
// configurations, and over 2,000 of them the Spearman correlation of the
// error after t epochs (one noisy run) with the final one, for all of
// them and for the best tenth.
func lcStats() string {
	rng := rand.New(rand.NewPCG(1, 2))
	random := func() tunables.Point {
		u := make(tunables.Point, len(lcKnobs))
		for i := range u {
			u[i] = rng.Float64()
		}
		u[4] = math.Floor(u[4]*5) / 4 // the 5 levels of layers, equally likely
		return u
	}
	best := math.Inf(1)
	for range 200000 {
		best = min(best, lcError(random(), lcMaxEpochs))
	}
	pts := make([]tunables.Point, 2000)
	final := make([]float64, len(pts))
	for i := range pts {
		pts[i] = random()
		final[i] = lcError(pts[i], lcMaxEpochs)
	}
	idx := make([]int, len(pts))
	for i := range idx {
		idx[i] = i
	}
	sort.Slice(idx, func(a, b int) bool { return final[idx[a]] < final[idx[b]] })
	top := idx[:len(idx)/10]
	var all, tenth []string
	for _, t := range []float64{1, 3, 9, 27} {
		early := make([]float64, len(pts))
		for i, u := range pts {
			early[i] = lcObserve(u, t, rng)
		}
		all = append(all, fmt.Sprintf("%.2f", spearman(early, final)))
		var e, f []float64
		for _, i := range top {
			e, f = append(e, early[i]), append(f, final[i])
		}
		tenth = append(tenth, fmt.Sprintf("%.2f", spearman(e, f)))
	}
	return fmt.Sprintf("lcnet: best final error of 200000 random configurations %.4f; Spearman correlation of the error after 1, 3, 9, 27 epochs with the final one over 2000 random configurations: %s (all), %s (best tenth)",
		best, strings.Join(all, ", "), strings.Join(tenth, ", "))
}

// spearman is the rank correlation of a and b (no ties expected).
func spearman(a, b []float64) float64 {
	rank := func(v []float64) []float64 {
		idx := make([]int, len(v))
		for i := range idx {
			idx[i] = i
		}
		sort.Slice(idx, func(x, y int) bool { return v[idx[x]] < v[idx[y]] })
		r := make([]float64, len(v))
		for i, j := range idx {
			r[j] = float64(i)
		}
		return r
	}
	ra, rb := rank(a), rank(b)
	n := float64(len(a))
	s := 0.0
	for i := range ra {
		d := ra[i] - rb[i]
		s += d * d
	}
	return 1 - 6*s/(n*(n*n-1))
}
