// Coordination between processes: network workers, other bench processes' trials, and stop requests.

package schedulers

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/benchtune/bench/storage"
	"github.com/benchtune/bench/trial"
)

// coordState is what the dispatcher knows of other processes.
type coordState struct {
	// others reports trials owned by other processes: the dispatcher then
	// polls storage for their outcomes.
	others   bool
	lastPoll time.Time // pollOthers' last scan
	// busy is set when pollOthers last found other processes' trials
	// unfinished (or queued for workers to claim): with nothing running
	// here, tick then polls at every tick, not once a second.
	busy bool
	// feedSeq is the storage change feed's number this process has read
	// up to (pollOthers reads the trials changed since).
	feedSeq int64
	// atStart holds the ids of the trials stored when this run started
	// (sorted), created those this process added since (detectOthers).
	atStart []int
	created map[int]bool
}

// feedWorkers keeps as many trials queued, unowned, as the experiment's
// live workers have trial runners (plus queue_ahead), so that bench worker
// processes find work without any setting.
func (d *dispatch) feedWorkers(ctx context.Context) error {
	s := d.s
	n, err := s.exp.WorkerRunners(ctx)
	if err != nil || n == 0 {
		return err
	}
	d.others = true
	pending, err := s.exp.PendingTrials(ctx)
	if err != nil {
		return err
	}
	unowned := 0
	for _, t := range pending {
		if t.Owner == "" && !t.StopRequested {
			unowned++
		}
	}
	need := n + s.cfg.QueueAhead - unowned
	if need > 0 { // fidelity.go: promotions first
		k, err := d.fidelityFeed(ctx, need)
		if err != nil {
			return err
		}
		need -= k
	}
	if need <= 0 || !d.notDone() || d.fidelityCapped() {
		return nil
	}
	if c, err := d.countTrials(ctx); err == nil {
		d.trialCount = c
	}
	k := s.cfg.budget().Suggestions(need, 0, d.trialCount)
	if k < 1 || !d.notDone() {
		return nil
	}
	sugs, err := s.opt.Suggest(ctx, k)
	if err != nil {
		return fmt.Errorf("optimizer %s: %w", s.opt.Name(), err)
	}
	d.suggestions += len(sugs)
	if len(sugs) == 0 {
		d.noMore = true
	}
	for _, sg := range sugs {
		if err := d.queueSuggestion(ctx, sg, 0, false); err != nil {
			return err
		}
	}
	return nil
}

// detectOthers notices trials that another process added to the
// experiment: from then on the budget, dedup and results are read from
// storage. It reads the change feed since the last number read (no count
// of every trial): a changed trial this process did not create (d.added)
// and did not find at its start is another process's, whatever it is now
// (unowned, held by this process after a claim, or finished). The feed's
// number only moves on while every change is this process's own, so that
// pollOthers then reads the other processes' changes too.
func (d *dispatch) detectOthers(ctx context.Context) {
	changed, seq, err := d.s.exp.Changes(ctx, d.feedSeq)
	if err != nil {
		return
	}
	for _, t := range changed {
		if !d.knows(t.ID) {
			d.others = true
			d.s.log.Debug(othersFound, "trial", t.ID)
			return
		}
	}
	d.feedSeq = seq
}

// othersFound is detectOthers' debug message.
const othersFound = "another process's trial is in the change feed: the budget, dedup and results are read from storage from now on"

// knowTrials notes the trials found at the start (newDispatch): they are
// this process's to know, whoever added them.
func (d *dispatch) knowTrials(all []storage.Trial) {
	d.atStart = make([]int, len(all))
	for i, t := range all {
		d.atStart[i] = t.ID
	}
	slices.Sort(d.atStart)
}

// added notes a trial this process stored (and logs it as mlos_bench
// does): every trial the dispatcher adds goes through here, so that
// detectOthers tells it from another process's.
func (d *dispatch) added(t storage.Trial) {
	if d.created == nil {
		d.created = map[int]bool{}
	}
	d.created[t.ID] = true
	d.s.logAdded(t)
}

