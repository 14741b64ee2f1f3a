package schedulers

import (
	"context"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/benchtune/bench/environments"
	"github.com/benchtune/bench/internal/clock"
	"github.com/benchtune/bench/storage"
	"github.com/benchtune/bench/trial"
)

// readCounter counts an experiment's reads of the change feed and of the
// unfinished trials, through every owner view made of it (WithOwner).
type readCounter struct {
	storage.Experiment
	changes, pending *atomic.Int64
}

func (c readCounter) WithOwner(owner string, lease time.Duration) storage.Experiment {
	return readCounter{c.Experiment.WithOwner(owner, lease), c.changes, c.pending}
}

func (c readCounter) Changes(ctx context.Context, since int64) ([]storage.Trial, int64, error) {
	c.changes.Add(1)
	return c.Experiment.Changes(ctx, since)
}

func (c readCounter) PendingTrials(ctx context.Context) ([]storage.Trial, error) {
	c.pending.Add(1)
	return c.Experiment.PendingTrials(ctx)
}

// A driver that runs its trials on network workers only (bench run
// --serve --no-local-trials) and has none connected runs nothing and has
// nothing queued: it reads the change feed once a second, not at every
// tick (200 ms), and the unfinished trials no more often. Once a worker's
// slot opens, the trials run there and their outcomes arrive through the
// slot's runner (Run returns), with no tick and no feed read to wait for.
func TestServeDriverIdleReadsFeedOncePerSecond(t *testing.T) {
	const tick = 200 * time.Millisecond
	const idleFor = 10 * time.Second
	fake := clock.NewFake(time.Now())
	ticks, onTick := hookSignal()
	var changes, pending atomic.Int64
	p := newPar(t, filepath.Join(t.TempDir(), "db.sqlite"), Config{ExperimentID: "e", Parallel: true, DriverOnly: true}, 1, "",
		map[string]any{"optimizer_type": "RANDOM", "max_suggestions": int64(3)}, Options{Clock: fake, Tick: tick, onTick: onTick},
		func(context.Context, environments.Params) environments.Result {
			t.Error("a trial ran on the local runner with local trials off")
			return environments.Result{Status: trial.FAILED}
		})
	// The same scheduler over the counting experiment.
	s, err := New(p.sched.cfg, p.sched.runners, p.sched.opt, readCounter{p.exp, &changes, &pending}, p.sched.o)
	if err != nil {
		t.Fatal(err)
	}
	pool := &fakePool{runners: map[int]*fakeRemote{}, ran: map[int]int{}}
	s.UseRemote(pool)
	errc := make(chan error, 1)
	go func() { errc <- s.Start(context.Background()) }()
	fake.WaitTickers(2) // the dispatcher's tick and the heartbeat's
	step := func() {
		t.Helper()
		drainHook(ticks)
		fake.Advance(tick)
		select {
		case <-ticks:
		case err := <-errc:
			t.Fatalf("the driver ended with no worker connected: %v", err)
		case <-time.After(hookSafety):
			t.Fatalf("no tick handled at %v", fake.Now())
		}
	}
	step() // past the start-up reads
	c0, p0 := changes.Load(), pending.Load()
	n := int(idleFor / tick)
	for range n {
		step()
	}
	feedReads, pendingReads := changes.Load()-c0, pending.Load()-p0
	t.Logf("idle for %v (%d ticks): %d change-feed reads, %d reads of the unfinished trials", idleFor, n, feedReads, pendingReads)
	if want := int64(idleFor / time.Second); feedReads > want {
		t.Errorf("%d change-feed reads in %v of idling (%d ticks), want at most %d (once a second)", feedReads, idleFor, n, want)
	}
	if want := 2 * int64(idleFor/time.Second); pendingReads > want {
		t.Errorf("%d reads of the unfinished trials in %v of idling (%d ticks), want at most %d", pendingReads, idleFor, n, want)
	}
	if len(trials(t, p.exp)) != 0 {
		t.Fatal("trials were stored with no worker connected")
	}
	// A worker connects: its slot runs the trials, and their outcomes come
	// back through the runner with the clock standing still after the tick
	// that saw the slot.
	pool.mu.Lock()
	pool.avail = 1
	pool.mu.Unlock()
	drainHook(ticks)
	fake.Advance(tick)
	select {
	case err := <-errc:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(hookSafety):
		t.Fatal("the driver did not finish its trials on the worker's slot without another tick")
	}
	ts := trials(t, p.exp)
	if len(ts) != 3 {
		t.Fatalf("%d trials, want 3", len(ts))
	}
	for _, tr := range ts {
		if tr.Status != trial.SUCCEEDED || tr.TrialRunnerID <= remoteIDBase {
			t.Errorf("trial %d: %s on runner %d, want SUCCEEDED on the worker's slot", tr.ID, tr.Status, tr.TrialRunnerID)
		}
	}
	if st := s.Stats(); st.Run != 3 || st.Succeeded != 3 {
		t.Errorf("stats %+v: the worker's outcomes are this driver's own", st)
	}
}

