package serve

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"github.com/benchtune/bench/schedulers"
	"github.com/benchtune/bench/trial"
)

// Pool is bench serve's transport between the driver's dispatcher and the
// network workers. The dispatcher sees it as runners (schedulers.RemotePool):
// one per trial slot of the connected workers. A runner's Run offers the
// trial's Spec to the workers and returns when one of them posts the
// outcome, so a served trial's outcome is recorded on the same path as a
// local one (no scan of storage for results). In between, the pool leases
// the trial to the worker that claimed it, renews the lease with the
// worker's heartbeats, relays its progress to Spec.Progress, and tells it
// to stop the trial when Run's context ends.
//
// A worker that stops renewing its lease (killed, cut off) loses its
// trials: their Run returns FAILED, with a reason naming the lost worker,
// which the retry policy retries as a new trial within max_retries (as a
// preemption of an engine job). A worker that leaves (bye, interrupted)
// hands its trials back: they are offered again, to the next worker that
// claims, within the same Run.
type Pool struct {
	lease time.Duration
	log   *slog.Logger
	// base are the driver's globals: what of a Spec's globals is not
	// among them is the trial's metadata, sent to the worker.
	base map[string]any
	now  func() time.Time

	mu      sync.Mutex
	queue   []*offer         // offered, not leased, oldest first
	offers  map[int]*offer   // by trial id: queued or leased
	workers map[string]*peer // registered workers
	runners map[int]*RemoteRunner
	over    bool // the experiment is over (Close)
	// changed is closed (and replaced) when a trial is offered or the
	// experiment ends: claims waiting for a trial look again.
	changed chan struct{}
	// started is when the pool was made: for twice the lease after it,
	// trials it does not know that a worker says it runs are kept for it
	// (orphans: they were leased by the driver before it restarted).
	started time.Time
	orphans map[int]string // trial id → the worker that runs it
	// gone holds the trials this pool offered and no longer does
	// (finished, withdrawn, lost): a worker running one is told to stop.
	gone map[int]bool
}

// peer is a registered worker.
type peer struct {
	runners int
	seen    time.Time // registration or last heartbeat
}

// offer is a trial a RemoteRunner's Run waits on.
type offer struct {
	spec    schedulers.Spec
	meta    map[string]string
	worker  string    // "" while queued
	renewed time.Time // the lease's last renewal
	// stop is set when Run's context ended: the worker is told to stop.
	stop   bool
	result chan trial.Outcome // one outcome, buffered
	// lastStep is the last progress step relayed (steps go in order).
	lastStep int64
	stepped  bool
}

// NewPool returns a pool whose workers' claims on trials last lease
// without a heartbeat (default 30s). globals are the driver's own.
func NewPool(lease time.Duration, globals map[string]any, log *slog.Logger) *Pool {
	if lease <= 0 {
		lease = 30 * time.Second
	}
	if log == nil {
		log = slog.Default()
	}
	return &Pool{lease: lease, log: log, base: globals, now: time.Now, offers: map[int]*offer{},
		workers: map[string]*peer{}, runners: map[int]*RemoteRunner{}, changed: make(chan struct{}),
		started: time.Now(), orphans: map[int]string{}, gone: map[int]bool{}}
}

// workerLease is how long a worker counts (its slots take trials) after
// its registration or last heartbeat: half the trial lease. Its heartbeats
// come every third of the lease, so a live worker keeps counting, and a
// killed one stops counting after half the lease, before its claims on
// trials run out.
func (p *Pool) workerLease() time.Duration { return p.lease / 2 }

// Available is the number of trial slots of the live workers.
func (p *Pool) Available() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.availableLocked()
}

func (p *Pool) availableLocked() int {
	n := 0
	now := p.now()
	for id, w := range p.workers {
		switch idle := now.Sub(w.seen); {
		case idle <= p.workerLease():
			n += w.runners
		case idle > 2*p.lease:
			// Gone for long: forgotten (it is taken as a new worker if it
			// comes back).
			delete(p.workers, id)
		}
	}
	return n
}

// Workers is the number of live workers.
func (p *Pool) Workers() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for _, w := range p.workers {
		if p.now().Sub(w.seen) <= p.workerLease() {
			n++
		}
	}
	return n
}

// Runner returns the runner of a trial slot (schedulers.RemotePool).
func (p *Pool) Runner(id int) schedulers.Runner {
	p.mu.Lock()
	defer p.mu.Unlock()
	r, ok := p.runners[id]
	if !ok {
		r = &RemoteRunner{id: id, pool: p}
		p.runners[id] = r
	}
	return r
}