// knows reports whether trial id was found at the start or added by this
// process.
func (d *dispatch) knows(id int) bool {
	if d.created[id] {
		return true
	}
	_, ok := slices.BinarySearch(d.atStart, id)
	return ok
}

// errStopRequested is the cause of a trial stopped by bench stop.
var errStopRequested = errors.New("stopped on request (bench stop)")

// errStopExperiment marks a run ended by bench stop EXPERIMENT (its text
// is empty: the message says it already).
var errStopExperiment = errors.New("")

// stopRequests cancels the trials bench stop asked to stop.
func (d *dispatch) stopRequests(ctx context.Context) error {
	s := d.s
	all, ids, err := s.exp.StopRequests(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return err
	}
	stop := map[int]bool{}
	for _, id := range ids {
		stop[id] = true
	}
	for id, j := range d.running {
		if all || stop[id] {
			j.cancel(errStopRequested)
		}
	}
	// A queued trial that no process holds (queued ahead for workers) is
	// stopped here: no process will claim it.
	for _, id := range ids {
		if _, mine := d.running[id]; mine || d.queued(id) {
			continue
		}
		t, err := s.plain.Trial(ctx, id)
		if err != nil || t.Finished() || t.Owner != "" {
			continue
		}
		out := trial.Outcome{Status: trial.CANCELED, FailureReason: errStopRequested.Error()}
		if err := s.plain.Finish(ctx, id, out); err == nil {
			d.record(item{t: t.Trial, root: id, foreign: true}, out)
		}
	}
	keep := d.queue[:0]
	for _, it := range d.queue {
		if all || stop[it.t.ID] {
			out := trial.Outcome{Status: trial.CANCELED, FailureReason: errStopRequested.Error()}
			if err := s.exp.Finish(ctx, it.t.ID, out); err == nil {
				d.record(it, out)
			}
			continue
		}
		keep = append(keep, it)
	}
	d.queue = keep
	if all && d.stopErr == nil {
		d.stopErr = fmt.Errorf("%w on request (bench stop %s)%w", ErrStopped, s.cfg.ExperimentID, errStopExperiment)
	}
	return nil
}

// queued reports whether trial id is in this process's queue.
func (d *dispatch) queued(id int) bool {
	for _, it := range d.queue {
		if it.spec == nil && it.t.ID == id {
			return true
		}
	}
	return false
}

// pollOthers observes the outcomes of trials other processes finished:
// those the storage's change feed says changed since the last poll (no
// scan of every trial), and the unfinished ones (whose owners may have
// died).
func (d *dispatch) pollOthers(ctx context.Context) error {
	s := d.s
	changed, seq, err := s.exp.Changes(ctx, d.feedSeq)
	if err != nil {
		return err
	}
	d.feedSeq = seq
	pending, err := s.exp.PendingTrials(ctx)
	if err != nil {
		return err
	}
	others, busy := false, false
	for _, t := range pending {
		if t.Owner == "" && !t.StopRequested {
			busy = true // queued for workers
		}
		if t.Owner != "" && t.Owner != s.o.Owner {
			others = true
			if trial.TakeOver(t.Owner, s.o.Owner, false) {
				// A process of this host died: take its trials over now.
				if err := s.plain.WithOwner(t.Owner, s.cfg.Lease).Release(ctx); err != nil {
					return err
				}
			}
		}
	}
	last := lastAttempts(append(changed, pending...))
	for _, t := range changed {
		if !t.Finished() {
			continue
		}
		if d.observed[t.ID] {
			continue
		}
		if _, mine := d.running[t.ID]; mine {
			continue
		}
		out := t.Outcome()
		if t.Status.IsFailed() && retriedLater(last, t) {
			d.observed[t.ID] = true
			continue
		}
		d.record(item{t: t, root: t.ID, foreign: true}, out)
		d.resolveWaiting(ctx, t.ID, out)
		if err := d.checkStop(out); err != nil {
			return err
		}
	}
	d.others = others || len(d.waiting) > 0
	d.busy = busy || d.others
	return nil
}
