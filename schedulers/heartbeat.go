package schedulers

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// heartbeat renews this process's leases (and a worker's registration) on
// a goroutine of its own, every third of the lease, so that nothing the
// dispatcher's goroutine does (an optimizer's Suggest that takes longer
// than the lease, a slow storage scan) lets a lease run out and another
// process take over a trial that is still running here.
type heartbeat struct {
	// busy tells whether there is anything to renew: trials running or
	// queued here (the dispatcher sets it), or a worker's registration.
	busy atomic.Bool
	// beats counts the renewals done (tests wait on it).
	beats  atomic.Int64
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// startHeartbeat starts renewing leases until stop is called (or ctx ends).
func (s *Scheduler) startHeartbeat(ctx context.Context) *heartbeat {
	h := &heartbeat{}
	ctx, h.cancel = context.WithCancel(ctx)
	every := s.cfg.Lease / 3
	if every <= 0 {
		every = time.Second
	}
	h.wg.Add(1)
	go func() {
		defer h.wg.Done()
		tick := s.clock().NewTicker(every)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C():
			}
			if !h.busy.Load() && !s.o.Worker {
				continue
			}
			if _, err := s.exp.Heartbeat(ctx); err != nil && ctx.Err() == nil {
				s.log.Warn("renewing the lease on running trials", "err", err)
			}
			if s.o.Worker {
				if err := s.registerWorker(ctx); err != nil && ctx.Err() == nil {
					s.log.Warn("renewing this worker's registration", "err", err)
				}
			}
			h.beats.Add(1)
			if s.o.onBeat != nil {
				s.o.onBeat()
			}
		}
	}()
	return h
}

// stop ends the heartbeat and waits for its goroutine.
func (h *heartbeat) stop() {
	h.cancel()
	h.wg.Wait()
}