// Close tells the workers that the experiment is over: claims answer
// finished, and they exit.
func (p *Pool) Close() {
	p.mu.Lock()
	p.over = true
	p.signalLocked()
	p.mu.Unlock()
}

// signalLocked wakes the claims waiting for a trial.
func (p *Pool) signalLocked() {
	close(p.changed)
	p.changed = make(chan struct{})
}

// claimWait is how long a claim waits for a trial to be offered before it
// is answered with none (a long poll: the next trial goes to a waiting
// worker as soon as the driver offers it, without a polling delay).
const claimWait = 5 * time.Second

// takeWait is take, waiting up to wait for a trial (or the experiment's
// end, or ctx's).
func (p *Pool) takeWait(ctx context.Context, worker string, wait time.Duration) (*Assignment, bool) {
	timer := time.NewTimer(wait)
	defer timer.Stop()
	for {
		a, ok := p.take(worker)
		if ok && ctx.Err() != nil {
			// The worker gave up its claim (it quit, or its request
			// timed out) as the trial came: the trial goes back to the
			// front of the queue instead of waiting for a lease to run
			// out on a worker that will never run it.
			p.untake(worker, a.TrialID)
			return nil, false
		}
		if ok {
			return a, true
		}
		p.mu.Lock()
		over, changed := p.over, p.changed
		p.mu.Unlock()
		if over {
			return nil, false
		}
		select {
		case <-changed:
		case <-timer.C:
			return nil, false
		case <-ctx.Done():
			return nil, false
		}
	}
}

func (p *Pool) finished() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.over
}

func (p *Pool) register(id string, runners int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.workers[id] = &peer{runners: max(runners, 1), seen: p.now()}
}

// known reports whether id is a registered worker.
func (p *Pool) known(id string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	_, ok := p.workers[id]
	return ok
}

// take hands the oldest queued trial to the worker (nil: none).
func (p *Pool) take(worker string) (*Assignment, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	w, ok := p.workers[worker]
	if !ok {
		// It said bye while its claim waited: nothing for it.
		return nil, false
	}
	w.seen = p.now()
	if len(p.queue) == 0 {
		return nil, false
	}
	o := p.queue[0]
	p.queue = p.queue[1:]
	o.worker, o.renewed = worker, p.now()
	o.spec.Activity.Touch()
	return &Assignment{TrialID: o.spec.TrialID, Params: o.spec.Params, Metadata: o.meta}, true
}

// renew renews the worker's registration and its leases on the trials it
// names; it returns those it still holds (the others it is to stop).
func (p *Pool) renew(worker string, runners int, trials []int) []int {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.now()
	if w, ok := p.workers[worker]; ok {
		w.seen, w.runners = now, max(runners, 1)
	} else {
		// A worker of a restarted server: it counts again.
		p.workers[worker] = &peer{runners: max(runners, 1), seen: now}
	}
	held := []int{}
	seen := map[int]bool{}
	for _, id := range trials {
		if seen[id] {
			continue
		}
		seen[id] = true
		o, ok := p.offers[id]
		if !ok {
			if p.orphanLocked(worker, id) {
				held = append(held, id)
			}
			continue
		}
		if !p.adoptLocked(o, worker) {
			continue
		}
		o.renewed = now
		o.spec.Activity.Touch()
		held = append(held, id)
	}
	return held
}

// adoptLocked reports whether the worker holds o, leasing it to the worker
// when o is queued: a worker that runs a trial the driver offers again
// (the driver restarted and resumed it) goes on with it instead of
// running it twice.
func (p *Pool) adoptLocked(o *offer, worker string) bool {
	if o.stop {
		return false
	}
	if o.worker == "" {
		for i, q := range p.queue {
			if q == o {
				p.queue = append(p.queue[:i], p.queue[i+1:]...)
				break
			}
		}
		o.worker, o.renewed = worker, p.now()
		p.log.Info("a worker goes on with a trial it ran before the driver restarted", "trial", o.spec.TrialID, "worker", worker)
	}
	return o.worker == worker
}

// maxOrphans bounds the orphans a pool keeps.
const maxOrphans = 10000

// orphanLocked reports whether a trial this pool does not offer is kept
// for the worker that says it runs it: only shortly after the pool was
// made (a restarted driver has not offered it again yet), and never a
// trial this pool offered before.
func (p *Pool) orphanLocked(worker string, id int) bool {
	if p.gone[id] || p.now().Sub(p.started) > 2*p.lease {
		return false
	}
	w, ok := p.orphans[id]
	if ok && w != worker || !ok && len(p.orphans) >= maxOrphans {
		return false
	}
	p.orphans[id] = worker
	return true
}

