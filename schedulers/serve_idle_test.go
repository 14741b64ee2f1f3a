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

// idleTick is the dispatcher's tick in these tests (the default).
const idleTick = 200 * time.Millisecond

// countedDriver is a driver that runs no trial itself (local trials off)
// on a fake clock, over an experiment whose reads are counted.
type countedDriver struct {
	p                parSetup // the experiment as opened (not counted)
	s                *Scheduler
	fake             *clock.Fake
	ticks            chan struct{}
	errc             chan error
	changes, pending atomic.Int64
}

func newCountedDriver(t *testing.T, maxSuggestions int64) *countedDriver {
	t.Helper()
	d := &countedDriver{fake: clock.NewFake(time.Now()), errc: make(chan error, 1)}
	ticks, onTick := hookSignal()
	d.ticks = ticks
	d.p = newPar(t, filepath.Join(t.TempDir(), "db.sqlite"), Config{ExperimentID: "e", Parallel: true, DriverOnly: true}, 1, "",
		map[string]any{"optimizer_type": "RANDOM", "max_suggestions": maxSuggestions}, Options{Clock: d.fake, Tick: idleTick, onTick: onTick},
		func(context.Context, environments.Params) environments.Result {
			t.Error("a trial ran on the local runner with local trials off")
			return environments.Result{Status: trial.FAILED}
		})
	// The same scheduler over the counting experiment.
	s, err := New(d.p.sched.cfg, d.p.sched.runners, d.p.sched.opt, readCounter{d.p.exp, &d.changes, &d.pending}, d.p.sched.o)
	if err != nil {
		t.Fatal(err)
	}
	d.s = s
	return d
}

// start runs the driver and waits for its tick and heartbeat.
func (d *countedDriver) start() {
	go func() { d.errc <- d.s.Start(context.Background()) }()
	d.fake.WaitTickers(2)
}

// step moves the clock one tick and waits for the driver to handle it.
func (d *countedDriver) step(t *testing.T) {
	t.Helper()
	drainHook(d.ticks)
	d.fake.Advance(idleTick)
	select {
	case <-d.ticks:
	case err := <-d.errc:
		t.Fatalf("the driver ended early: %v", err)
	case <-time.After(hookSafety):
		t.Fatalf("no tick handled at %v", d.fake.Now())
	}
}

// lastStep moves the clock one tick, after which the driver must end
// without the clock moving again.
func (d *countedDriver) lastStep(t *testing.T, what string) {
	t.Helper()
	drainHook(d.ticks)
	d.fake.Advance(idleTick)
	select {
	case err := <-d.errc:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(hookSafety):
		t.Fatalf("the driver did not end: %s", what)
	}
}

// A driver that runs its trials on network workers only (bench run
// --serve --no-local-trials) and has none connected runs nothing and has
// nothing queued: it reads the change feed once a second, not at every
// tick (200 ms), and the unfinished trials no more often. Once a worker's
// slot opens, the trials run there and their outcomes arrive through the
// slot's runner (Run returns), with no tick and no feed read to wait for.
func TestServeDriverIdleReadsFeedOncePerSecond(t *testing.T) {
	const idleFor = 10 * time.Second
	d := newCountedDriver(t, 3)
	pool := &fakePool{runners: map[int]*fakeRemote{}, ran: map[int]int{}}
	d.s.UseRemote(pool)
	d.start()
	d.step(t) // past the start-up reads
	c0, p0 := d.changes.Load(), d.pending.Load()
	n := int(idleFor / idleTick)
	for range n {
		d.step(t)
	}
	feedReads, pendingReads := d.changes.Load()-c0, d.pending.Load()-p0
	t.Logf("idle for %v (%d ticks): %d change-feed reads, %d reads of the unfinished trials", idleFor, n, feedReads, pendingReads)
	if want := int64(idleFor / time.Second); feedReads > want {
		t.Errorf("%d change-feed reads in %v of idling (%d ticks), want at most %d (once a second)", feedReads, idleFor, n, want)
	}
	if want := 2 * int64(idleFor/time.Second); pendingReads > want {
		t.Errorf("%d reads of the unfinished trials in %v of idling (%d ticks), want at most %d", pendingReads, idleFor, n, want)
	}
	if len(trials(t, d.p.exp)) != 0 {
		t.Fatal("trials were stored with no worker connected")
	}
	// A worker connects: its slot runs the trials, and their outcomes come
	// back through the runner with the clock standing still after the tick
	// that saw the slot.
	pool.mu.Lock()
	pool.avail = 1
	pool.mu.Unlock()
	d.lastStep(t, "its trials on the worker's slot were not all recorded without another tick")
	ts := trials(t, d.p.exp)
	if len(ts) != 3 {
		t.Fatalf("%d trials, want 3", len(ts))
	}
	for _, tr := range ts {
		if tr.Status != trial.SUCCEEDED || tr.TrialRunnerID <= remoteIDBase {
			t.Errorf("trial %d: %s on runner %d, want SUCCEEDED on the worker's slot", tr.ID, tr.Status, tr.TrialRunnerID)
		}
	}
	if st := d.s.Stats(); st.Run != 3 || st.Succeeded != 3 {
		t.Errorf("stats %+v: the worker's outcomes are this driver's own", st)
	}
}

// A driver whose trials a storage-sharing worker runs (bench worker) still
// reads the change feed at every tick while that worker holds a trial: the
// outcome comes through the feed only, and is recorded at the first tick
// after it was stored.
func TestDriverPollsFeedEachTickWhileWorkerRuns(t *testing.T) {
	ctx := context.Background()
	d := newCountedDriver(t, 1)
	worker := d.p.exp.WithOwner("elsewhere.example:1:ffff", 30*time.Second)
	if err := worker.RegisterWorker(ctx, 1); err != nil {
		t.Fatal(err)
	}
	d.start()
	d.step(t) // the driver queues a trial for the worker
	got, err := worker.Claim(ctx, 1)
	if err != nil || len(got) != 1 {
		t.Fatalf("the worker claimed %v (%v), want the trial queued for it", got, err)
	}
	id := got[0].ID
	if err := worker.UpdateStatus(ctx, id, trial.RUNNING, time.Time{}); err != nil {
		t.Fatal(err)
	}
	c0 := d.changes.Load()
	const n = 10
	for range n {
		d.step(t)
	}
	if reads := d.changes.Load() - c0; reads != n {
		t.Errorf("%d change-feed reads in %d ticks while the worker ran a trial, want one a tick", reads, n)
	}
	if err := worker.Finish(ctx, id, storage.TrialOutcome{Status: trial.SUCCEEDED, Results: map[string]any{"score": 3.0}}); err != nil {
		t.Fatal(err)
	}
	// One tick: the driver reads the outcome, its budget is spent, it ends.
	d.lastStep(t, "the worker's outcome was not recorded at the next tick")
	if ts := trials(t, d.p.exp); len(ts) != 1 || ts[0].Status != trial.SUCCEEDED {
		t.Fatalf("trials: %+v", ts)
	}
}
