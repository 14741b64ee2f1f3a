// Remote runners: runners that come and go while an experiment runs (network workers served by bench serve).

package schedulers

import "context"

// RemotePool is a set of runners whose number changes while the
// experiment runs: the trial slots of the network workers that bench serve
// serves. The dispatcher sees its runners as it sees local ones (they
// claim a trial, Run it and return the outcome, which is recorded on the
// same path); it only asks, before it fills idle runners, how many of them
// can take a trial now.
type RemotePool interface {
	// Available is how many trials the pool can run at once now (the
	// runner slots of its live workers).
	Available() int
	// Runner returns the pool's runner for a trial slot, made on first use
	// with this id (unique among the scheduler's runners); the same id
	// gets the same runner.
	Runner(id int) Runner
}

// UseRemote adds p's runners to the scheduler's (call it before Start).
// With local trials off (DriverOnly, --no-local-trials) they are the only
// runners; a worker process (Options.Worker) with local trials off runs
// the trials it claims on them only (bench serve).
func (s *Scheduler) UseRemote(p RemotePool) { s.remote = p }

// remoteIDBase is added to a remote slot's index to make its runner id,
// so that remote runners never share an id with local ones.
const remoteIDBase = 1000

// localOff reports whether this process runs no trial on its own runners.
func (s *Scheduler) localOff() bool {
	return s.cfg.DriverOnly && (!s.o.Worker || s.remote != nil)
}

// localRunners are the runners the dispatcher starts with.
func (s *Scheduler) localRunners() []Runner {
	if s.localOff() {
		return nil
	}
	return s.runners
}

// isRemote reports whether r is one of the remote pool's runners.
func (d *dispatch) isRemote(r Runner) bool {
	_, ok := d.remoteOn[r]
	return ok
}

// syncRemote brings the dispatcher's remote runners in line with what the
// pool can run now: new slots join the idle runners, and idle slots beyond
// it leave (a running one leaves once its trial has ended).
func (d *dispatch) syncRemote(ctx context.Context) {
	p := d.s.remote
	if p == nil {
		return
	}
	if d.remoteOn == nil {
		d.remoteOn = map[Runner]bool{}
	}
	want := p.Available()
	for id := remoteIDBase + 1; len(d.remoteOn) < want; id++ {
		r := p.Runner(id)
		if _, on := d.remoteOn[r]; on {
			continue
		}
		d.remoteOn[r] = true
		d.idle = append(d.idle, r)
	}
	for i := len(d.idle) - 1; i >= 0 && len(d.remoteOn) > want; i-- {
		if r := d.idle[i]; d.isRemote(r) {
			delete(d.remoteOn, r)
			d.idle = append(d.idle[:i], d.idle[i+1:]...)
		}
	}
	if n := int64(len(d.remoteOn)); d.s.remoteN.Swap(n) != n && d.s.o.Worker && ctx.Err() == nil {
		// A worker process (bench serve) tells the driver at once how many
		// trials to queue for it (the heartbeat renews it).
		if err := d.s.registerWorker(ctx); err != nil {
			d.s.log.Warn("renewing this worker's registration", "err", err)
		}
	}
}

// registerWorker records this worker process in storage with its number
// of trial runners, so that the driver keeps that many trials queued for
// it; a worker with none now (bench serve before its first network worker
// connects, or after its last left) is no worker of the experiment until
// it has some.
func (s *Scheduler) registerWorker(ctx context.Context) error {
	if n := s.concurrency(); n > 0 {
		return s.exp.RegisterWorker(ctx, n)
	}
	return s.exp.UnregisterWorker(ctx)
}