// errNotHeld refuses what a worker posts for a trial it does not hold.
var errNotHeld = errors.New("not assigned to this worker")

// complete hands a worker's outcome to the Run waiting on the trial.
// An orphan's outcome (a trial the worker ran for the driver before it
// restarted) waits up to wait for the driver to offer the trial again.
func (p *Pool) complete(ctx context.Context, worker string, id int, out trial.Outcome, wait time.Duration) error {
	timer := time.NewTimer(wait)
	defer timer.Stop()
	for {
		p.mu.Lock()
		o, ok := p.offers[id]
		if ok {
			defer p.mu.Unlock()
			if !p.adoptLocked(o, worker) {
				return errNotHeld
			}
			p.dropLocked(o)
			o.result <- out
			return nil
		}
		if !p.orphanLocked(worker, id) {
			p.mu.Unlock()
			return errNotHeld
		}
		changed := p.changed
		p.mu.Unlock()
		select {
		case <-changed:
		case <-timer.C:
			return errNotHeld
		case <-ctx.Done():
			return errNotHeld
		}
	}
}

// progress relays a worker's intermediate results to the trial's
// Spec.Progress (reports of a step not after the last one are dropped:
// the listener gets them in step order).
func (p *Pool) progress(worker string, id int, ps []trial.Progress) error {
	p.mu.Lock()
	o, ok := p.offers[id]
	if !ok {
		held := p.orphanLocked(worker, id)
		p.mu.Unlock()
		if held {
			// Not offered again yet: these reports have no listener.
			return nil
		}
		return errNotHeld
	}
	if !p.adoptLocked(o, worker) {
		p.mu.Unlock()
		return errNotHeld
	}
	o.renewed = p.now()
	o.spec.Activity.Touch()
	var send []trial.Progress
	for _, pr := range ps {
		if o.stepped && pr.Step <= o.lastStep {
			continue
		}
		o.stepped, o.lastStep = true, pr.Step
		send = append(send, pr)
	}
	fn := o.spec.Progress
	p.mu.Unlock()
	if fn != nil {
		// Spec.Progress does not block for long (its contract); called
		// off the lock, in order: one request's reports at a time per
		// trial, and a worker posts a trial's reports one request after
		// the other.
		for _, pr := range send {
			fn(pr)
		}
	}
	return nil
}

// bye hands a leaving worker's trials back to the queue (they run on the
// next worker that claims) and forgets the worker.
func (p *Pool) bye(worker string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.workers, worker)
	var back []*offer
	for _, o := range p.offers {
		if o.worker == worker && !o.stop {
			o.worker = ""
			back = append(back, o)
		}
	}
	// Handed back before the trials queued after them.
	for i := 1; i < len(back); i++ {
		for j := i; j > 0 && back[j].spec.TrialID < back[j-1].spec.TrialID; j-- {
			back[j], back[j-1] = back[j-1], back[j]
		}
	}
	p.queue = append(back, p.queue...)
	if len(back) > 0 {
		p.signalLocked()
	}
}

// untake puts trial id, just taken by worker, back at the front of the
// queue (its claim was abandoned).
func (p *Pool) untake(worker string, id int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	o, ok := p.offers[id]
	if !ok || o.worker != worker || o.stop {
		return
	}
	o.worker = ""
	p.queue = append([]*offer{o}, p.queue...)
	p.signalLocked()
}

// offer queues spec for the workers.
func (p *Pool) offer(spec schedulers.Spec) *offer {
	o := &offer{spec: spec, meta: p.metadata(spec.Globals), result: make(chan trial.Outcome, 1)}
	p.mu.Lock()
	defer p.mu.Unlock()
	if old, ok := p.offers[spec.TrialID]; ok {
		// A Run of the same trial that ended without withdrawing it
		// cannot happen; a new one replaces it all the same.
		p.dropLocked(old)
	}
	p.offers[spec.TrialID] = o
	delete(p.gone, spec.TrialID)
	if w, ok := p.orphans[spec.TrialID]; ok {
		// The worker that ran it for the driver before its restart still
		// does: it goes on with it.
		delete(p.orphans, spec.TrialID)
		o.worker, o.renewed = w, p.now()
		p.log.Info("a worker goes on with a trial it ran before the driver restarted", "trial", spec.TrialID, "worker", w)
	} else {
		p.queue = append(p.queue, o)
	}
	p.signalLocked()
	return o
}