// A driver whose trials a storage-sharing worker runs (bench worker) still
// reads the change feed at every tick while that worker holds a trial: the
// outcome comes through the feed only, and is recorded at the first tick
// after it was stored.
func TestDriverPollsFeedEachTickWhileWorkerRuns(t *testing.T) {
	const tick = 200 * time.Millisecond
	fake := clock.NewFake(time.Now())
	ticks, onTick := hookSignal()
	var changes, pending atomic.Int64
	p := newPar(t, filepath.Join(t.TempDir(), "db.sqlite"), Config{ExperimentID: "e", Parallel: true, DriverOnly: true}, 1, "",
		map[string]any{"optimizer_type": "RANDOM", "max_suggestions": int64(1)}, Options{Clock: fake, Tick: tick, onTick: onTick},
		func(context.Context, environments.Params) environments.Result {
			t.Error("a trial ran on the local runner with local trials off")
			return environments.Result{Status: trial.FAILED}
		})
	ctx := context.Background()
	worker := p.exp.WithOwner("elsewhere.example:1:ffff", 30*time.Second)
	if err := worker.RegisterWorker(ctx, 1); err != nil {
		t.Fatal(err)
	}
	s, err := New(p.sched.cfg, p.sched.runners, p.sched.opt, readCounter{p.exp, &changes, &pending}, p.sched.o)
	if err != nil {
		t.Fatal(err)
	}
	errc := make(chan error, 1)
	go func() { errc <- s.Start(ctx) }()
	fake.WaitTickers(2)
	step := func() {
		t.Helper()
		drainHook(ticks)
		fake.Advance(tick)
		select {
		case <-ticks:
		case err := <-errc:
			t.Fatalf("the driver ended while the worker's trial ran: %v", err)
		case <-time.After(hookSafety):
			t.Fatalf("no tick handled at %v", fake.Now())
		}
	}
	step() // the driver queues a trial for the worker
	got, err := worker.Claim(ctx, 1)
	if err != nil || len(got) != 1 {
		t.Fatalf("the worker claimed %v (%v), want the trial queued for it", got, err)
	}
	id := got[0].ID
	if err := worker.UpdateStatus(ctx, id, trial.RUNNING, time.Time{}); err != nil {
		t.Fatal(err)
	}
	c0 := changes.Load()
	const n = 10
	for range n {
		step()
	}
	if reads := changes.Load() - c0; reads != n {
		t.Errorf("%d change-feed reads in %d ticks while the worker ran a trial, want one a tick", reads, n)
	}
	if err := worker.Finish(ctx, id, storage.TrialOutcome{Status: trial.SUCCEEDED, Results: map[string]any{"score": 3.0}}); err != nil {
		t.Fatal(err)
	}
	// One tick: the driver reads the outcome, its budget is spent, it ends.
	fake.Advance(tick)
	select {
	case err := <-errc:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(hookSafety):
		t.Fatal("the driver did not record the worker's outcome at the next tick")
	}
	if ts := trials(t, p.exp); len(ts) != 1 || ts[0].Status != trial.SUCCEEDED {
		t.Fatalf("trials: %+v", ts)
	}
}
