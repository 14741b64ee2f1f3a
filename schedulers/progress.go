package schedulers

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/benchtune/bench/storage"
	"github.com/benchtune/bench/trial"
)

// progressFlushEvery is the least time between two writes of a trial's
// progress to storage: reports that arrive meanwhile go in one batch.
const progressFlushEvery = 200 * time.Millisecond

// progressWriter stores the progress reports of one running trial
// (Spec.Progress) as telemetry with their step, off the runner's
// goroutine: add only appends to a buffer, a goroutine of its own writes
// the batches (storage.Experiment.AddProgress), and close writes what is
// left and waits for it. The goroutine starts with the first report: most
// trials report none, and then close costs no hand-over between
// goroutines.
type progressWriter struct {
	exp     storage.Experiment
	trialID int
	log     *slog.Logger
	every   time.Duration

	mu      sync.Mutex
	pending []trial.Progress
	last    time.Time // the latest Ts handed out, for distinct rows
	closed  bool
	started bool // the goroutine runs (since the first report)
	ctx     context.Context
	wake    chan struct{} // a report is pending
	quit    chan struct{} // closed by close
	done    chan struct{} // closed when the last batch is written
	failed  bool          // a write failed (logged once)
}

func newProgressWriter(ctx context.Context, exp storage.Experiment, trialID int, log *slog.Logger) *progressWriter {
	return &progressWriter{exp: exp, trialID: trialID, log: log, every: progressFlushEvery,
		ctx: context.WithoutCancel(ctx), wake: make(chan struct{}, 1), quit: make(chan struct{}), done: make(chan struct{})}
}

// add takes a report (Spec.Progress); it never waits on storage. A
// report without Ts gets now; each report gets a time after the
// previous one's (at least a microsecond later, what every database
// keeps), so that no two rows of a metric share a key.
func (w *progressWriter) add(p trial.Progress) {
	if len(p.Values) == 0 {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return
	}
	if p.Ts.IsZero() {
		p.Ts = time.Now()
	}
	p.Ts = p.Ts.UTC().Truncate(time.Microsecond)
	if !p.Ts.After(w.last) {
		p.Ts = w.last.Add(time.Microsecond)
	}
	w.last = p.Ts
	w.pending = append(w.pending, p)
	if !w.started {
		w.started = true
		go w.loop(w.ctx)
	}
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// close stores what is left and returns once everything is written.
func (w *progressWriter) close() {
	w.mu.Lock()
	if !w.closed {
		w.closed = true
		close(w.quit)
	}
	started := w.started
	w.mu.Unlock()
	if started {
		<-w.done
	}
}

func (w *progressWriter) loop(ctx context.Context) {
	defer close(w.done)
	for {
		quit := false
		select {
		case <-w.wake:
		case <-w.quit:
			quit = true
		}
		w.flush(ctx)
		if quit {
			return
		}
		// Let reports gather: one write per interval at most.
		t := time.NewTimer(w.every)
		select {
		case <-t.C:
		case <-w.quit:
		}
		t.Stop()
	}
}

func (w *progressWriter) flush(ctx context.Context) {
	w.mu.Lock()
	batch := w.pending
	w.pending = nil
	w.mu.Unlock()
	if len(batch) == 0 {
		return
	}
	if err := w.exp.AddProgress(ctx, w.trialID, batch); err != nil && !w.failed {
		w.failed = true
		w.log.Warn("could not store the trial's progress; later reports may be lost too", "trial", w.trialID, "err", err)
	}
}

// chain returns a Progress callback that gives each report to first,
// then to next (nil: none).
func chain(first, next func(trial.Progress)) func(trial.Progress) {
	if next == nil {
		return first
	}
	return func(p trial.Progress) {
		first(p)
		next(p)
	}
}
