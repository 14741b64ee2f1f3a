package schedulers

import (
	"maps"
	"math"
	"strconv"

	"github.com/benchtune/bench/analysis"
	"github.com/benchtune/bench/internal/aggregate"
	"github.com/benchtune/bench/storage"
	"github.com/benchtune/bench/trial"
)

// Repeats that are not run back to back (NoiseConfig.RepeatSpread
// "interleaved", or racing): a configuration is queued once; when one of
// its runs succeeds, its next repeat is queued behind the trials already
// waiting, so that its repeats spread over time and over the runners.
//
// Racing (adaptive repeats, as F-race, irace and TUNA do) repeats a
// configuration only while it could be the best: after each of its
// successful runs, its next repeat (up to trial_config_repeat_count runs)
// is queued when it is the incumbent (the lowest aggregate of the first
// target) or when its interval overlaps the incumbent's. The interval is
// mean ± 1.96·s/√n, s the noise standard deviation pooled over every
// configuration run at least twice (before any, the noise is unknown and
// the configuration is repeated once to measure it). Budget: at most
// trial_config_repeat_count runs per configuration (as without racing);
// every run counts against max_trials; max_suggestions counts
// configurations.
type racer struct {
	runs map[string][]float64 // first target's scores (to minimize) per config hash
	// next is the highest repeat queued or run per config hash.
	next map[string]int
	// deferred are repeats waiting to be queued; lastNew tells whether the
	// last thing queued was a new suggestion.
	deferred []item
	lastNew  bool
}

// repeats is how many trials of a new configuration are queued at once.
func (d *dispatch) repeats() int {
	if d.racingOn() {
		return 1
	}
	return d.s.cfg.TrialConfigRepeatCount
}

// racingOn reports whether repeats are queued one at a time.
func (d *dispatch) racingOn() bool {
	c := d.s.cfg
	return (c.Noise.Racing || c.Noise.RepeatSpread == SpreadInterleaved) && c.TrialConfigRepeatCount > 1 &&
		!c.DriverOnly && c.QueueAhead == 0 && !d.s.o.Worker
}

// race records a finished trial and queues its configuration's next
// repeat when the rule says so.
func (d *dispatch) race(it item, out trial.Outcome, scores []float64) {
	if !d.racingOn() || analysis.IsConfirm(it.t) || !d.raceRecord(it, out.Status, scores) {
		return
	}
	hash := it.t.ConfigHash
	n := d.racing.next[hash]
	if n >= d.s.cfg.TrialConfigRepeatCount || it.t.Params == nil || d.stopFired() ||
		(d.s.cfg.MaxTrials > 0 && d.trialCount >= d.s.cfg.MaxTrials) {
		return
	}
	if !d.isContender(hash) {
		return
	}
	meta := maps.Clone(it.t.Metadata)
	meta["repeat_i"] = strconv.Itoa(n + 1)
	spec := storage.TrialSpec{ConfigHash: hash, Params: maps.Clone(it.t.Params), Metadata: meta}
	d.racing.next[hash] = n + 1
	d.trialCount++
	d.racing.deferred = append(d.racing.deferred, item{spec: &spec, sugID: it.sugID})
}

func (d *dispatch) isContender(hash string) bool {
	if !d.s.cfg.Noise.Racing {
		return true
	}
	return d.racing.contender(hash, d.s.cfg.Noise.Policy(d.s.targets[0].Name), d.s.targets[0].Max)
}

// popDeferred moves a waiting repeat to the queue, alternating with new
// suggestions while the budget allows them (so that repeats interleave
// with new configurations); with racing, a repeat whose configuration
// dropped out of the race since it was queued is dropped. It reports
// whether it queued one.
func (d *dispatch) popDeferred() bool {
	r := d.racing
	if r == nil {
		return false
	}
	if !r.lastNew && d.notDone() {
		r.lastNew = true // the next refill suggests
		return false
	}
	for len(r.deferred) > 0 {
		it := r.deferred[0]
		r.deferred = r.deferred[1:]
		if d.stopFired() || !d.isContender(it.spec.ConfigHash) {
			d.trialCount--
			r.next[it.spec.ConfigHash]--
			continue
		}
		r.lastNew = false
		d.queue = append(d.queue, it)
		return true
	}
	return false
}

// deferredLeft reports whether repeats wait to be queued.
func (d *dispatch) deferredLeft() bool { return d.racing != nil && len(d.racing.deferred) > 0 }

// contender reports whether config hash could still be the best: it is
// the incumbent, or its interval overlaps the incumbent's.
func (r *racer) contender(hash string, pol aggregate.Policy, max bool) bool {
	pooled, dof := 0.0, 0.0
	inc, incVal := "", math.Inf(1)
	for h, xs := range r.runs {
		if len(xs) >= 2 {
			sd := aggregate.SD(xs)
			pooled += sd * sd * float64(len(xs)-1)
			dof += float64(len(xs) - 1)
		}
		if v := pol.OfScores(xs, max); v < incVal {
			inc, incVal = h, v
		}
	}
	if inc == hash || dof == 0 {
		return true
	}
	s := math.Sqrt(pooled / dof)
	half := func(n int) float64 { return 1.96 * s / math.Sqrt(float64(n)) }
	c, i := r.runs[hash], r.runs[inc]
	return aggregate.MeanOf(c)-half(len(c)) <= aggregate.MeanOf(i)+half(len(i))
}

// raceRecord takes in a finished trial of a configuration; it reports
// whether it succeeded with a value.
func (d *dispatch) raceRecord(it item, status trial.Status, scores []float64) bool {
	if d.racing == nil {
		d.racing = &racer{runs: map[string][]float64{}, next: map[string]int{}}
	}
	hash := it.t.ConfigHash
	rep, _ := strconv.Atoi(it.t.Metadata["repeat_i"])
	d.racing.next[hash] = max(d.racing.next[hash], rep)
	if status != trial.SUCCEEDED || len(scores) == 0 || math.IsInf(scores[0], 0) {
		return false
	}
	d.racing.runs[hash] = append(d.racing.runs[hash], scores[0])
	return true
}