// withdraw ends an offer whose Run's context ended: it leaves the queue,
// or the worker holding it is told to stop it (its next heartbeat or
// progress post is answered so) and its result is refused.
func (p *Pool) withdraw(o *offer) {
	p.mu.Lock()
	defer p.mu.Unlock()
	o.stop = true
	p.dropLocked(o)
}

func (p *Pool) dropLocked(o *offer) {
	if p.offers[o.spec.TrialID] == o {
		delete(p.offers, o.spec.TrialID)
		p.gone[o.spec.TrialID] = true
	}
	for i, q := range p.queue {
		if q == o {
			p.queue = append(p.queue[:i], p.queue[i+1:]...)
			break
		}
	}
}

// lost reports, and forgets, a leased offer whose worker stopped renewing
// its lease; it returns the worker's id.
func (p *Pool) lost(o *offer) (string, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if o.worker == "" || p.now().Sub(o.renewed) <= p.lease {
		return "", false
	}
	p.dropLocked(o)
	return o.worker, true
}

// metadata is what of a trial's globals is its stored metadata (repeat_i,
// optimizer, ...): the string values that are not the driver's own
// globals nor the ids every trial gets. The worker builds the trial's
// globals from its own and these (trial.Globals), as the driver did.
func (p *Pool) metadata(g map[string]any) map[string]string {
	m := map[string]string{}
	for k, v := range g {
		s, ok := v.(string)
		if !ok || k == "experiment_id" {
			continue
		}
		if _, driver := p.base[k]; driver {
			continue
		}
		m[k] = s
	}
	return m
}

// RemoteRunner runs trials on the network workers: one trial slot of the
// pool, as the dispatcher sees it (schedulers.Runner).
type RemoteRunner struct {
	id   int
	pool *Pool
}

// ID returns the slot's trial_runner_id on the driver's side (the worker's
// environment gets its own runner's id).
func (r *RemoteRunner) ID() int { return r.id }

// Run offers the trial to the workers and waits for its outcome:
//
//   - the outcome a worker posts (not yet finalized: the dispatcher checks
//     it as it checks a local runner's, trial.Finalize and trial.RunEnd);
//   - when ctx ends, the worker is told to stop the trial (its heartbeat
//     or next progress post is answered so), and Run returns at once with
//     the status trial.StopCause gives: TIMED_OUT for a time limit or a
//     hang, CANCELED for bench stop or a pruned trial, and an interrupted
//     CANCELED (not stored) when bench itself stops;
//   - when the worker holding the trial stops renewing its lease (killed,
//     cut off), FAILED naming the lost worker: retried as a new trial
//     within max_retries, like an engine job's preemption.
func (r *RemoteRunner) Run(ctx context.Context, spec schedulers.Spec) trial.Outcome {
	return r.wait(ctx, r.pool.offer(spec), spec)
}

// wait is Run once the trial is offered.
func (r *RemoteRunner) wait(ctx context.Context, o *offer, spec schedulers.Spec) trial.Outcome {
	p := r.pool
	check := time.NewTicker(max(p.lease/4, 10*time.Millisecond))
	defer check.Stop()
	for {
		select {
		case out := <-o.result:
			if out.Ts.IsZero() {
				out.Ts = time.Now().UTC()
			}
			return out
		case <-ctx.Done():
			p.withdraw(o)
			select {
			case out := <-o.result:
				// Posted just before: the worker's outcome stands.
				return out
			default:
			}
			st, reason, _ := trial.StopCause(ctx)
			return trial.Outcome{Status: st, Ts: time.Now().UTC(), FailureReason: reason}
		case <-check.C:
			if w, ok := p.lost(o); ok {
				select {
				case out := <-o.result:
					return out
				default:
				}
				p.log.Warn("a network worker stopped renewing its lease on a trial; the trial failed (retried within max_retries)",
					"trial", spec.TrialID, "worker", w, "lease", p.lease)
				return trial.Outcome{Status: trial.FAILED, Ts: time.Now().UTC(),
					FailureReason: fmt.Sprintf("%s: network worker %s stopped renewing its lease (%s) while it ran the trial", ErrWorkerLost, w, p.lease)}
			}
		}
	}
}

// ErrWorkerLost starts the reason of a trial whose network worker stopped
// renewing its lease.
var ErrWorkerLost = errors.New("worker lost")

// Teardown does nothing: the workers tear their environments down.
func (r *RemoteRunner) Teardown(context.Context) error { return nil }

// Close does nothing.
func (r *RemoteRunner) Close() error { return nil }

// String names the slot in logs.
func (r *RemoteRunner) String() string { return "network worker slot " + strconv.Itoa(r.id) }
