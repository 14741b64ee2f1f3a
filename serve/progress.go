package serve

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"time"

	"github.com/benchtune/bench/trial"
)

// maxPendingProgress bounds the reports a worker keeps for one trial while
// a post is on its way (the oldest are dropped past it).
const maxPendingProgress = 1000

// progressPoster posts a running trial's intermediate results to the
// server (POST /v1/progress), in the order the runner reported them,
// batching what arrives while a post is on its way: the runner's
// Spec.Progress never waits on the network. A 409 answer (the driver no
// longer assigns the trial to this worker: stopped, pruned, taken over)
// stops the trial; a 404 (a server older than progress posting) ends
// posting for the worker.
type progressPoster struct {
	w       *worker
	trialID int
	stop    context.CancelCauseFunc
	mu      sync.Mutex
	pending []trial.Progress
	dropped int
	closing bool
	wake    chan struct{}
	done    chan struct{}
}

// errNoProgressRoute is logged once a server answered a progress post with 404.
var errNoProgressRoute = errors.New("the server takes no progress")

func newProgressPoster(w *worker, trialID int, stop context.CancelCauseFunc) *progressPoster {
	return &progressPoster{w: w, trialID: trialID, stop: stop, wake: make(chan struct{}, 1), done: make(chan struct{})}
}

// add is the trial's Spec.Progress.
func (p *progressPoster) add(pr trial.Progress) {
	if p.w.noProgress.Load() {
		return
	}
	if pr.Ts.IsZero() {
		pr.Ts = time.Now().UTC()
	}
	p.mu.Lock()
	if len(p.pending) >= maxPendingProgress {
		p.pending = p.pending[1:]
		p.dropped++
	}
	p.pending = append(p.pending, pr)
	p.mu.Unlock()
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

// run posts until close was called and nothing is pending (or ctx ends).
func (p *progressPoster) run(ctx context.Context) {
	defer close(p.done)
	for {
		p.mu.Lock()
		batch, closing := p.pending, p.closing
		p.pending = nil
		p.mu.Unlock()
		if len(batch) > 0 && !p.w.noProgress.Load() {
			p.post(ctx, batch)
			continue
		}
		if closing {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-p.wake:
		}
	}
}

func (p *progressPoster) post(ctx context.Context, batch []trial.Progress) {
	for len(batch) > 0 {
		n := min(len(batch), maxProgressReports)
		err := p.w.c.call(ctx, "/v1/progress", ProgressRequest{WorkerID: p.w.id, TrialID: p.trialID, Progress: batch[:n]}, nil)
		batch = batch[n:]
		var he *errHTTP
		switch {
		case err == nil:
		case errors.As(err, &he) && he.code == http.StatusNotFound:
			if !p.w.noProgress.Swap(true) {
				p.w.log.Warn("the server takes no progress reports (an older bench serve); this worker stops posting them", "err", errNoProgressRoute)
			}
			return
		case errors.As(err, &he) && he.code == http.StatusConflict:
			p.w.log.Warn("the server no longer assigns this trial to this worker; stopping it", "trial", p.trialID)
			p.stop(errTakenOver)
			return
		default:
			if ctx.Err() == nil {
				// Progress is best effort: the outcome is what counts.
				p.w.log.Warn("could not post the trial's progress; those reports are lost", "trial", p.trialID, "err", err)
			}
			return
		}
	}
}

// close posts what is pending and ends the poster, waiting at most wait.
func (p *progressPoster) close(wait time.Duration) {
	p.mu.Lock()
	p.closing = true
	p.mu.Unlock()
	select {
	case p.wake <- struct{}{}:
	default:
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-p.done:
	case <-t.C:
	}
}
