package sql

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/benchtune/bench/storage"
	"github.com/benchtune/bench/trial"
)

// TestChanges: the change feed returns exactly the trials changed since a
// number (queued, claimed, started, finished, released, stop requested),
// nothing (and no scan) when nothing changed, not a lease renewal, and
// per experiment.
func TestChanges(t *testing.T) {
	forEach(t, func(t *testing.T, b backend) {
		ctx := context.Background()
		s := open(t, b.fresh(t))
		exp := newExperiment(t, s, "feed")
		otherExp := newExperiment(t, s, "other")
		changes := func(since int64) ([]int, int64) {
			t.Helper()
			trs, next, err := exp.Changes(ctx, since)
			if err != nil {
				t.Fatalf("Changes(%d): %v", since, err)
			}
			return ids(trs), next
		}
		if got, next := changes(0); len(got) != 0 || next != 0 {
			t.Fatalf("empty experiment: %v, %d", got, next)
		}
		for i := range 4 {
			mustTrial(t, exp, map[string]string{"x": fmt.Sprint(i)})
		}
		mustTrial(t, otherExp, map[string]string{"x": "9"})
		all, n := changes(0)
		if fmt.Sprint(all) != "[1 2 3 4]" || n < 4 {
			t.Fatalf("Changes(0) = %v, %d; want the 4 trials", all, n)
		}
		if got, next := changes(n); len(got) != 0 || next != n {
			t.Fatalf("nothing changed: %v, %d (want none, %d)", got, next, n)
		}
		owner := exp.WithOwner("h:1:a", time.Minute)
		claimed, err := owner.Claim(ctx, 2)
		if err != nil || len(claimed) != 2 {
			t.Fatalf("claim: %v %v", claimed, err)
		}
		got, n2 := changes(n)
		if fmt.Sprint(got) != "[1 2]" || n2 <= n {
			t.Fatalf("after a claim: %v, %d", got, n2)
		}
		if _, err := owner.Heartbeat(ctx); err != nil {
			t.Fatal(err)
		}
		if got, next := changes(n2); len(got) != 0 || next != n2 {
			t.Errorf("a lease renewal is no change: %v, %d", got, next)
		}
		if err := owner.UpdateStatus(ctx, 1, trial.RUNNING, time.Time{}); err != nil {
			t.Fatal(err)
		}
		if err := owner.Finish(ctx, 2, storage.TrialOutcome{Status: trial.SUCCEEDED, Results: map[string]any{"score": 1.0}}); err != nil {
			t.Fatal(err)
		}
		if err := exp.RequestStop(ctx, 4); err != nil {
			t.Fatal(err)
		}
		got, n3 := changes(n2)
		if fmt.Sprint(got) != "[1 2 4]" {
			t.Fatalf("after start, finish, stop request: %v", got)
		}
		for _, tr := range mustChanges(t, exp, n2) {
			if tr.ID == 2 && (tr.Status != trial.SUCCEEDED || tr.Results["score"] != 1.0) {
				t.Errorf("finished trial as the feed gives it: %+v", tr)
			}
		}
		if err := owner.Release(ctx); err != nil {
			t.Fatal(err)
		}
		if got, _ := changes(n3); fmt.Sprint(got) != "[1]" {
			t.Errorf("after a release: %v, want [1]", got)
		}
		if _, _, err := exp.Changes(ctx, -1); err == nil {
			t.Error("a negative number: no error")
		}
	})
}

func mustChanges(t *testing.T, exp storage.Experiment, since int64) []storage.Trial {
	t.Helper()
	trs, _, err := exp.Changes(context.Background(), since)
	if err != nil {
		t.Fatal(err)
	}
	return trs
}

