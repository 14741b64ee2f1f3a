// Package prune holds pruners: rules that stop a running trial early when
// its intermediate results (trial.Progress) are unpromising.
//
// Pruners are pure and not safe for concurrent use: the caller serialises
// calls. Values are compared as "lower is better"; a caller that maximises
// a metric negates it first (Sign).
package prune

import (
	"fmt"
	"math"
	"slices"
	"sort"
)

// Pruner decides on a trial's intermediate value at a step.
type Pruner interface {
	// Report records trial id's value (lower is better) at step and tells
	// whether to stop the trial now, with the reason when so. Steps of one
	// trial come in increasing order; a value that is NaN is ignored.
	Report(id int, step int64, value float64) (stop bool, reason string)
	// Done records that trial id ended (completed, failed or pruned); its
	// values stay for judging the other trials.
	Done(id int)
}

// Sign returns value as a "lower is better" number for a metric that is
// minimised (maximize false) or maximised.
func Sign(value float64, maximize bool) float64 {
	if maximize {
		return -value
	}
	return value
}

// Median is the median stopping rule (as Optuna's MedianPruner and
// Vizier's): a trial whose value at step s is worse than the median of the
// other trials' values at s is stopped, once StartupTrials trials have
// ended and from step WarmupSteps on.
type Median struct {
	// StartupTrials is how many trials must have ended before any is
	// stopped.
	StartupTrials int
	// WarmupSteps: steps below it are never judged.
	WarmupSteps int64
	// MinTrials is how many other trials need a value at the step for a
	// median to be taken (below 1 counts as 1).
	MinTrials int
	// Maximize: the values were turned by Sign from a maximised metric;
	// reasons show them as measured.
	Maximize bool

	at    map[int64]map[int]float64 // step -> trial -> value
	ended map[int]bool
}

// Report implements Pruner.
func (m *Median) Report(id int, step int64, value float64) (bool, string) {
	if math.IsNaN(value) {
		return false, ""
	}
	if m.at == nil {
		m.at = map[int64]map[int]float64{}
		m.ended = map[int]bool{}
	}
	vs := m.at[step]
	if vs == nil {
		vs = map[int]float64{}
		m.at[step] = vs
	}
	vs[id] = value
	if len(m.ended) < m.StartupTrials || step < m.WarmupSteps {
		return false, ""
	}
	others := make([]float64, 0, len(vs))
	for o, v := range vs {
		if o != id {
			others = append(others, v)
		}
	}
	if len(others) < max(m.MinTrials, 1) {
		return false, ""
	}
	med := median(others)
	if value > med {
		return true, fmt.Sprintf("value %g at step %d is worse than the median %g of %d other trials at that step", Sign(value, m.Maximize), step, Sign(med, m.Maximize), len(others))
	}
	return false, ""
}

// Done implements Pruner.
func (m *Median) Done(id int) {
	if m.ended == nil {
		m.at = map[int64]map[int]float64{}
		m.ended = map[int]bool{}
	}
	m.ended[id] = true
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	sort.Float64s(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// ASHA is asynchronous successive halving (Li et al., 2020, as Ray Tune's
// ASHA scheduler): rungs at MinStep·Eta^k (k = 0, 1, ...; up to MaxStep
// when set). The first time a trial reports a step at or past a rung, its
// value is recorded there, and it goes on only if it is in the top 1/Eta
// of the values recorded at that rung so far (itself included; the best
// one always goes on). It never waits for a rung to fill: a decision is
// made on what has arrived.
type ASHA struct {
	// MinStep is the first rung (grace period; below 1 counts as 1).
	MinStep int64
	// Eta is the reduction factor (below 2 counts as 3).
	Eta int
	// MaxStep, when > 0, is the last step: no rung at or past it (a trial
	// that reaches it has finished).
	MaxStep int64
	// Maximize: the values were turned by Sign from a maximised metric;
	// reasons show them as measured.
	Maximize bool

	rungs []map[int]float64 // rung k -> trial -> value
	next  map[int]int       // trial -> index of the next rung to judge it at
}

func (a *ASHA) eta() int {
	if a.Eta < 2 {
		return 3
	}
	return a.Eta
}

// Rung returns the step of rung k.
func (a *ASHA) Rung(k int) int64 {
	r := max(a.MinStep, 1)
	for range k {
		r *= int64(a.eta())
	}
	return r
}

// Report implements Pruner.
func (a *ASHA) Report(id int, step int64, value float64) (bool, string) {
	if math.IsNaN(value) {
		return false, ""
	}
	if a.next == nil {
		a.next = map[int]int{}
	}
	k := a.next[id]
	var stop bool
	var reason string
	for {
		r := a.Rung(k)
		if step < r || (a.MaxStep > 0 && r >= a.MaxStep) {
			break
		}
		for len(a.rungs) <= k {
			a.rungs = append(a.rungs, map[int]float64{})
		}
		a.rungs[k][id] = value
		k++
		vs := a.rungs[k-1]
		keep := max(1, len(vs)/a.eta())
		rank := 1
		for o, v := range vs {
			if o != id && (v < value || (v == value && o < id)) {
				rank++
			}
		}
		if rank > keep {
			stop = true
			reason = fmt.Sprintf("value %g at rung %d (step %d) ranks %d of %d; only the top %d (1/%d) go on", Sign(value, a.Maximize), k-1, r, rank, len(vs), keep, a.eta())
			break
		}
	}
	a.next[id] = k
	return stop, reason
}

// Done implements Pruner.
func (a *ASHA) Done(id int) {}
