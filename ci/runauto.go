package ci

import (
	"context"
	"math/rand/v2"
	"sync/atomic"

	"github.com/benchtune/bench/optimizers"
	"github.com/benchtune/bench/schedulers"
	"github.com/benchtune/bench/storage"
	"github.com/benchtune/bench/trial"
)

// blockCycle is the replay of a set in Repeat blocks, each block the whole
// set in a seeded random order (OrderRandomBlocks): a drift that follows
// the order of the set cannot favour one configuration.
func blockCycle(set []Entry, repeat int, seed uint64) []any {
	rng := rand.New(rand.NewPCG(seed, 0x6162))
	out := make([]any, 0, repeat*len(set))
	for range repeat {
		for _, i := range rng.Perm(len(set)) {
			out = append(out, set[i].Values)
		}
	}
	return out
}

// lookObserver counts the finished trials of a run and, once every
// configuration of the set has run Looks[k] times (Looks[k]·len(set)
// trials finished, whatever their status), calls look(k); when that
// returns true, the run stops: its optimizer suggests nothing more. The
// trials already running (with several trial runners) still finish.
type lookObserver struct {
	inner    schedulers.Observer
	perLook  int
	looks    []int
	look     func(k int) bool
	finished int
	next     int
	stopped  *atomic.Bool
}

func (o *lookObserver) TrialStarted(t storage.Trial) {
	if o.inner != nil {
		o.inner.TrialStarted(t)
	}
}

func (o *lookObserver) TrialFinished(t storage.Trial, out trial.Outcome, best *schedulers.Best) {
	if o.inner != nil {
		o.inner.TrialFinished(t, out, best)
	}
	if t.RetryOf != 0 || o.stopped.Load() {
		return
	}
	o.finished++
	for o.next < len(o.looks) && o.finished >= o.looks[o.next]*o.perLook {
		k := o.next
		o.next++
		if o.look(k) {
			o.stopped.Store(true)
			return
		}
	}
}

// Resumed forwards to the inner observer (progress counts the trials left).
func (o *lookObserver) Resumed(finished int) {
	if r, ok := o.inner.(schedulers.ResumeObserver); ok {
		r.Resumed(finished)
	}
}

// stoppable is an optimizer that suggests nothing more once stopped.
type stoppable struct {
	optimizers.Optimizer
	stopped *atomic.Bool
}

func (s stoppable) Suggest(ctx context.Context, k int) ([]optimizers.Suggestion, error) {
	if s.stopped.Load() {
		return nil, nil
	}
	return s.Optimizer.Suggest(ctx, k)
}

func (s stoppable) NotConverged() bool {
	return !s.stopped.Load() && s.Optimizer.NotConverged()
}
