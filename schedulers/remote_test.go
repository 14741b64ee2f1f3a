package schedulers

import (
	"context"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/benchtune/bench/environments"
	"github.com/benchtune/bench/trial"
)

// fakePool is a RemotePool whose slots the test opens; its runners score
// x and record how many of them run at once.
type fakePool struct {
	mu         sync.Mutex
	avail      int
	runners    map[int]*fakeRemote
	running    int
	maxRunning int
	ran        map[int]int // trial id → runner id
}

func (p *fakePool) Available() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.avail
}

func (p *fakePool) Runner(id int) Runner {
	p.mu.Lock()
	defer p.mu.Unlock()
	if r, ok := p.runners[id]; ok {
		return r
	}
	r := &fakeRemote{id: id, p: p}
	p.runners[id] = r
	return r
}

type fakeRemote struct {
	id int
	p  *fakePool
}

func (r *fakeRemote) ID() int { return r.id }
func (r *fakeRemote) Run(ctx context.Context, s Spec) trial.Outcome {
	p := r.p
	p.mu.Lock()
	p.running++
	p.maxRunning = max(p.maxRunning, p.running)
	p.ran[s.TrialID] = r.id
	p.mu.Unlock()
	select {
	case <-time.After(5 * time.Millisecond):
	case <-ctx.Done():
	}
	p.mu.Lock()
	p.running--
	p.mu.Unlock()
	return trial.Outcome{Status: trial.SUCCEEDED, Results: map[string]any{"score": s.Params["x"]}}
}
func (r *fakeRemote) Teardown(context.Context) error { return nil }
func (r *fakeRemote) Close() error                   { return nil }

// TestRemotePoolSlots: a driver with local trials off runs its trials on
// the remote pool's runners only, never more at once than the pool has
// slots; it waits while the pool has none, and records each outcome its
// runners' Run returns as its own.
func TestRemotePoolSlots(t *testing.T) {
	st := openStore(t, filepath.Join(t.TempDir(), "db.sqlite"))
	s := newSetup(t, st, Config{ExperimentID: "e", Parallel: true, DriverOnly: true, NumTrialRunners: 1},
		map[string]any{"optimizer_type": "RANDOM", "max_suggestions": int64(8)},
		func(context.Context, environments.Params) environments.Result {
			t.Error("a trial ran on the local runner with local trials off")
			return environments.Result{Status: trial.FAILED}
		})
	pool := &fakePool{runners: map[int]*fakeRemote{}, ran: map[int]int{}}
	s.sched.UseRemote(pool)
	done := make(chan error, 1)
	go func() { done <- s.sched.Start(context.Background()) }()
	// No slot yet: nothing runs, the driver waits.
	select {
	case err := <-done:
		t.Fatalf("the driver ended without a slot to run on: %v", err)
	case <-time.After(200 * time.Millisecond):
	}
	if n := len(trials(t, s.exp)); n != 0 {
		t.Fatalf("%d trials started without a slot", n)
	}
	pool.mu.Lock()
	pool.avail = 2
	pool.mu.Unlock()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(2 * time.Minute):
		t.Fatal("the driver did not finish")
	}
	ts := trials(t, s.exp)
	if len(ts) != 8 {
		t.Fatalf("%d trials, want 8", len(ts))
	}
	for _, tr := range ts {
		if tr.Status != trial.SUCCEEDED || pool.ran[tr.ID] <= remoteIDBase || tr.TrialRunnerID != pool.ran[tr.ID] {
			t.Errorf("trial %d: %s, ran on %d, stored runner %d", tr.ID, tr.Status, pool.ran[tr.ID], tr.TrialRunnerID)
		}
	}
	if pool.maxRunning > 2 || pool.maxRunning < 1 {
		t.Errorf("%d trials ran at once on 2 slots", pool.maxRunning)
	}
	if st := s.sched.Stats(); st.Run != 8 || st.Succeeded != 8 {
		t.Errorf("stats %+v: the remote outcomes are this driver's own", st)
	}
	if s.env.runs != 0 {
		t.Errorf("the local environment ran %d times", s.env.runs)
	}
}