// TestChangesConcurrentWriters: a reader polling the feed while several
// writers queue and finish trials sees every trial finished, once the
// writers are done, without ever reading the whole experiment again.
func TestChangesConcurrentWriters(t *testing.T) {
	forEach(t, func(t *testing.T, b backend) {
		ctx := context.Background()
		s := open(t, b.fresh(t))
		exp := newExperiment(t, s, "feed")
		// Writers of every kind at once: queue and finish, queue for
		// others, claim + start + finish, finish and queue the next.
		const writers, each = 4, 10
		var wg sync.WaitGroup
		errs := make(chan error, 2*writers)
		for w := range writers {
			wg.Add(2)
			go func() {
				defer wg.Done()
				for i := range each {
					var err error
					switch {
					case w == 0:
						var tr storage.Trial
						own := exp.WithOwner(fmt.Sprintf("h:%d:w", w), time.Minute)
						if tr, err = own.NewTrial(ctx, storage.TrialSpec{Params: map[string]string{"x": fmt.Sprint(w*100 + i)}, Running: true}); err == nil {
							err = own.Finish(ctx, tr.ID, storage.TrialOutcome{Status: trial.FAILED, FailureReason: "x"})
						}
					case w == 1:
						var tr storage.Trial
						own := exp.WithOwner(fmt.Sprintf("h:%d:q", w), time.Minute)
						if tr, err = own.NewTrial(ctx, storage.TrialSpec{Params: map[string]string{"x": fmt.Sprint(w*100 + i)}, Running: true}); err == nil {
							_, err = own.FinishAndQueue(ctx, tr.ID, storage.TrialOutcome{Status: trial.FAILED, FailureReason: "x"},
								storage.TrialSpec{Params: map[string]string{"x": fmt.Sprint(w*100 + i + 50)}})
						}
					default:
						_, err = exp.NewTrial(ctx, storage.TrialSpec{Params: map[string]string{"x": fmt.Sprint(w*100 + i)}})
					}
					if err != nil {
						errs <- err
						return
					}
				}
			}()
			go func() {
				// A claimer per writer: claims queued trials, starts and
				// finishes them.
				defer wg.Done()
				own := exp.WithOwner(fmt.Sprintf("h:%d:c", w), time.Minute)
				for range 3 * each {
					got, err := own.Claim(ctx, 1)
					if err == nil && len(got) == 1 {
						if err = own.UpdateStatus(ctx, got[0].ID, trial.RUNNING, time.Time{}); err == nil {
							err = own.Finish(ctx, got[0].ID, storage.TrialOutcome{Status: trial.FAILED, FailureReason: "x"})
						}
					}
					if err != nil {
						errs <- err
						return
					}
				}
			}()
		}
		done := make(chan struct{})
		go func() { wg.Wait(); close(done) }()
		seen := map[int]trial.Status{}
		var since int64
		poll := func() {
			trs, next, err := exp.Changes(ctx, since)
			if err != nil {
				t.Fatal(err)
			}
			since = next
			for _, tr := range trs {
				seen[tr.ID] = tr.Status
			}
		}
		for polling := true; polling; {
			select {
			case <-done:
				polling = false
			default:
			}
			poll()
		}
		poll()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
		// Every trial as storage has it now, seen with its last state.
		all, err := exp.Trials(ctx, storage.TrialFilter{})
		if err != nil {
			t.Fatal(err)
		}
		if len(seen) != len(all) || len(all) < writers*each {
			t.Fatalf("saw %d trials, storage has %d (want at least %d)", len(seen), len(all), writers*each)
		}
		for _, tr := range all {
			if seen[tr.ID] != tr.Status {
				t.Errorf("trial %d last seen %s, stored %s", tr.ID, seen[tr.ID], tr.Status)
			}
		}
	})
}

// TestChangesAcrossProcesses: two stores on one database (two bench
// processes) write the same experiment in turn, so that each one's guess
// of its next change number (guessSeq) is stale and the trials are
// stamped again with the number taken; a write that fails after taking a
// guess leaves nothing behind. A reader sees every change exactly once,
// at the number the feed gives, whoever wrote it.
func TestChangesAcrossProcesses(t *testing.T) {
	forEach(t, func(t *testing.T, b backend) {
		ctx := context.Background()
		cfg := b.fresh(t)
		a := newExperiment(t, open(t, cfg), "feed")
		resume := func() storage.Experiment {
			exp, _, err := open(t, cfg).Experiment(ctx, a.Info())
			if err != nil {
				t.Fatal(err)
			}
			return exp
		}
		other, reader := resume(), resume()
		var since int64
		step := 0
		expect := func(id int, st trial.Status) {
			t.Helper()
			step++
			trs, next, err := reader.Changes(ctx, since)
			if err != nil {
				t.Fatal(err)
			}
			if len(trs) != 1 || trs[0].ID != id || trs[0].Status != st || next != since+1 {
				t.Fatalf("step %d: Changes(%d) = %v %v, %d; want trial %d %s at %d", step, since, ids(trs), trs, next, id, st, since+1)
			}
			since = next
		}
		tr := mustTrial(t, a, map[string]string{"x": "1"})
		expect(tr.ID, trial.PENDING)
		if err := other.UpdateStatus(ctx, tr.ID, trial.RUNNING, time.Time{}); err != nil {
			t.Fatal(err)
		}
		expect(tr.ID, trial.RUNNING)
		// a's guess is behind by one: stamped again.
		if err := a.Finish(ctx, tr.ID, storage.TrialOutcome{Status: trial.SUCCEEDED, Results: map[string]any{"score": 1.0}}); err != nil {
			t.Fatal(err)
		}
		expect(tr.ID, trial.SUCCEEDED)
		// A failed write took a guess and rolled back.
		if err := a.UpdateStatus(ctx, tr.ID, trial.RUNNING, time.Time{}); err == nil {
			t.Fatal("a finished trial started again")
		}
		tr2, err := other.NewTrial(ctx, storage.TrialSpec{Params: map[string]string{"x": "2"}, Running: true})
		if err != nil {
			t.Fatal(err)
		}
		expect(tr2.ID, trial.RUNNING)
		tr3, err := a.FinishAndQueue(ctx, tr2.ID, storage.TrialOutcome{Status: trial.FAILED, FailureReason: "x"},
			storage.TrialSpec{Params: map[string]string{"x": "3"}})
		if err != nil {
			t.Fatal(err)
		}
		step++
		trs, next, err := reader.Changes(ctx, since)
		// (One number for both, or on PostgreSQL one each.)
		if err != nil || fmt.Sprint(ids(trs)) != fmt.Sprint([]int{tr2.ID, tr3.ID}) || next <= since || next > since+2 {
			t.Fatalf("step %d: finish and queue: %v, %d, %v; want trials %d and %d after %d", step, ids(trs), next, err, tr2.ID, tr3.ID, since)
		}
		since = next
		for _, w := range []storage.Experiment{other, a, a, other} {
			if err := w.RequestStop(ctx, tr3.ID); err != nil {
				t.Fatal(err)
			}
			expect(tr3.ID, trial.PENDING)
		}
	})
}

// TestChangesAheadOfTheFeed: a number ahead of the experiment's (a
// database restored from a backup, or a number a schema-7 bench took that
// no trial kept) gives every trial, as from 0, and the experiment's own
// number, instead of nothing until the numbers catch up.
func TestChangesAheadOfTheFeed(t *testing.T) {
	forEach(t, func(t *testing.T, b backend) {
		ctx := context.Background()
		s := open(t, b.fresh(t))
		exp := newExperiment(t, s, "feed")
		for i := range 3 {
			mustTrial(t, exp, map[string]string{"x": fmt.Sprint(i)})
		}
		_, n, err := exp.Changes(ctx, 0)
		if err != nil || n < 3 {
			t.Fatalf("Changes(0): %d, %v", n, err)
		}
		trs, next, err := exp.Changes(ctx, n+100)
		if err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(ids(trs)) != "[1 2 3]" || next != n {
			t.Fatalf("Changes(%d) = %v, %d; want every trial and %d", n+100, ids(trs), next, n)
		}
		mustTrial(t, exp, map[string]string{"x": "9"})
		trs, next2, err := exp.Changes(ctx, next)
		if err != nil || fmt.Sprint(ids(trs)) != "[4]" || next2 <= next {
			t.Fatalf("after resync: %v, %d, %v", ids(trs), next2, err)
		}
	})
}
